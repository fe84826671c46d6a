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

package plugin

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	appfake "example.com/appservice-controller/pkg/generated/clientset/versioned/fake"
)

// fakes are the fake clientsets behind a command's Clients.
type fakes struct {
	apps    *appfake.Clientset
	kube    *kubefake.Clientset
	gateway *gatewayfake.Clientset
}

func newFakes(s *Snapshot) *fakes {
	apps, kube, gateway := s.objects()
	return &fakes{apps: appfake.NewSimpleClientset(apps...), kube: kubefake.NewClientset(kube...), gateway: gatewayfake.NewClientset(gateway...)}
}

func (f *fakes) clients() *Clients {
	return &Clients{AppV1: f.apps.AppV1(), AppsV1: f.kube.AppsV1(), BatchV1: f.kube.BatchV1(), CoreV1: f.kube.CoreV1(), GatewayV1: f.gateway.GatewayV1(),
		Namespace: ns, NoWatchList: true}
}

// syncBuffer is a buffer get --watch writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// run runs the plugin with args on the fakes, at now.
func (f *fakes) run(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	var out, errOut syncBuffer
	code = f.runTo(ctx, &out, &errOut, args...)
	return out.String(), errOut.String(), code
}

func (f *fakes) runTo(ctx context.Context, out, errOut *syncBuffer, args ...string) int {
	return Main(ctx, args, Options{
		IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
		Clients:   func() (*Clients, error) { return f.clients(), nil },
		Now:       func() time.Time { return now },
		Terminal:  func() bool { return false },
		Coalesce:  time.Millisecond,
	})
}

// patches are the patch actions the fake received.
func patches(actions []k8stesting.Action) []k8stesting.PatchActionImpl {
	var out []k8stesting.PatchActionImpl
	for _, a := range actions {
		if p, ok := a.(k8stesting.PatchActionImpl); ok {
			out = append(out, p)
		}
	}
	return out
}

func TestGet(t *testing.T) {
	f := newFakes(gatedSnapshot())
	out, errOut, code := f.run(context.Background(), "get", "web")
	if code != ExitOK || errOut != "" {
		t.Fatalf("get: exit %d, stderr %q", code, errOut)
	}
	golden(t, "testdata/get-gated.golden", out)

	out, _, code = f.run(context.Background(), "get", "web", "-o", "yaml")
	if code != ExitOK || !strings.HasPrefix(out, "apiVersion: app.example.com/v1\nkind: AppService\n") || strings.Contains(out, "managedFields") {
		t.Errorf("get -o yaml: exit %d:\n%s", code, out)
	}
	out, _, code = f.run(context.Background(), "get", "web", "-o", "json")
	if code != ExitOK || !strings.Contains(out, `"kind": "AppService"`) {
		t.Errorf("get -o json: exit %d:\n%s", code, out)
	}
}

// TestGetWatch: get --watch draws the first view, then a new frame after
// a blank line for each change the watches report; an interrupt ends it
// with exit 0.
func TestGetWatch(t *testing.T) {
	f := newFakes(gatedSnapshot())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int)
	go func() { done <- f.runTo(ctx, &out, &errOut, "get", "web", "--watch") }()
	waitFor(t, &out, "step 1 of 3, 10% of the traffic by route, waits at its gate")

	// The controller takes a promote: step 2's Pods are available (size
	// 2 × 50%: the one there is), its weight routed.
	as, err := f.apps.AppV1().AppServices(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	as.Status.Canary.Step, as.Status.Canary.Weight, as.Status.Canary.StepStartTime = new(int32(1)), 50, new(ago(time.Minute))
	setConditions(as, appv1.ReasonCanaryProgressing, "Canary 58db947f6c at step 2 of 3, 50% of the traffic by route: pauses",
		metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse)
	if _, err := f.apps.AppV1().AppServices(ns).UpdateStatus(ctx, as, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "step 2 of 3, 50% of the traffic by route, pauses: 4m left")
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("get --watch interrupted: exit %d, stderr %q", code, errOut.String())
	}
	frames := strings.Split(out.String(), "\n\n")
	if len(frames) != 2 || !strings.HasPrefix(frames[1], "Name:") {
		t.Errorf("want 2 frames separated by a blank line, got %d:\n%s", len(frames), out.String())
	}
	for _, a := range f.apps.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" && a.GetVerb() != "update" {
			t.Errorf("get --watch made a %s request", a.GetVerb())
		}
	}
}

