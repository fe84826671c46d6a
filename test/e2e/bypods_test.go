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
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestCanaryByPods: spec.canary without httpRoute, its share carried by
// its Pods behind the AppService's own Service, in three namespaces at
// once.
//   - promote: a NodePort AppService of 4 (the seeds' kind of app) goes
//     through steps of 25%, 50% and 100%: 1 canary Pod beside the 4 (20%),
//     then 4 beside 4 (50%, the most Pods carry). The Service's
//     EndpointSlices hold both templates' Pods; the status records each
//     step's real share; the Service keeps its UID, ClusterIP and
//     nodePort; the ready endpoints never drop below the 4 the spec
//     promises (maxUnavailable 0).
//     The PodDisruptionBudget counted the canary's Pods beside the stable.
//   - gate: with the built plugin, a canary aborted at its gate, retried,
//     and its gate passed; then a change back to the last stable template
//     rolls back without a canary.
//   - abort: a canary whose analysis fails is aborted: its Pods go, the
//     stable ones having served all along, the ready endpoints never below
//     the spec's 2.
//   - deadline: a canary whose Pods never become ready is aborted at its
//     progress deadline; then a canary suspended mid-step ends, and the
//     AppService resumes on the new template without one.
//   - shrink: with shrinkStable, the stable gives up a Pod for each canary
//     Pod once they are available (4, 3, 2, 0, then 4 promoted); then an
//     abort at 50% takes the stable back to 4 before the canary's Pods go,
//     and a newer template at 50% does before the canary rolls to it, and
//     a step down from 50% to 25% before the canary gives up a Pod; the
//     ready endpoints never below 4.
func TestCanaryByPods(t *testing.T) {
	parallel(t)
	installGatewayAPI(t) // recordCanary watches the (absent) route too
	t.Run("promote", func(t *testing.T) { t.Parallel(); testByPodsPromote(t) })
	t.Run("gate", func(t *testing.T) { t.Parallel(); testByPodsGate(t) })
	t.Run("abort", func(t *testing.T) { t.Parallel(); testByPodsAbort(t) })
	t.Run("deadline", func(t *testing.T) { t.Parallel(); testByPodsDeadline(t) })
	t.Run("shrink", func(t *testing.T) { t.Parallel(); testByPodsShrink(t) })
}

// podsSpec is an AppService of size replicas behind a NodePort Service,
// with no route, never fewer than size Pods available through a rollout,
// and a canary of these steps.
func podsSpec(size int32, steps ...appv1.CanaryStep) appv1.AppServiceSpec {
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	return appv1.AppServiceSpec{
		Size: int32p(size), Image: "nginx:1.27", ServiceType: corev1.ServiceTypeNodePort,
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		Strategy: &appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &one}},
		Canary: &appv1.Canary{Steps: steps},
	}
}

// slicesRecord is what a watch recorded of a Service's EndpointSlices.
type slicesRecord = recording[version[*discoveryv1.EndpointSlice]]

func recordSlices(t *testing.T, ns, service string) *slicesRecord {
	t.Helper()
	return recordSelected[*discoveryv1.EndpointSlice](t, kube.DiscoveryV1().EndpointSlices(ns).Watch,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service}, service+"'s EndpointSlices")
}

// recordServing records the Service's EndpointSlices and waits, on that
// record, until they hold n ready endpoints. An AppService is available
// once its Deployment counts the Pods ready; the EndpointSlice controller
// lists them when it gets to it, seconds later on a busy control plane. A
// release started before that would find the Service short of Pods it
// never lost.
func recordServing(t *testing.T, ns, service string, n int) *slicesRecord {
	t.Helper()
	r := recordSlices(t, ns, service)
	r.wait(t, time.Minute, func(vs []version[*discoveryv1.EndpointSlice]) error {
		states := endpointStates(vs)
		if len(states) == 0 || states[len(states)-1].ready < n {
			return fmt.Errorf("the Service %s never had %d ready endpoints before the release", service, n)
		}
		return nil
	})
	return r
}

// endpointsState is the Service's ready endpoints after one recorded
// version of one of its slices: how many, and the Pods' names.
type endpointsState struct {
	v     version[*discoveryv1.EndpointSlice]
	ready int
	pods  []string
}

