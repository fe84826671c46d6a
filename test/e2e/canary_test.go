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
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestCanary: spec.canary, end to end, in three namespaces at once.
//   - promote: an image change goes out as a canary of three steps. The
//     route's weights go 10 → 50 → 100 and back to the one Service, each
//     step once its Pods are available; the canary's replicas follow its
//     weight of the autoscaled stable count; the stable Deployment, its
//     PodDisruptionBudget and its sidecar are untouched until the
//     promotion; kstatus reads InProgress, then Current; nothing is
//     written during a pause, nor once promoted.
//   - deadline: a canary whose Pods never become ready is aborted at the
//     progress deadline (Stalled, CanaryAborted, kstatus Failed, a Warning
//     Event), the stable Pods serving all along; a config change
//     (rolloutOnConfigChange) then goes out as a canary, and is promoted.
//   - abort: spec.canary.abort sends all the traffic back in one write,
//     and the canary's Pods go; false again starts a new canary.
func TestCanary(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	t.Run("promote", func(t *testing.T) { t.Parallel(); testCanaryPromote(t) })
	t.Run("deadline", func(t *testing.T) { t.Parallel(); testCanaryDeadline(t) })
	t.Run("abort", func(t *testing.T) { t.Parallel(); testCanaryAbort(t) })
	t.Run("writes", func(t *testing.T) { t.Parallel(); testCanaryWrites(t) })
}

// testCanaryWrites: a canary of three steps with a route (10%, 50%, 100%,
// no pause; two replicas, as the bench's) writes its edges and the
// stable's rollout, nothing more (issue 62), counted from the audit log:
//   - the children: the canary's Deployment and Service created and
//     deleted, the canary scaled once and the stable given the template,
//     the route at 10%, 50%, 100% and back;
//   - the status: six edges (the start; 10% with step 2; 50% with step 3;
//     100%; the promotion; the end), and at most one write for each state
//     of the stable Deployment's rollout that the status mirrors (its
//     counts and its Available and Progressing conditions).
func testCanaryWrites(t *testing.T) {
	ns := newNamespace(t)
	const name = "frugal"
	spec := canarySpec(appv1.CanaryStep{Weight: 10}, appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100})
	spec.Size = int32p(2)
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 2)
	rec := recordCanary(t, ns, name)
	// Quiet first: the writes and the versions counted are the canary's.
	waitInLine(t, ns, name)
	waitSyncs(t, ns, name)
	appMark, stableMark := len(rec.app.snapshot()), len(rec.stable.snapshot())
	since := time.Now()
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	// The edges first: until the change is seen, no canary is under way
	// either.
	rec.waitEdges(t, "0@0%", "1@10%", "2@50%", "2@100%", "3@100%")
	rec.waitDone(t)
	checkCanaryGone(t, ns, name)
	// Quiet again: every write of the canary answered, and in the log.
	waitInLine(t, ns, name)
	waitSyncs(t, ns, name)

	writes := canaryWrites(t, since, ns)
	t.Logf("writes of a canary of three steps: %s", summarize(writes))
	toChildren, toStatus := map[string]int{}, 0
	for _, w := range writes {
		if w.ObjectRef.Resource == "appservices" {
			toStatus++
			continue
		}
		toChildren[w.Verb+" "+w.ObjectRef.Resource]++
	}
	want := map[string]int{"create deployments": 1, "create services": 1, "delete deployments": 1, "delete services": 1,
		"patch deployments": 2, "patch httproutes": 4}
	if !maps.Equal(toChildren, want) {
		t.Errorf("the canary's writes to its children: %v, want %v", toChildren, want)
	}
	// The status's versions since the change: edges (status.canary's
	// templates, step or weight changed) and the rest.
	edges, mirrors := 0, 0
	versions := rec.app.snapshot()
	last := versions[appMark-1].obj
	for _, v := range versions[appMark:] {
		if v.deleted {
			continue
		}
		if !equality.Semantic.DeepEqual(last.Status, v.obj.Status) {
			a, b := last.Status.Canary, v.obj.Status.Canary
			switch {
			case a == nil || b == nil || a.StableTemplateHash != b.StableTemplateHash || a.CanaryTemplateHash != b.CanaryTemplateHash ||
				!ptr.Equal(a.Step, b.Step) || a.Weight != b.Weight:
				edges++
			default:
				mirrors++
			}
		}
		last = v.obj
	}
	if edges != 6 {
		t.Errorf("%d status versions with an edge, want 6", edges)
	}
	// What the status mirrors of the stable Deployment, state by state.
	type mirrored struct {
		replicas, ready, available, updated int32
		conditions                          string
	}
	states := map[mirrored]bool{}
	for _, v := range rec.stable.snapshot()[stableMark:] {
		if v.deleted {
			continue
		}
		s := v.obj.Status
		m := mirrored{s.Replicas, s.ReadyReplicas, s.AvailableReplicas, s.UpdatedReplicas, ""}
		for _, c := range s.Conditions {
			m.conditions += fmt.Sprintf("%s=%s/%s/%s;", c.Type, c.Status, c.Reason, c.Message)
		}
		states[m] = true
	}
	if mirrors > len(states) {
		t.Errorf("%d status versions besides the edges, for %d states of the stable Deployment", mirrors, len(states))
	}
	if toStatus != edges+mirrors {
		t.Errorf("%d status writes for %d versions of the status (%d edges, %d of the stable's rollout): a write that changed nothing, or a conflict",
			toStatus, edges+mirrors, edges, mirrors)
	}
}

