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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestPlugin: kubectl appservice (cmd/kubectl-appservice), the binary
// built as users build it, against the suite's cluster and controller, in
// three namespaces at once.
//   - tree: an AppService mid-canary, gated at its first step: get's view
//     is testdata/plugin-get-gated.golden, its changing parts (hashes,
//     ages, the Pods' suffixes, the namespace) masked; a missing
//     AppService or namespace exits 3 with its message; a user without
//     rights exits 4, naming the verb and resource refused.
//   - watch: get --watch, run by a user bound to appservice-viewer whose
//     reads the audit log records, draws the next step once a user bound
//     to appservice-releaser promotes; after its start it sent the API
//     server nothing: one list (or watch-list) and one watch per informer,
//     no get, no request after the first frame. The viewer cannot
//     promote, the releaser cannot suspend (exit 4).
//   - commands: promote, abort, retry and promote --full each move the
//     canary as they say, written by field manager kubectl-appservice to
//     the status, refused with exit 5 where they do not apply; suspend and
//     resume set spec.suspend; restart annotates both Deployments' pod
//     templates.
func TestPlugin(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	applyPluginRoles(t)
	t.Run("tree", func(t *testing.T) { t.Parallel(); testPluginTree(t) })
	t.Run("watch", func(t *testing.T) { t.Parallel(); testPluginWatch(t) })
	t.Run("commands", func(t *testing.T) { t.Parallel(); testPluginCommands(t) })
}

func testPluginTree(t *testing.T) {
	ns := newNamespace(t)
	const name = "web"
	hash := startGatedCanary(t, ns, name)
	p := &plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}

	// The view, once the canary waits at its gate (its Pods available,
	// its weight routed: nothing changes until a person acts).
	var got string
	eventually(t, 30*time.Second, func() error {
		r := p.run("get", name)
		if r.code != 0 {
			return fmt.Errorf("get: exit %d: %s", r.code, r.stderr)
		}
		got = maskView(t, ns, name, r.stdout)
		if want := readGolden(t, "plugin-get-gated.golden", got); got != want {
			return fmt.Errorf("get's view (masked) differs from testdata/plugin-get-gated.golden (-want +got):\n%s\nunmasked:\n%s",
				cmp.Diff(want, got), r.stdout)
		}
		return nil
	})
	if !strings.Contains(got, "Canary CANARY_HASH at step 1 of 3") || hash == "" {
		t.Errorf("the view does not name the canary's template:\n%s", got)
	}

	// A missing AppService, a missing namespace: exit 3.
	p.expect(3, "", `Error: appservice "nope" not found in namespace "`+ns+`"`+"\n", "get", "nope")
	p.expect(3, "", `Error: appservice "nope" not found in namespace "`+ns+`"`+"\n", "promote", "nope")
	p.expect(3, "", `Error: namespace "no-such-namespace-e2e" not found`+"\n", "get", name, "-n", "no-such-namespace-e2e")
	// A user without rights: exit 4, the verb and resource named.
	nobody := "--as=system:serviceaccount:" + ns + ":nobody"
	p.expect(4, "", `Error: forbidden: cannot get appservices in namespace "`+ns+`" (user "system:serviceaccount:`+ns+`:nobody"): `+
		"the ClusterRole appservice-viewer grants it (docs/plugin.md#rbac)\n", "get", name, nobody)
	p.expect(4, "", `Error: forbidden: cannot get appservices in namespace "`+ns+`"`, "promote", name, nobody)
	p.expect(2, "", "Error: NAME is required", "promote")
}

