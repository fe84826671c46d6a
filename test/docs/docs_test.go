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

// Package docs checks the docs as a reader would use them: every name they
// give can be found, every command they show can be typed, and the Chinese
// files say the same things in the same order. The metrics they name and
// kubectl's flags in their commands are checked in test/e2e
// (docs_test.go), where a controller and kubectl run; the kubectl commands
// run there too.
//
//	go test ./test/docs   (make verify-docs; make test-unit runs it too)
//
// It may import internal/docscheck of this repository; it reads the rest as
// files (and go list).
package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"example.com/appservice-controller/internal/docscheck"
)

// TestMain runs the checks from the repository's top, where the docs'
// paths, commands and make targets start.
func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// translations pairs each English doc with its Chinese translation.
var translations = map[string]string{
	"README.md":                  "README.zh-CN.md",
	"docs/spec.md":               "docs/zh-CN/spec.md",
	"docs/activity.md":           "docs/zh-CN/activity.md",
	"docs/production.md":         "docs/zh-CN/production.md",
	"docs/flags.md":              "docs/zh-CN/flags.md",
	"docs/testing.md":            "docs/zh-CN/testing.md",
	"docs/benchmarks.md":         "docs/zh-CN/benchmarks.md",
	"docs/layout.md":             "docs/zh-CN/layout.md",
	"docs/how-it-works.md":       "docs/zh-CN/how-it-works.md",
	"docs/design.md":             "docs/zh-CN/design.md",
	"docs/from-the-tutorials.md": "docs/zh-CN/from-the-tutorials.md",
	"docs/canary.md":             "docs/zh-CN/canary.md",
	"docs/monitoring.md":         "docs/zh-CN/monitoring.md",
	"docs/plugin.md":             "docs/zh-CN/plugin.md",
	"docs/notifications.md":      "docs/zh-CN/notifications.md",
}

// docFiles are the Markdown files a user reads: the top level's and docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := docscheck.Files(".")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestDocsTranslations(t *testing.T) {
	for en, zh := range translations {
		orig, err := docscheck.Read(en)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := docscheck.Read(zh)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range docscheck.CompareTranslation(orig, tr) {
			t.Error(p)
		}
		// Each links to the other, so a reader finds the language they read.
		for _, pair := range [][2]*docscheck.Doc{{orig, tr}, {tr, orig}} {
			rel, _ := filepath.Rel(filepath.Dir(pair[0].Path), pair[1].Path)
			if !contains(pair[0].Links, filepath.ToSlash(rel)) {
				t.Errorf("%s does not link to %s", pair[0].Path, rel)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The packages the docs may name identifiers of, by the name Go code
// imports them as.
var docPackages = map[string]string{
	"cache":            "k8s.io/client-go/tools/cache",
	"workqueue":        "k8s.io/client-go/util/workqueue",
	"record":           "k8s.io/client-go/tools/record",
	"leaderelection":   "k8s.io/client-go/tools/leaderelection",
	"resourcelock":     "k8s.io/client-go/tools/leaderelection/resourcelock",
	"informers":        "k8s.io/client-go/informers",
	"metadatainformer": "k8s.io/client-go/metadata/metadatainformer",
	"kubernetes":       "k8s.io/client-go/kubernetes",
	"rest":             "k8s.io/client-go/rest",
	"meta":             "k8s.io/apimachinery/pkg/api/meta",
	"metav1":           "k8s.io/apimachinery/pkg/apis/meta/v1",
	"equality":         "k8s.io/apimachinery/pkg/api/equality",
	"apierrors":        "k8s.io/apimachinery/pkg/api/errors",
	"wait":             "k8s.io/apimachinery/pkg/util/wait",
	"klog":             "k8s.io/klog/v2",
	"status":           "sigs.k8s.io/cli-utils/pkg/kstatus/status",
	"children":         "example.com/appservice-controller/internal/children",
	"metrics":          "example.com/appservice-controller/internal/metrics",
	"controllerutil":   "sigs.k8s.io/controller-runtime/pkg/controller/controllerutil",
	"owner":            "example.com/appservice-controller/internal/owner",
	"syncerr":          "example.com/appservice-controller/internal/syncerr",
	"appstatus":        "example.com/appservice-controller/internal/appstatus",
	"activity":         "example.com/appservice-controller/internal/activity",
	"canary":           "example.com/appservice-controller/internal/canary",
	"appcache":         "example.com/appservice-controller/internal/appcache",
	"configrollout":    "example.com/appservice-controller/internal/configrollout",
	"leader":           "example.com/appservice-controller/internal/leader",
	"servers":          "example.com/appservice-controller/internal/servers",
	"appv1":            "example.com/appservice-controller/pkg/apis/app/v1",
	"notify":           "example.com/appservice-controller/internal/notify",
	"unique":           "unique",
}

func TestDocsNames(t *testing.T) {
	repo := declarations(t, repoGoFiles(t)...)
	libs := map[string]map[string]string{}
	lib := func(pkg string) map[string]string {
		if d, ok := libs[pkg]; ok {
			return d
		}
		path, ok := docPackages[pkg]
		if !ok {
			return nil
		}
		out, err := exec.Command("go", "list", "-f", "{{.Dir}}", path).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", path, err)
		}
		files, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "*.go"))
		var sources []string
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				sources = append(sources, f)
			}
		}
		libs[pkg] = declarations(t, sources...)
		return libs[pkg]
	}
	flags := controllerFlags(t)
	targets := makeTargets(t)

	for _, file := range docFiles(t) {
		doc, err := docscheck.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, span := range doc.Spans {
			n := docscheck.Classify(span, ".")
			var problem string
			switch n.Kind {
			case docscheck.File:
				problem = fileProblem(n.Parts[0])
			case docscheck.Func:
				if !declaresFunc(repo, n.Parts[0], n.Parts[1]) {
					problem = "no such function or method in this repository"
				}
			case docscheck.Ident:
				problem = identProblem(lib(n.Parts[0]), n.Parts)
			case docscheck.Flag:
				if !flags[n.Parts[0]] {
					problem = "the controller has no such flag (another program's flag belongs in its command)"
				}
			case docscheck.Make:
				problem = targetsProblem(targets, n.Parts)
			case docscheck.Kubectl:
				problem = commandProblem(append([]string{"kubectl"}, n.Parts...), targets, flags)
			}
			if problem != "" {
				t.Errorf("%s: `%s`: %s", file, span, problem)
			}
		}
		for _, b := range doc.Blocks {
			for _, cmd := range docscheck.Commands(b) {
				if problem := commandProblem(cmd, targets, flags); problem != "" {
					t.Errorf("%s:%d: %s: %s", file, b.Line, strings.Join(cmd, " "), problem)
				}
			}
		}
		for _, link := range doc.Links {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "#") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, _, _ := strings.Cut(link, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), target)); err != nil {
				t.Errorf("%s: link %s: %v", file, link, err)
			}
		}
	}
}