func testCanaryPromote(t *testing.T) {
	ns := newNamespace(t)
	const name = "shop"
	spec := canarySpec(appv1.CanaryStep{Weight: 10, PauseSeconds: 2}, appv1.CanaryStep{Weight: 50, PauseSeconds: 30}, appv1.CanaryStep{Weight: 100, PauseSeconds: 5})
	spec.Autoscaling = &appv1.Autoscaling{MinReplicas: int32p(4), MaxReplicas: 8}
	spec.DisruptionBudget = &appv1.DisruptionBudget{MinAvailable: new(intstr.FromInt32(3))}
	spec.Sidecars = []appv1.Container{{Name: "proxy", Image: "envoyproxy/envoy:v1.31"}}
	createAppService(t, ns, name, spec)
	as := waitAvailable(t, ns, name, 4)
	if as.Status.Canary == nil || as.Status.Canary.StableTemplateHash == "" {
		t.Fatalf("status.canary of a new AppService with spec.canary: %+v, want the stable template's hash", as.Status.Canary)
	}
	oldHash := as.Status.Canary.StableTemplateHash
	// The steps last seconds (the first pause is 2 s): what they did is
	// judged from what the watches recorded, once the canary is done.
	rec := recordCanary(t, ns, name)
	budget := record[*policyv1.PodDisruptionBudget](t, kube.PolicyV1().PodDisruptionBudgets(ns).Watch, name)
	since := time.Now()

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	// Promoted: every Pod runs the new template behind the one Service.
	as = waitCanaryDone(t, ns, name)
	if as.Status.Canary.StableTemplateHash == oldHash {
		t.Errorf("the stable template's hash is still %s after the promotion", oldHash)
	}
	if k := kstatusOf(t, ns, name); k != status.CurrentStatus {
		t.Errorf("kstatus says %s once promoted, want Current", k)
	}
	if d, err := getDeployment(ns, name); err != nil || appImage(d) != "nginx:1.28" {
		t.Errorf("the stable Deployment once promoted: %v, image %s, want nginx:1.28", err, appImage(d))
	}
	checkCanaryGone(t, ns, name)
	rec.waitWeights(t, 0, 10, 50, 100, 0)
	edges := rec.waitEdges(t, "0@0%", "0@10%", "1@10%", "1@50%", "2@50%", "2@100%", "3@100%")

	// Each step's weight went to the route once all of the step's Pods
	// were available (its weight of the 4 stable replicas, rounded up), and
	// the canary's Pods ran the new template, with the sidecar.
	rec.checkStepsServed(t, map[int32]int32{10: 1, 50: 2, 100: 4})
	var replicas []int32
	for _, v := range rec.canary.snapshot() {
		d := v.obj
		if n := *d.Spec.Replicas; len(replicas) == 0 || replicas[len(replicas)-1] != n {
			replicas = append(replicas, n)
		}
		if appImage(d) != "nginx:1.28" || (containerNamed(d, "proxy") == nil &&
			!slices.ContainsFunc(d.Spec.Template.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "proxy" })) {
			t.Errorf("the canary's Deployment (resourceVersion %d) runs %s, sidecar %v: want nginx:1.28 and the sidecar", v.rv, appImage(d), containerNamed(d, "proxy"))
		}
		if l := d.Spec.Template.Labels; l[appv1.LabelCanary] != name || l[appv1.LabelAppService] != "" {
			t.Errorf("the canary's Pod labels %v: want %s and not %s", l, appv1.LabelCanary, appv1.LabelAppService)
		}
	}
	if want := []int32{1, 2, 4}; !slices.Equal(replicas, want) {
		t.Errorf("the canary's replicas went %v, want %v", replicas, want)
	}

	// kstatus read InProgress all along the canary: every version of the
	// AppService with a canary under way.
	for _, v := range rec.app.snapshot() {
		if c := v.obj.Status.Canary; c != nil && c.CanaryTemplateHash != "" {
			if k := kstatusOfObject(t, v.obj); k != status.InProgressStatus {
				t.Errorf("kstatus says %s of status.canary %s (resourceVersion %d), want InProgress", k, canaryString(c), v.rv)
			}
		}
	}

	// The stable Deployment kept its template until the last step's pause
	// had begun: one change of its spec, to the new image, after the status
	// recorded 2@100%. Its budget counted its own Pods only until then.
	var changes []version[*appsv1.Deployment]
	stable := rec.stable.snapshot()
	for i, v := range stable {
		if i > 0 && v.obj.Generation != stable[i-1].obj.Generation {
			changes = append(changes, v)
		}
	}
	last := edges["2@100%"]
	if len(changes) != 1 || changes[0].rv < last.v.rv || appImage(changes[0].obj) != "nginx:1.28" {
		for _, c := range changes {
			t.Logf("the stable Deployment at generation %d, image %s, resourceVersion %d", c.obj.Generation, appImage(c.obj), c.rv)
		}
		t.Fatalf("the stable Deployment's spec changed %d times; want once, to nginx:1.28, after the status recorded 2@100%% (resourceVersion %d)", len(changes), last.v.rv)
	}
	expected := int32(0)
	for _, v := range budget.snapshot() {
		if v.rv < changes[0].rv {
			expected = max(expected, v.obj.Status.ExpectedPods)
		}
	}
	if expected != 4 {
		t.Errorf("the PodDisruptionBudget expected up to %d Pods before the promotion, want the 4 stable ones", expected)
	}

	// During the 30 s pause of the second step, from the moment its edge
	// was recorded to the next edge: not one write (not even one refused
	// for a conflict: a sync waits for the cache to have the edge's own
	// status write), and syncs all the same (a resync among them).
	paused, next := edges["1@50%"].v.at, edges["2@50%"].v.obj.Status.Canary.StepStartTime.Time
	for _, w := range canaryWrites(t, paused, ns) {
		if w.RequestReceivedTimestamp.Before(next) {
			t.Errorf("write by the controller during a canary's pause: %s", w)
		}
	}
	if syncs := syncsBetween(loggedSyncs(t, ns, name), paused, next); syncs < 2 {
		t.Errorf("%d syncs during the pause (%s to %s), want 2 at least", syncs, paused.Format(time.StampMicro), next.Format(time.StampMicro))
	}

	for _, reason := range []string{appv1.ReasonCanaryStep, appv1.ReasonCanaryPromoted} {
		n := 0
		for _, e := range events(t, ns, name, reason) {
			n += int(e.Count)
		}
		if want := map[string]int{appv1.ReasonCanaryStep: 3, appv1.ReasonCanaryPromoted: 1}[reason]; n != want {
			t.Errorf("%d %s Events, want %d", n, reason, want)
		}
	}
	t.Logf("writes of a canary of three steps: %s", summarize(canaryWrites(t, since, ns)))

	// In line again: not one write.
	waitInLine(t, ns, name)
	steady := time.Now()
	waitSyncs(t, ns, name)
	for _, w := range canaryWrites(t, steady, ns) {
		t.Errorf("write by the controller once promoted and in line: %s", w)
	}
}