func testPluginWatch(t *testing.T) {
	ns := newNamespace(t)
	const name = "live"
	hash := startGatedCanary(t, ns, name)

	// The viewer: a user of its own, whose reads the audit log records.
	viewer := "plugin-viewer-" + ns
	kubeconfig, err := cluster.MintUser(viewer, localcluster.AuditReadsGroup)
	if err != nil {
		t.Fatal(err)
	}
	bindRole(t, ns, "appservice-viewer", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: viewer})
	releaserName := "system:serviceaccount:" + ns + ":releaser"
	bindRole(t, ns, "appservice-releaser", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "releaser", Namespace: ns})
	// The watch shares the dashboard's informers: what they list and
	// watch, allowed before it starts, as is the releaser's promote.
	waitAllowed(t, viewer, ns, dashboardReads()...)
	waitAllowed(t, releaserName, ns, promoteAttrs)
	viewerPlugin := &plugin{t: t, kubeconfig: kubeconfig, ns: ns}
	releaser := &plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns, extra: []string{"--as=" + releaserName}}

	w := viewerPlugin.start("get", name, "--watch")
	const gated1 = "step 1 of 3, 10% of the traffic by route, waits at its gate"
	first := w.waitFrame(t, gated1, nil)
	firstAt := time.Now()

	// Seconds of changes: both Deployments roll their Pods (the admin
	// restarts them), the watch draws them; then the canary waits at its
	// gate again, its new Pod available.
	(&plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}).expect(0, "", "", "restart", name)
	w.waitFrame(t, gated1, func(f string) bool {
		return strings.Count(f, "revision:2 ready:1/1") == 2 && !strings.Contains(f, "revision:1") &&
			strings.Count(f, "✔ Running") == 2 && !strings.Contains(f, "◌ Progressing")
	})
	releaser.expect(0, "appservice/"+name+": step 1 of 3 promoted (canary "+hash+")\n", "", "promote", name)
	last := w.waitFrame(t, "step 2 of 3, 50% of the traffic by route, waits at its gate", nil)
	// A window in which nothing changes: a client that polled (every few
	// seconds, as a loop of kubectl get would) would ask within it, and
	// one that redrew on a timer would write frames.
	before := len(w.frames())
	time.Sleep(5 * time.Second)
	if after := len(w.frames()); after != before {
		t.Errorf("get --watch wrote %d frames while nothing changed", after-before)
	}
	watched := time.Since(firstAt)
	if code := w.stop(t); code != 0 {
		t.Errorf("get --watch ended by SIGTERM: exit %d, stderr %s", code, w.stderr.String())
	}
	if !strings.Contains(last, name+"-canary") {
		t.Errorf("the last frame shows no canary Deployment:\n%s", last)
	}
	frames := w.frames()
	if len(frames) < 2 || frames[0] != first {
		t.Errorf("get --watch wrote %d frames, separated by blank lines; want the first view, then the next step's", len(frames))
	}

	// What the viewer asked of the API server: the audit log has its
	// every request (its user is in localcluster.AuditReadsGroup). The
	// watches end when the process does; the log has them then.
	reqs := auditedRequestsEnded(t, viewer)
	// One informer per kind and selector: the AppService and the route by
	// name, the Deployments, the stable and the canary's ReplicaSets and
	// Pods by label, and the tests' Activities, Jobs and Pods.
	wantWatches := map[string]int{"appservices": 1, "deployments": 1, "replicasets": 2, "pods": 3, "httproutes": 1, "grpcroutes": 1, "activities": 1, "jobs": 1}
	gotWatches, lists := map[string]int{}, 0
	for _, r := range reqs {
		switch r.Verb {
		case "list":
			lists++
		case "watch":
			gotWatches[r.resource()]++
		default:
			t.Errorf("get --watch sent %s %s (%s): it may only list and watch", r.Verb, r.resource(), r.RequestURI)
		}
		if r.RequestReceivedTimestamp.After(firstAt) {
			t.Errorf("get --watch sent %s %s at %s, after its first frame (%s): it polls", r.Verb, r.resource(),
				r.RequestReceivedTimestamp.Format(time.StampMicro), firstAt.Format(time.StampMicro))
		}
	}
	if diff := cmp.Diff(wantWatches, gotWatches); diff != "" || lists > 10 {
		t.Errorf("get --watch's watches by resource (-want +got):\n%s%d lists (at most one per watch)", diff, lists)
	}
	t.Logf("get --watch: %d lists, %d watches, all before its first frame; %d frames in %s, none asked for", lists,
		len(reqs)-lists, len(frames), watched.Round(time.Millisecond))

	// The viewer may not promote; the releaser may not change the spec.
	viewerPlugin.expect(4, "", `Error: forbidden: cannot patch appservices/status in namespace "`+ns+`" (user "`+viewer+`"): `+
		"the ClusterRole appservice-releaser grants it (docs/plugin.md#rbac)\n", "promote", name)
	releaser.expect(4, "", `Error: forbidden: cannot patch appservices in namespace "`+ns+`" (user "`+releaserName+`"): a spec change`, "suspend", name)
	releaser.expect(4, "", `Error: forbidden: cannot patch deployments in namespace "`+ns+`"`, "restart", name)
	if as, err := getAppService(ns, name); err != nil || as.Spec.Suspend != nil && *as.Spec.Suspend {
		t.Errorf("after the releaser's refused suspend: %v, spec.suspend %v", err, as.Spec.Suspend)
	}
}