// TestGetWatchDeleted: the AppService deleted ends get --watch, exit 3.
func TestGetWatchDeleted(t *testing.T) {
	f := newFakes(gatedSnapshot())
	var out, errOut syncBuffer
	done := make(chan int)
	go func() { done <- f.runTo(context.Background(), &out, &errOut, "get", "web", "-w") }()
	waitFor(t, &out, "Name:")
	if err := f.apps.AppV1().AppServices(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != ExitNotFound || !strings.Contains(errOut.String(), `appservice "web" in namespace "shop" was deleted`) {
			t.Errorf("exit %d, stderr %q", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("get --watch went on after the AppService was deleted")
	}
}

func waitFor(t *testing.T, out *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in what get --watch wrote:\n%s", s, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRequestCommands: promote, abort and retry patch the status
// subresource (a JSON merge patch with the resourceVersion, field manager
// kubectl-appservice) and say what they asked.
func TestRequestCommands(t *testing.T) {
	for _, tc := range []struct {
		snap     func() *Snapshot
		args     []string
		patch    string
		stdout   string
		exitCode int
	}{
		{gatedSnapshot, []string{"promote", "web"}, `"action":"Promote","templateHash":"58db947f6c","step":0`,
			"appservice/web: step 1 of 3 promoted (canary 58db947f6c)\n", ExitOK},
		{gatedSnapshot, []string{"promote", "web", "--full"}, `"action":"PromoteFull"`, "", ExitOK},
		{gatedSnapshot, []string{"abort", "web"}, `"action":"Abort"`, "appservice/web: canary 58db947f6c aborted at step 1 of 3\n", ExitOK},
		{abortedSnapshot, []string{"retry", "web"}, `"action":"Retry"`, "", ExitOK},
		{healthySnapshot, []string{"promote", "web"}, "", "", ExitNotApplicable},
		{gatedSnapshot, []string{"retry", "web"}, "", "", ExitNotApplicable},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f := newFakes(tc.snap())
			out, errOut, code := f.run(context.Background(), tc.args...)
			if code != tc.exitCode || (tc.stdout != "" && out != tc.stdout) {
				t.Fatalf("exit %d (want %d), stdout %q (want %q), stderr %q", code, tc.exitCode, out, tc.stdout, errOut)
			}
			ps := patches(f.apps.Actions())
			if tc.patch == "" {
				if len(ps) != 0 || !strings.HasPrefix(errOut, "Error: appservice/web") {
					t.Errorf("refused, yet patched %v; stderr %q", ps, errOut)
				}
				return
			}
			if len(ps) != 1 {
				t.Fatalf("%d patches, want 1", len(ps))
			}
			p := ps[0]
			if p.Subresource != "status" || p.PatchType != types.MergePatchType || p.PatchOptions.FieldManager != FieldManager ||
				!strings.Contains(string(p.Patch), `{"metadata":{"resourceVersion":"123"}`) || !strings.Contains(string(p.Patch), tc.patch) {
				t.Errorf("patch %s of %s (%s, field manager %q), want a merge patch of status with %s", p.Patch, p.Subresource, p.PatchType, p.PatchOptions.FieldManager, tc.patch)
			}
		})
	}
}

// TestRequestConflict: a Conflict (the AppService changed since the read)
// reads, checks and patches again, a few times.
func TestRequestConflict(t *testing.T) {
	for _, tc := range []struct {
		conflicts, wantCode, wantPatches int
	}{{2, ExitOK, 3}, {100, ExitError, conflictRetries}} {
		f := newFakes(gatedSnapshot())
		n := 0
		f.apps.PrependReactor("patch", "appservices", func(k8stesting.Action) (bool, runtime.Object, error) {
			if n++; n <= tc.conflicts {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "app.example.com", Resource: "appservices"}, name, nil)
			}
			return false, nil, nil
		})
		_, errOut, code := f.run(context.Background(), "promote", "web")
		if code != tc.wantCode || len(patches(f.apps.Actions())) != tc.wantPatches {
			t.Errorf("%d conflicts: exit %d, %d patches, stderr %q; want exit %d, %d patches", tc.conflicts, code, len(patches(f.apps.Actions())), errOut, tc.wantCode, tc.wantPatches)
		}
	}
}