func testCanaryDeadline(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "risky"
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "a"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec := canarySpec(appv1.CanaryStep{Weight: 20, PauseSeconds: 5}, appv1.CanaryStep{Weight: 100})
	spec.Size, spec.ProgressDeadlineSeconds = int32p(2), int32p(10)
	spec.RolloutOnConfigChange = true
	spec.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 2)
	rec := recordCanary(t, ns, name)

	// Pods that start and never become ready: the canary's Deployment
	// lives for the progress deadline (10 s), then goes.
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "example.com/never-ready:1" })
	rec.canary.wait(t, time.Minute, func(vs []version[*appsv1.Deployment]) error {
		if len(vs) == 0 {
			return fmt.Errorf("no canary Deployment %s", children.CanaryName(&appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		}
		return nil
	})
	as := waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "not available within the progress deadline")
	if k := kstatusOf(t, ns, name); k != status.FailedStatus {
		t.Errorf("kstatus says %s of an aborted canary, want Failed", k)
	}
	if as.Status.Canary.AbortedTemplateHash == "" {
		t.Errorf("status.canary of an aborted canary: %+v, want the aborted template", as.Status.Canary)
	}
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryAborted, "progress deadline")
	checkCanaryGone(t, ns, name)
	// The stable Pods never stopped serving.
	if d, err := getDeployment(ns, name); err != nil || d.Status.AvailableReplicas != 2 || appImage(d) != "nginx:1.27" {
		t.Errorf("the stable Deployment after the abort: %v, %d available, image %s; want 2 of nginx:1.27", err, d.Status.AvailableReplicas, appImage(d))
	}

	// The running image again: nothing to canary, nothing aborted. A
	// deadline a loaded machine meets, for the canary that follows.
	updateAppService(t, ns, name, func(as *appv1.AppService) {
		as.Spec.Image, as.Spec.ProgressDeadlineSeconds = "nginx:1.27", int32p(120)
	})
	waitCanaryDone(t, ns, name)
	// A config change goes out as a canary: its first step (a 5 s pause)
	// is routed, then it is promoted.
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "b"},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.waitEdges(t, "0@0%", "0@0%", "0@20%", "1@20%", "1@100%", "2@100%")
	waitCanaryDone(t, ns, name)
	checkCanaryGone(t, ns, name)
	rec.waitWeights(t, 0, 20, 100, 0)
}

