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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"example.com/appservice-controller/internal/argocdhealth"
	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestCanaryRelease: a release driven by hand, in four namespaces at once.
//   - gate: a gated step waits far past its pause, a promotion passes it
//     (one step, and no more), a stale promotion moves nothing, and
//     promote --full, abort and retry do what they say.
//   - gitops: an AppService applied server-side as Argo CD and Flux apply,
//     then promoted, then applied again unchanged: no drift, no change,
//     and the promotion stands.
//   - testers: the route's testers' rules while the canary runs, gone at
//     an abort and at the end; none for a canary without an available Pod.
//   - rollback: back to the last stable template in one Deployment write,
//     with no canary; back to one outside the window, a canary.
func TestCanaryRelease(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	t.Run("gate", func(t *testing.T) { t.Parallel(); testCanaryGate(t) })
	for _, manager := range []string{"argocd-controller", "kustomize-controller"} {
		t.Run("gitops/"+manager, func(t *testing.T) { t.Parallel(); testCanaryGitOps(t, manager) })
	}
	t.Run("testers", func(t *testing.T) { t.Parallel(); testCanaryTesters(t) })
	t.Run("rollback", func(t *testing.T) { t.Parallel(); testCanaryRollback(t) })
	t.Run("edges", func(t *testing.T) { t.Parallel(); testCanaryEdgeEvents(t) })
}

// testCanaryEdgeEvents: 28 edges of a release on one AppService in well
// under a minute (14 aborts on request, each retried), among the Events of
// its canary's objects created and deleted each time: the API server gets
// every one of them (the repeated ones as counts, as client-go records a
// repeated Event). client-go's default budget, 25 Events per object and
// type then one every 5 minutes, dropped the retries after the 25th Normal
// Event; a rollback was lost that way on a busy AppService.
func testCanaryEdgeEvents(t *testing.T) {
	ns := newNamespace(t)
	const name, cycles = "edges", 14
	createAppService(t, ns, name, canarySpec(appv1.CanaryStep{Weight: 50, Gate: true}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	app := record[*appv1.AppService](t, apps.AppV1().AppServices(ns).Watch, name)
	events := recordEvents(t, ns, name)
	last := func(check func(as *appv1.AppService) error) *appv1.AppService {
		t.Helper()
		vs := app.wait(t, time.Minute, func(vs []version[*appv1.AppService]) error {
			if len(vs) == 0 {
				return fmt.Errorf("no version of the AppService recorded")
			}
			return check(vs[len(vs)-1].obj)
		})
		return vs[len(vs)-1].obj
	}
	running := func(as *appv1.AppService) error {
		if c := as.Status.Canary; c == nil || c.CanaryTemplateHash == "" || c.Step == nil || c.Request != nil {
			return fmt.Errorf("status.canary %+v, want a canary running, no request", c)
		}
		return nil
	}
	aborted := func(as *appv1.AppService) error {
		if c := condition(as, appv1.ConditionStalled); c == nil || c.Reason != appv1.ReasonCanaryAborted || as.Status.Canary.CanaryTemplateHash != "" {
			return fmt.Errorf("Stalled %+v, status.canary %+v, want aborted", c, as.Status.Canary)
		}
		return nil
	}
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	hash := last(running).Status.Canary.CanaryTemplateHash

	start := time.Now()
	for range cycles {
		requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryAbort, TemplateHash: hash})
		last(aborted)
		requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryRetry, TemplateHash: hash})
		last(running)
	}
	took := time.Since(start)
	t.Logf("%d edges in %s", 2*cycles, took)
	if took > 4*time.Minute {
		// The default budget grows by one Event every 5 minutes: past
		// that, this test no longer tells it from the controller's.
		t.Fatalf("the %d edges took %s: too slow to show that none is dropped", 2*cycles, took)
	}
	abortedMsg := fmt.Sprintf("Canary %s aborted: aborted on request (kubectl appservice retry, or a new template, starts it again); "+
		"the stable version serves all the traffic", hash)
	retriedMsg := fmt.Sprintf("Canary %s retried on request: it starts again at step 1 of 2", hash)
	want := map[string]int32{abortedMsg: cycles, retriedMsg: cycles}
	events.wait(t, time.Minute, func(evs []*corev1.Event) error {
		got := map[string]int32{}
		for _, e := range evs {
			if _, ok := want[e.Message]; ok && e.Reason != appv1.ReasonCanaryAborted && e.Reason != appv1.ReasonCanaryRequested {
				return fmt.Errorf("event %s: reason %s", e.Name, e.Reason)
			}
			got[e.Message] = max(got[e.Message], e.Count)
		}
		for msg, n := range want {
			if got[msg] != n {
				return fmt.Errorf("%q recorded %d times, want %d (every Event of the AppService: %v)", msg, got[msg], n, got)
			}
		}
		return nil
	})
}

