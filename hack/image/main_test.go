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

// The image for every platform of a release, at a fraction of the cost of
// cross-compiling the controller for each (test/e2e's TestInstallBundle
// builds and runs the image of the machine's own platform).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestEveryPlatformBuilds: an image of a small program for every platform
// of a release is one image per platform, each checked as build checks
// what it wrote (a static binary for the platform's machine, run as the
// non-root user).
func TestEveryPlatformBuilds(t *testing.T) {
	src := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(src) // build compiles the package in its working directory
	out := filepath.Join(t.TempDir(), "image")
	platforms := strings.Split(defaultPlatforms, ",")
	if err := build(out, platforms, "", "v0.0.0-test", "test", "1970-01-01T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	index, err := readIndex(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != len(platforms) {
		t.Errorf("%d images, want one for each of %v", len(m.Manifests), platforms)
	}
}

// TestControllerTypeChecks: the controller type-checks for every platform
// of a release, as the compiler sees it there (the files each GOOS and
// GOARCH selects, without cgo): from source, in seconds, where a
// cross-compile takes minutes.
func TestControllerTypeChecks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Split(defaultPlatforms, ",") {
		goos, goarch, _ := strings.Cut(p, "/")
		t.Run(p, func(t *testing.T) {
			pkgs, err := packages.Load(&packages.Config{
				Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo,
				Dir:  root,
				Env:  append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0"),
			}, ".")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			packages.Visit(pkgs, nil, func(p *packages.Package) {
				for _, err := range p.Errors {
					t.Errorf("%s: %v", p.PkgPath, err)
				}
				n++
			})
			t.Logf("%d packages type-checked for %s", n, p)
		})
	}
}