func testCanaryAbort(t *testing.T) {
	ns := newNamespace(t)
	const name = "undo"
	createAppService(t, ns, name, canarySpec(appv1.CanaryStep{Weight: 50, PauseSeconds: 600}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	// The first step's pause (600 s) outlasts the test.
	rec.waitEdges(t, "0@0%", "0@50%")
	rec.checkStepsServed(t, map[int32]int32{50: 1})

	since := time.Now()
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Canary.Abort = true })
	waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "spec.canary.abort is true")
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryAborted, "spec.canary.abort is true")
	checkCanaryGone(t, ns, name)
	if k := kstatusOf(t, ns, name); k != status.FailedStatus {
		t.Errorf("kstatus says %s of an aborted canary, want Failed", k)
	}
	routeWrites := 0
	for _, w := range canaryWrites(t, since, ns) {
		if w.ObjectRef.Resource == "httproutes" {
			routeWrites++
		}
	}
	if routeWrites != 1 {
		t.Errorf("%d writes of the HTTPRoute to abort, want one", routeWrites)
	}
	rec.waitWeights(t, 0, 50, 0)

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Canary.Abort = false })
	rec.waitEdges(t, "0@0%", "0@50%", "0@0%", "0@50%")
	rec.waitWeights(t, 0, 50, 0, 50)
}

