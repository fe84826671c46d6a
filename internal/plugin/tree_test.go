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
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// update rewrites the golden files from what Render writes now:
//
//	go test ./internal/plugin -run TestRender -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestRender: get's view of fixed objects in each state a canary goes
// through, against the golden files in testdata.
func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap func() *Snapshot
	}{
		{"gated", gatedSnapshot},
		{"mirror", mirrorSnapshot},
		{"grpc", grpcSnapshot},
		{"pausing-with-analysis", pausingSnapshot},
		{"waiting-for-pods", waitingSnapshot},
		{"by-pods", byPodsSnapshot},
		{"switched", switchedSnapshot},
		{"testing", testingSnapshot},
		{"aborted", abortedSnapshot},
		{"healthy", healthySnapshot},
		{"suspended", suspendedSnapshot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := Render(&b, tc.snap(), now); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			if strings.Contains(got, "\n\n") {
				t.Errorf("the view has a blank line, which separates get --watch's frames:\n%s", got)
			}
			golden(t, filepath.Join("testdata", "get-"+tc.name+".golden"), got)
		})
	}
}

// golden compares got with the file, or writes it with -update.
func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", file, diff)
	}
}

func setConditions(as *appv1.AppService, reason, msg string, ready, reconciling, stalled metav1.ConditionStatus) {
	for typ, status := range map[string]metav1.ConditionStatus{
		appv1.ConditionReady: ready, appv1.ConditionReconciling: reconciling, appv1.ConditionStalled: stalled,
	} {
		meta.SetStatusCondition(&as.Status.Conditions, condition(typ, status, reason, msg))
	}
}

// awaitingRouteApp: a canary held at its start, no step and no weight,
// while the cluster serves no HTTPRoutes (Stalled, RouteAPIMissing).
func awaitingRouteApp() *appv1.AppService {
	as := gatedApp()
	as.Status.Canary.Step, as.Status.Canary.Weight, as.Status.Canary.StepStartTime = nil, 0, nil
	setConditions(as, appv1.ReasonRouteAPIMissing, "HTTPRoute: the cluster does not serve HTTPRoutes. Canary "+canaryHash+" holds at its start",
		metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue)
	return as
}

// pausingSnapshot: the second step, 50% routed 2 minutes ago (3 of its
// 5 minutes left), measured by an analysis: one metric passing, one
// without data.
func pausingSnapshot() *Snapshot {
	s := gatedSnapshot()
	as := s.AppService
	as.Status.Canary.Step, as.Status.Canary.Weight, as.Status.Canary.StepStartTime = new(int32(1)), 50, new(ago(2*time.Minute))
	as.Status.Canary.Analysis = []appv1.MetricStatus{
		{Name: "success-rate", Result: appv1.MetricPassed, Value: "0.998", Time: ago(20 * time.Second), PassedStep: new(int32(1))},
		{Name: "latency-p99", Result: appv1.MetricNoData, Message: "the query returned no data", Time: ago(20 * time.Second), Failures: 0, Errors: 0},
	}
	msg := "Canary " + canaryHash + " at step 2 of 3, 50% of the traffic by route: pauses"
	setConditions(as, appv1.ReasonCanaryProgressing, msg, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse)
	s.Route = route(50)
	return s
}

// byPodsSnapshot: the gated app without a route, its canary by Pods:
// its first step's Pod serves beside the two stable ones, 1 of 3.
func byPodsSnapshot() *Snapshot {
	s := gatedSnapshot()
	as := s.AppService
	as.Spec.HTTPRoute, s.Route = nil, nil
	as.Status.Canary.TrafficBy, as.Status.Canary.Share = appv1.CanaryByPods, 33
	as.Status.Canary.CanaryPods, as.Status.Canary.ServingPods = 1, 3
	msg := "Canary " + canaryHash + " at step 1 of 3, 33% of the traffic by Pods (1 of 3), for a 10% step: waits at its gate for kubectl appservice promote"
	setConditions(as, appv1.ReasonCanaryGated, msg, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse)
	return s
}