func testPluginCommands(t *testing.T) {
	ns := newNamespace(t)
	const name = "cmds"
	createAppService(t, ns, name, gatedCanarySpec())
	waitAvailable(t, ns, name, 1)
	p := &plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}
	who := "Error: appservice/" + name + ": "

	// No canary yet: nothing to promote, abort or retry.
	p.expect(5, "", who+"no canary is running: nothing to promote\n", "promote", name)
	p.expect(5, "", who+"no canary is running: nothing to abort\n", "abort", name)
	p.expect(5, "", who+"no canary is aborted: nothing to retry\n", "retry", name)

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	hash := waitGated(t, ns, name, 0).Status.Canary.CanaryTemplateHash

	// restart: both Deployments' pod templates annotated; the canary goes
	// on where it was.
	r := p.expect(0, "", "", "restart", name)
	canary := children.CanaryName(&appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if want := "deployment.apps/" + name + " restarted\ndeployment.apps/" + canary + " restarted\n"; r.stdout != want {
		t.Errorf("restart printed %q, want %q", r.stdout, want)
	}
	for _, d := range []string{name, canary} {
		eventually(t, 30*time.Second, func() error {
			got, err := getDeployment(ns, d)
			if err != nil {
				return err
			}
			if got.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
				return fmt.Errorf("Deployment %s's pod template annotations %v, want kubectl.kubernetes.io/restartedAt", d, got.Spec.Template.Annotations)
			}
			return nil
		})
	}
	waitGated(t, ns, name, 0)

	// promote: the step passes.
	p.expect(0, "appservice/"+name+": step 1 of 3 promoted (canary "+hash+")\n", "", "promote", name)
	waitGated(t, ns, name, 1)

	// abort: the stable Pods serve everything; the request stays as the
	// record; Stalled.
	p.expect(0, "appservice/"+name+": canary "+hash+" aborted at step 2 of 3\n", "", "abort", name)
	as := waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "aborted on request")
	if c := as.Status.Canary; c.AbortedTemplateHash != hash || c.Request == nil || c.Request.Action != appv1.CanaryAbort {
		t.Errorf("status.canary once aborted: %s, request %+v; want %s aborted, the Abort request kept", canaryString(c), c.Request, hash)
	}
	p.expect(5, "", who+"the canary is aborted: nothing to promote (kubectl appservice retry "+name+" starts it again)\n", "promote", name)

	// retry: it runs again, from its first step.
	p.expect(0, "appservice/"+name+": canary "+hash+" retried: it starts again at step 1 of 3\n", "", "retry", name)
	if as = waitGated(t, ns, name, 0); as.Status.Canary.CanaryTemplateHash != hash {
		t.Errorf("the retried canary runs %s, want %s", as.Status.Canary.CanaryTemplateHash, hash)
	}

	// promote --full: every step left skipped, promoted.
	p.expect(0, "appservice/"+name+": canary "+hash+" promoted from step 1 of 3, skipping the steps left\n", "", "promote", name, "--full")
	waitCanaryDone(t, ns, name)
	p.expect(5, "", who+"no canary is running: nothing to promote\n", "promote", name)

	// suspend, resume: spec.suspend.
	for _, suspend := range []bool{true, false} {
		cmd, done := "suspend", "suspended"
		if !suspend {
			cmd, done = "resume", "resumed"
		}
		p.expect(0, fmt.Sprintf("appservice/%s %s (spec.suspend: %t)\n", name, done, suspend), "", cmd, name)
		if as, err := getAppService(ns, name); err != nil || as.Spec.Suspend == nil || *as.Spec.Suspend != suspend {
			t.Errorf("after %s: %v, spec.suspend %v", cmd, err, as.Spec.Suspend)
		}
	}
	p.expect(5, "", who+"no canary is running: nothing to abort\n", "abort", name)

	// Its writes, as the audit log has them: each request a patch of the
	// status subresource, the others of the spec and the Deployments; all
	// of field manager kubectl-appservice.
	writes := map[string]int{}
	for _, r := range auditedRequests(t, "admin") {
		if r.ObjectRef == nil || r.ObjectRef.Namespace != ns || !strings.HasPrefix(r.UserAgent, "kubectl-appservice/") || r.ResponseStatus.Code != 200 {
			continue
		}
		if !strings.Contains(r.RequestURI, "fieldManager=kubectl-appservice") {
			t.Errorf("a write without the field manager kubectl-appservice: %s %s", r.Verb, r.RequestURI)
		}
		res := r.ObjectRef.Resource
		if r.ObjectRef.Subresource != "" {
			res += "/" + r.ObjectRef.Subresource
		}
		writes[r.Verb+" "+res]++
	}
	want := map[string]int{"patch appservices/status": 4, "patch appservices": 2, "patch deployments": 2}
	if diff := cmp.Diff(want, writes); diff != "" {
		t.Errorf("the plugin's writes (-want +got):\n%s", diff)
	}
}