// endpointStates replays the record: the ready endpoints of all the
// Service's slices after each version.
func endpointStates(vs []version[*discoveryv1.EndpointSlice]) []endpointsState {
	live := map[string]*discoveryv1.EndpointSlice{}
	var states []endpointsState
	for _, v := range vs {
		if v.deleted {
			delete(live, v.obj.Name)
		} else {
			live[v.obj.Name] = v.obj
		}
		s := endpointsState{v: v}
		for _, slice := range live {
			for _, e := range slice.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready && e.TargetRef != nil {
					s.ready++
					s.pods = append(s.pods, e.TargetRef.Name)
				}
			}
		}
		sort.Strings(s.pods)
		states = append(states, s)
	}
	return states
}

// checkNeverBelow checks that, from the first state with at least min
// ready endpoints on, none had fewer.
func checkNeverBelow(t *testing.T, states []endpointsState, min int) {
	t.Helper()
	reached := false
	for _, s := range states {
		if s.ready >= min {
			reached = true
		}
		if reached && s.ready < min {
			t.Errorf("the Service's ready endpoints dropped to %d (resourceVersion %d): %v; want %d at least", s.ready, s.v.rv, s.pods, min)
		}
	}
	if !reached {
		t.Errorf("the Service never had %d ready endpoints", min)
	}
}

// waitCanaryDeploymentGone waits until the AppService's canary Deployment
// is gone (a canary by Pods has no Service nor route to check).
func waitCanaryDeploymentGone(t *testing.T, ns, name string) {
	t.Helper()
	waitDeploymentGone(t, ns, name+"-canary")
}

// waitDeploymentGone waits until the Deployment name is gone.
func waitDeploymentGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, time.Minute, func() error {
		if _, err := getDeployment(ns, name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Deployment %s: %v, want it gone", name, err)
		}
		return nil
	})
}

// canaryPod reports whether a Pod's name is one of the canary's.
func canaryPod(app, pod string) bool { return strings.HasPrefix(pod, app+"-canary-") }