// switchedSnapshot: a blue-green release without a route past its three
// steps, switched by the Service's selector: its preview, web-preview,
// serves the users; the old Pods stay until the scale-down delay's end.
func switchedSnapshot() *Snapshot {
	s := byPodsSnapshot()
	as := s.AppService
	as.Spec.Canary.BlueGreen = &appv1.BlueGreen{}
	for i := range as.Spec.Canary.Steps {
		as.Spec.Canary.Steps[i].Weight = 0
	}
	c := as.Status.Canary
	c.Step, c.Weight, c.TrafficBy, c.Share, c.CanaryPods, c.ServingPods = new(int32(3)), 100, appv1.CanaryByService, 100, 0, 0
	preview := func(name *string) { *name = strings.Replace(*name, "web-canary", "web-preview", 1) }
	for i := range s.Deployments {
		preview(&s.Deployments[i].Name)
	}
	for i := range s.ReplicaSets {
		preview(&s.ReplicaSets[i].Name)
		for j := range s.ReplicaSets[i].OwnerReferences {
			preview(&s.ReplicaSets[i].OwnerReferences[j].Name)
		}
	}
	for i := range s.Pods {
		preview(&s.Pods[i].Name)
		for j := range s.Pods[i].OwnerReferences {
			preview(&s.Pods[i].OwnerReferences[j].Name)
		}
	}
	msg := "Canary " + canaryHash + " switched, 100% of the traffic by the Service's selector: the old Pods stay at full size until 2026-11-27T12:00:30Z"
	setConditions(as, appv1.ReasonCanaryProgressing, msg, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse)
	return s
}

// testingSnapshot: the second step's Pods are available and its smoke
// test runs, before its weight; the first step's load test passed.
func testingSnapshot() *Snapshot {
	s := gatedSnapshot()
	as := s.AppService
	as.Spec.Canary.Steps[0].Tests = []appv1.CanaryTest{{Name: "load", When: appv1.CanaryTestDuring, Command: "hey -z 30s $CANARY_URL"}}
	as.Spec.Canary.Steps[1].Tests = []appv1.CanaryTest{{Name: "smoke", When: appv1.CanaryTestBefore, Command: "curl -fsS $CANARY_URL/healthz"}}
	as.Status.Canary.Step, as.Status.Canary.StepStartTime = new(int32(1)), new(ago(30*time.Second))
	as.Status.Canary.Tests = []appv1.CanaryTestStatus{
		{Name: "load", Step: 0, Activity: "web-k7x2bq", Phase: appv1.TestSucceeded, ExitCode: new(int32(0)), StartTime: new(ago(5 * time.Minute)), CompletionTime: new(ago(4 * time.Minute))},
		{Name: "smoke", Step: 1, Activity: "web-d4n9zp", Phase: appv1.TestRunning, StartTime: new(ago(20 * time.Second))},
	}
	msg := "Canary " + canaryHash + " at step 2 of 3, 10% of the traffic by route: waits for its test smoke (before its weight)"
	setConditions(as, appv1.ReasonCanaryProgressing, msg, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse)
	for _, a := range []struct {
		name, uid string
		phase     appv1.ActivityPhase
		age       time.Duration
	}{{"web-k7x2bq", "act-load", appv1.ActivitySucceeded, 5 * time.Minute}, {"web-d4n9zp", "act-smoke", appv1.ActivityRunning, 20 * time.Second}} {
		act := appv1.Activity{ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: ns, UID: types.UID(a.uid), CreationTimestamp: ago(a.age),
			Labels: stableLabels, OwnerReferences: owner("AppService", name, "as-uid")}, Status: appv1.ActivityStatus{Prosta: a.phase}}
		job := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: ns, UID: types.UID("job-" + a.uid), CreationTimestamp: ago(a.age),
			Labels: map[string]string{appv1.LabelActivity: a.name}, OwnerReferences: owner("Activity", a.name, types.UID(a.uid))}}
		pod := runningPod(a.name+"-5xq2m", a.name, "job-"+a.uid, map[string]string{appv1.LabelActivity: a.name}, 0)
		pod.OwnerReferences = owner("Job", a.name, types.UID("job-"+a.uid))
		pod.CreationTimestamp = ago(a.age)
		if a.phase == appv1.ActivitySucceeded {
			act.Status.ExitCode = new(int32(0))
			job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
			pod.Status.Phase = corev1.PodSucceeded
			pod.Status.ContainerStatuses[0].Ready = false
			pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}
		}
		s.Activities, s.Jobs, s.Pods = append(s.Activities, act), append(s.Jobs, job), append(s.Pods, *pod)
	}
	return s
}

