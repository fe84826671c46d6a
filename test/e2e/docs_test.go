//go:build e2e

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

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"

	"example.com/appservice-controller/internal/docscheck"
)

// TestDocsNamesRunning checks what test/docs cannot without
// a running controller and kubectl: every metric the docs name is one the
// controller serves, and every flag in a kubectl command they show is one
// kubectl has.
func TestDocsNamesRunning(t *testing.T) {
	parallel(t)
	docs := readDocs(t)

	t.Run("metrics", func(t *testing.T) {
		ns := newNamespace(t)
		// One AppService synced, so the vectors have series.
		createAppService(t, ns, "docs", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27"})
		waitAvailable(t, ns, "docs", 1)
		served := servedMetrics(scrape(t, ns))
		for _, d := range docs {
			for _, span := range d.Spans {
				n := docscheck.Classify(span, repoRoot)
				if n.Kind != docscheck.Metric {
					continue
				}
				if name := n.Parts[0]; !servesMetric(served, name) {
					t.Errorf("%s: `%s`: the running controller serves no such metric", d.Path, span)
				}
			}
		}
	})

	t.Run("kubectl flags", func(t *testing.T) {
		k := &kubectlFlags{help: map[string]map[string]bool{}, names: map[string]string{}}
		for _, d := range docs {
			var cmds [][]string
			for _, span := range d.Spans {
				if n := docscheck.Classify(span, repoRoot); n.Kind == docscheck.Kubectl {
					cmds = append(cmds, append([]string{"kubectl"}, n.Parts...))
				}
			}
			for _, b := range d.Blocks {
				cmds = append(cmds, docscheck.Commands(b)...)
			}
			for _, cmd := range cmds {
				if cmd[0] != "kubectl" {
					continue
				}
				if problem := k.check(t, cmd[1:]); problem != "" {
					t.Errorf("%s: %s: %s", d.Path, strings.Join(cmd, " "), problem)
				}
			}
		}
	})
}

// TestDocsCommandsRun runs the kubectl commands of the English docs' shell
// blocks, in order, as a reader would type them: in a namespace of their
// own, from the repository's root, with the controller running. Each doc
// starts from the manifest users start from (the docs' nginx-app); after a
// command that writes, the AppServices are let converge, as a reader would
// watch it do. The translations' commands are the same (TestDocsTranslations).
func TestDocsCommandsRun(t *testing.T) {
	parallel(t)
	holdSeedPort(t) // the docs start from the seed manifest
	ns := newNamespace(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := os.ReadFile(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(binDir, "kubectl"), args...)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("config", "set-context", "--current", "--namespace="+ns); err != nil {
		t.Fatalf("kubectl config set-context: %v: %s", err, out)
	}
	ran := 0
	for _, d := range readDocs(t) {
		if strings.Contains(d.Path, "zh-CN") {
			continue
		}
		var cmds [][]string
		for _, b := range d.Blocks {
			for _, cmd := range docscheck.Commands(b) {
				if cmd[0] == "kubectl" {
					cmds = append(cmds, cmd[1:])
				}
			}
		}
		if len(cmds) == 0 {
			continue
		}
		t.Run(d.Path, func(t *testing.T) {
			if out, err := run("apply", "-f", "test/e2e/testdata/seed-appservice.yaml"); err != nil {
				t.Fatalf("kubectl apply the seed: %v: %s", err, out)
			}
			settle(t, ns)
			for _, args := range cmds {
				line := "kubectl " + strings.Join(args, " ")
				if why := notRun(args); why != "" {
					t.Logf("not run: %s: %s", line, why)
					continue
				}
				out, err := run(args...)
				if err != nil {
					t.Errorf("%s: %v\n%s", line, err, out)
					continue
				}
				ran++
				if writes(args) {
					settle(t, ns)
				}
			}
		})
	}
	if ran == 0 {
		t.Error("no command of the docs ran")
	}
}

// notRun says why a command of the docs is not run here, "" to run it.
func notRun(args []string) string {
	for i, a := range args {
		switch {
		case a == "-w" || a == "--watch" || a == "port-forward":
			return "runs until interrupted"
		case a == "-n" && i+1 < len(args) && args[i+1] == controllerNamespace:
			return "about the controller installed by the manifests (TestInstallBundle, TestHelmChart)"
		case a == "-f" && i+1 < len(args) && strings.HasPrefix(args[i+1], "dist/"):
			return "a file make build-installer writes (TestInstallBundle applies it)"
		case a == "-f" && i+1 < len(args) && args[i+1] == "artifacts/examples":
			return "the CRD and every example: TestExamples applies them"
		case a == "clusterrolebinding":
			return "cluster-wide; TestProbesAndMetrics binds the role the same way"
		case a == "-f" && i+1 < len(args) && args[i+1] == "-":
			return "reads the output of the command before it in a pipe; TestArgoCDHealthCheckInstall runs the whole line"
		}
	}
	return ""
}

// writes tells a command that changes the AppService or its children.
func writes(args []string) bool {
	switch args[0] {
	case "apply", "patch", "scale", "delete", "create", "label", "edit", "replace":
		return true
	}
	return false
}

// settle waits until the namespace's AppServices and their children are as
// their specs say (converged in faults_helpers_test.go), as a reader would
// wait before the next command.
func settle(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error { return converged(context.Background(), ns, -1) })
}

// readDocs reads the Markdown a user reads, each named by its path from
// the repository's root.
func readDocs(t *testing.T) []*docscheck.Doc {
	t.Helper()
	files, err := docscheck.Files(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var docs []*docscheck.Doc
	for _, f := range files {
		d, err := docscheck.Read(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		d.Path = f
		docs = append(docs, d)
	}
	return docs
}

var seriesRE = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]`)

// servedMetrics lists the series names in a text exposition (histograms'
// _bucket, _sum and _count included).
func servedMetrics(body string) []string {
	seen := map[string]bool{}
	var names []string
	for _, m := range seriesRE.FindAllStringSubmatch(body, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	return names
}

// servesMetric: a full name is a served series or a histogram's family; a
// suffix (`_adds_total`, `_work_duration_seconds`) ends one.
func servesMetric(served []string, name string) bool {
	for _, s := range served {
		switch {
		case strings.HasPrefix(name, "_") && (strings.HasSuffix(s, name) || strings.HasSuffix(s, name+"_count")):
			return true
		case s == name, s == name+"_count":
			return true
		}
	}
	return false
}

// kubectlFlags knows the flags of kubectl's commands, from their --help.
type kubectlFlags struct {
	// help maps a command ("get", "rollout status") to its flags, long
	// names and shorthands, each to whether it takes a value (is not a
	// bool); "" holds the global ones (kubectl options).
	help map[string]map[string]bool
	// names maps the words asked about ("get pods web") to the command
	// their help names ("get"): each is asked once.
	names map[string]string
}

var (
	flagLineRE = regexp.MustCompile(`(?m)^\s+(?:-([a-zA-Z]), )?--([a-z0-9-]+)(=\S*)?:`)
	// cobraFlagRE is a flag line of a cobra command's help, as the
	// plugin's (kubectl appservice ...): "  -w, --watch     After ..." or
	// "      --timeout duration   How long ..." (a type: it takes a value).
	cobraFlagRE = regexp.MustCompile(`(?m)^\s+(?:-([a-zA-Z]), )?--([a-z0-9-]+)( [a-zA-Z]+)?\s{2,}\S`)
	// The command's words start with a letter: "kubectl create -f
	// FILENAME" names the command create.
	usageRE = regexp.MustCompile(`(?m)^Usage:\n\s+kubectl ([a-z][a-z-]*(?: [a-z][a-z-]*)*)`)
)

func (k *kubectlFlags) flags(t *testing.T, args ...string) (string, map[string]bool) {
	if name, ok := k.names[strings.Join(args, " ")]; ok {
		return name, k.help[name]
	}
	out, err := kubectl(append(append([]string(nil), args...), "--help")...)
	if err != nil {
		t.Fatalf("kubectl %s --help: %v: %s", strings.Join(args, " "), err, out)
	}
	name := strings.Join(args, " ")
	if len(args) > 0 {
		m := usageRE.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("kubectl %s --help: no usage line: %.300s", name, out)
		}
		name = m[1]
	}
	k.names[strings.Join(args, " ")] = name
	if f, ok := k.help[name]; ok {
		return name, f
	}
	f := parseFlags(out)
	k.help[name] = f
	return name, f
}

// parseFlags reads the flags of kubectl's help, from lines such as
// "-n, --namespace=<value>:" and "--watch=false:" (a bool takes no value),
// and of a plugin's, cobra's "-w, --watch" and "--timeout duration".
func parseFlags(help string) map[string]bool {
	f := map[string]bool{}
	for _, m := range flagLineRE.FindAllStringSubmatch(help, -1) {
		value := m[3] != "=false" && m[3] != "=true"
		f[m[2]] = value
		if m[1] != "" {
			f[m[1]] = value
		}
	}
	for _, m := range cobraFlagRE.FindAllStringSubmatch(help, -1) {
		f[m[2]] = m[3] != ""
		if m[1] != "" {
			f[m[1]] = m[3] != ""
		}
	}
	return f
}

// check reports a flag kubectl's command does not have. The command is the
// longest run of leading words, three at most, that kubectl's help names as
// one (get, rollout status, create secret generic, appservice notify test).
func (k *kubectlFlags) check(t *testing.T, args []string) string {
	if _, ok := k.help[""]; !ok {
		out, err := kubectl("options")
		if err != nil {
			t.Fatalf("kubectl options: %v: %s", err, out)
		}
		k.help[""] = parseFlags(out)
	}
	global := k.help[""]
	// Global flags may come first: kubectl -n NS get ...
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		value, ok := global[name]
		if !ok {
			return "kubectl has no global flag " + args[0]
		}
		args = args[1:]
		if value && !hasValue && len(args) > 0 {
			args = args[1:]
		}
	}
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || len(words) == 3 {
			break
		}
		words = append(words, a)
	}
	var local map[string]bool
	for n := len(words); n > 0; n-- {
		name, f := k.flags(t, words[:n]...)
		if name == strings.Join(words[:n], " ") {
			local = f
			break
		}
	}
	if local == nil {
		return "kubectl has no command " + strings.Join(words, " ")
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		var name string
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, _ = strings.Cut(a[2:], "=")
		case strings.HasPrefix(a, "-") && len(a) > 1:
			name = a[1:2] // a shorthand, its value may follow: -oyaml
		default:
			continue
		}
		_, isLocal := local[name]
		if _, isGlobal := global[name]; !isLocal && !isGlobal {
			return "kubectl " + strings.Join(words, " ") + " has no flag " + a
		}
	}
	return ""
}