func testByPodsPromote(t *testing.T) {
	ns := newNamespace(t)
	const name = "seedling"
	spec := podsSpec(4, appv1.CanaryStep{Weight: 25, PauseSeconds: 2}, appv1.CanaryStep{Weight: 50, PauseSeconds: 2}, appv1.CanaryStep{Weight: 100})
	spec.DisruptionBudget = &appv1.DisruptionBudget{MinAvailable: new(intstr.FromInt32(3))}
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 4)
	svc, err := getService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	rec := recordCanary(t, ns, name)
	services := record[*corev1.Service](t, kube.CoreV1().Services(ns).Watch, name)
	canaryServices := record[*corev1.Service](t, kube.CoreV1().Services(ns).Watch, name+"-canary")
	budget := record[*policyv1.PodDisruptionBudget](t, kube.PolicyV1().PodDisruptionBudgets(ns).Watch, name)
	endpoints := recordServing(t, ns, name, 4)

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	waitCanaryDone(t, ns, name)
	if d, err := getDeployment(ns, name); err != nil || appImage(d) != "nginx:1.28" {
		t.Errorf("the stable Deployment once promoted: %v, image %s, want nginx:1.28", err, appImage(d))
	}
	waitCanaryDeploymentGone(t, ns, name)
	edges := rec.waitEdges(t, "0@0%", "0@25%", "1@25%", "1@50%", "2@50%", "2@100%", "3@100%")

	// Each step's share, as the status recorded it at the step's edge: the
	// canary's available Pods of all those behind the Service, by Pods.
	for edge, want := range map[string][3]int32{"0@25%": {20, 1, 5}, "1@50%": {50, 4, 8}, "2@100%": {50, 4, 8}} {
		c := edges[edge].v.obj.Status.Canary
		if got := [3]int32{c.Share, c.CanaryPods, c.ServingPods}; c.TrafficBy != appv1.CanaryByPods || got != want {
			t.Errorf("status.canary at %s: by %q, share %d%%, %d of %d Pods; want by Pods, %d%%, %d of %d",
				edge, c.TrafficBy, got[0], got[1], got[2], want[0], want[1], want[2])
		}
		msg := fmt.Sprintf("%d%% of the traffic by Pods (%d of %d)", want[0], want[1], want[2])
		if r := condition(edges[edge].v.obj, appv1.ConditionReconciling); r == nil || !strings.Contains(r.Message, msg) {
			t.Errorf("Reconciling at %s: %+v, want a message with %q", edge, r, msg)
		}
	}
	// No version of the status ever claimed a share no Pod carried: by
	// Pods, it is the Pods' own count.
	for _, v := range rec.app.snapshot() {
		if c := v.obj.Status.Canary; c != nil && c.TrafficBy == appv1.CanaryByPods && c.ServingPods > 0 &&
			c.Share != int32((200*int64(c.CanaryPods)+int64(c.ServingPods))/(2*int64(c.ServingPods))) {
			t.Errorf("status.canary %+v (resourceVersion %d): a share that is not %d of %d", c, v.rv, c.CanaryPods, c.ServingPods)
		}
	}

	// The canary's Deployment: 1 Pod, then 4; its Pods labelled for the
	// Service too; no Service of its own, ever.
	var replicas []int32
	for _, v := range rec.canary.snapshot() {
		d := v.obj
		if n := *d.Spec.Replicas; len(replicas) == 0 || replicas[len(replicas)-1] != n {
			replicas = append(replicas, n)
		}
		if l := d.Spec.Template.Labels; l[appv1.LabelCanary] != name || l[appv1.LabelAppService] != name {
			t.Errorf("the canary's Pod labels %v: want %s and %s", l, appv1.LabelCanary, appv1.LabelAppService)
		}
	}
	if want := []int32{1, 4}; !slices.Equal(replicas, want) {
		t.Errorf("the canary's replicas went %v, want %v", replicas, want)
	}
	if vs := canaryServices.snapshot(); len(vs) > 0 {
		t.Errorf("a canary by Pods got a Service of its own: %d versions of %s-canary", len(vs), name)
	}
	if vs := rec.route.snapshot(); len(vs) > 0 {
		t.Errorf("an AppService without httpRoute got a route: %d versions", len(vs))
	}

	// The one Service: its endpoints held both templates' Pods, never
	// fewer than 4 ready; it kept its UID, ClusterIP and nodePort.
	states := endpointStates(endpoints.snapshot())
	both := slices.ContainsFunc(states, func(s endpointsState) bool {
		canary := 0
		for _, p := range s.pods {
			if canaryPod(name, p) {
				canary++
			}
		}
		return canary == 4 && s.ready == 8
	})
	if !both {
		for _, s := range states {
			t.Logf("resourceVersion %d: %d ready %v", s.v.rv, s.ready, s.pods)
		}
		t.Errorf("the Service's EndpointSlices never held the 4 canary Pods beside the 4 stable ones")
	}
	checkNeverBelow(t, states, 4)
	// Through the steps (until the promotion changed the stable
	// Deployment's spec), the budget counted both Deployments' Pods.
	promoted := int64(-1)
	if st := rec.stable.snapshot(); len(st) > 0 {
		for _, v := range st {
			if v.obj.Generation != st[0].obj.Generation {
				promoted = v.rv
				break
			}
		}
	}
	expected := int32(0)
	for _, v := range budget.snapshot() {
		if promoted < 0 || v.rv < promoted {
			expected = max(expected, v.obj.Status.ExpectedPods)
		}
	}
	if expected != 8 {
		t.Errorf("the PodDisruptionBudget expected up to %d Pods through the steps, want 8: the 4 stable and the 4 canary ones behind the Service", expected)
	}
	for _, v := range services.snapshot() {
		s := v.obj
		if v.deleted || s.UID != svc.UID || s.Spec.ClusterIP != svc.Spec.ClusterIP || s.Spec.Ports[0].NodePort != svc.Spec.Ports[0].NodePort ||
			!maps.Equal(s.Spec.Selector, svc.Spec.Selector) {
			t.Errorf("the Service changed during the canary (resourceVersion %d): uid %s, clusterIP %s, nodePort %d, selector %v; was %s, %s, %d, %v",
				v.rv, s.UID, s.Spec.ClusterIP, s.Spec.Ports[0].NodePort, s.Spec.Selector, svc.UID, svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort, svc.Spec.Selector)
		}
	}

	// In line again: not one write.
	waitInLine(t, ns, name)
	steady := time.Now()
	waitSyncs(t, ns, name)
	for _, w := range canaryWrites(t, steady, ns) {
		t.Errorf("write by the controller once promoted and in line: %s", w)
	}
}