// gatedCanarySpec is an AppService of one replica behind a route with a
// canary of three steps, the first two gated.
func gatedCanarySpec() appv1.AppServiceSpec {
	return canarySpec(appv1.CanaryStep{Weight: 10, Gate: true}, appv1.CanaryStep{Weight: 50, Gate: true}, appv1.CanaryStep{Weight: 100})
}

// startGatedCanary creates the AppService, changes its image and waits
// until its canary waits at its first gate; it returns the canary's hash.
func startGatedCanary(t *testing.T, ns, name string) string {
	t.Helper()
	createAppService(t, ns, name, gatedCanarySpec())
	waitAvailable(t, ns, name, 1)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	return waitGated(t, ns, name, 0).Status.Canary.CanaryTemplateHash
}

// waitGated waits until the canary waits at the gate of step (0 the
// first): its Pods available, its weight routed, Reconciling CanaryGated.
func waitGated(t *testing.T, ns, name string, step int32) *appv1.AppService {
	t.Helper()
	var as *appv1.AppService
	eventually(t, 2*time.Minute, func() error {
		var err error
		if as, err = getAppService(ns, name); err != nil {
			return err
		}
		c, rec := as.Status.Canary, condition(as, appv1.ConditionReconciling)
		switch {
		case as.Status.ObservedGeneration != as.Generation:
			return fmt.Errorf("observedGeneration %d, generation %d", as.Status.ObservedGeneration, as.Generation)
		case c == nil || c.Step == nil || *c.Step != step || c.CanaryTemplateHash == "":
			return fmt.Errorf("status.canary %s, want step %d", canaryString(c), step)
		case rec == nil || rec.Status != metav1.ConditionTrue || rec.Reason != appv1.ReasonCanaryGated:
			return fmt.Errorf("Reconciling is %+v, want True, %s", rec, appv1.ReasonCanaryGated)
		}
		return nil
	})
	return as
}

var pluginRoles sync.Once

// applyPluginRoles applies artifacts/rbac/plugin-roles.yaml, as a cluster
// operator would.
func applyPluginRoles(t *testing.T) {
	t.Helper()
	pluginRoles.Do(func() {
		if out, err := kubectl("apply", "-f", filepath.Join(repoRoot, "artifacts/rbac/plugin-roles.yaml")); err != nil {
			t.Fatalf("kubectl apply artifacts/rbac/plugin-roles.yaml: %v\n%s", err, out)
		}
	})
}

// bindRole binds the ClusterRole to the subject in the namespace.
func bindRole(t *testing.T, ns, role string, subject rbacv1.Subject) {
	t.Helper()
	_, err := kube.RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + strings.ToLower(subject.Kind)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	pluginBuild sync.Once
	pluginPath  string
	pluginErr   error
)

// pluginBinary is the plugin built from this tree: make build builds it
// beside the controller (TestMain's, or hack/test-e2e.sh's), else it is
// built here, once per process, as users build it.
func pluginBinary(t *testing.T) string {
	t.Helper()
	pluginBuild.Do(func() {
		pluginPath = filepath.Join(filepath.Dir(builtBinary), "kubectl-appservice")
		if _, err := os.Stat(pluginPath); err == nil {
			return
		}
		pluginPath = filepath.Join(filepath.Dir(cluster.LogDir), "kubectl-appservice")
		build := exec.Command("make", "--no-print-directory", "build-plugin", "PLUGIN_BIN="+pluginPath)
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			pluginErr = fmt.Errorf("make build-plugin: %v\n%s", err, out)
		}
	})
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	return pluginPath
}