// TestCanaryRestart: the controller killed (SIGKILL) at each edge of a
// canary, right after it recorded the edge, and restarted: no step is
// skipped nor taken twice, no pause starts over, and the route never sends
// traffic to a canary without available Pods; the same of a canary by
// Pods; a canary with a mirror step and sticky users likewise, on an
// HTTPRoute and a GRPCRoute; a canary's test, killed while it runs
// and once it ended, runs once; and a blue-green release, killed at each
// edge up to its switch, switches once.
// Serial: it restarts the suite's controller.
func TestCanaryRestart(t *testing.T) {
	serial(t, 2)
	installGatewayAPI(t)
	// A short lease, so that each restarted process takes over from the
	// killed one in seconds rather than the default 15.
	swapController(t, "canary-restarts", "-leader-elect-lease-duration=4s", "-leader-elect-renew-deadline=3s", "-leader-elect-retry-period=1s")
	ns := newNamespace(t)
	const name = "sturdy"
	createAppService(t, ns, name, canarySpec(
		appv1.CanaryStep{Weight: 10, PauseSeconds: 8}, appv1.CanaryStep{Weight: 50, PauseSeconds: 8}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	// Killed as soon as each of the first six edges is recorded: step i's
	// Pods asked for, then its weight routed (its pause begun).
	rec.killAtEdges(t, 6)
	waitCanaryDone(t, ns, name)
	checkCanaryGone(t, ns, name)
	// Each edge once (a pause begun again would show a second start), in
	// order, none skipped. The last step has no pause: its promotion
	// follows its weight at once, so the kill after 2@100% may fall
	// between the promotion's Deployment write and its status write; the
	// next process then finds the stable Pods on the canary's template and,
	// once they have rolled out, ends the canary without ever recording
	// 3@100% (the route kept 100% until then: the weights below).
	rec.waitWeights(t, 0, 10, 50, 100, 0)
	rec.waitDone(t)
	rec.checkEdges(t, "the canary", "0@0%", "0@10%", "1@10%", "1@50%", "2@50%", "2@100%", "3@100%")
	rec.checkStepsServed(t, map[int32]int32{10: 1, 50: 1, 100: 1})

	// A promotion at a gate (kubectl appservice promote), the controller
	// killed right after it is written, and again right after the step it
	// passed is recorded: the step is passed once, neither lost nor
	// passed twice.
	const gated = "gated"
	createAppService(t, ns, gated, canarySpec(
		appv1.CanaryStep{Weight: 10, Gate: true}, appv1.CanaryStep{Weight: 50, Gate: true}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, gated, 1)
	grec := recordCanary(t, ns, gated)
	updateAppService(t, ns, gated, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	grec.waitAtGate(t, 0)
	(&plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}).expect(0, "", "", "promote", gated)
	restartController(t)
	grec.waitEdges(t, "0@0%", "0@10%", "1@10%")
	restartController(t)
	grec.waitAtGate(t, 1)
	grec.holds(t, 3*time.Second)
	grec.waitEdges(t, "0@0%", "0@10%", "1@10%", "1@50%")

	// A canary by Pods (no route), killed as soon as each of its first
	// four edges is recorded: each edge once, in order, none skipped.
	const pods = "bypods"
	createAppService(t, ns, pods, podsSpec(2,
		appv1.CanaryStep{Weight: 25, PauseSeconds: 6}, appv1.CanaryStep{Weight: 50, PauseSeconds: 6}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, pods, 2)
	prec := recordCanary(t, ns, pods)
	updateAppService(t, ns, pods, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	prec.killAtEdges(t, 4)
	waitCanaryDone(t, ns, pods)
	prec.waitDone(t)
	prec.checkEdges(t, "the canary by Pods", "0@0%", "0@25%", "1@25%", "1@50%", "2@50%", "2@100%", "3@100%")

	// A mirror step of weight 0 and sticky users, killed as soon as each
	// of its first four edges is recorded: each edge once, in order, none
	// skipped, and the route's states as without the kills.
	const shadow = "shadow"
	shadowSpec := canarySpec(appv1.CanaryStep{Weight: 0, Mirror: 50, PauseSeconds: 4}, appv1.CanaryStep{Weight: 20, PauseSeconds: 4}, appv1.CanaryStep{Weight: 100})
	shadowSpec.Canary.Sticky = &appv1.CanarySticky{CookieName: "canary"}
	shadowSpec.GRPCRoute = &appv1.GRPCRoute{ParentRefs: shadowSpec.HTTPRoute.ParentRefs}
	createAppService(t, ns, shadow, shadowSpec)
	waitAvailable(t, ns, shadow, 1)
	srec := recordCanary(t, ns, shadow)
	sgrpc := record[*gatewayv1.GRPCRoute](t, gatewayAPI(t).GatewayV1().GRPCRoutes(ns).Watch, shadow)
	updateAppService(t, ns, shadow, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	srec.killAtEdges(t, 4)
	waitCanaryDone(t, ns, shadow)
	srec.waitDone(t)
	srec.checkEdges(t, "the mirrored canary", "0@0%", "0@0%+m50", "1@0%", "1@20%", "2@20%", "2@100%", "3@100%")
	states := routeStates(srec.route.snapshot())
	if want := []string{"0%", "0% mirror 50% sticky", "20% sticky", "100% sticky", "100%", "0%"}; !slices.Equal(states, want) && !slices.Equal(states, want[:5]) {
		t.Errorf("the mirrored canary's route went %v, want %v", states, want)
	}
	// Its GRPCRoute: the same weights and mirror (and, with no sticky
	// rule to hide it, 0% between the mirror and the next step's weight).
	grpcStates := grpcRouteStates(sgrpc.snapshot(), true)
	if want := []string{"0%", "0% mirror 50%", "0%", "20%", "100%", "0%"}; !slices.Equal(grpcStates, want) && !slices.Equal(grpcStates, want[:5]) {
		t.Errorf("the mirrored canary's GRPCRoute went %v, want %v", grpcStates, want)
	}

	// A smoke test (8 s), the controller killed once its record is
	// written (the test running), and again as soon as its Activity has
	// Succeeded (before the canary's status says so): one Activity, one
	// Job, and the weight once it passed.
	const tested = "tested"
	createAppService(t, ns, tested, canarySpec(appv1.CanaryStep{Weight: 20, Tests: []appv1.CanaryTest{smokeTest("sleep 8")}}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, tested, 1)
	trec := recordCanary(t, ns, tested)
	tests := recordTests(t, ns, tested)
	jobs := recordSelected[*batchv1.Job](t, kube.BatchV1().Jobs(ns).Watch, metav1.ListOptions{LabelSelector: appv1.LabelActivity}, "Jobs")
	updateAppService(t, ns, tested, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	trec.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		if c := vs[len(vs)-1].obj.Status.Canary; c == nil || len(c.Tests) == 0 {
			return fmt.Errorf("status.canary %s: no test recorded yet", canaryString(c))
		}
		return nil
	})
	restartController(t)
	smoke := testEnded(t, tests, "smoke", appv1.ActivitySucceeded)
	restartController(t)
	waitCanaryDone(t, ns, tested)
	if got := edgeNames(canaryEdges(trec.app.snapshot())); !slices.Equal(got, []string{"0@0%", "1@20%", "1@100%", "2@100%"}) &&
		!slices.Equal(got, []string{"0@0%", "1@20%", "1@100%"}) {
		t.Errorf("the tested canary's edges went %v", got)
	}
	if names := activityNames(tests.snapshot()); len(names) != 1 {
		t.Errorf("the smoke test ran as %v, want one Activity", names)
	}
	uids := map[types.UID]bool{}
	for _, v := range jobs.snapshot() {
		if v.obj.Name == smoke.obj.Name {
			uids[v.obj.UID] = true
		}
	}
	if len(uids) != 1 {
		t.Errorf("the smoke test's Job was created %d times, want once", len(uids))
	}
	if first := trec.weightChanges()[1]; first.rv < smoke.rv {
		t.Errorf("the route sent the canary traffic at resourceVersion %d, before its smoke test passed (%d)", first.rv, smoke.rv)
	}

	// A blue-green release of the seeds' AppService with a smoke test of
	// its preview, killed as soon as each of its five edges is recorded
	// (its start, its preview tested and ready, the switch's wait, the
	// switch, the promotion): each edge once, in order; one Activity for the
	// test; the Service's endpoints from the old Pods to the preview's to
	// the new stable ones, never mixed nor empty; one Switched Event.
	const bg = "bluegreen"
	delay := int32(4)
	brec, _ := startBlueGreen(t, ns, bg, seedBlueGreen(t, appv1.BlueGreen{ScaleDownDelaySeconds: &delay},
		appv1.CanaryStep{Weight: 0, PauseSeconds: 4, Tests: []appv1.CanaryTest{smokeTest("sleep 2")}}))
	btests := recordTests(t, ns, bg)
	bevents := recordEvents(t, ns, bg)
	updateAppService(t, ns, bg, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.8" })
	brec.killAtEdges(t, 5)
	waitCanaryDone(t, ns, bg)
	brec.waitDone(t)
	brec.checkEdges(t, "the blue-green release", "0@0%", "0@0%+ready", "1@0%", "1@100%", "2@100%")
	brec.checkStacks(t, "blue", "preview", "green")
	if names := activityNames(btests.snapshot()); len(names) != 1 {
		t.Errorf("the preview's smoke test ran as %v, want one Activity", names)
	}
	switches := 0
	for _, e := range bevents.snapshot() {
		if e.Reason == appv1.ReasonCanarySwitched {
			switches += int(max(e.Count, 1))
		}
	}
	if switches > 1 {
		t.Errorf("%d %s Events: a restart repeated the switch's", switches, appv1.ReasonCanarySwitched)
	}
}

// checkEdges checks that the canary's edges were want, each once, in
// order: all of them, or all but the last (the promotion's end, which a
// canary whose stable Pods rolled out before its status said 100% never
// records, and one killed then may skip).
func (r *canaryRecord) checkEdges(t *testing.T, what string, want ...string) {
	t.Helper()
	if got := edgeNames(canaryEdges(r.app.snapshot())); !slices.Equal(got, want) && !slices.Equal(got, want[:len(want)-1]) {
		t.Errorf("%s's edges went %v, want %v", what, got, want)
	}
}

// killAtEdges kills (SIGKILL) and restarts the controller as soon as each
// of the canary's first n edges is recorded.
func (r *canaryRecord) killAtEdges(t *testing.T, n int) {
	t.Helper()
	for k := 1; k <= n; k++ {
		r.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
			if got := edgeNames(canaryEdges(vs)); len(got) < k {
				return fmt.Errorf("edges so far %v, waiting for edge %d", got, k)
			}
			return nil
		})
		restartController(t)
	}
}

// canaryRecord is what watches recorded of an AppService's canary, from
// before the test changed its template until the test ends: the
// AppService, its HTTPRoute, and its stable and canary Deployments.
type canaryRecord struct {
	app            *recording[version[*appv1.AppService]]
	route          *recording[version[*gatewayv1.HTTPRoute]]
	stable, canary *recording[version[*appsv1.Deployment]]
}

func recordCanary(t *testing.T, ns, name string) *canaryRecord {
	t.Helper()
	deployments := kube.AppsV1().Deployments(ns).Watch
	r := &canaryRecord{
		app:    record[*appv1.AppService](t, apps.AppV1().AppServices(ns).Watch, name),
		route:  record[*gatewayv1.HTTPRoute](t, gatewayAPI(t).GatewayV1().HTTPRoutes(ns).Watch, name),
		stable: record[*appsv1.Deployment](t, deployments, name),
		canary: record[*appsv1.Deployment](t, deployments, children.CanaryName(&appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name}})),
	}
	// No traffic lost: every version of the route that sends the canary
	// traffic came while the canary had an available Pod.
	t.Cleanup(func() { r.checkServed(t) })
	return r
}

// canaryEdge is an edge of the canary: a step's stage began, as
// "STEP@WEIGHT%" ("STEP@WEIGHT%+mMIRROR" with a mirror, "+ready" once a
// blue-green step's preview was ready), in version v of
// the AppService (the first that says so).
type canaryEdge struct {
	name string
	v    version[*appv1.AppService]
}

// canaryEdges are the canary's edges in the AppService's versions, once
// for each time a step's stage began (status.canary's stepStartTime): a
// version whose step, weight or stepStartTime differs from the version
// before's. (Not a set of them: stepStartTime is in seconds, and a canary
// aborted and started again within the second repeats its first edges.)
func canaryEdges(versions []version[*appv1.AppService]) []canaryEdge {
	var edges []canaryEdge
	last := ""
	for _, v := range versions {
		c, key := v.obj.Status.Canary, ""
		if c != nil && c.Step != nil && c.StepStartTime != nil {
			edge := fmt.Sprintf("%d@%d%%", *c.Step, c.Weight)
			if c.Mirror > 0 {
				edge += fmt.Sprintf("+m%d", c.Mirror)
			}
			if c.PreviewReady {
				// A blue-green step's stage began (its weight stays 0).
				edge += "+ready"
			}
			if key = edge + " " + c.StepStartTime.String(); key != last {
				edges = append(edges, canaryEdge{edge, v})
			}
		}
		last = key
	}
	return edges
}

func edgeNames(edges []canaryEdge) []string {
	names := make([]string, len(edges))
	for i, e := range edges {
		names[i] = e.name
	}
	return names
}

// waitEdges waits until the canary's edges are want, and returns each
// edge's last occurrence by name. Edges that cannot become want fail the
// test at once.
func (r *canaryRecord) waitEdges(t *testing.T, want ...string) map[string]canaryEdge {
	t.Helper()
	vs := r.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		return wantPrefix(t, "the canary's edges", edgeNames(canaryEdges(vs)), want)
	})
	byName := map[string]canaryEdge{}
	for _, e := range canaryEdges(vs) {
		byName[e.name] = e
	}
	return byName
}

// waitDone waits until the AppService's record shows no canary under way
// (the promotion or the abort recorded).
func (r *canaryRecord) waitDone(t *testing.T) {
	t.Helper()
	r.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		if len(vs) == 0 {
			return fmt.Errorf("no version of the AppService recorded")
		}
		if c := vs[len(vs)-1].obj.Status.Canary; c == nil || c.CanaryTemplateHash != "" {
			return fmt.Errorf("status.canary %s, want no canary under way", canaryString(c))
		}
		return nil
	})
}