// waitingSnapshot: the second step asked for its Pods (the weight still
// the first step's): one crashes, one is being created.
func waitingSnapshot() *Snapshot {
	s := gatedSnapshot()
	as := s.AppService
	as.Status.Canary.Step, as.Status.Canary.StepStartTime = new(int32(1)), new(ago(30*time.Second))
	msg := "Canary " + canaryHash + " at step 2 of 3, 10% of the traffic by route: waits for its Pods"
	setConditions(as, appv1.ReasonCanaryProgressing, msg, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse)
	d := &s.Deployments[0]
	d.Spec.Replicas, d.Status.Replicas, d.Status.UpdatedReplicas = new(int32(2)), 2, 2
	rs := &s.ReplicaSets[2]
	rs.Spec.Replicas, rs.Status.Replicas = new(int32(2)), 2
	crashing := runningPod("web-canary-5b6c7d8e9-z1z2z", "web-canary-5b6c7d8e9", "rs-canary", canaryLabels, 4)
	crashing.CreationTimestamp = ago(30 * time.Second)
	crashing.Status.ContainerStatuses[0].Ready = false
	crashing.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	creating := runningPod("web-canary-5b6c7d8e9-k3k4k", "web-canary-5b6c7d8e9", "rs-canary", canaryLabels, 0)
	creating.CreationTimestamp = ago(3 * time.Second)
	creating.Status.Phase = corev1.PodPending
	creating.Status.ContainerStatuses[0].Ready = false
	creating.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	s.Pods = append(s.Pods, *crashing, *creating)
	return s
}

// abortedSnapshot: aborted on request at its second step: the canary's
// objects gone, the route whole again, Stalled.
func abortedSnapshot() *Snapshot {
	s := gatedSnapshot()
	as := s.AppService
	as.Status.Canary = &appv1.CanaryStatus{StableTemplateHash: stableHash, AbortedTemplateHash: canaryHash,
		Request: &appv1.CanaryRequest{Action: appv1.CanaryAbort, TemplateHash: canaryHash}}
	msg := "Canary " + canaryHash + " aborted: aborted on request (kubectl appservice retry, or a new template, starts it again); the stable version serves all the traffic"
	setConditions(as, appv1.ReasonCanaryAborted, msg, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue)
	s.Deployments, s.ReplicaSets, s.Pods = s.Deployments[1:], s.ReplicaSets[:2], s.Pods[:2]
	s.Route = route(0)
	return s
}

// healthySnapshot: no canary under way, every replica on the spec's
// template.
func healthySnapshot() *Snapshot {
	s := abortedSnapshot()
	as := s.AppService
	as.Spec.Image = "nginx:1.27"
	as.Status.Canary = &appv1.CanaryStatus{StableTemplateHash: stableHash}
	setConditions(as, appv1.ReasonRolloutComplete, "Every replica runs the current template", metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse)
	return s
}