// plugin runs kubectl-appservice with a kubeconfig, in a namespace.
type plugin struct {
	t          *testing.T
	kubeconfig string
	ns         string
	extra      []string
}

type pluginResult struct {
	stdout, stderr string
	code           int
}

func (p *plugin) command(args ...string) *exec.Cmd {
	all := append(append([]string{"--kubeconfig=" + p.kubeconfig, "-n", p.ns}, p.extra...), args...)
	cmd := exec.Command(pluginBinary(p.t), all...)
	// Only what the flags say: no KUBECONFIG of the environment.
	cmd.Env = []string{"HOME=" + p.t.TempDir(), "PATH=" + os.Getenv("PATH")}
	return cmd
}

func (p *plugin) run(args ...string) pluginResult {
	p.t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := p.command(args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		p.t.Fatalf("kubectl-appservice %s: %v", strings.Join(args, " "), err)
	}
	return pluginResult{stdout.String(), stderr.String(), code}
}

// expect runs the plugin and checks its exit code, its standard output
// (when stdout is not empty) and that its standard error starts with
// stderr.
func (p *plugin) expect(code int, stdout, stderr string, args ...string) pluginResult {
	p.t.Helper()
	r := p.run(args...)
	if r.code != code || (stdout != "" && r.stdout != stdout) || !strings.HasPrefix(r.stderr, stderr) || (stderr == "" && r.stderr != "") {
		p.t.Errorf("kubectl appservice %s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
			strings.Join(args, " "), r.code, r.stdout, r.stderr, code, stdout, stderr)
	}
	return r
}

// watching is a kubectl-appservice process that runs on (get --watch).
type watching struct {
	cmd    *exec.Cmd
	out    *recording[string]
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

func (p *plugin) start(args ...string) *watching {
	p.t.Helper()
	w := &watching{cmd: p.command(args...), out: newRecording[string](), done: make(chan struct{})}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	w.cmd.Stderr = &w.stderr
	if err := w.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			w.out.add(s.Text())
		}
		w.err = w.cmd.Wait()
		w.out.end()
		close(w.done)
	}()
	p.t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		<-w.done
	})
	return w
}

// frames splits what the process wrote into its frames (a blank line
// between two).
func (w *watching) frames() []string {
	var frames []string
	cur := []string{}
	for _, line := range w.out.snapshot() {
		if line == "" {
			frames = append(frames, strings.Join(cur, "\n"))
			cur = []string{}
			continue
		}
		cur = append(cur, line)
	}
	if len(cur) > 0 {
		frames = append(frames, strings.Join(cur, "\n"))
	}
	return frames
}

// waitFrame waits for a complete frame (one with the tree's route line,
// its last) that contains s and, if given, passes ok; it returns it.
func (w *watching) waitFrame(t *testing.T, s string, ok func(string) bool) string {
	t.Helper()
	var found string
	w.out.wait(t, time.Minute, func([]string) error {
		frames := w.frames()
		for _, f := range frames {
			if strings.Contains(f, s) && strings.Contains(f, "HTTPRoute") && (ok == nil || ok(f)) {
				found = f
				return nil
			}
		}
		last := ""
		if len(frames) > 0 {
			last = frames[len(frames)-1]
		}
		return fmt.Errorf("no frame of get --watch with %q yet; the last:\n%s\nstderr %s", s, last, w.stderr.String())
	})
	return found
}

// stop ends the process with SIGTERM, as an interrupt would, and returns
// its exit code.
func (w *watching) stop(t *testing.T) int {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatal("get --watch did not end within 30 s of SIGTERM")
	}
	var exit *exec.ExitError
	if errors.As(w.err, &exit) {
		return exit.ExitCode()
	}
	return 0
}