// routeWeight is the canary's weight in a version of the route: its second
// backend's (0 with one backend).
func routeWeight(r *gatewayv1.HTTPRoute) int32 {
	if len(r.Spec.Rules) > 0 && len(r.Spec.Rules[0].BackendRefs) == 2 {
		return *r.Spec.Rules[0].BackendRefs[1].Weight
	}
	return 0
}

// weightChanges are the versions of the route that changed the canary's
// weight (the first version among them).
func (r *canaryRecord) weightChanges() []version[*gatewayv1.HTTPRoute] {
	var changes []version[*gatewayv1.HTTPRoute]
	for _, v := range r.route.snapshot() {
		if len(changes) == 0 || routeWeight(changes[len(changes)-1].obj) != routeWeight(v.obj) {
			changes = append(changes, v)
		}
	}
	return changes
}

func weightsOf(changes []version[*gatewayv1.HTTPRoute]) []int32 {
	weights := make([]int32, len(changes))
	for i, v := range changes {
		weights[i] = routeWeight(v.obj)
	}
	return weights
}

// waitWeights waits until the route's canary weights went want,
// consecutive repeats once. Weights that cannot become want fail the test
// at once.
func (r *canaryRecord) waitWeights(t *testing.T, want ...int32) {
	t.Helper()
	r.route.wait(t, time.Minute, func([]version[*gatewayv1.HTTPRoute]) error {
		return wantPrefix(t, "the route's canary weights", weightsOf(r.weightChanges()), want)
	})
}

