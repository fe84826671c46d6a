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

package binsize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// binary is one of the two binaries, built and measured.
type binary struct {
	name, pkg, file string
	measure
	deps *deps
}

// binaries are what make build builds, under the names the test reports.
var binaries = []binary{
	{name: "controller", pkg: ".", file: "appservice-controller"},
	{name: "plugin", pkg: "./cmd/kubectl-appservice", file: "kubectl-appservice"},
}

// toolchain is the go command's, as go env prints it.
type toolchain struct {
	GOMOD, GOVERSION, GOOS, GOARCH string
}

func (tc toolchain) platform() string { return tc.GOOS + "/" + tc.GOARCH }

// release is the Go release of a version: go1.26 for go1.26.8 and
// go1.26rc1.
func release(version string) string {
	v, ok := strings.CutPrefix(version, "go")
	if !ok {
		return version // devel +abc...: no release
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return version
	}
	minor := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if minor >= 0 {
		parts[1] = parts[1][:minor]
	}
	return "go" + parts[0] + "." + parts[1]
}

var (
	buildOnce sync.Once
	builtBins []*binary
	builtWith toolchain
	buildErr  error
)

// built links both binaries once for all the tests, one after the other
// (the machines that run make test-unit build other packages beside it).
func built(t *testing.T) []*binary {
	t.Helper()
	buildOnce.Do(func() { builtBins, builtWith, buildErr = buildAll(t.TempDir()) })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBins
}

// buildAll builds each binary as make build does, with -dumpdep added
// (deadcode_test.go says why that costs nothing), measures it and reads
// the linker's graph. The binaries are measured at once: only the figures
// are kept.
func buildAll(dir string) ([]*binary, toolchain, error) {
	var tc toolchain
	out, err := goCommand("env", "-json", "GOMOD", "GOVERSION", "GOOS", "GOARCH").Output()
	if err != nil {
		return nil, tc, fmt.Errorf("go env: %w", err)
	}
	if err := json.Unmarshal(out, &tc); err != nil {
		return nil, tc, fmt.Errorf("go env: %w", err)
	}
	root := filepath.Dir(tc.GOMOD)
	ldflags, err := makeLDFlags(root)
	if err != nil {
		return nil, tc, err
	}
	var bins []*binary
	for _, b := range binaries {
		b.file = filepath.Join(dir, b.file)
		cmd := goCommand("build", "-ldflags", ldflags+" -dumpdep", "-o", b.file, b.pkg)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return nil, tc, fmt.Errorf("go build %s: %v\n%s", b.pkg, err, tail(stderr.Bytes()))
		}
		fi, err := os.Stat(b.file)
		if err != nil {
			return nil, tc, err
		}
		if b.measure, err = measureBinary(b.file, fi.Size()); err != nil {
			return nil, tc, err
		}
		if b.deps, err = readDeps(stderr.Bytes()); err != nil {
			return nil, tc, fmt.Errorf("go build -ldflags=-dumpdep %s: %w", b.pkg, err)
		}
		bins = append(bins, &b)
	}
	return bins, tc, nil
}

// makeLDFlags are make build's -ldflags: the version stamp, as a user's
// make build writes it (a few bytes of the size, but the same binary).
// GIT_OPTIONAL_LOCKS=0: the Makefile's git status must not take the
// index's lock from someone committing in the same tree.
func makeLDFlags(root string) (string, error) {
	cmd := exec.Command("make", "-s", "--no-print-directory", "print-ldflags")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("make print-ldflags: %v\n%s", err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out)), nil
}

// goCommand runs go with the build configuration the Makefile exports to
// every build (and hack/build-env.sh to the scripts): static, without the
// checkout's paths. With it, the packages come from the build cache that
// make build, make test and the image fill.
func goCommand(args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Env = buildEnv()
	return cmd
}

func buildEnv() []string {
	goflags := strings.Fields(os.Getenv("GOFLAGS"))
	if !slices.Contains(goflags, "-trimpath") {
		goflags = append(goflags, "-trimpath")
	}
	return append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS="+strings.Join(goflags, " "))
}

// tail is the end of a build's output: with -dumpdep, its start is 20 MB
// of graph before the error.
func tail(out []byte) []byte {
	if len(out) > 4096 {
		return append([]byte("..."), out[len(out)-4096:]...)
	}
	return out
}

func TestRelease(t *testing.T) {
	for v, want := range map[string]string{"go1.26.8": "go1.26", "go1.26": "go1.26", "go1.27rc1": "go1.27", "devel go1.27-abc": "devel go1.27-abc"} {
		if got := release(v); got != want {
			t.Errorf("release(%q) = %q, want %q", v, got, want)
		}
	}
}
