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

package docs

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the repository's module path.
const module = "example.com/appservice-controller/"

// mayImport is what each package's doc comment says it may import of this
// repository (its non-test code; pkg/generated/... stands for every
// generated package). A package not named here may import anything but the
// test helpers below. The layout guide (docs/layout.md) says why: the root
// is the AppService's controller; what both owner kinds share is in
// internal/owner, which imports neither; each other kind is a package of
// its own that only main.go imports. The tests' own packages (test/...)
// may import anything.
var mayImport = map[string][]string{
	"internal/owner":         {"internal/children", "internal/metrics", "internal/syncerr", "pkg/apis/app/v1"},
	"internal/activity":      {"internal/owner", "internal/syncerr", "internal/children", "pkg/apis/app/v1", "pkg/generated/..."},
	"internal/syncerr":       {"pkg/apis/app/v1"},
	"internal/appstatus":     {"internal/canary", "internal/children", "internal/plural", "internal/syncerr", "pkg/apis/app/v1"},
	"internal/children":      {"pkg/apis/app/v1"},
	"internal/appcache":      {"internal/children", "pkg/apis/app/v1", "pkg/generated/..."},
	"internal/configrollout": {"pkg/apis/app/v1"},
	"internal/canary":        {"internal/plural", "pkg/apis/app/v1"},
	"internal/plural":        {},
	"internal/crdbudget":     {},
	"internal/fixtures":      {"pkg/apis/app/v1"},
	"internal/metrics":       {"internal/version", "internal/children", "pkg/apis/app/v1", "pkg/generated/..."},
	"internal/leader":        {},
	"internal/servers":       {},
	"internal/version":       {},
	"internal/argocdhealth":  {},
	"internal/docscheck":     {},
	"internal/localcluster":  {},
	"internal/harness":       {"internal/localcluster", "pkg/generated/..."},
	"pkg/apis/app":           {},
	"pkg/apis/app/v1":        {"pkg/apis/app"},
	"hack/crdtrim":           {"pkg/apis/app/v1"},
	"hack/demo":              {"internal/notify", "internal/promtest"},
	"hack/image":             {},
	"hack/localcluster":      {"internal/localcluster"},
	"hack/krew":              {},
	"cmd/kubectl-appservice": {"internal/plugin"},
	"internal/plugin": {"internal/analysis", "internal/canary", "internal/children", "internal/dashboard", "internal/notify", "internal/version",
		"pkg/apis/app/v1", "pkg/generated/..."},
	"internal/notify":    {"internal/canary", "internal/metrics", "internal/plural", "pkg/apis/app/v1", "pkg/generated/..."},
	"internal/dashboard": {},
}

// testHelpers are packages for tests and tools only: the controller's
// binary never links them.
var testHelpers = []string{"internal/fixtures", "internal/harness", "internal/localcluster", "internal/docscheck", "internal/argocdhealth"}

// TestDocsImports holds every package to what its doc comment says it may
// import, so that the rooms of the layout stay apart: the owner machinery
// never reaches into a kind, a kind never into another or into the root,
// and the controller never links a test helper.
func TestDocsImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), strings.TrimSuffix(module, "/"))
		if pkg == "" {
			pkg = "."
		}
		allowed, ruled := mayImport[pkg]
		checked[pkg] = ruled
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			switch {
			case strings.HasPrefix(pkg, "pkg/generated/"):
			case ruled && !allows(allowed, dep):
				t.Errorf("%s imports %s; its doc comment allows only %v", pkg, dep, allowed)
			case !ruled && !strings.HasPrefix(pkg, "test/") && slices.Contains(testHelpers, dep) && !strings.HasPrefix(pkg, "hack/"):
				t.Errorf("%s imports %s, a helper for tests and tools only", pkg, dep)
			case dep == "internal/activity" && pkg != ".":
				t.Errorf("%s imports internal/activity: only main.go wires an owner kind's controller", pkg)
			}
		}
	}
	for pkg := range mayImport {
		if _, ok := checked[pkg]; !ok {
			t.Errorf("mayImport names %s, which go list does not list: rename or remove it", pkg)
		}
	}
}