// recordEvents records every version of the Events about the AppService
// name, from now until the test ends, as record does for objects.
func recordEvents(t *testing.T, ns, name string) *recording[*corev1.Event] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := kube.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "AppService", "involvedObject.name": name}.String()})
	if err != nil {
		t.Fatalf("watching the Events of %s: %v", name, err)
	}
	rec := newRecording[*corev1.Event]()
	go func() {
		for ev := range w.ResultChan() {
			if e, ok := ev.Object.(*corev1.Event); ok {
				rec.add(e)
			}
		}
		if ctx.Err() == nil {
			rec.end()
		}
	}()
	return rec
}

func testCanaryGate(t *testing.T) {
	ns := newNamespace(t)
	const name = "gated"
	createAppService(t, ns, name, canarySpec(
		appv1.CanaryStep{Weight: 10, PauseSeconds: 1, Gate: true}, appv1.CanaryStep{Weight: 50, Gate: true}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	// At the gate: it waits there, with Argo CD's Suspended, far longer
	// than its 1 s pause (the watch shows no edge after it for 10 s).
	gated := rec.waitAtGate(t, 0)
	rec.waitEdges(t, "0@0%", "0@10%")
	if h := argoHealth(t, gated.obj); h != "Suspended" {
		t.Errorf("Argo CD's health of a canary at its gate: %s, want Suspended", h)
	}
	hash := gated.obj.Status.Canary.CanaryTemplateHash
	rec.holds(t, 10*time.Second)

	// A promotion of another template and one of a step it is not at:
	// recorded, then gone; nothing moves.
	for _, stale := range []appv1.CanaryRequest{
		{Action: appv1.CanaryPromote, TemplateHash: "0000000000", Step: new(int32(0))},
		{Action: appv1.CanaryPromote, TemplateHash: hash, Step: new(int32(5))},
	} {
		requestCanary(t, ns, name, stale)
		rec.waitRequestGone(t, stale)
	}
	rec.holds(t, 2*time.Second)
	rec.waitEdges(t, "0@0%", "0@10%")

	// Promoted: one step, to the next gate, the request gone with it.
	requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryPromote, TemplateHash: hash, Step: new(int32(0))})
	rec.waitAtGate(t, 1)
	rec.waitEdges(t, "0@0%", "0@10%", "1@10%", "1@50%")
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonCanaryRequested, "promoted on request past step 1 of 3")
	// The same promotion again, now stale: nothing moves.
	again := appv1.CanaryRequest{Action: appv1.CanaryPromote, TemplateHash: hash, Step: new(int32(0))}
	requestCanary(t, ns, name, again)
	rec.waitRequestGone(t, again)
	rec.holds(t, 2*time.Second)

	// Aborted on request, by someone who edits no spec: the request stays
	// as its record; retried: the canary starts again at its first step.
	requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryAbort, TemplateHash: hash})
	as := waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "aborted on request")
	if r := as.Status.Canary.Request; r == nil || r.Action != appv1.CanaryAbort {
		t.Errorf("status.canary.request of a canary aborted on request: %+v, want the Abort kept", r)
	}
	checkCanaryGone(t, ns, name)
	requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryRetry, TemplateHash: hash})
	rec.waitAtGate(t, 0)
	rec.waitEdges(t, "0@0%", "0@10%", "1@10%", "1@50%", "0@0%", "0@10%")

	// Promoted fully from the first gate: the steps left skipped.
	requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryPromoteFull, TemplateHash: hash})
	waitCanaryDone(t, ns, name)
	rec.waitEdges(t, "0@0%", "0@10%", "1@10%", "1@50%", "0@0%", "0@10%", "3@10%")
	rec.waitWeights(t, 0, 10, 50, 0, 10, 0)
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonCanaryRequested, "skipping the steps left")
}