// checkServed checks that every version of the route that sends the canary
// traffic came while the canary's Deployment had an available Pod: its
// version before the route's, in the order of their writes, not the one
// there is when the test reads it.
func (r *canaryRecord) checkServed(t *testing.T) {
	t.Helper()
	canary := r.canary.snapshot()
	for _, v := range r.route.snapshot() {
		weight := routeWeight(v.obj)
		if weight == 0 {
			continue
		}
		if d, ok := before(canary, v.rv); !ok || d.deleted || d.obj.Status.AvailableReplicas == 0 {
			t.Errorf("the route sends the canary %d%% (resourceVersion %d) while its Deployment has no available Pod", weight, v.rv)
		}
	}
}

// checkStepsServed checks that each step's weight went to the route once
// all of its Pods were available: when the route changed to weight w, the
// canary's Deployment asked for replicas[w] Pods, and had them available.
func (r *canaryRecord) checkStepsServed(t *testing.T, replicas map[int32]int32) {
	t.Helper()
	canary := r.canary.snapshot()
	for _, v := range r.weightChanges() {
		weight := routeWeight(v.obj)
		if weight == 0 {
			continue
		}
		want := replicas[weight]
		d, ok := before(canary, v.rv)
		if !ok || d.deleted || *d.obj.Spec.Replicas != want || d.obj.Status.AvailableReplicas < want {
			t.Errorf("the route sent the canary %d%% (resourceVersion %d) before its %d Pods were available: its Deployment then %s",
				weight, v.rv, want, deploymentString(d, ok))
		}
	}
}

func deploymentString(v version[*appsv1.Deployment], ok bool) string {
	switch {
	case !ok:
		return "did not exist"
	case v.deleted:
		return "was deleted"
	}
	return fmt.Sprintf("asked for %d Pods, %d available (resourceVersion %d)", *v.obj.Spec.Replicas, v.obj.Status.AvailableReplicas, v.rv)
}

// wantPrefix is nil when got is want, an error while got is a prefix of
// it, and fails the test at once otherwise: what a watch recorded is not
// undone.
func wantPrefix[T comparable](t *testing.T, what string, got, want []T) error {
	t.Helper()
	if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) {
		t.Fatalf("%s went %v, want %v", what, got, want)
	}
	if len(got) < len(want) {
		return fmt.Errorf("%s went %v so far, want %v", what, got, want)
	}
	return nil
}

// restartController kills the suite's controller and starts it again.
func restartController(t *testing.T) {
	t.Helper()
	if _, err := ctrl.Stop(syscall.SIGKILL); err == nil {
		t.Fatal("the killed controller exited cleanly?")
	}
	if err := ctrl.Start(); err != nil {
		t.Fatal(err)
	}
}

// canarySpec is an AppService of one replica behind an HTTPRoute, with a
// canary of these steps.
func canarySpec(steps ...appv1.CanaryStep) appv1.AppServiceSpec {
	return appv1.AppServiceSpec{
		Size: int32p(1), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		HTTPRoute: &appv1.HTTPRoute{
			ParentRefs: []gatewayv1.ParentReference{{Name: "public", Namespace: new(gatewayv1.Namespace("infra"))}},
			Hostnames:  []gatewayv1.Hostname{"canary.example.com"},
		},
		Canary: &appv1.Canary{Steps: steps},
	}
}