func testByPodsGate(t *testing.T) {
	ns := newNamespace(t)
	const name = "gatekept"
	spec := podsSpec(2, appv1.CanaryStep{Weight: 25, Gate: true}, appv1.CanaryStep{Weight: 100})
	spec.Canary.RollbackWindow = 2
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 2)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	// At the gate: 1 canary Pod beside 2, a third; the plugin says so.
	// Aborted there with it (its Pod goes), retried, and at the gate again
	// its gate is passed.
	rec.waitAtGate(t, 0)
	p := &plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}
	if r := p.expect(0, "", "", "get", name); !strings.Contains(r.stdout, "33% of the traffic by Pods (1 of 3 Pods)") {
		t.Errorf("kubectl appservice get at the gate:\n%s\nwant the share by Pods, 1 of 3", r.stdout)
	}
	if r := p.expect(0, "", "", "list"); !strings.Contains(r.stdout, "33% by Pods (1/3)") {
		t.Errorf("kubectl appservice list at the gate:\n%s\nwant 33%% by Pods (1/3)", r.stdout)
	}
	p.expect(0, "", "", "abort", name)
	waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "aborted on request")
	waitCanaryDeploymentGone(t, ns, name)
	p.expect(0, "", "", "retry", name)
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonCanaryRequested, "retried on request: it starts again at step 1 of 2")
	rec.waitAtGate(t, 0)
	p.expect(0, "", "", "promote", name)
	waitCanaryDone(t, ns, name)
	rec.waitEdges(t, "0@0%", "0@25%", "0@0%", "0@25%", "1@25%", "1@100%", "2@100%")
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonCanaryRequested, "promoted on request past step 1 of 2")

	// Back to nginx:1.27, the last stable template: rolled back at once,
	// without a canary Deployment.
	before := len(rec.canary.snapshot())
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.27" })
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonCanaryRolledBack, "Rolled back to")
	waitCanaryDone(t, ns, name)
	if d, err := getDeployment(ns, name); err != nil || appImage(d) != "nginx:1.27" {
		t.Errorf("the stable Deployment once rolled back: %v, image %s, want nginx:1.27", err, appImage(d))
	}
	for _, v := range rec.canary.snapshot()[before:] {
		if !v.deleted {
			t.Errorf("a canary Deployment during the rollback (resourceVersion %d, %d replicas)", v.rv, *v.obj.Spec.Replicas)
		}
	}
}

func testByPodsAbort(t *testing.T) {
	ns := newNamespace(t)
	const name = "shaky"
	spec := podsSpec(2, appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100})
	spec.Canary.Analysis = &appv1.CanaryAnalysis{IntervalSeconds: 2, FailureLimit: 1, Metrics: []appv1.AnalysisMetric{successRate()}}
	serve(ns, name, 8, 2) // {{ target }} is the canary's Deployment, NAME-canary
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 2)
	rec := recordCanary(t, ns, name)
	endpoints := recordServing(t, ns, name, 2)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	as := waitStalled(t, ns, name, appv1.ReasonCanaryAnalysisFailed, "metric success-rate failed 2 times, more than its failureLimit of 1")
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryAnalysisFailed, "below min 0.95")
	if as.Status.Canary.AbortedTemplateHash == "" {
		t.Errorf("status.canary %s does not remember the aborted template", canaryString(as.Status.Canary))
	}
	waitCanaryDeploymentGone(t, ns, name)
	for _, e := range edgeNames(canaryEdges(rec.app.snapshot())) {
		if !strings.HasPrefix(e, "0@") {
			t.Errorf("edge %s of a canary whose first step failed", e)
		}
	}
	// The canary served (2 of 4 Pods), then went; the stable Pods never
	// dropped below the spec's 2.
	states := endpointStates(endpoints.snapshot())
	if !slices.ContainsFunc(states, func(s endpointsState) bool {
		return s.ready == 4 && slices.ContainsFunc(s.pods, func(p string) bool { return canaryPod(name, p) })
	}) {
		t.Errorf("the Service's EndpointSlices never held the canary's 2 Pods beside the 2 stable ones")
	}
	checkNeverBelow(t, states, 2)
	eventually(t, time.Minute, func() error {
		s := endpointStates(endpoints.snapshot())
		if last := s[len(s)-1]; last.ready != 2 || slices.ContainsFunc(last.pods, func(p string) bool { return canaryPod(name, p) }) {
			return fmt.Errorf("the Service's ready endpoints %v, want the 2 stable Pods only", last.pods)
		}
		return nil
	})
}

