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

// Command image builds the controller's container image without a container
// engine, with go-containerregistry: a static binary for each platform
// (linux/amd64 and linux/arm64 by default) as the one layer on an empty
// base, run as the non-root user 65532, with OCI labels, gathered in a
// multi-platform image index and written as an OCI image layout. What it
// wrote is read back and checked: the library's validation, and, for each
// platform, an image whose entrypoint is a static binary for its machine,
// run as the non-root user. With -push, it pushes the layout it wrote
// earlier to a registry.
//
//	go run ./hack/image -out _output/image -version v0.1.0 -ldflags "-X ..."
//	go run ./hack/image -out _output/image -push registry.example.com/appservice-controller:v0.1.0
//
// `make image` and `make image-push` run it.
//
// It imports nothing of this repository: it builds the controller with the
// go command.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

const (
	binary = "appservice-controller"
	// nonRoot is the user and group the container runs as: distroless's
	// "nonroot", which the restricted Pod Security Standard accepts.
	nonRoot = "65532:65532"
	// defaultPlatforms are the platforms of a release image.
	defaultPlatforms = "linux/amd64,linux/arm64"
)

// machines are the ELF machines of the architectures an image can be built
// for.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

func main() {
	out := flag.String("out", "_output/image", "Directory of the OCI image layout.")
	platforms := flag.String("platforms", defaultPlatforms, "Comma-separated os/arch pairs to build for.")
	ldflags := flag.String("ldflags", "", "Extra -ldflags for go build (the version stamp).")
	version := flag.String("version", "v0.0.0", "The image's version: its label and the layout's reference name.")
	revision := flag.String("revision", "", "The commit the image is built from (a label).")
	created := flag.String("created", "1970-01-01T00:00:00Z", "Creation time (RFC 3339) of the image: fixed, so that a build is reproducible.")
	push := flag.String("push", "", "Push the image index in -out to this reference instead of building.")
	flag.Parse()

	var err error
	if *push != "" {
		err = pushLayout(*out, *push)
	} else {
		err = build(*out, strings.Split(*platforms, ","), *ldflags, *version, *revision, *created)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(out string, platforms []string, ldflags, version, revision, created string) error {
	createdAt, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return fmt.Errorf("-created: %w", err)
	}
	work, err := os.MkdirTemp("", "appservice-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		platform, err := v1.ParsePlatform(p)
		if err != nil {
			return err
		}
		bin := filepath.Join(work, platform.OS+"-"+platform.Architecture, binary)
		if err := goBuild(bin, platform, ldflags); err != nil {
			return err
		}
		img, err := image(bin, platform, version, revision, createdAt)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: platform},
		})
	}

	if err := os.RemoveAll(out); err != nil {
		return err
	}
	l, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	if err := l.AppendIndex(index, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version,
	})); err != nil {
		return err
	}
	// Read back from disk, so that what is checked is what was written.
	written, err := readIndex(out)
	if err != nil {
		return err
	}
	if err := validate.Index(written); err != nil {
		return fmt.Errorf("the image in %s is not valid: %w", out, err)
	}
	for _, p := range platforms {
		if err := checkImage(written, p); err != nil {
			return fmt.Errorf("the image in %s: %s: %w", out, p, err)
		}
	}
	digest, err := written.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: image index %s for %s (validated)\n", out, digest, strings.Join(platforms, ", "))
	return nil
}

// goBuild builds a static binary of the controller for platform.
func goBuild(out string, platform *v1.Platform, ldflags string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", strings.TrimSpace("-s -w "+ldflags), "-o", out, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+platform.OS, "GOARCH="+platform.Architecture)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w", platform.OS, platform.Architecture, err)
	}
	return nil
}

// image is the binary at /appservice-controller (owned by root, not
// writable), on nothing, as the entrypoint, run as nonRoot.
func image(bin string, platform *v1.Platform, version, revision string, created time.Time) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Name: binary, Mode: 0o555, Size: int64(len(data)), ModTime: created, Typeflag: tar.TypeReg, Format: tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = platform.OS, platform.Architecture, platform.Variant
	cfg.Created = v1.Time{Time: created}
	cfg.Config.Entrypoint = []string{"/" + binary}
	cfg.Config.User = nonRoot
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       binary,
		"org.opencontainers.image.description": "Turns AppService custom resources into Deployments, Services and the other objects an app needs.",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.revision":    revision,
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
	return mutate.ConfigFile(img, cfg)
}

// checkImage checks the index's image for platform p: there is one, run as
// nonRoot, whose entrypoint is a static binary for the platform's machine.
func checkImage(index v1.ImageIndex, p string) error {
	platform, err := v1.ParsePlatform(p)
	if err != nil {
		return err
	}
	machine, ok := machines[platform.Architecture]
	if !ok {
		return fmt.Errorf("no ELF machine known for %s", platform.Architecture)
	}
	imgs, err := partial.FindImages(index, match.Platforms(*platform))
	if err != nil {
		return err
	}
	if len(imgs) != 1 {
		return fmt.Errorf("%d images, want 1", len(imgs))
	}
	cfg, err := imgs[0].ConfigFile()
	if err != nil {
		return err
	}
	if cfg.Config.User != nonRoot || !slices.Equal(cfg.Config.Entrypoint, []string{"/" + binary}) {
		return fmt.Errorf("user %q, entrypoint %q: want %s, /%s", cfg.Config.User, cfg.Config.Entrypoint, nonRoot, binary)
	}
	// The image's one layer holds the binary.
	rc := mutate.Extract(imgs[0])
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			return fmt.Errorf("no %s in the image: %w", binary, err)
		}
		if h.Name != binary {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", binary, err)
		}
		if f.Machine != machine {
			return fmt.Errorf("%s is for %s, want %s", binary, f.Machine, machine)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				return fmt.Errorf("%s is dynamically linked", binary)
			}
		}
		return nil
	}
}

// readIndex is the multi-platform index in the OCI layout at dir.
func readIndex(dir string) (v1.ImageIndex, error) {
	l, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	top, err := l.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d manifests, want the one image index", dir, len(m.Manifests))
	}
	return top.ImageIndex(m.Manifests[0].Digest)
}

// pushLayout pushes the image index in the layout at dir to ref, with the
// credentials docker and podman keep (~/.docker/config.json and the like).
func pushLayout(dir, ref string) error {
	index, err := readIndex(dir)
	if err != nil {
		return fmt.Errorf("%w (run make image first)", err)
	}
	tag, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(tag, index, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return err
	}
	digest, err := index.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", tag, digest)
	return nil
}