// pluginRequest is what the audit log says of one request.
type pluginRequest struct {
	AuditID                  string    `json:"auditID"`
	Stage                    string    `json:"stage"`
	Verb                     string    `json:"verb"`
	RequestURI               string    `json:"requestURI"`
	UserAgent                string    `json:"userAgent"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	User                     struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	complete bool
}

func (r pluginRequest) resource() string {
	if r.ObjectRef == nil {
		return r.RequestURI
	}
	return r.ObjectRef.Resource
}

// auditedRequestsEnded are the user's requests once the audit log has the
// end of each of its watches (they end when its process does).
func auditedRequestsEnded(t *testing.T, user string) []pluginRequest {
	t.Helper()
	var reqs []pluginRequest
	eventually(t, 30*time.Second, func() error {
		reqs = auditedRequests(t, user)
		started, ended := 0, 0
		for _, r := range reqs {
			if r.Verb == "watch" {
				started++
				if r.complete {
					ended++
				}
			}
		}
		if started == 0 || started != ended {
			return fmt.Errorf("%d watches of %s in the audit log, %d ended", started, user, ended)
		}
		return nil
	})
	return reqs
}

// auditedRequests are the user's requests in the audit log, one per
// request (a watch's ResponseStarted and ResponseComplete are one), in
// the order received.
func auditedRequests(t *testing.T, user string) []pluginRequest {
	t.Helper()
	data, err := os.ReadFile(cluster.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*pluginRequest{}
	var order []string
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 || !bytes.Contains(line, []byte(user)) {
			continue
		}
		var r pluginRequest
		if err := json.Unmarshal(line, &r); err != nil {
			continue // a line being written
		}
		if r.User.Username != user {
			continue
		}
		seen, ok := byID[r.AuditID]
		if !ok {
			seen = &r
			byID[r.AuditID] = seen
			order = append(order, r.AuditID)
		}
		if r.Stage == "ResponseComplete" {
			seen.complete = true
		}
	}
	out := make([]pluginRequest, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RequestReceivedTimestamp.Before(out[j].RequestReceivedTimestamp) })
	return out
}

var (
	ageRE    = regexp.MustCompile(`\b\d+[smhd](\d+[smh])?\b`)
	spacesRE = regexp.MustCompile(`[ \t]+`)
)

// maskView masks what changes from run to run in get's view: the
// namespace, the templates' hashes, the ReplicaSets' hashes and the Pods'
// suffixes (read from the cluster), the ages; and the columns' widths,
// which follow them.
func maskView(t *testing.T, ns, name, view string) string {
	t.Helper()
	as, err := getAppService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	var replace []string
	if c := as.Status.Canary; c != nil {
		replace = append(replace, c.StableTemplateHash, "STABLE_HASH", c.CanaryTemplateHash, "CANARY_HASH")
	}
	ctx := context.Background()
	sets, err := kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil {
			replace = append(replace, p.Name, ref.Name+"-POD")
		}
	}
	for _, rs := range sets.Items {
		if h := rs.Labels["pod-template-hash"]; h != "" {
			replace = append(replace, rs.Name, strings.TrimSuffix(rs.Name, h)+"RS_HASH")
		}
	}
	// Longest first: a Pod's name holds its ReplicaSet's.
	pairs := make([][2]string, 0, len(replace)/2)
	for i := 0; i+1 < len(replace); i += 2 {
		if replace[i] != "" {
			pairs = append(pairs, [2]string{replace[i], replace[i+1]})
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i][0]) > len(pairs[j][0]) })
	for _, p := range pairs {
		view = strings.ReplaceAll(view, p[0], p[1])
	}
	view = strings.ReplaceAll(view, ns, "NAMESPACE")
	lines := strings.Split(view, "\n")
	for i, l := range lines {
		// The tree's branches as they are; the columns after them one
		// space apart.
		rest := strings.TrimLeft(l, "│├└─ ")
		lines[i] = l[:len(l)-len(rest)] + strings.TrimSpace(spacesRE.ReplaceAllString(ageRE.ReplaceAllString(rest, "AGE"), " "))
	}
	return strings.Join(lines, "\n")
}

// readGolden reads test/e2e/testdata's file; APPSERVICE_UPDATE_GOLDEN=1
// writes got there first.
func readGolden(t *testing.T, file, got string) string {
	t.Helper()
	path := filepath.Join("testdata", file)
	if os.Getenv("APPSERVICE_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (APPSERVICE_UPDATE_GOLDEN=1 writes it)", err)
	}
	return string(want)
}