// TestErrors: the exit codes and one-line messages of a missing
// AppService or namespace, a refusal by RBAC and bad usage.
func TestErrors(t *testing.T) {
	forbid := func(verb, resource string) func(f *fakes) {
		return func(f *fakes) {
			f.apps.PrependReactor(verb, "appservices", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if resource == "appservices/status" && a.GetSubresource() != "status" {
					return false, nil, nil
				}
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "app.example.com", Resource: resource}, name,
					fmt.Errorf(`User "system:serviceaccount:shop:nobody" cannot %s resource %q in API group "app.example.com" in the namespace "shop"`, verb, resource))
			})
		}
	}
	for _, tc := range []struct {
		name   string
		setup  func(f *fakes)
		args   []string
		code   int
		stderr string
	}{
		{"missing AppService", nil, []string{"get", "nope"}, ExitNotFound, `Error: appservice "nope" not found in namespace "shop"` + "\n"},
		{"missing AppService, promote", nil, []string{"promote", "nope"}, ExitNotFound, `Error: appservice "nope" not found in namespace "shop"` + "\n"},
		{"missing AppService, suspend", nil, []string{"suspend", "nope"}, ExitNotFound, `Error: appservice "nope" not found in namespace "shop"` + "\n"},
		{"missing namespace", func(f *fakes) {
			_ = f.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		}, []string{"get", "web2"}, ExitNotFound, `Error: namespace "shop" not found` + "\n"},
		{"forbidden get", forbid("get", "appservices"), []string{"get", "web"}, ExitForbidden,
			`Error: forbidden: cannot get appservices in namespace "shop" (user "system:serviceaccount:shop:nobody"): the ClusterRole appservice-viewer grants it (docs/plugin.md#rbac)` + "\n"},
		{"forbidden promote", forbid("patch", "appservices/status"), []string{"promote", "web"}, ExitForbidden,
			`Error: forbidden: cannot patch appservices/status in namespace "shop" (user "system:serviceaccount:shop:nobody"): the ClusterRole appservice-releaser grants it (docs/plugin.md#rbac)` + "\n"},
		{"forbidden suspend", forbid("patch", "appservices"), []string{"suspend", "web"}, ExitForbidden,
			`Error: forbidden: cannot patch appservices in namespace "shop" (user "system:serviceaccount:shop:nobody"): a spec change: it needs patch on appservices, which the plugin's roles do not grant (docs/plugin.md#rbac)` + "\n"},
		{"unknown command", nil, []string{"promot", "web"}, ExitUsage, "Error: unknown command \"promot\" for \"kubectl appservice\"\nSee 'kubectl appservice --help' for usage.\n"},
		{"unknown flag", nil, []string{"promote", "web", "--fast"}, ExitUsage, "Error: unknown flag: --fast\nSee 'kubectl appservice --help' for usage.\n"},
		{"missing NAME", nil, []string{"promote"}, ExitUsage, "Error: NAME is required: the AppService's name\nSee 'kubectl appservice --help' for usage.\n"},
		{"two NAMEs", nil, []string{"abort", "a", "b"}, ExitUsage, "Error: one NAME only, got 2 arguments\nSee 'kubectl appservice --help' for usage.\n"},
		{"bad output", nil, []string{"get", "web", "-o", "wide"}, ExitUsage, "Error: unknown output format \"wide\": json or yaml\nSee 'kubectl appservice --help' for usage.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakes(gatedSnapshot())
			if tc.setup != nil {
				tc.setup(f)
			}
			_, errOut, code := f.run(context.Background(), tc.args...)
			if code != tc.code || errOut != tc.stderr {
				t.Errorf("exit %d, stderr\n%q\nwant exit %d,\n%q", code, errOut, tc.code, tc.stderr)
			}
		})
	}
}