func testByPodsDeadline(t *testing.T) {
	ns := newNamespace(t)
	const name = "stuck"
	spec := podsSpec(2, appv1.CanaryStep{Weight: 25, PauseSeconds: 600}, appv1.CanaryStep{Weight: 100})
	spec.ProgressDeadlineSeconds = int32p(10)
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 2)
	rec := recordCanary(t, ns, name)
	endpoints := recordServing(t, ns, name, 2)

	// Pods that start and never become ready: aborted at the deadline.
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "example.com/never-ready:1" })
	waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "not available within the progress deadline")
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryAborted, "progress deadline")
	waitCanaryDeploymentGone(t, ns, name)
	if vs := rec.canary.snapshot(); len(vs) == 0 {
		t.Errorf("no canary Deployment was recorded")
	}

	// A canary at its first step's pause, suspended: it ends (its Pods
	// go), the Deployment at 0 replicas with the new template; resumed, it
	// runs that template, with no canary.
	updateAppService(t, ns, name, func(as *appv1.AppService) {
		as.Spec.Image, as.Spec.ProgressDeadlineSeconds = "nginx:1.28", int32p(120)
	})
	rec.waitEdges(t, "0@0%", "0@0%", "0@25%")
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Suspend = new(true) })
	eventually(t, 2*time.Minute, func() error {
		d, err := getDeployment(ns, name)
		if err != nil {
			return err
		}
		if _, err := getDeployment(ns, name+"-canary"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the canary's Deployment while suspended: %v, want it gone", err)
		}
		if *d.Spec.Replicas != 0 || appImage(d) != "nginx:1.28" {
			return fmt.Errorf("the Deployment while suspended: %d replicas, %s; want 0, nginx:1.28", *d.Spec.Replicas, appImage(d))
		}
		return nil
	})
	resumed := len(rec.canary.snapshot())
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Suspend = new(false) })
	waitAvailable(t, ns, name, 2)
	waitCanaryDone(t, ns, name)
	for _, v := range rec.canary.snapshot()[resumed:] {
		if !v.deleted {
			t.Errorf("a canary Deployment after the resume (resourceVersion %d)", v.rv)
		}
	}
	// Until the suspension, the stable Pods served throughout.
	var before []version[*discoveryv1.EndpointSlice]
	suspended := rec.app.snapshot()
	for _, v := range endpoints.snapshot() {
		if i := slices.IndexFunc(suspended, func(a version[*appv1.AppService]) bool { return ptrTrue(a.obj.Spec.Suspend) }); i < 0 || v.rv < suspended[i].rv {
			before = append(before, v)
		}
	}
	checkNeverBelow(t, endpointStates(before), 2)
}

func ptrTrue(b *bool) bool { return b != nil && *b }