// suspendedSnapshot: spec.suspend, no canary nor route: the Deployment
// at 0 and its Pods gone.
func suspendedSnapshot() *Snapshot {
	s := healthySnapshot()
	as := s.AppService
	as.Spec.Suspend, as.Spec.Canary, as.Spec.HTTPRoute, as.Status.Canary = new(true), nil, nil, nil
	as.Status.Replicas, as.Status.UpdatedReplicas, as.Status.ReadyReplicas, as.Status.AvailableReplicas = 0, 0, 0, 0
	setConditions(as, appv1.ReasonSuspended, "spec.suspend is true: the Deployment is at 0 replicas", metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse)
	meta.SetStatusCondition(&as.Status.Conditions, condition(appv1.ConditionSuspended, metav1.ConditionTrue, appv1.ReasonSuspended, "spec.suspend is true"))
	d := &s.Deployments[0]
	d.Spec.Replicas, d.Status = new(int32(0)), appsv1.DeploymentStatus{ObservedGeneration: 1}
	rs := &s.ReplicaSets[1]
	rs.Spec.Replicas, rs.Status = new(int32(0)), appsv1.ReplicaSetStatus{}
	s.Pods, s.Route = nil, nil
	return s
}

// TestPodState: kubectl's Pod statuses, and their symbols.
func TestPodState(t *testing.T) {
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	for _, tc := range []struct {
		name     string
		pod      func(p *corev1.Pod)
		want     string
		restarts int32
	}{
		{"running and ready", func(*corev1.Pod) {}, "✔ Running", 0},
		{"restarted", func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount = 3 }, "⚠ Running", 3},
		{"not ready", func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Ready = false }, "◌ Running", 0},
		{"crash loop", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State, p.Status.ContainerStatuses[0].RestartCount = waiting("CrashLoopBackOff"), 5
		}, "✖ CrashLoopBackOff", 5},
		{"image pull", func(p *corev1.Pod) { p.Status.ContainerStatuses[0].State = waiting("ImagePullBackOff") }, "✖ ImagePullBackOff", 0},
		{"pending", func(p *corev1.Pod) { p.Status.Phase, p.Status.ContainerStatuses = corev1.PodPending, nil }, "◌ Pending", 0},
		{"terminated with an exit code", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}
		}, "✖ ExitCode:137", 0},
		{"init container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}, "◌ Init:0/1", 0},
		{"init container crashing", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: waiting("CrashLoopBackOff")}}
		}, "✖ Init:CrashLoopBackOff", 0},
		{"evicted", func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" }, "✖ Evicted", 0},
		{"terminating", func(p *corev1.Pod) { p.DeletionTimestamp = new(ago(time.Second)) }, "◌ Terminating", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := runningPod("p", "rs", "rs-uid", nil, 0)
			tc.pod(p)
			st := podState(p)
			if got := st.symbol + " " + st.reason; got != tc.want || st.restarts != tc.restarts {
				t.Errorf("podState = %q, %d restarts; want %q, %d", got, st.restarts, tc.want, tc.restarts)
			}
		})
	}
}

