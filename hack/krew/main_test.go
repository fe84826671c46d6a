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

package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// TestGenerate: the manifest written from the repository's template, with
// fake binaries, is one krew accepts: every platform once, its selector
// os and arch, its archive's URL under the base URL and the sha256 of the
// archive written, the binary's name (.exe on Windows), which the archive
// holds with the license; the hand-written parts kept. Built twice, the
// archives are the same bytes.
func TestGenerate(t *testing.T) {
	template, err := os.ReadFile("../../artifacts/krew/appservice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	license := filepath.Join(t.TempDir(), "LICENSE")
	if err := os.WriteFile(license, []byte("Apache License 2.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fakeBuild := func(p Platform, dst string) error {
		return os.WriteFile(dst, []byte("binary for "+p.OS+"/"+p.Arch), 0o755)
	}
	const base = "https://example.com/appservice-controller/releases/download/v1.2.3"
	generate := func(out string) Plugin {
		t.Helper()
		cfg := Config{Template: template, Version: "v1.2.3", BaseURL: base + "/", Out: out, License: license,
			MTime: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), Platforms: Platforms}
		if err := Generate(cfg, fakeBuild); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(out, "appservice.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var p Plugin
		if err := yaml.UnmarshalStrict(data, &p); err != nil {
			t.Fatalf("the manifest: %v\n%s", err, data)
		}
		return p
	}
	out := t.TempDir()
	p := generate(out)

	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "appservice" {
		t.Errorf("apiVersion %q, kind %q, name %q", p.APIVersion, p.Kind, p.Metadata.Name)
	}
	if p.Spec.Version != "v1.2.3" || p.Spec.ShortDescription == "" || p.Spec.Description == "" || p.Spec.Homepage == "" {
		t.Errorf("spec: version %q, shortDescription %q, homepage %q, description %d bytes",
			p.Spec.Version, p.Spec.ShortDescription, p.Spec.Homepage, len(p.Spec.Description))
	}
	if len(p.Spec.Platforms) != len(Platforms) {
		t.Fatalf("%d platforms, want %d", len(p.Spec.Platforms), len(Platforms))
	}
	seen := map[Platform]bool{}
	for _, pp := range p.Spec.Platforms {
		plat := Platform{pp.Selector.MatchLabels["os"], pp.Selector.MatchLabels["arch"]}
		if len(pp.Selector.MatchLabels) != 2 || !slices.Contains(Platforms, plat) || seen[plat] {
			t.Errorf("selector %v: want os and arch of a platform not seen yet", pp.Selector.MatchLabels)
			continue
		}
		seen[plat] = true
		if pp.URI != base+"/"+plat.Archive() {
			t.Errorf("%v: uri %s, want %s", plat, pp.URI, base+"/"+plat.Archive())
		}
		if pp.Bin != plat.Bin() || (plat.OS == "windows") != (filepath.Ext(pp.Bin) == ".exe") {
			t.Errorf("%v: bin %q", plat, pp.Bin)
		}
		archive := filepath.Join(out, plat.Archive())
		if sum, err := fileSHA256(archive); err != nil || sum != pp.Sha256 {
			t.Errorf("%v: sha256 %s in the manifest, %s (%v) of %s", plat, pp.Sha256, sum, err, archive)
		}
		files := archiveFiles(t, archive)
		if files[pp.Bin] != "binary for "+plat.OS+"/"+plat.Arch || files["LICENSE"] != "Apache License 2.0\n" || len(files) != 2 {
			t.Errorf("%v: the archive holds %v, want the binary %s and the LICENSE", plat, files, pp.Bin)
		}
	}

	again := generate(t.TempDir())
	for i := range p.Spec.Platforms {
		if p.Spec.Platforms[i].Sha256 != again.Spec.Platforms[i].Sha256 {
			t.Errorf("%s: another sha256 for the same binary: the archives are not reproducible", p.Spec.Platforms[i].URI)
		}
	}
}

// TestGenerateRefuses: a version krew would refuse, a template with an
// unknown field.
func TestGenerateRefuses(t *testing.T) {
	build := func(Platform, string) error { return errors.New("not built") }
	cfg := Config{Template: []byte("apiVersion: x\nkind: Plugin\nspec:\n  version: \"\"\n"), Version: "1.2.3", Out: t.TempDir(), Platforms: Platforms}
	if err := Generate(cfg, build); err == nil {
		t.Error("version 1.2.3 (no v) accepted")
	}
	cfg.Version, cfg.Template = "v1.2.3", []byte("apiVersion: x\nspec:\n  verzion: v1\n")
	if err := Generate(cfg, build); err == nil {
		t.Error("a template with an unknown field accepted")
	}
}

// archiveFiles reads a tar.gz: each file's name and content.
func archiveFiles(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = string(data)
	}
}