// declaresFunc: `Type.Method()` is that method; `name()` a function or a
// method of any type, as a reader says `syncHandler()`.
func declaresFunc(decls map[string]string, typ, name string) bool {
	if typ != "" {
		return decls[typ+"."+name] == "method"
	}
	if decls[name] == "func" {
		return true
	}
	for k, kind := range decls {
		if _, method, ok := strings.Cut(k, "."); ok && method == name && kind == "method" {
			return true
		}
	}
	return false
}

// repoGoFiles lists the repository's Go files, generated ones included.
func repoGoFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "_output" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// declarations maps the top-level names declared in the files, and
// "Type.Method" for methods and interface methods, to their kind: "func",
// "type", "var", "const" or "method".
func declarations(t *testing.T, files ...string) map[string]string {
	t.Helper()
	decls := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					decls[d.Name.Name] = "func"
					continue
				}
				decls[receiverType(d.Recv.List[0].Type)+"."+d.Name.Name] = "method"
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						decls[s.Name.Name] = "type"
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, name := range m.Names {
									decls[s.Name.Name+"."+name.Name] = "method"
								}
								if embedded, ok := m.Type.(*ast.Ident); ok && len(m.Names) == 0 {
									decls[s.Name.Name+"^"+embedded.Name] = "embeds"
								}
							}
						}
					case *ast.ValueSpec:
						for _, name := range s.Names {
							decls[name.Name] = d.Tok.String()
						}
					}
				}
			}
		}
	}
	return decls
}

func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// identProblem checks pkg.Name or pkg.Type.Method against the package's
// declarations. A method is looked for on the type and the interfaces it
// embeds; on a variable it is not checked (its type lives elsewhere).
func identProblem(decls map[string]string, parts []string) string {
	if decls == nil {
		return "unknown package: name it in docPackages (test/docs/docs_test.go) to have it checked"
	}
	kind, ok := decls[parts[1]]
	if !ok {
		return "the package declares no " + parts[1]
	}
	if parts[2] == "" || kind != "type" {
		return ""
	}
	for todo := []string{parts[1]}; len(todo) > 0; todo = todo[1:] {
		if decls[todo[0]+"."+parts[2]] == "method" {
			return ""
		}
		for k := range decls {
			if embedder, embedded, ok := strings.Cut(k, "^"); ok && embedder == todo[0] {
				todo = append(todo, embedded)
			}
		}
	}
	return parts[1] + " has no method " + parts[2]
}

