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

// Package binsize guards the size of the two binaries, the controller and
// the kubectl plugin. A library that brought in text/template once took
// the controller from 52 to 95 MB, and only a benchmark's row showed it:
// here a test fails instead, naming the packages that grew and whether the
// linker stopped dropping the methods nothing calls (deadcode_test.go).
//
//	go test ./test/binsize          (make test-unit runs it; -short skips it)
//	go test ./test/binsize -update  (a deliberate new baseline)
//	go test ./test/binsize -run Why -why 'kustomize.*Filter' -v
//
// It builds both binaries as make build does, with the linker's graph
// (-ldflags=-dumpdep) beside them: about 20 s on 2 cores with a warm build
// cache.
package binsize

import (
	"cmp"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// marginPercent sets each binary's ceiling: its size in the baseline plus
// 10%, that is 5.2 MB for the controller (52.3 MB) and 4.2 MB for the
// plugin (42.2 MB). What the test is for costs more than that: the linker
// keeping every exported method took the controller +42 MB (+81%, with
// text/template's Execute linked in), k8s.io/apiserver's authentication
// had doubled it (BENCHMARKS.md, "Where an idle controller's memory
// went"), gRPC, OpenTelemetry's SDK or CEL each weigh several MB. Ordinary
// work weighs less: a feature of this repository tens to hundreds of kB,
// all of client-go's typed clients in the plugin 243 kB, kustomize and the
// 89 other packages k8s.io/cli-runtime's resource builder brings to the
// plugin 1 MB. A series of them fits before a refresh, whose diff then
// shows what they cost together; a tighter margin would fail on ordinary
// work and teach people to refresh without looking. A loss of dead-method
// elimination fails on its own, whatever it costs
// (TestDeadMethodElimination).
const marginPercent = 10

// why names symbols whose path from the linker's roots to log.
var why = flag.String("why", "", "log how the linker reaches the symbols matching this regular expression (TestWhy)")

// TestBinarySize: neither binary is larger than its ceiling. Sizes depend
// on the Go release and the platform as much as on the code. Within the
// baseline's release (go1.26.x) the ceiling holds: a patch release fixes
// bugs and moves sizes by little. Under another release or platform, the
// test says so and checks nothing: the commit that moves the toolchain
// refreshes the baseline, and its diff shows what the new Go costs.
func TestBinarySize(t *testing.T) {
	if testing.Short() {
		t.Skip("links both binaries (-short)")
	}
	bins := built(t)
	tc := builtWith
	if *update {
		writeBaseline(t, tc, bins)
		for _, b := range bins {
			t.Logf("%s: %s recorded in %s", b.name, mb(b.Size), baselineFile)
			if len(b.deps.ReflectMethods) > 0 {
				t.Logf("%s: dead-method elimination is OFF, accepted in the baseline:\n%s", b.name, describeReflectMethods(b.deps, b.deps.ReflectMethods))
			}
		}
		return
	}
	base := readBaseline(t)
	for _, b := range bins {
		t.Run(b.name, func(t *testing.T) {
			was, ok := base.Binaries[b.name]
			if !ok {
				t.Fatalf("%s has no %s: go test ./test/binsize -update", baselineFile, b.name)
			}
			if release(base.Go) != release(tc.GOVERSION) || base.Platform != tc.platform() {
				t.Skipf("%s: %s on %s, the baseline's was measured with %s on %s; another release or platform makes another binary. "+
					"The commit that moves the toolchain refreshes it: go test ./test/binsize -update", b.name, tc.GOVERSION, tc.platform(), base.Go, base.Platform)
			}
			ceiling := was.Size + was.Size*marginPercent/100
			t.Logf("%s: %s, baseline %s (%s), ceiling %s", b.name, mb(b.Size), mb(was.Size), signed(b.Size-was.Size), mb(ceiling))
			if b.Size > ceiling {
				t.Fatalf("%s", overCeiling(b, was, ceiling, base))
			}
			if grew := growth(was.Packages, b.Packages); grew != "" && b.Size != was.Size {
				t.Logf("%s: the packages that grew most:\n%s", b.name, grew)
			}
		})
	}
}

// overCeiling is the failure's message: how much, what grew, and whether
// the linker still drops the methods nothing calls.
func overCeiling(b *binary, was measure, ceiling int64, base baseline) string {
	var s strings.Builder
	fmt.Fprintf(&s, "the %s's binary is %s, over its ceiling of %s (%s in %s, with %s, + %d%%): %s.\n",
		b.name, mb(b.Size), mb(ceiling), mb(was.Size), baselineFile, base.Go, marginPercent, signed(b.Size-was.Size))
	if len(b.deps.ReflectMethods) == 0 {
		s.WriteString("Dead-method elimination is on: the linker reached no reflect method call.\n")
	} else {
		fmt.Fprintf(&s, "Dead-method elimination is OFF: the linker keeps every exported method of every type converted to an interface, as it reached a reflect method call:\n%s",
			describeReflectMethods(b.deps, b.deps.ReflectMethods))
	}
	fmt.Fprintf(&s, "The packages that grew most (their symbols' bytes; go list -deps %s and go mod why say who brings a new one):\n%s",
		b.pkg, growth(was.Packages, b.Packages))
	fmt.Fprintf(&s, "The sections that grew most: %s.\n", sectionGrowth(was.Sections, b.Sections))
	s.WriteString(refresh)
	return s.String()
}

// growth lists the 10 packages that grew most, in bytes, "" if none grew.
func growth(was, now map[string]int64) string {
	type row struct {
		pkg   string
		delta int64
	}
	var rows []row
	for pkg, n := range now {
		if d := n - was[pkg]; d > 0 {
			rows = append(rows, row{pkg, d})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(b.delta, a.delta), cmp.Compare(a.pkg, b.pkg)) })
	var s strings.Builder
	for _, r := range rows[:min(10, len(rows))] {
		from := amount(was[r.pkg])
		if _, ok := was[r.pkg]; !ok {
			from = "new"
		}
		fmt.Fprintf(&s, "  %10s  %s (%s → %s)\n", signed(r.delta), r.pkg, from, amount(now[r.pkg]))
	}
	return s.String()
}