// testCanaryGitOps: a promotion is written to the status, which
// server-side apply of the manifest as manager (Argo CD's
// argocd-controller, Flux's kustomize-controller) neither reverts nor
// reports as drift.
func testCanaryGitOps(t *testing.T, manager string) {
	ns := newNamespace(t)
	const name = "declared"
	manifest := func(image string) string {
		as := &appv1.AppService{TypeMeta: metav1.TypeMeta{APIVersion: "app.example.com/v1", Kind: "AppService"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       canarySpec(appv1.CanaryStep{Weight: 20, Gate: true}, appv1.CanaryStep{Weight: 100, Gate: true})}
		as.Spec.Image = image
		data, err := yaml.Marshal(as)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "appservice.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	apply := func(path string) {
		t.Helper()
		if out, err := kubectl("apply", "--server-side", "--force-conflicts", "--field-manager="+manager, "-f", path); err != nil {
			t.Fatalf("kubectl apply --server-side as %s: %v\n%s", manager, err, out)
		}
	}
	apply(manifest("nginx:1.27"))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	release := manifest("nginx:1.28")
	apply(release)
	gated := rec.waitAtGate(t, 0)
	requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryPromote, TemplateHash: gated.obj.Status.Canary.CanaryTemplateHash, Step: new(int32(0))})
	promoted := rec.waitAtGate(t, 1)

	// What Argo CD's and Flux's drift detection asks: a server-side diff
	// of the manifest (exit code 0: no difference).
	if out, err := kubectl("diff", "--server-side", "--force-conflicts", "--field-manager="+manager, "-f", release); err != nil {
		t.Errorf("kubectl diff --server-side as %s after the promotion: %v\n%s", manager, err, out)
	}
	// Applied again unchanged: neither manager's fields nor the spec
	// change, and the step stands.
	before, err := getAppService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	apply(release)
	after, err := getAppService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion && (after.Generation != before.Generation || !equality.Semantic.DeepEqual(appliedFields(after), appliedFields(before))) {
		t.Errorf("the unchanged apply changed the AppService: generation %d, was %d; managers' fields %v, were %v",
			after.Generation, before.Generation, appliedFields(after), appliedFields(before))
	}
	if after.Status.Canary == nil || after.Status.Canary.Step == nil || *after.Status.Canary.Step != 1 {
		t.Errorf("status.canary after the apply: %s, want the promoted step 2", canaryString(after.Status.Canary))
	}
	rec.holds(t, 2*time.Second)
	rec.waitEdges(t, "0@0%", "0@20%", "1@20%", "1@100%")
	if promoted.obj.Generation != after.Generation {
		t.Errorf("the spec changed during the promotion: generation %d, then %d", promoted.obj.Generation, after.Generation)
	}
}

// appliedFields are the managed fields entries of the GitOps managers.
func appliedFields(as *appv1.AppService) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, m := range as.ManagedFields {
		if m.Manager == "argocd-controller" || m.Manager == "kustomize-controller" {
			out = append(out, m)
		}
	}
	return out
}