func fileProblem(path string) string {
	if !strings.Contains(path, "/") {
		found := false
		_ = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == path {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		if !found {
			return "no file of that name in the repository"
		}
		return ""
	}
	if _, err := os.Stat(strings.TrimSuffix(path, "/")); err != nil {
		return "no such file or folder"
	}
	return ""
}

// goFlagRE matches a flag in the help of Go's flag package: "  -name" at
// the start of a line, then its value's type or the usage.
var goFlagRE = regexp.MustCompile(`(?m)^  -([a-zA-Z0-9][\w.-]*)`)

// controllerFlags are the flags the controller's binary accepts, read from
// its -help as a user would read them.
func controllerFlags(t *testing.T) map[string]bool {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "appservice-controller")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// -help exits 0 after printing the flags to standard error.
	help, err := exec.Command(bin, "-help").CombinedOutput()
	if err != nil {
		t.Fatalf("appservice-controller -help: %v\n%s", err, help)
	}
	flags := map[string]bool{}
	for _, m := range goFlagRE.FindAllStringSubmatch(string(help), -1) {
		flags[m[1]] = true
	}
	if !flags["kubeconfig"] || !flags["leader-elect"] {
		t.Fatalf("no -kubeconfig or -leader-elect in the controller's -help:\n%s", help)
	}
	return flags
}

var targetRE = regexp.MustCompile(`(?m)^([a-zA-Z][\w-]*):`)

func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range targetRE.FindAllStringSubmatch(string(data), -1) {
		targets[m[1]] = true
	}
	return targets
}

func targetsProblem(targets map[string]bool, names []string) string {
	for _, name := range names {
		if !targets[name] {
			return "the Makefile has no target " + name
		}
	}
	return ""
}

// commandProblem checks what can be checked of a command without running
// it: make's targets, a script's or go run's path, the controller's flags
// after `go run .`, the files given to kubectl -f.
func commandProblem(cmd []string, targets map[string]bool, flags map[string]bool) string {
	switch {
	case cmd[0] == "make":
		return targetsProblem(targets, docscheck.MakeTargets(cmd[1:]))
	case strings.HasPrefix(cmd[0], "./"):
		info, err := os.Stat(cmd[0])
		if err != nil || info.Mode()&0o111 == 0 {
			return "no such executable in the repository"
		}
	case cmd[0] == "go" && len(cmd) > 2 && cmd[1] == "run":
		if _, err := os.Stat(cmd[2]); err != nil {
			return "go run: no such package folder"
		}
		if cmd[2] != "." {
			return ""
		}
		for _, arg := range cmd[3:] {
			name := strings.TrimLeft(arg, "-")
			name, _, _ = strings.Cut(name, "=")
			if strings.HasPrefix(arg, "-") && !flags[name] {
				return "the controller has no flag " + arg
			}
		}
	case cmd[0] == "kubectl":
		for i, arg := range cmd {
			if (arg == "-f" || arg == "--filename") && i+1 < len(cmd) {
				if n := docscheck.Classify(cmd[i+1], "."); n.Kind == docscheck.File {
					if p := fileProblem(n.Parts[0]); p != "" {
						return cmd[i+1] + ": " + p
					}
				}
			}
		}
	}
	return ""
}

// layoutTables are the layout guides' tables of the repository's layout, by
// their header row.
var layoutTables = map[string]string{
	"docs/layout.md":       "| file | what |",
	"docs/zh-CN/layout.md": "| 文件 | 内容 |",
}

// buildOutputs are the folders builds write to at the top (.gitignore keeps
// them out of git).
var buildOutputs = map[string]bool{"bin": true, "_output": true, "dist": true}

var codeSpanRE = regexp.MustCompile("`([^`]+)`")

// TestDocsLayout: the layout guide's table (docs/layout.md, linked from the
// README's guides) names every source file at the top, every folder there,
// and every package under internal/ and test/, so that a reader finds each
// room. (TestDocsNames checks that what it names exists.)
func TestDocsLayout(t *testing.T) {
	var want []string
	top, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".") || buildOutputs[name]:
		case e.IsDir():
			want = append(want, name)
		case strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"):
			want = append(want, name)
		}
	}
	for _, dir := range []string{"internal", "test"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				want = append(want, dir+"/"+e.Name())
			}
		}
	}
	for file, header := range layoutTables {
		named := layoutNames(t, file, header)
		for _, w := range want {
			if !named[w] {
				t.Errorf("%s: the layout table does not name %s", file, w)
			}
		}
	}
}

// layoutNames reads the code spans of the first column of the table that
// starts with header, and each path's leading folders, so that
// `hack/localcluster` names hack too.
func layoutNames(t *testing.T, file, header string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, table, found := strings.Cut(string(data), "\n"+header+"\n")
	if !found {
		t.Fatalf("%s: no table headed %s", file, header)
	}
	named := map[string]bool{}
	for line := range strings.SplitSeq(table, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range codeSpanRE.FindAllStringSubmatch(first, -1) {
			path := strings.TrimSuffix(m[1], "/")
			for p := path; p != "."; p = filepath.Dir(p) {
				named[p] = true
			}
		}
	}
	return named
}
