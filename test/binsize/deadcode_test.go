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
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// Dead-method elimination, as the linker does it
// ($(go env GOROOT)/src/cmd/link/internal/ld/deadcode.go): a method of a
// reachable type is kept only if something can call it, directly or
// through an interface whose method it matches. A function that calls
// reflect.Value.Method, reflect.Type.Method, or their MethodByName with a
// name the compiler cannot see (text/template's evalField does) is marked
// ReflectMethod by the compiler; once the linker reaches one, any exported
// method may be called, and it keeps every exported method of every type
// converted to an interface, with all they call. That took the controller
// from 52 to 95 MB once, and nothing failed.
//
// The linker tells which: with -ldflags=-dumpdep it prints each symbol the
// first time it reaches it, as "from -> to", flagged <ReflectMethod> for
// such a function. The test links each binary once, with -dumpdep added to
// make build's flags: that costs no more than the link itself (the
// controller's took 7-8 s with it and 8-16 s without on this 2-core
// machine: the load moves it more than the flag), prints about 20 MB, and
// leaves the binary as it would be (the same size, only the build ID
// differs). So the check is always made, not only when the size is over.

// reflectMethodFlag is how -dumpdep marks a ReflectMethod function.
const reflectMethodFlag = "<ReflectMethod>"

// deps is the linker's reachability graph, as -dumpdep printed it.
type deps struct {
	out []byte
	// Edges counts the lines read: none means -dumpdep printed nothing,
	// or another format, and "no reflect method call" would be a guess.
	Edges int
	// ReflectMethods are the ReflectMethod functions the linker reached.
	ReflectMethods []string
	parent         map[string]string // built on the first Chain
}

// readDeps reads go build's standard error with -ldflags=-dumpdep.
func readDeps(out []byte) (*deps, error) {
	d := &deps{out: out}
	err := eachEdge(out, func(from, to string, reflectMethod bool) {
		d.Edges++
		if reflectMethod && !slices.Contains(d.ReflectMethods, to) {
			d.ReflectMethods = append(d.ReflectMethods, to)
		}
	})
	if err != nil {
		return nil, err
	}
	if d.Edges == 0 {
		return nil, fmt.Errorf("no line of -dumpdep's output reads \"from -> to\": has the linker's flag changed? (cmd/link/internal/ld/deadcode.go)")
	}
	slices.Sort(d.ReflectMethods)
	return d, nil
}

// eachEdge calls f for each "from -> to" line, their flags removed. The
// lines of DWARF's symbols (" -> go:info...") have no from: skipped.
func eachEdge(out []byte, f func(from, to string, reflectMethod bool)) error {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20) // an unnamed struct's name can be long
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " -> ")
		if !ok || from == "" {
			continue
		}
		to, reflectMethod := symbolFlags(to)
		from, _ = symbolFlags(from)
		f(from, to, reflectMethod)
	}
	return sc.Err()
}

// symbolFlags strips the flags -dumpdep appends to a name, in its order
// (<UsedInIface> then <ReflectMethod>): only those two, as a name may hold
// " <" itself (func() <-chan int).
func symbolFlags(s string) (name string, reflectMethod bool) {
	s, reflectMethod = strings.CutSuffix(s, reflectMethodFlag)
	s = strings.TrimSuffix(s, "<UsedInIface>")
	return strings.TrimSuffix(s, " "), reflectMethod
}

// Chain is how the linker reached sym: from a root (the entry point, the
// package inits) to sym, each symbol the one that made the next reachable.
func (d *deps) Chain(sym string) []string {
	if d.parent == nil {
		d.parent = map[string]string{}
		_ = eachEdge(d.out, func(from, to string, _ bool) { d.parent[to] = from })
	}
	chain := []string{sym}
	for s := sym; len(chain) < 200; {
		p, ok := d.parent[s]
		if !ok || p == "_" {
			break
		}
		chain = append(chain, p)
		s = p
	}
	slices.Reverse(chain)
	return chain
}