// TestStateOf: the word list's STATUS column and get's Status line say.
func TestStateOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap func() *Snapshot
		edit func(as *appv1.AppService)
		want State
	}{
		{"gated", gatedSnapshot, nil, Gated},
		{"pausing", pausingSnapshot, nil, Progressing},
		{"aborted", abortedSnapshot, nil, Degraded},
		{"healthy", healthySnapshot, nil, Healthy},
		{"suspended", suspendedSnapshot, nil, Suspended},
		{"a spec not observed yet", healthySnapshot, func(as *appv1.AppService) { as.Generation++ }, Progressing},
		{"stalled while suspended", suspendedSnapshot, func(as *appv1.AppService) {
			meta.SetStatusCondition(&as.Status.Conditions, condition(appv1.ConditionStalled, metav1.ConditionTrue, appv1.ReasonResourceExists, "in the way"))
		}, Degraded},
		{"no conditions yet", healthySnapshot, func(as *appv1.AppService) { as.Status = appv1.AppServiceStatus{} }, Progressing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := tc.snap().AppService
			if tc.edit != nil {
				tc.edit(as)
			}
			if got := StateOf(as); got != tc.want {
				t.Errorf("StateOf = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestCanaryLineAwaitingRoute: get says a canary held for its route waits
// for it, with no step and no weight.
func TestCanaryLineAwaitingRoute(t *testing.T) {
	as := awaitingRouteApp()
	c := CanaryOf(as)
	if c.Phase != CanaryAwaitingRoute || c.Hash != canaryHash {
		t.Fatalf("CanaryOf = %+v, want held for its route", c)
	}
	if got := canaryLine(as, c, now); got != "holds at its start, no step and no traffic: waits for its route (the cluster serves no HTTPRoutes)" {
		t.Errorf("canaryLine = %q", got)
	}
}

// TestCanaryLineRouteUnsupported: get says a canary held for a feature
// its route needs, which a Gateway's class does not support, which and
// why.
func TestCanaryLineRouteUnsupported(t *testing.T) {
	as := awaitingRouteApp()
	why := "GatewayClass limited (of Gateway infra/public) does not list HTTPRouteRequestMirror among its supportedFeatures, which spec.canary.steps[0].mirror needs"
	setConditions(as, appv1.ReasonRouteFeatureUnsupported,
		"Canary "+canaryHash+" holds at its start, with no step and no traffic: its route needs what the Gateway does not support: "+why,
		metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue)
	c := CanaryOf(as)
	if c.Phase != CanaryAwaitingRoute || c.Unsupported != why {
		t.Fatalf("CanaryOf = %+v, want held for its route's feature", c)
	}
	if got, want := canaryLine(as, c, now), "holds at its start, no step and no traffic: its route needs what the Gateway does not support: "+why; got != want {
		t.Errorf("canaryLine = %q, want %q", got, want)
	}
}

// TestCanaryLineAwaitingAnalysis: get says a canary held for its
// analysis's templates waits for them, and which template and why; once
// it runs, the templates it pinned, and an edit since.
func TestCanaryLineAwaitingAnalysis(t *testing.T) {
	as := awaitingRouteApp()
	why := "ClusterAnalysisTemplate success-rate does not exist"
	meta.SetStatusCondition(&as.Status.Conditions, condition(appv1.ConditionStalled, metav1.ConditionTrue, appv1.ReasonCanaryAnalysisUnresolved,
		"Canary "+canaryHash+" holds at its start, with no step and no traffic: its analysis cannot be resolved: "+why))
	c := CanaryOf(as)
	if c.Phase != CanaryAwaitingAnalysis || c.Hash != canaryHash || c.Held != why {
		t.Fatalf("CanaryOf = %+v, want held for its analysis", c)
	}
	if got := canaryLine(as, c, now); got != awaitingAnalysis+why {
		t.Errorf("canaryLine = %q", got)
	}
	if _, _, err := BuildRequest(as, appv1.CanaryPromote); err == nil || !strings.Contains(err.Error(), why) {
		t.Errorf("promote: %v, want refused, saying why", err)
	}
	pins := []appv1.PinnedTemplate{{Kind: appv1.KindClusterAnalysisTemplate, Name: "success-rate", Digest: "aaaa", Latest: "bbbb"}}
	want := "templates pinned at the canary's start: ClusterAnalysisTemplate success-rate@aaaa (edited since: the next canary runs @bbbb)"
	if got := pinsLine(pins); got != want {
		t.Errorf("pinsLine = %q, want %q", got, want)
	}
}

func TestNotificationsLine(t *testing.T) {
	st := &appv1.NotificationsStatus{Release: "abc-1", Edges: []appv1.NotificationEdge{
		{Edge: appv1.EdgeStarted, Deliveries: []appv1.Delivery{{Destination: "ops", Result: appv1.DeliveryDelivered}, {Destination: "team", Result: appv1.DeliveryFailed, Message: "gave up"}}},
		{Edge: appv1.EdgeAborted, Deliveries: []appv1.Delivery{{Destination: "ops", Result: appv1.DeliveryPending}}},
	}}
	if got, want := notificationsLine(st), "release abc-1: 1 delivered, 1 owed, 1 given up (team, Started: gave up)"; got != want {
		t.Errorf("notificationsLine = %q, want %q", got, want)
	}
}