func testByPodsShrink(t *testing.T) {
	ns := newNamespace(t)
	const name = "lean"
	spec := podsSpec(4, appv1.CanaryStep{Weight: 25, PauseSeconds: 2}, appv1.CanaryStep{Weight: 50, PauseSeconds: 2}, appv1.CanaryStep{Weight: 100})
	spec.Canary.ShrinkStable = true
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 4)
	rec := recordCanary(t, ns, name)
	endpoints := recordServing(t, ns, name, 4)

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	waitCanaryDone(t, ns, name)
	rec.waitEdges(t, "0@0%", "0@25%", "1@25%", "1@50%", "2@50%", "2@100%", "3@100%")
	sizes := func(vs []version[*appsv1.Deployment]) []int32 {
		var out []int32
		for _, v := range vs {
			if n := *v.obj.Spec.Replicas; !v.deleted && (len(out) == 0 || out[len(out)-1] != n) {
				out = append(out, n)
			}
		}
		return out
	}
	if got, want := sizes(rec.stable.snapshot()), []int32{4, 3, 2, 0, 4}; !slices.Equal(got, want) {
		t.Errorf("the stable Deployment's replicas went %v, want %v", got, want)
	}
	if got, want := sizes(rec.canary.snapshot()), []int32{1, 2, 4}; !slices.Equal(got, want) {
		t.Errorf("the canary's replicas went %v, want %v", got, want)
	}

	// Aborted at 50%: the stable back to 4 available, then the canary's
	// Pods go.
	mark := len(rec.stable.snapshot())
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.29" })
	rec.waitEdges(t, "0@0%", "0@25%", "1@25%", "1@50%", "2@50%", "2@100%", "3@100%", "0@0%", "0@25%", "1@25%", "1@50%")
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Canary.Abort = true })
	waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "spec.canary.abort is true")
	var gone int64
	rec.canary.wait(t, 2*time.Minute, func(vs []version[*appsv1.Deployment]) error {
		if len(vs) == 0 || !vs[len(vs)-1].deleted {
			return fmt.Errorf("the canary's Deployment not deleted yet")
		}
		gone = vs[len(vs)-1].rv
		return nil
	})
	// The stable's versions come on a watch of their own, which may not
	// have brought the last of them yet: wait for the version that is back
	// at 4 available, then compare when each happened.
	back := int64(-1)
	rec.stable.wait(t, 2*time.Minute, func(vs []version[*appsv1.Deployment]) error {
		shrunk := false
		for _, v := range vs[mark:] {
			d := v.obj
			shrunk = shrunk || *d.Spec.Replicas < 4
			if shrunk && *d.Spec.Replicas == 4 && d.Status.AvailableReplicas == 4 && d.Status.ObservedGeneration >= d.Generation {
				back = v.rv
				return nil
			}
		}
		return fmt.Errorf("the stable not back at 4 available Pods yet")
	})
	if back < 0 || back > gone {
		t.Errorf("the canary's Deployment deleted at resourceVersion %d, the stable back at 4 available Pods at %d: want it back first", gone, back)
	}

	// A newer template while a canary holds 2 of the 4 Pods: the canary's
	// Deployment stays as it is until the stable is back at 4 available,
	// then rolls to the newer template at its first step, and is promoted.
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image, as.Spec.Canary.Abort = "nginx:1.30", false })
	rec.waitEdges(t, "0@0%", "0@25%", "1@25%", "1@50%", "2@50%", "2@100%", "3@100%", "0@0%", "0@25%", "1@25%", "1@50%",
		"0@0%", "0@25%", "1@25%", "1@50%")
	held := len(rec.canary.snapshot())
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.31" })
	waitCanaryDone(t, ns, name)
	if d, err := getDeployment(ns, name); err != nil || appImage(d) != "nginx:1.31" {
		t.Errorf("the stable Deployment once promoted: %v, image %s, want nginx:1.31", err, appImage(d))
	}
	for _, v := range rec.canary.snapshot()[held:] {
		if v.deleted || appImage(v.obj) != "nginx:1.31" {
			continue
		}
		// The first version on the newer template: the stable was back.
		if st, ok := before(rec.stable.snapshot(), v.rv); !ok || *st.obj.Spec.Replicas != 4 || st.obj.Status.AvailableReplicas != 4 {
			t.Errorf("the canary's Deployment rolled to nginx:1.31 at resourceVersion %d, the stable then %s: want it back at 4 available first",
				v.rv, deploymentString(st, ok))
		}
		break
	}

	// Steps that go down, 50% then 25%: at the lower step the stable
	// first has a Pod back, then the canary gives one up.
	lower := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) {
		as.Spec.Image = "nginx:1.32"
		as.Spec.Canary.Steps = []appv1.CanaryStep{{Weight: 50, PauseSeconds: 2}, {Weight: 25, PauseSeconds: 2}, {Weight: 100}}
	})
	waitCanaryDone(t, ns, name)
	lower.waitEdges(t, "0@0%", "0@50%", "1@50%", "1@25%", "2@25%", "2@100%", "3@100%")
	if got, want := sizes(lower.canary.snapshot()), []int32{2, 1, 4}; !slices.Equal(got, want) {
		t.Errorf("the canary's replicas went %v, want %v", got, want)
	}
	checkNeverBelow(t, endpointStates(endpoints.snapshot()), 4)
}