// allows reports whether dep is among allowed, where "x/..." allows x's
// subpackages.
func allows(allowed []string, dep string) bool {
	for _, a := range allowed {
		if a == dep {
			return true
		}
		if prefix, ok := strings.CutSuffix(a, "..."); ok && strings.HasPrefix(dep, prefix) {
			return true
		}
	}
	return false
}

// notLinked are modules the controller's binary must not link, and why:
// each is big for the little the controller would use of it, and an idle
// controller's memory is mostly its binary's mapped pages (BENCHMARKS.md,
// "The peer"). k8s.io/apiserver's healthz, delegating authentication and
// authorization and certificate reloader (for -metrics-secure) bring CEL,
// gRPC and OpenTelemetry's SDK along, 255 packages that doubled the binary;
// internal/servers speaks the same protocols itself. controller-runtime is
// the benchmark's peer (test/bench/peer), not a dependency. k8s.io/cli-runtime
// is the kubectl plugin's (cmd/kubectl-appservice), with the kustomize it
// brings along: the controller never links the plugin.
var notLinked = []string{"k8s.io/apiserver", "github.com/google/cel-go", "google.golang.org/grpc",
	"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "sigs.k8s.io/controller-runtime",
	"k8s.io/cli-runtime", "sigs.k8s.io/kustomize"}

// TestBinaryDependencies holds the controller's binary to notLinked.
func TestBinaryDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for dep := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		for _, m := range notLinked {
			if dep == m || strings.HasPrefix(dep, m+"/") {
				t.Errorf("the controller links %s (of %s): see notLinked for why it must not; `go mod why -m %s` says who brings it", dep, m, m)
			}
		}
	}
}

// TestFuzzBuildsShare: fuzzing instruments every package a test binary
// links, so on a new machine each fuzzed package's test binary and all it
// links are compiled once more, instrumented (make test-fuzz). FuzzStatus
// may link beyond what FuzzBuilders links only packages of this
// repository: in the root package it linked client-go's informers, the
// workqueue and the Prometheus client besides, minutes of compiling.
func TestFuzzBuildsShare(t *testing.T) {
	deps := func(pkg string) map[string]bool {
		out, err := exec.Command("go", "list", "-deps", "-test", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps -test %s: %v", pkg, err)
		}
		set := map[string]bool{}
		for dep := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
			set[dep] = true
		}
		return set
	}
	builders := deps("./internal/children")
	for dep := range deps("./internal/appstatus") {
		first, _, _ := strings.Cut(dep, "/")
		std := !strings.Contains(first, ".")
		if !builders[dep] && !std && !strings.HasPrefix(dep, module) {
			t.Errorf("FuzzStatus's test binary links %s, which FuzzBuilders's does not: instrumented, it is compiled for the fuzzing alone", dep)
		}
	}
}

// raceBuildLeavesOut are modules that the tests make test runs under the
// race detector (RACE_PKGS in the Makefile: the root, internal/... and
// cmd/...) must not link: the API server's, which only TestCRDIsValid
// needs, the API server's own validation of a CRD. That build compiles
// every package it links once more, and these are about 220 packages (a
// minute and a half of a new machine's two cores); TestCRDIsValid lives in
// test/crd, whose build, without the race detector, test/admission and
// test/e2e share.
var raceBuildLeavesOut = []string{"k8s.io/apiserver", "github.com/google/cel-go", "google.golang.org/grpc",
	"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters"}

// TestRaceBuildLeavesOutTheServer holds the race detector's packages and
// their tests to raceBuildLeavesOut.
func TestRaceBuildLeavesOutTheServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", ".", "./internal/...", "./cmd/...").Output()
	if err != nil {
		t.Fatalf("go list -deps -test: %v", err)
	}
	linked := map[string][]string{}
	for dep := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		for _, m := range raceBuildLeavesOut {
			if dep == m || strings.HasPrefix(dep, m+"/") {
				linked[m] = append(linked[m], dep)
			}
		}
	}
	for _, m := range raceBuildLeavesOut {
		if deps := linked[m]; len(deps) > 0 {
			t.Errorf("a test run under the race detector links %d packages of %s (%s, ...): move the test that needs them out of RACE_PKGS, "+
				"as TestCRDIsValid is in test/crd; `go list -deps -test` on RACE_PKGS says which", len(deps), m, deps[0])
		}
	}
}