func TestSuspendResume(t *testing.T) {
	for _, tc := range []struct {
		cmd, patch, out string
	}{
		{"suspend", `{"spec":{"suspend":true}}`, "appservice/web suspended (spec.suspend: true)\n"},
		{"resume", `{"spec":{"suspend":false}}`, "appservice/web resumed (spec.suspend: false)\n"},
	} {
		f := newFakes(gatedSnapshot())
		out, errOut, code := f.run(context.Background(), tc.cmd, "web")
		ps := patches(f.apps.Actions())
		if code != ExitOK || out != tc.out || len(ps) != 1 || string(ps[0].Patch) != tc.patch || ps[0].Subresource != "" ||
			ps[0].PatchType != types.MergePatchType || ps[0].PatchOptions.FieldManager != FieldManager {
			t.Errorf("%s: exit %d, stdout %q, stderr %q, patches %+v", tc.cmd, code, out, errOut, ps)
		}
	}
}

// TestRestart: the restart annotation on the pod template of the stable
// and the canary Deployment, as kubectl rollout restart sets it; only the
// stable one's without a canary.
func TestRestart(t *testing.T) {
	for _, tc := range []struct {
		snap func() *Snapshot
		want []string
	}{
		{gatedSnapshot, []string{"web", "web-canary"}},
		{healthySnapshot, []string{"web"}},
	} {
		f := newFakes(tc.snap())
		out, errOut, code := f.run(context.Background(), "restart", "web")
		for _, p := range patches(f.kube.Actions()) {
			want := `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-26T09:20:00Z"}}}}}`
			if string(p.Patch) != want || p.PatchType != types.StrategicMergePatchType || p.PatchOptions.FieldManager != FieldManager {
				t.Errorf("patch of %s: %s (%s, %q), want %s", p.Name, p.Patch, p.PatchType, p.PatchOptions.FieldManager, want)
			}
		}
		var lines []string
		for _, name := range tc.want {
			lines = append(lines, "deployment.apps/"+name+" restarted\n")
			d, err := f.kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || d.Spec.Template.Annotations[AnnotationRestartedAt] != "2026-11-26T09:20:00Z" {
				t.Errorf("Deployment %s after restart: %v, template annotations %v", name, err, d.Spec.Template.Annotations)
			}
		}
		if code != ExitOK || out != strings.Join(lines, "") {
			t.Errorf("restart: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, lines)
		}
	}
}

func TestCompletion(t *testing.T) {
	f := newFakes(gatedSnapshot())
	if _, err := f.apps.AppV1().AppServices(ns).Create(context.Background(), &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, _, code := f.run(context.Background(), "__complete", "promote", "w")
	if code != ExitOK || !strings.HasPrefix(out, "web\n:4\n") {
		t.Errorf("completing promote w: exit %d:\n%s", code, out)
	}
	out, _, _ = f.run(context.Background(), "__complete", "get", "")
	if !strings.HasPrefix(out, "api\nweb\n:4\n") {
		t.Errorf("completing get: %s", out)
	}
}