// sectionGrowth: which parts of the file grew, the largest first. Type
// descriptors (.rodata) and the pc-value tables (.gopclntab) belong to no
// symbol; a loss of dead-method elimination grows them with .text.
func sectionGrowth(was, now map[string]int64) string {
	var names []string
	for name, n := range now {
		if n > was[name] {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(now[b]-was[b], now[a]-was[a]) })
	var parts []string
	for _, name := range names[:min(5, len(names))] {
		parts = append(parts, name+" "+signed(now[name]-was[name]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// TestWhy logs how the linker reached each symbol that -why matches (10
// per binary at most), for a question the failure leaves open: why is
// this package still linked? A package reached only through its init
// shows go:main.inittasks, the inits of every imported package: then go
// mod why, or go list -deps, says who imports it.
func TestWhy(t *testing.T) {
	if *why == "" {
		t.Skip("no -why")
	}
	re, err := regexp.Compile(*why)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range built(t) {
		found := 0
		_ = eachEdge(b.deps.out, func(_, to string, _ bool) {
			if found < 10 && re.MatchString(to) {
				found++
				t.Logf("%s: %s", b.name, strings.Join(b.deps.Chain(to), "\n    → "))
			}
		})
		if found == 0 {
			t.Logf("%s: the linker reaches no symbol matching %q", b.name, *why)
		}
	}
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// amount is a package's size, in the unit that reads best.
func amount(n int64) string { return strings.TrimPrefix(signed(n), "+") }

// signed is a change of size, in the unit that reads best.
func signed(n int64) string {
	switch abs := max(n, -n); {
	case abs >= 1e6:
		return fmt.Sprintf("%+.2f MB", float64(n)/1e6)
	case abs >= 1e3:
		return fmt.Sprintf("%+.1f kB", float64(n)/1e3)
	default:
		return fmt.Sprintf("%+d B", n)
	}
}
