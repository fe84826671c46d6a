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

package canary

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// carrierFields are how a decision says its share is carried, which the
// tables by route leave to TestDecideByPods and TestDecideShare.
var carrierFields = cmp.Options{
	cmpopts.IgnoreFields(Decision{}, "TrafficBy"),
	cmpopts.IgnoreFields(appv1.CanaryStatus{}, "TrafficBy", "Share", "CanaryPods", "ServingPods"),
}

// edgeFields are the edge a decision makes for the notifications, which
// TestDecideEdges checks along whole releases.
var edgeFields = cmpopts.IgnoreFields(Decision{}, "Edge", "EdgeStep")

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-ago)} }
	spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 60}, {Weight: 50, PauseSeconds: 30}, {Weight: 100}}}
	longPause := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 3600}, {Weight: 100}}}
	aborting := spec.DeepCopy()
	aborting.Abort = true
	deadline := 10 * time.Minute
	// The canary's Pods at n replicas, all available; and none available.
	ready := func(n int32) *Pods { return &Pods{Observed: true, Replicas: n, Total: n, Updated: n, Available: n} }
	starting := func(n int32) *Pods { return &Pods{Observed: true, Replicas: n, Total: n, Updated: n} }
	// A status at step i of the canary of template "new", routed weight w,
	// the step's stage begun ago.
	step := func(i, w int32, ago time.Duration) *appv1.CanaryStatus {
		return &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(i), Weight: w, StepStartTime: at(ago)}
	}
	stableOnly := func(hash string) *appv1.CanaryStatus { return &appv1.CanaryStatus{StableTemplateHash: hash} }
	abortedStatus := &appv1.CanaryStatus{StableTemplateHash: "old", AbortedTemplateHash: "new"}
	warning := func(msg string) *Event { return &Event{corev1.EventTypeWarning, appv1.ReasonCanaryAborted, msg} }
	pending := Input{Spec: spec, Hash: "new", StableReplicas: 4, ProgressDeadline: deadline, Now: now}
	// Held at its start while no route can exist: the template named, no
	// step, no weight, no Pods; the stable Pods keep theirs.
	awaiting := Decision{Phase: AwaitingRoute, HoldStable: true, Reason: appv1.ReasonRouteAPIMissing,
		Status:  &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new"},
		Message: "Canary new holds at its start, with no step and no traffic: it waits for its route, which the cluster cannot hold until it serves the Gateway API"}
	with := func(f func(*Input)) Input {
		in := pending
		f(&in)
		return in
	}

	for _, tc := range []struct {
		name string
		in   Input
		want Decision
	}{{
		name: "off",
		in:   Input{Hash: "new", Status: stableOnly("old"), Now: now},
		want: Decision{Phase: None},
	}, {
		name: "on, the stable Pods run the spec's template: nothing to do",
		in:   with(func(in *Input) { in.StableInLine, in.StableRolledOut = true, true }),
		want: Decision{Phase: None, Status: stableOnly("new")},
	}, {
		name: "a new template: step 1 asks for its Pods, no traffic yet",
		in:   with(func(in *Input) { in.Status = stableOnly("old") }),
		want: Decision{Phase: Running, Status: step(0, 0, 0), HoldStable: true, CanaryReplicas: 1, After: deadline,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 0% of the traffic by route: waits for its Pods"},
	}, {
		name: "step 1, Pods starting: nothing changes until the deadline",
		in:   with(func(in *Input) { in.Status, in.Pods = step(0, 0, time.Minute), starting(1) }),
		want: Decision{Phase: Running, Status: step(0, 0, time.Minute), HoldStable: true, CanaryReplicas: 1, After: deadline - time.Minute,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 0% of the traffic by route: waits for its Pods"},
	}, {
		name: "step 1, Pods not available by the deadline: aborted, the template remembered",
		in:   with(func(in *Input) { in.Status, in.Pods = step(0, 0, deadline), starting(1) }),
		want: Decision{Phase: Aborted, Status: abortedStatus, HoldStable: true, Reason: appv1.ReasonCanaryAborted,
			Message: "Canary new aborted: its Pods were not available within the progress deadline (10m0s) at step 1 of 3; the stable version serves all the traffic",
			Event:   warning("Canary new aborted: its Pods were not available within the progress deadline (10m0s) at step 1 of 3; the stable version serves all the traffic")},
	}, {
		name: "aborted at its deadline: stays aborted, without a second Event",
		in:   with(func(in *Input) { in.Status = abortedStatus }),
		want: Decision{Phase: Aborted, Status: abortedStatus, HoldStable: true, Reason: appv1.ReasonCanaryAborted,
			Message: "Canary new aborted: its Pods were not available within the progress deadline (change the template to start a new canary); the stable version serves all the traffic"},
	}, {
		name: "aborted at its deadline, then a newer template: a new canary",
		in:   with(func(in *Input) { in.Status, in.Hash = abortedStatus, "newer" }),
		want: Decision{Phase: Running, HoldStable: true, CanaryReplicas: 1, After: deadline,
			Status: &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "newer", Step: new(int32(0)), StepStartTime: at(0), AbortedTemplateHash: "new"},
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary newer at step 1 of 3, 0% of the traffic by route: waits for its Pods"},
	}, {
		name: "step 1's Pods available: its weight goes to the route, its pause starts",
		in:   with(func(in *Input) { in.Status, in.Pods = step(0, 0, time.Minute), ready(1) }),
		want: Decision{Phase: Running, Status: step(0, 10, 0), HoldStable: true, CanaryReplicas: 1, RouteWeight: 10, After: time.Minute,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 10% of the traffic by route: pauses",
			Event: &Event{corev1.EventTypeNormal, appv1.ReasonCanaryStep, "Canary new at step 1 of 3: 10% of the traffic by route"}},
	}, {
		name: "mid-pause: nothing changes (a restarted controller keeps the step and its start)",
		in:   with(func(in *Input) { in.Status, in.Pods = step(0, 10, 20*time.Second), ready(1) }),
		want: Decision{Phase: Running, Status: step(0, 10, 20*time.Second), HoldStable: true, CanaryReplicas: 1, RouteWeight: 10, After: 40 * time.Second,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 10% of the traffic by route: pauses"},
	}, {
		name: "mid-pause, the canary's Pods gone unavailable: no traffic to them",
		in:   with(func(in *Input) { in.Status, in.Pods = step(0, 10, 20*time.Second), starting(1) }),
		want: Decision{Phase: Running, Status: step(0, 10, 20*time.Second), HoldStable: true, CanaryReplicas: 1,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 10% of the traffic by route: waits for its Pods"},
	}, {
		name: "late in a pause longer than the deadline, a Pod lost: no abort until its Deployment says it is stuck",
		in: with(func(in *Input) {
			in.Status, in.Pods = step(0, 10, deadline+time.Minute), starting(1)
			in.Spec = longPause
		}),
		want: Decision{Phase: Running, Status: step(0, 10, deadline+time.Minute), HoldStable: true, CanaryReplicas: 1,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 2, 10% of the traffic by route: waits for its Pods"},
	}, {
		name: "mid-pause, the canary's Deployment past its progress deadline: aborted",
		in: with(func(in *Input) {
			in.Status, in.Pods = step(0, 10, 20*time.Second), &Pods{Observed: true, Replicas: 1, Total: 1, Updated: 1, DeadlineExceeded: true}
		}),
		want: Decision{Phase: Aborted, Status: abortedStatus, HoldStable: true, Reason: appv1.ReasonCanaryAborted,
			Message: "Canary new aborted: its Pods were not available within the progress deadline (10m0s) at step 1 of 3; the stable version serves all the traffic",
			Event:   warning("Canary new aborted: its Pods were not available within the progress deadline (10m0s) at step 1 of 3; the stable version serves all the traffic")},
	}, {
		name: "pause over: step 2 asks for its Pods, step 1's weight stays",
		in:   with(func(in *Input) { in.Status, in.Pods = step(0, 10, time.Minute), ready(1) }),
		want: Decision{Phase: Running, Status: step(1, 10, 0), HoldStable: true, CanaryReplicas: 2, RouteWeight: 10, After: deadline,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 2 of 3, 10% of the traffic by route: waits for its Pods"},
	}, {
		name: "step 2 scaling up: step 1's weight while a Pod serves",
		in: with(func(in *Input) {
			in.Status, in.Pods = step(1, 10, time.Second), &Pods{Observed: true, Replicas: 2, Total: 2, Updated: 2, Available: 1}
		}),
		want: Decision{Phase: Running, Status: step(1, 10, time.Second), HoldStable: true, CanaryReplicas: 2, RouteWeight: 10, After: deadline - time.Second,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 2 of 3, 10% of the traffic by route: waits for its Pods"},
	}, {
		name: "the last step's pause over: promoted, the stable Deployment rolls to it",
		in:   with(func(in *Input) { in.Status, in.Pods = step(2, 100, 0), ready(4) }),
		want: Decision{Phase: Promoting, Status: step(3, 100, 0), CanaryReplicas: 4, RouteWeight: 100, Reason: appv1.ReasonCanaryPromoting,
			Message: "Canary new promoted: the stable Pods roll to it; the canary keeps 100% of the traffic by route until they have"},
	}, {
		name: "promoting, the stable Pods rolling: the canary keeps its share",
		in: with(func(in *Input) {
			in.Status, in.Pods, in.StableInLine = step(3, 100, time.Second), ready(4), true
		}),
		want: Decision{Phase: Promoting, Status: step(3, 100, time.Second), CanaryReplicas: 4, RouteWeight: 100, Reason: appv1.ReasonCanaryPromoting,
			Message: "Canary new promoted: the stable Pods roll to it; the canary keeps 100% of the traffic by route until they have"},
	}, {
		name: "the stable Pods rolling to the canary's template, the status read before the promotion's write: promoting",
		in: with(func(in *Input) {
			in.Status, in.Pods, in.StableInLine = step(2, 100, time.Second), ready(4), true
		}),
		want: Decision{Phase: Promoting, Status: step(3, 100, time.Second), CanaryReplicas: 4, RouteWeight: 100, Reason: appv1.ReasonCanaryPromoting,
			Message: "Canary new promoted: the stable Pods roll to it; the canary keeps 100% of the traffic by route until they have"},
	}, {
		name: "promoted and rolled out: all the traffic to the Service, the canary goes",
		in: with(func(in *Input) {
			in.Status, in.Pods, in.StableInLine, in.StableRolledOut = step(3, 100, time.Minute), ready(4), true, true
		}),
		want: Decision{Phase: None, Status: stableOnly("new"), Event: &Event{corev1.EventTypeNormal, appv1.ReasonCanaryPromoted,
			"Canary new promoted: every Pod runs it, all the traffic goes to the Service again, the canary's objects are deleted"}},
	}, {
		name: "the spec changes mid-canary: the canary starts over with the newest template",
		in:   with(func(in *Input) { in.Status, in.Pods, in.Hash = step(1, 10, time.Second), nil, "newer" }),
		want: Decision{Phase: Running, HoldStable: true, CanaryReplicas: 1, After: deadline,
			Status: &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "newer", Step: new(int32(0)), StepStartTime: at(0)},
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary newer at step 1 of 3, 0% of the traffic by route: waits for its Pods"},
	}, {
		name: "the spec goes back to the stable template mid-canary: the canary goes, never promoted",
		in: with(func(in *Input) {
			in.Status, in.Pods, in.Hash, in.StableInLine = step(1, 10, time.Second), ready(1), "old", true
		}),
		want: Decision{Phase: None, Status: stableOnly("old")},
	}, {
		name: "the user aborts: all the traffic to the stable Pods, once",
		in:   with(func(in *Input) { in.Spec, in.Status, in.Pods = aborting, step(1, 10, time.Second), ready(1) }),
		want: Decision{Phase: Aborted, Status: stableOnly("old"), HoldStable: true, Reason: appv1.ReasonCanaryAborted,
			Message: "Canary new aborted: spec.canary.abort is true (set it back to false to try again); the stable version serves all the traffic",
			Event:   warning("Canary new aborted: spec.canary.abort is true (set it back to false to try again); the stable version serves all the traffic")},
	}, {
		name: "aborted by the user: no second Event",
		in:   with(func(in *Input) { in.Spec, in.Status = aborting, stableOnly("old") }),
		want: Decision{Phase: Aborted, Status: stableOnly("old"), HoldStable: true, Reason: appv1.ReasonCanaryAborted,
			Message: "Canary new aborted: spec.canary.abort is true (set it back to false to try again); the stable version serves all the traffic"},
	}, {
		name: "abort set back to false: the canary starts again",
		in:   with(func(in *Input) { in.Status = stableOnly("old") }),
		want: Decision{Phase: Running, Status: step(0, 0, 0), HoldStable: true, CanaryReplicas: 1, After: deadline,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 0% of the traffic by route: waits for its Pods"},
	}, {
		name: "autoscaled to 10: the canary's replicas follow its weight, rounded up",
		in:   with(func(in *Input) { in.Status, in.Pods, in.StableReplicas = step(1, 10, 0), ready(5), 9 }),
		want: Decision{Phase: Running, Status: step(1, 50, 0), HoldStable: true, CanaryReplicas: 5, RouteWeight: 50, After: 30 * time.Second,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 2 of 3, 50% of the traffic by route: pauses",
			Event: &Event{corev1.EventTypeNormal, appv1.ReasonCanaryStep, "Canary new at step 2 of 3: 50% of the traffic by route"}},
	}, {
		name: "a new template, no route can exist: held at its start, no step, no Pods, no weight",
		in:   with(func(in *Input) { in.Status, in.RouteMissing = stableOnly("old"), true }),
		want: awaiting,
	}, {
		name: "held for its route, a promotion asked: still held",
		in: with(func(in *Input) {
			in.RouteMissing = true
			in.Status = &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new",
				Request: &appv1.CanaryRequest{Action: appv1.CanaryPromoteFull, TemplateHash: "new"}}
		}),
		want: awaiting,
	}, {
		name: "held for its route, the route can exist: step 1 starts",
		in: with(func(in *Input) {
			in.Status = &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new"}
		}),
		want: Decision{Phase: Running, Status: step(0, 0, 0), HoldStable: true, CanaryReplicas: 1, After: deadline,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 0% of the traffic by route: waits for its Pods"},
	}, {
		name: "mid-pause, the route's API gone: held at the start again, the canary's weight gone",
		in:   with(func(in *Input) { in.Status, in.Pods, in.RouteMissing = step(1, 50, 10*time.Second), ready(2), true }),
		want: awaiting,
	}, {
		name: "promoting, the route's API gone: the promotion goes on",
		in:   with(func(in *Input) { in.Status, in.Pods, in.RouteMissing = step(3, 50, 0), ready(2), true }),
		want: Decision{Phase: Promoting, Status: step(3, 50, 0), CanaryReplicas: 2, RouteWeight: 50, Reason: appv1.ReasonCanaryPromoting,
			Message: "Canary new promoted: the stable Pods roll to it; the canary keeps 50% of the traffic by route until they have"},
	}, {
		name: "no route can exist, the stable Pods run the spec's template: no canary to hold",
		in:   with(func(in *Input) { in.StableInLine, in.StableRolledOut, in.RouteMissing = true, true, true }),
		want: Decision{Phase: None, Status: stableOnly("new")},
	}, {
		name: "no route can exist, spec.canary.abort: aborted, as with a route",
		in:   with(func(in *Input) { in.Spec, in.Status, in.RouteMissing = aborting, stableOnly("old"), true }),
		want: Decision{Phase: Aborted, Status: stableOnly("old"), HoldStable: true, Reason: appv1.ReasonCanaryAborted,
			Message: "Canary new aborted: spec.canary.abort is true (set it back to false to try again); the stable version serves all the traffic"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.Status.DeepCopy()
			got := Decide(tc.in)
			if diff := cmp.Diff(tc.want, got, carrierFields, edgeFields); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			// The controller compares the decision's status with the one
			// it gave: Decide must leave that one alone.
			if diff := cmp.Diff(before, tc.in.Status); diff != "" {
				t.Errorf("Decide changed the status it was given (-before +after):\n%s", diff)
			}
		})
	}
}

func TestCanaryReplicas(t *testing.T) {
	for _, tc := range []struct{ stable, weight, want int32 }{
		{4, 10, 1}, {4, 50, 2}, {4, 100, 4}, {10, 25, 3}, {0, 50, 1}, {3, 34, 2}, {2147483647, 100, 2147483647},
	} {
		if got := CanaryReplicas(tc.stable, tc.weight); got != tc.want {
			t.Errorf("CanaryReplicas(%d, %d) = %d, want %d", tc.stable, tc.weight, got, tc.want)
		}
	}
}

// TestDecideStepHoldsForNothing: a step other than the last with no
// pause, analysis, During test or gate passes in the decision that routes
// its weight, so that its weight and the next step are one status write
// (issue 62); any of those keeps the two apart, and so does the last step
// (the stable rolls only once the status says 100%). That decision asks
// for the next step's Pods too: a sync whose status write is lost leaves
// them asked for, and the next decides the same (passedAhead), the route
// kept at the step's weight; once the write is in, the next step waits for
// its Pods with nothing more to write.
func TestDecideStepHoldsForNothing(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ready := func(n int32) *Pods { return &Pods{Observed: true, Replicas: n, Total: n, Updated: n, Available: n} }
	atStart := &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(int32(0)),
		StepStartTime: &metav1.Time{Time: now.Add(-time.Second)}}
	input := func(first appv1.CanaryStep, analysis *appv1.CanaryAnalysis) Input {
		spec := &appv1.Canary{Steps: []appv1.CanaryStep{first, {Weight: 50, PauseSeconds: 60}, {Weight: 100}}, Analysis: analysis}
		return Input{Spec: spec, Hash: "new", StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now,
			Status: atStart.DeepCopy(), Pods: ready(1), Analysis: Analysis{Configured: true}}
	}
	for _, tc := range []struct {
		name     string
		in       Input
		wantStep int32
	}{
		{"no pause: the weight and step 2 at once", input(appv1.CanaryStep{Weight: 10}, nil), 1},
		{"a pause holds it", input(appv1.CanaryStep{Weight: 10, PauseSeconds: 1}, nil), 0},
		{"a gate holds it", input(appv1.CanaryStep{Weight: 10, Gate: true}, nil), 0},
		{"a During test holds it", input(appv1.CanaryStep{Weight: 10, Tests: []appv1.CanaryTest{{Name: "load", When: appv1.CanaryTestDuring, Command: "true"}}}, nil), 0},
		{"an analysis holds it", input(appv1.CanaryStep{Weight: 10}, &appv1.CanaryAnalysis{IntervalSeconds: 10}), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Phase != Running || *d.Status.Step != tc.wantStep || d.Status.Weight != 10 || d.RouteWeight != 10 {
				t.Fatalf("Decide: %s at step %d, weight %d, route %d; want Running at step %d, weight 10, route 10",
					d.Phase, *d.Status.Step, d.Status.Weight, d.RouteWeight, tc.wantStep)
			}
			if d.Event == nil || d.Event.Reason != appv1.ReasonCanaryStep {
				t.Errorf("Decide: Event %v, want the step's CanaryStep", d.Event)
			}
			want := int32(1) // step 1's Pods, until the step passes
			if tc.wantStep == 1 {
				want = CanaryReplicas(4, 50)
			}
			if d.CanaryReplicas != want || !d.HoldStable {
				t.Errorf("Decide: %d canary replicas, stable held %v; want %d, held", d.CanaryReplicas, d.HoldStable, want)
			}
			if tc.wantStep != 1 {
				return
			}
			// Its status write lost: the Pods as it left them (step 2's
			// asked for, step 1's available), the same decision again.
			retry := tc.in
			retry.Pods = &Pods{Observed: true, Replicas: want, Total: want, Updated: want, Available: 1}
			if got := Decide(retry); !cmp.Equal(got, d) {
				t.Errorf("Decide after a lost status write (-first +again):\n%s", cmp.Diff(d, got))
			}
			// The write in: step 2 waits for its Pods, the status as written.
			next := retry
			next.Status = d.Status
			got := Decide(next)
			if got.CanaryReplicas != want || got.RouteWeight != 10 || !cmp.Equal(got.Status, d.Status) {
				t.Errorf("Decide after the write: %d canary replicas, route %d, status (-written +decided):\n%s; want %d, 10, the same",
					got.CanaryReplicas, got.RouteWeight, cmp.Diff(d.Status, got.Status), want)
			}
		})
	}
	// A promotion requested while the step waits for its Pods: passed with
	// them, and said so.
	in := input(appv1.CanaryStep{Weight: 10}, nil)
	in.Status.Request = &appv1.CanaryRequest{Action: appv1.CanaryPromote, TemplateHash: "new", Step: new(int32(0))}
	d := Decide(in)
	requested := slices.ContainsFunc(d.Events, func(e Event) bool { return e.Reason == appv1.ReasonCanaryRequested })
	if *d.Status.Step != 1 || d.Status.Request != nil || !requested {
		t.Errorf("Decide with a promotion requested: step %d, request %v, Events %v; want step 2, none left, CanaryRequested",
			*d.Status.Step, d.Status.Request, d.Events)
	}
	// The last step: its weight, then the promotion, two writes.
	in = input(appv1.CanaryStep{Weight: 10}, nil)
	in.Status.Step, in.Status.Weight, in.Pods = new(int32(2)), 50, ready(4)
	if d := Decide(in); d.Phase != Running || *d.Status.Step != 2 || d.Status.Weight != 100 || !d.HoldStable {
		t.Errorf("Decide at the last step: %s at step %d, weight %d; want Running at step 3, weight 100, the stable held", d.Phase, *d.Status.Step, d.Status.Weight)
	}
}