// describeReflectMethods says which reflect method calls the linker
// reached, and how, for a failure's message. Once one is reached, the
// linker keeps every exported method of every type converted to an
// interface, and those reach more (reflect.(*Value).Method, kept for
// reflect.Value's sake): the calls reached without such a method on their
// way are the causes, each shown with its chain; the others are named (a
// cause reached through an interface's method looks like them). With none
// of the first kind, the first one the linker reached is shown: it was
// reached before the elimination went off.
func describeReflectMethods(d *deps, syms []string) string {
	var causes, others []string
	for _, s := range syms {
		if keptForItsType(d.Chain(s)) {
			others = append(others, s)
		} else {
			causes = append(causes, s)
		}
	}
	if len(causes) == 0 {
		first := d.first(syms)
		causes = []string{first}
		others = slices.DeleteFunc(slices.Clone(syms), func(s string) bool { return s == first })
	}
	var b strings.Builder
	for _, s := range causes {
		fmt.Fprintf(&b, "  %s, reached by:\n      %s\n", s, strings.Join(d.Chain(s), "\n    → "))
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "  and %d more, reached through methods kept for their types (likely because of the above): %s",
			len(others), strings.Join(others[:min(3, len(others))], ", "))
		if len(others) > 3 {
			b.WriteString(", ...")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// keptForItsType: the chain holds an exported method that the linker
// marked from its type's descriptor (type:T -> pkg.T.M), which it does for
// a method an interface call may reach or, with a reflect method call
// reached, for any exported one.
func keptForItsType(chain []string) bool {
	for i := 1; i < len(chain); i++ {
		if !strings.HasPrefix(chain[i-1], "type:") || strings.HasPrefix(chain[i], "type:") {
			continue
		}
		m := chain[i][strings.LastIndexByte(chain[i], '.')+1:]
		if m != "" && unicode.IsUpper([]rune(m)[0]) {
			return true
		}
	}
	return false
}

// first is which of syms the linker reached first.
func (d *deps) first(syms []string) string {
	first := ""
	_ = eachEdge(d.out, func(_, to string, reflectMethod bool) {
		if first == "" && reflectMethod && slices.Contains(syms, to) {
			first = to
		}
	})
	return first
}

// TestDeadMethodElimination: neither binary reaches a reflect method call
// that the baseline did not accept (today: none), so the linker drops the
// methods nothing calls.
func TestDeadMethodElimination(t *testing.T) {
	if testing.Short() {
		t.Skip("links both binaries (-short)")
	}
	base := readBaseline(t)
	for _, b := range built(t) {
		t.Run(b.name, func(t *testing.T) {
			known := base.Binaries[b.name].ReflectMethods
			var unknown []string
			for _, s := range b.deps.ReflectMethods {
				if !slices.Contains(known, s) {
					unknown = append(unknown, s)
				}
			}
			if len(unknown) > 0 {
				t.Errorf("the %s's link reaches a reflect method call, so the linker keeps every exported method of every type "+
					"converted to an interface (dead-method elimination is off):\n%s"+
					"Call the method directly, through an interface, or by a constant MethodByName name; or cut the dependency that does it. "+
					"If it must stay, justify it in the commit message and accept it in the baseline in that commit:\n"+
					"  go test ./test/binsize -update", b.name, describeReflectMethods(b.deps, unknown))
			}
			for _, s := range known {
				if !slices.Contains(b.deps.ReflectMethods, s) {
					t.Logf("%s: %s is no longer reached; drop it from the baseline: go test ./test/binsize -update", b.name, s)
				}
			}
			if len(b.deps.ReflectMethods) == 0 {
				t.Logf("%s: dead-method elimination is on: the linker reached no reflect method call (%d edges of its graph read)", b.name, b.deps.Edges)
			}
		})
	}
}

// TestReflectMethodSeen proves the check above against the linker itself:
// a program that calls MethodByName with a name known only when it runs is
// found, with main.main on its chain; the same with a constant name is
// not (the compiler tells the linker the name, and elimination stays on).
func TestReflectMethodSeen(t *testing.T) {
	if testing.Short() {
		t.Skip("links two small programs (-short)")
	}
	for _, c := range []struct {
		name, arg string
		want      bool
	}{
		{"a name known when it runs", "os.Args[0]", true},
		{"a constant name", `"Hello"`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := "package main\n\nimport (\n\t\"os\"\n\t\"reflect\"\n)\n\ntype T struct{}\n\nfunc (T) Hello() {}\n\n" +
				"func main() {\n\tif !reflect.ValueOf(T{}).MethodByName(" + c.arg + ").IsValid() {\n\t\tos.Exit(1)\n\t}\n}\n"
			for name, data := range map[string]string{"go.mod": "module probe\n\ngo 1.26\n", "main.go": src} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", filepath.Join(dir, "probe"), ".")
			cmd.Dir, cmd.Env = dir, append(buildEnv(), "GOWORK=off")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("go build: %v\n%s", err, tail(stderr.Bytes()))
			}
			d, err := readDeps(stderr.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(d.ReflectMethods, "main.main"); got != c.want {
				t.Fatalf("main.main among the reflect method calls reached: %v, want %v (all: %v)", got, c.want, d.ReflectMethods)
			}
			if c.want && !slices.Contains(d.Chain("main.main"), "runtime.main") {
				t.Errorf("the chain to main.main does not go through runtime.main: %v", d.Chain("main.main"))
			}
		})
	}
}

// TestReadDeps: the flags are stripped from both ends, the DWARF lines
// (no from) skipped, and the chain follows each symbol's first reacher.
func TestReadDeps(t *testing.T) {
	out := "# example.com/x\n" +
		"_ -> _rt0_amd64_linux\n" +
		"_ -> go:main.inittasks\n" +
		"go:main.inittasks -> text/template..inittask\n" +
		"_rt0_amd64_linux -> runtime.main\n" +
		"runtime.main -> main.main\n" +
		"main.main -> text/template.(*Template).Execute\n" +
		"text/template.(*Template).Execute -> text/template.(*state).evalField <ReflectMethod>\n" +
		"type:func() <-chan int <UsedInIface> -> type:*func() <-chan int <UsedInIface>\n" +
		"text/template.(*state).evalField <ReflectMethod> -> reflect.Value.MethodByName\n" +
		" -> go:info.text/template.FuncMap\n"
	d, err := readDeps([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"text/template.(*state).evalField"}; !slices.Equal(d.ReflectMethods, want) {
		t.Errorf("ReflectMethods = %q, want %q", d.ReflectMethods, want)
	}
	if d.Edges != 9 {
		t.Errorf("Edges = %d, want 9", d.Edges)
	}
	want := []string{"_rt0_amd64_linux", "runtime.main", "main.main", "text/template.(*Template).Execute", "text/template.(*state).evalField"}
	if got := d.Chain("text/template.(*state).evalField"); !slices.Equal(got, want) {
		t.Errorf("Chain = %q, want %q", got, want)
	}
	if got := d.Chain("type:*func() <-chan int"); !slices.Equal(got, []string{"type:func() <-chan int", "type:*func() <-chan int"}) {
		t.Errorf("a name with \" <\" in it: Chain = %q", got)
	}
	if _, err := readDeps([]byte("# example.com/x\n")); err == nil {
		t.Error("no edges read: want an error, not \"no reflect method call\"")
	}
}