func testCanaryTesters(t *testing.T) {
	ns := newNamespace(t)
	const name = "tried"
	spec := canarySpec(appv1.CanaryStep{Weight: 10, PauseSeconds: 600}, appv1.CanaryStep{Weight: 100})
	spec.Canary.TesterHeaders = []appv1.TesterHeader{{Name: "x-canary", Value: "qa"}}
	spec.ProgressDeadlineSeconds = int32p(15)
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)

	// Pods that never become ready: the route never gets the testers'
	// rule (checked over the whole record, with the weights, at the end).
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "example.com/never-ready:1" })
	waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "not available within the progress deadline")

	// A canary that runs: the testers' rule beside the weight, with the
	// route's match and the header, all of it to the canary's Service.
	updateAppService(t, ns, name, func(as *appv1.AppService) {
		as.Spec.Image, as.Spec.ProgressDeadlineSeconds = "nginx:1.28", int32p(120)
	})
	rec.waitEdges(t, "0@0%", "0@0%", "0@10%")
	route := rec.waitTesters(t, true)
	twin := route.Spec.Rules[len(route.Spec.Rules)-1]
	canaryName := gatewayv1.ObjectName(children.CanaryName(&appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	if len(route.Spec.Rules) != 2 || len(twin.BackendRefs) != 1 || twin.BackendRefs[0].Name != canaryName ||
		len(twin.Matches) != 1 || len(twin.Matches[0].Headers) != 1 || twin.Matches[0].Headers[0].Name != "x-canary" || twin.Matches[0].Headers[0].Value != "qa" {
		data, _ := json.Marshal(route.Spec.Rules)
		t.Errorf("the route's rules while the canary runs: %s; want the weighted rule and a rule for x-canary: qa to %s", data, canaryName)
	}

	// Aborted: the testers' rule goes with the weight, in one write.
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Canary.Abort = true })
	rec.waitTesters(t, false)
	waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "spec.canary.abort is true")

	// Again, to the end: gone once promoted.
	updateAppService(t, ns, name, func(as *appv1.AppService) {
		as.Spec.Canary.Abort = false
		as.Spec.Canary.Steps[0].PauseSeconds = 2
	})
	rec.waitTesters(t, true)
	waitCanaryDone(t, ns, name)
	rec.waitTesters(t, false)
	if changes := rec.testerChanges(); !slices.Equal(changes, []bool{false, true, false, true, false}) {
		t.Errorf("the testers' rule went %v, want off, on, off (abort), on, off (promoted)", changes)
	}
}

func testCanaryRollback(t *testing.T) {
	ns := newNamespace(t)
	const name = "undone"
	spec := canarySpec(appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100})
	spec.Canary.RollbackWindow = 1
	createAppService(t, ns, name, spec)
	first := waitAvailable(t, ns, name, 1).Status.Canary.StableTemplateHash
	rec := recordCanary(t, ns, name)
	release := func(image string) *appv1.AppService {
		t.Helper()
		updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = image })
		return waitCanaryDone(t, ns, name)
	}
	second := release("nginx:1.28").Status.Canary
	if !slices.Equal(second.History, []string{first}) {
		t.Fatalf("status.canary.history once promoted: %v, want [%s]", second.History, first)
	}
	canaries := len(rec.canary.snapshot())

	// Back to the last stable template: the stable Deployment takes it in
	// one write, no canary's objects, the status and an Event say so.
	since := time.Now()
	back := release("nginx:1.27").Status.Canary
	if back.StableTemplateHash != first || !slices.Equal(back.History, []string{second.StableTemplateHash}) {
		t.Errorf("status.canary after the rollback: %s, history %v; want stable %s, history [%s]", canaryString(back), back.History, first, second.StableTemplateHash)
	}
	if !rec.sawReason(appv1.ReasonCanaryRollingBack, since) {
		t.Errorf("no version of the AppService said %s during the rollback", appv1.ReasonCanaryRollingBack)
	}
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonCanaryRolledBack, "Rolled back to "+first)
	var deployments []string
	for _, w := range canaryWrites(t, since, ns) {
		if w.ObjectRef.Resource == "deployments" {
			deployments = append(deployments, w.String())
		}
	}
	if len(deployments) != 1 {
		t.Errorf("%d Deployment writes to roll back, want one (the stable one's): %v", len(deployments), deployments)
	}
	if n := len(rec.canary.snapshot()); n != canaries {
		t.Errorf("the canary's Deployment changed %d times during the rollback, want never", n-canaries)
	}

	// Outside the window (one template): a canary, as ever.
	release("nginx:1.29")
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	rec.canary.wait(t, time.Minute, func(vs []version[*appsv1.Deployment]) error {
		for _, v := range vs[canaries:] {
			if !v.deleted && appImage(v.obj) == "nginx:1.28" {
				return nil
			}
		}
		return fmt.Errorf("no canary Deployment of nginx:1.28 after the change back outside the window")
	})
	waitCanaryDone(t, ns, name)
}

// requestCanary writes a request to the AppService's status, as kubectl
// appservice does: a merge patch of the status subresource with the
// resourceVersion it read, retried on a conflict.
func requestCanary(t *testing.T, ns, name string, r appv1.CanaryRequest) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		as, err := getAppService(ns, name)
		if err != nil {
			return err
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": as.ResourceVersion},
			"status":   map[string]any{"canary": map[string]any{"request": r}},
		})
		if err != nil {
			return err
		}
		_, err = apps.AppV1().AppServices(ns).Patch(context.Background(), name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: "kubectl-appservice"}, "status")
		return err
	})
}