// installGatewayAPI installs the Gateway API's CRDs (TestHTTPRoute may
// have already).
func installGatewayAPI(t *testing.T) {
	t.Helper()
	if err := localcluster.InstallGatewayAPI(context.Background(), adminConfig(t)); err != nil {
		t.Fatal(err)
	}
}

// adminConfig is the cluster's admin rest.Config.
func adminConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := localcluster.RESTConfig(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// gatewayAPI is the Gateway API's client, as the admin.
func gatewayAPI(t *testing.T) gatewayclient.Interface {
	t.Helper()
	return gatewayclient.NewForConfigOrDie(adminConfig(t))
}

// waitCanaryDone waits until no canary is under way: the stable
// Deployment runs the spec's template on every replica, the AppService is
// Ready.
func waitCanaryDone(t *testing.T, ns, name string) *appv1.AppService {
	t.Helper()
	var as *appv1.AppService
	eventually(t, 2*time.Minute, func() error {
		var err error
		if as, err = getAppService(ns, name); err != nil {
			return err
		}
		c, ready := as.Status.Canary, condition(as, appv1.ConditionReady)
		switch {
		case as.Status.ObservedGeneration != as.Generation:
			return fmt.Errorf("observedGeneration %d, generation %d", as.Status.ObservedGeneration, as.Generation)
		case c == nil || c.CanaryTemplateHash != "" || c.StableTemplateHash == "":
			return fmt.Errorf("status.canary %s, want the stable template only", canaryString(c))
		case ready == nil || ready.Status != metav1.ConditionTrue:
			return fmt.Errorf("Ready is %+v", ready)
		}
		return nil
	})
	return as
}

// waitStalled waits until the AppService is Stalled for reason, its
// message containing msg.
func waitStalled(t *testing.T, ns, name, reason, msg string) *appv1.AppService {
	t.Helper()
	var as *appv1.AppService
	eventually(t, 2*time.Minute, func() error {
		var err error
		if as, err = getAppService(ns, name); err != nil {
			return err
		}
		c := condition(as, appv1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason || !strings.Contains(c.Message, msg) ||
			as.Status.ObservedGeneration != as.Generation {
			return fmt.Errorf("Stalled is %+v, want True, %s, %q", c, reason, msg)
		}
		return nil
	})
	return as
}

// checkCanaryGone waits until the canary's Deployment and Service are
// gone and the route has one backend, the Service.
func checkCanaryGone(t *testing.T, ns, name string) {
	t.Helper()
	routes := gatewayAPI(t).GatewayV1().HTTPRoutes(ns)
	eventually(t, time.Minute, func() error {
		if _, err := getDeployment(ns, name+"-canary"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the canary's Deployment: %v, want it gone", err)
		}
		if _, err := getService(ns, name+"-canary"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the canary's Service: %v, want it gone", err)
		}
		r, err := routes.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, rule := range r.Spec.Rules {
			if len(rule.BackendRefs) != 1 || string(rule.BackendRefs[0].Name) != name {
				return fmt.Errorf("the route's backends %+v, want the Service %s alone", rule.BackendRefs, name)
			}
		}
		return nil
	})
}

// kstatusOf is what kstatus concludes of the live AppService.
func kstatusOf(t *testing.T, ns, name string) status.Status {
	t.Helper()
	as, err := getAppService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return kstatusOfObject(t, as)
}

// kstatusOfObject is what kstatus concludes of a version of an AppService.
func kstatusOfObject(t *testing.T, as *appv1.AppService) status.Status {
	t.Helper()
	res, err := status.Compute(appServiceUnstructured(t, as))
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// canaryWrites are the controller's writes in ns since then, but for
// Events.
func canaryWrites(t *testing.T, since time.Time, ns string) []localcluster.AuditEvent {
	t.Helper()
	var out []localcluster.AuditEvent
	for _, w := range controllerWrites(t, since, ns) {
		if w.ObjectRef != nil && w.ObjectRef.Resource != "events" {
			out = append(out, w)
		}
	}
	return out
}

// summarize counts writes by verb and resource.
func summarize(writes []localcluster.AuditEvent) string {
	counts := map[string]int{}
	for _, w := range writes {
		res := w.ObjectRef.Resource
		if w.ObjectRef.Subresource != "" {
			res += "/" + w.ObjectRef.Subresource
		}
		counts[w.Verb+" "+res]++
	}
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d (%s)", len(writes), strings.Join(parts, ", "))
}

func canaryString(c *appv1.CanaryStatus) string {
	if c == nil {
		return "<none>"
	}
	step := "-"
	if c.Step != nil {
		step = fmt.Sprint(*c.Step)
	}
	return fmt.Sprintf("{stable %s, canary %s, step %s, weight %d, aborted %s}", c.StableTemplateHash, c.CanaryTemplateHash, step, c.Weight, c.AbortedTemplateHash)
}

// appImage is the image of a Deployment's app container ("" for none).
func appImage(d *appsv1.Deployment) string {
	if d == nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}
