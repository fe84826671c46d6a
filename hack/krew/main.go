/*
Copyright The appservice-controller Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command krew builds the kubectl plugin (cmd/kubectl-appservice) for
// krew's platforms, packs each build in a tar.gz archive with the
// repository's LICENSE when there is one, and writes krew's manifest
// (krew.googlecontainertools.github.com/v1alpha2 Plugin) from the
// checked-in template (artifacts/krew/appservice.yaml) with spec.version
// and spec.platforms filled in: each archive's URL under -base-url, its
// sha256 and the binary's name. make krew runs it:
//
//	go run ./hack/krew -version v0.1.0 -base-url https://.../releases/download/v0.1.0 -out _output/krew
//
// The archives are reproducible: the same binaries give the same
// archives, and the same sha256 (entries in a fixed order, with -mtime's
// time, no owner, a gzip header without name or time).
//
// It imports nothing of this repository.
package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Platform is an operating system and architecture krew installs for.
type Platform struct{ OS, Arch string }

// Platforms are the plugin's: Linux, macOS and Windows on amd64 and
// arm64.
var Platforms = func() []Platform {
	ps := make([]Platform, 0, 6)
	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, arch := range []string{"amd64", "arm64"} {
			ps = append(ps, Platform{goos, arch})
		}
	}
	return ps
}()

// binName is the plugin's binary: kubectl finds kubectl-appservice on the
// PATH as `kubectl appservice`.
const binName = "kubectl-appservice"

// Bin is the binary's file name on p.
func (p Platform) Bin() string {
	if p.OS == "windows" {
		return binName + ".exe"
	}
	return binName
}

// Archive is the name of p's archive.
func (p Platform) Archive() string {
	return fmt.Sprintf("%s_%s_%s.tar.gz", binName, p.OS, p.Arch)
}

// Plugin is krew's manifest, the fields this generator reads or writes
// (krew's index/pkg/apis/krew/v1alpha2).
type Plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string           `json:"version"`
		Homepage         string           `json:"homepage,omitempty"`
		ShortDescription string           `json:"shortDescription"`
		Description      string           `json:"description,omitempty"`
		Caveats          string           `json:"caveats,omitempty"`
		Platforms        []PluginPlatform `json:"platforms"`
	} `json:"spec"`
}

// PluginPlatform is one platform's archive in the manifest.
type PluginPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	Sha256 string `json:"sha256"`
	Bin    string `json:"bin"`
}

// Config is what Generate needs.
type Config struct {
	// Template is the manifest's hand-written parts (YAML).
	Template []byte
	// Version is spec.version: the plugin's version, vX.Y.Z[-...].
	Version string
	// BaseURL is where the archives are published: each archive's URL is
	// BaseURL/ARCHIVE.
	BaseURL string
	// Out is the folder the archives and appservice.yaml are written to.
	Out string
	// License is a file packed with each binary ("" or missing: none).
	License string
	// MTime is the archive entries' time.
	MTime     time.Time
	Platforms []Platform
}

// Generate builds the plugin for each platform with build (which writes
// the binary at dst), packs each in its archive in Out and writes
// Out/appservice.yaml, the manifest.
func Generate(cfg Config, build func(p Platform, dst string) error) error {
	var plugin Plugin
	if err := yaml.UnmarshalStrict(cfg.Template, &plugin); err != nil {
		return fmt.Errorf("the manifest's template: %w", err)
	}
	if !strings.HasPrefix(cfg.Version, "v") {
		return fmt.Errorf("version %q: krew wants a semantic version starting with v", cfg.Version)
	}
	plugin.Spec.Version = cfg.Version
	plugin.Spec.Platforms = nil
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	var license []byte
	if cfg.License != "" {
		data, err := os.ReadFile(cfg.License)
		switch {
		case err == nil:
			license = data
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
	}
	for _, p := range cfg.Platforms {
		dir, err := os.MkdirTemp(cfg.Out, ".build-")
		if err != nil {
			return err
		}
		bin := filepath.Join(dir, p.Bin())
		err = build(p, bin)
		if err == nil {
			err = writeArchive(filepath.Join(cfg.Out, p.Archive()), bin, p.Bin(), license, cfg.MTime)
		}
		os.RemoveAll(dir)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", p.OS, p.Arch, err)
		}
		sum, err := fileSHA256(filepath.Join(cfg.Out, p.Archive()))
		if err != nil {
			return err
		}
		pp := PluginPlatform{URI: strings.TrimSuffix(cfg.BaseURL, "/") + "/" + p.Archive(), Sha256: sum, Bin: p.Bin()}
		pp.Selector.MatchLabels = map[string]string{"os": p.OS, "arch": p.Arch}
		plugin.Spec.Platforms = append(plugin.Spec.Platforms, pp)
	}
	data, err := yaml.Marshal(plugin)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.Out, "appservice.yaml"), data, 0o644)
}

// writeArchive packs the binary (as name) and the license, if any, in a
// reproducible tar.gz.
func writeArchive(path, bin, name string, license []byte, mtime time.Time) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	type entry struct {
		name string
		mode int64
		data []byte
	}
	entries := []entry{{name, 0o755, data}}
	if license != nil {
		entries = append(entries, entry{"LICENSE", 0o644, license})
	}
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), ModTime: mtime.UTC(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// goBuild builds pkg for p at dst: static, without the checkout's paths,
// stripped, stamped with ldflags.
func goBuild(pkg, ldflags string) func(p Platform, dst string) error {
	return func(p Platform, dst string) error {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", strings.TrimSpace("-s -w "+ldflags), "-o", dst, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
		return nil
	}
}

func main() {
	template := flag.String("template", "artifacts/krew/appservice.yaml", "The manifest's hand-written parts.")
	out := flag.String("out", "_output/krew", "Where to write the archives and appservice.yaml.")
	version := flag.String("version", "", "The plugin's version (spec.version), vX.Y.Z.")
	baseURL := flag.String("base-url", "", "Where the archives are published (each archive's URL is BASE-URL/ARCHIVE).")
	ldflags := flag.String("ldflags", "", "Extra -ldflags for go build (the version stamp).")
	mtime := flag.String("mtime", "1970-01-01T00:00:00Z", "The archive entries' time, RFC 3339 (the commit's, for reproducible archives).")
	license := flag.String("license", "LICENSE", "A file packed beside the binary, when it exists.")
	pkg := flag.String("package", "./cmd/kubectl-appservice", "The plugin's package.")
	platforms := flag.String("platforms", "", "OS/ARCH,... to build for (default: every platform of Platforms), e.g. linux/amd64 for a local install.")
	flag.Parse()
	if err := run(*template, *out, *version, *baseURL, *ldflags, *mtime, *license, *pkg, *platforms); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

func run(template, out, version, baseURL, ldflags, mtime, license, pkg, only string) error {
	if version == "" || baseURL == "" {
		return errors.New("-version and -base-url are required")
	}
	platforms := Platforms
	if only != "" {
		platforms = nil
		for _, s := range strings.Split(only, ",") {
			goos, goarch, ok := strings.Cut(strings.TrimSpace(s), "/")
			if !ok {
				return fmt.Errorf("-platforms: %q is not OS/ARCH", s)
			}
			platforms = append(platforms, Platform{goos, goarch})
		}
	}
	data, err := os.ReadFile(template)
	if err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339, mtime)
	if err != nil {
		return fmt.Errorf("-mtime: %w", err)
	}
	cfg := Config{Template: data, Version: version, BaseURL: baseURL, Out: out, License: license, MTime: t, Platforms: platforms}
	if err := Generate(cfg, goBuild(pkg, ldflags)); err != nil {
		return err
	}
	fmt.Printf("wrote %s and its archives; install here with:\n  kubectl krew install --manifest=%s --archive=%s\n",
		filepath.Join(out, "appservice.yaml"), filepath.Join(out, "appservice.yaml"), filepath.Join(out, Platform{runtime.GOOS, runtime.GOARCH}.Archive()))
	return nil
}