// waitAtGate waits until the AppService's last version has no request
// and waits at the gate of step (Reconciling: CanaryGated), and returns it.
func (r *canaryRecord) waitAtGate(t *testing.T, step int32) version[*appv1.AppService] {
	t.Helper()
	vs := r.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		if len(vs) == 0 {
			return fmt.Errorf("no version of the AppService recorded")
		}
		v := vs[len(vs)-1]
		c, st := condition(v.obj, appv1.ConditionReconciling), v.obj.Status.Canary
		if c == nil || c.Reason != appv1.ReasonCanaryGated || st == nil || st.Request != nil || st.Step == nil || *st.Step != step {
			return fmt.Errorf("the AppService's last version: Reconciling %+v, status.canary %s; want at the gate of step %d", c, canaryString(st), step+1)
		}
		return nil
	})
	return vs[len(vs)-1]
}

// sawReason reports whether a version of the AppService recorded after
// since had the reason in its Reconciling condition.
func (r *canaryRecord) sawReason(reason string, since time.Time) bool {
	for _, v := range r.app.snapshot() {
		if c := condition(v.obj, appv1.ConditionReconciling); v.at.After(since) && c != nil && c.Reason == reason {
			return true
		}
	}
	return false
}

// waitRequestGone waits until the request was recorded in the status, and
// a later version has none: the controller dropped or acted on it.
func (r *canaryRecord) waitRequestGone(t *testing.T, req appv1.CanaryRequest) {
	t.Helper()
	r.app.wait(t, time.Minute, func(vs []version[*appv1.AppService]) error {
		seen := false
		for _, v := range vs {
			got := v.obj.Status.Canary
			switch {
			case got != nil && got.Request != nil && equality.Semantic.DeepEqual(*got.Request, req):
				seen = true
			case seen && (got == nil || got.Request == nil):
				return nil
			}
		}
		return fmt.Errorf("request %+v recorded %v, and not gone since", req, seen)
	})
}

// holds checks that the canary's step and weight do not change for d: no
// edge after the last recorded one.
func (r *canaryRecord) holds(t *testing.T, d time.Duration) {
	t.Helper()
	edges := edgeNames(canaryEdges(r.app.snapshot()))
	time.Sleep(d) // the assertion is on what the watch records over d
	if got := edgeNames(canaryEdges(r.app.snapshot())); !slices.Equal(got, edges) {
		t.Errorf("the canary moved within %s: edges %v, then %v", d, edges, got)
	}
}

// testers reports whether a version of the route has the testers' rule:
// a rule whose only backend is the canary's Service.
func testers(r *gatewayv1.HTTPRoute) bool {
	for _, rule := range r.Spec.Rules {
		if len(rule.BackendRefs) == 1 && strings.HasSuffix(string(rule.BackendRefs[0].Name), "-canary") {
			return true
		}
	}
	return false
}

// testerChanges is whether the route had the testers' rule, at each change.
func (r *canaryRecord) testerChanges() []bool {
	var changes []bool
	for _, v := range r.route.snapshot() {
		if on := testers(v.obj); len(changes) == 0 || changes[len(changes)-1] != on {
			changes = append(changes, on)
		}
	}
	return changes
}

// waitTesters waits until the route's last version has the testers' rule
// (on) or not, and returns it.
func (r *canaryRecord) waitTesters(t *testing.T, on bool) *gatewayv1.HTTPRoute {
	t.Helper()
	vs := r.route.wait(t, time.Minute, func(vs []version[*gatewayv1.HTTPRoute]) error {
		if len(vs) > 0 && testers(vs[len(vs)-1].obj) == on {
			return nil
		}
		return fmt.Errorf("the route's testers' rule is not %v yet", on)
	})
	return vs[len(vs)-1].obj
}

// argoHealth is what Argo CD's health check (artifacts/argocd/health.lua)
// says of a version of an AppService.
func argoHealth(t *testing.T, as *appv1.AppService) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(repoRoot, "artifacts/argocd/health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(as)
	if err != nil {
		t.Fatal(err)
	}
	got, err := argocdhealth.Evaluate(string(script), obj)
	if err != nil {
		t.Fatal(err)
	}
	return got.Status
}
