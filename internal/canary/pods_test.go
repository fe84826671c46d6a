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
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestPodReplicas: for every size from 1 to 10 and weight from 1 to 100,
// the canary's Pods beside the stable ones are the count, from 1 to the
// stable's, whose share is nearest the weight (the fewer on a tie), and
// all of the stable's above 50%.
func TestPodReplicas(t *testing.T) {
	share := func(n, c int32) float64 { return 100 * float64(c) / float64(n+c) }
	for n := int32(1); n <= 10; n++ {
		for w := int32(1); w <= 100; w++ {
			got := PodReplicas(n, w)
			best := int32(1)
			for c := int32(2); c <= n; c++ {
				if math.Abs(share(n, c)-float64(w)) < math.Abs(share(n, best)-float64(w))-1e-9 {
					best = c
				}
			}
			if w >= 50 {
				best = n
			}
			if got != best {
				t.Errorf("PodReplicas(%d, %d) = %d (%.1f%%), want %d (%.1f%%)", n, w, got, share(n, got), best, share(n, best))
			}
		}
	}
	// The docs' examples, and the edges.
	for _, tc := range []struct{ stable, weight, want int32 }{
		{4, 25, 1}, {4, 10, 1}, {1, 10, 1}, {4, 50, 4}, {4, 100, 4}, {10, 20, 3}, {0, 10, 1}, {100, 10, 11},
		{2147483647, 49, 2063268602}, {2147483647, 100, 2147483647},
	} {
		if got := PodReplicas(tc.stable, tc.weight); got != tc.want {
			t.Errorf("PodReplicas(%d, %d) = %d, want %d", tc.stable, tc.weight, got, tc.want)
		}
	}
}

// TestDecideByPods is TestDecide's canary without a route: the same
// steps, its weight carried by its share of the Pods behind the Service.
func TestDecideByPods(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-ago)} }
	spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 25, PauseSeconds: 60}, {Weight: 50, PauseSeconds: 30}, {Weight: 100}}}
	deadline := 10 * time.Minute
	ready := func(n int32) *Pods { return &Pods{Observed: true, Replicas: n, Total: n, Updated: n, Available: n} }
	// A status by Pods at step i, weight w, begun ago, with its share.
	step := func(i, w int32, ago time.Duration, share, c, n int32) *appv1.CanaryStatus {
		return &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(i), Weight: w, StepStartTime: at(ago),
			TrafficBy: appv1.CanaryByPods, Share: share, CanaryPods: c, ServingPods: n}
	}
	byRoute := func(i, w int32, ago time.Duration) *appv1.CanaryStatus {
		return &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(i), Weight: w, StepStartTime: at(ago)}
	}
	pending := Input{Spec: spec, Hash: "new", StableReplicas: 4, StableAvailable: 4, ProgressDeadline: deadline, NoRoute: true, Now: now}
	with := func(f func(*Input)) Input {
		in := pending
		f(&in)
		return in
	}
	const by = appv1.CanaryByPods

	for _, tc := range []struct {
		name string
		in   Input
		want Decision
	}{{
		name: "a new template: step 1 asks for its Pod, none serves yet",
		in:   with(func(in *Input) { in.Status = &appv1.CanaryStatus{StableTemplateHash: "old"} }),
		want: Decision{Phase: Running, Status: step(0, 0, 0, 0, 0, 4), HoldStable: true, CanaryReplicas: 1, After: deadline, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryProgressing,
			Message: "Canary new at step 1 of 3, 0% of the traffic by Pods (0 of 4): waits for its Pods"},
	}, {
		name: "step 1's Pod available: 1 of 5 Pods serve, 20% for a 25% step; its pause starts, no route weight",
		in:   with(func(in *Input) { in.Status, in.Pods = step(0, 0, time.Minute, 0, 0, 4), ready(1) }),
		want: Decision{Phase: Running, Status: step(0, 25, 0, 20, 1, 5), HoldStable: true, CanaryReplicas: 1, After: time.Minute, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryProgressing,
			Message: "Canary new at step 1 of 3, 20% of the traffic by Pods (1 of 5), for a 25% step: pauses",
			Event:   &Event{corev1.EventTypeNormal, appv1.ReasonCanaryStep, "Canary new at step 1 of 3: 20% of the traffic by Pods (1 of 5), for a 25% step"}},
	}, {
		name: "mid-pause: nothing changes",
		in:   with(func(in *Input) { in.Status, in.Pods = step(0, 25, 20*time.Second, 20, 1, 5), ready(1) }),
		want: Decision{Phase: Running, Status: step(0, 25, 20*time.Second, 20, 1, 5), HoldStable: true, CanaryReplicas: 1, After: 40 * time.Second, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryProgressing,
			Message: "Canary new at step 1 of 3, 20% of the traffic by Pods (1 of 5), for a 25% step: pauses"},
	}, {
		name: "mid-pause, a stable Pod unavailable: the share says so",
		in: with(func(in *Input) {
			in.Status, in.Pods, in.StableAvailable = step(0, 25, 20*time.Second, 20, 1, 5), ready(1), 3
		}),
		want: Decision{Phase: Running, Status: step(0, 25, 20*time.Second, 25, 1, 4), HoldStable: true, CanaryReplicas: 1, After: 40 * time.Second, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryProgressing,
			Message: "Canary new at step 1 of 3, 25% of the traffic by Pods (1 of 4), for a 25% step: pauses"},
	}, {
		name: "pause over: step 2 asks for as many Pods as the stable's",
		in:   with(func(in *Input) { in.Status, in.Pods = step(0, 25, time.Minute, 20, 1, 5), ready(1) }),
		want: Decision{Phase: Running, Status: step(1, 25, 0, 20, 1, 5), HoldStable: true, CanaryReplicas: 4, After: deadline, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryProgressing,
			Message: "Canary new at step 2 of 3, 20% of the traffic by Pods (1 of 5), for a 25% step: waits for its Pods"},
	}, {
		name: "step 3 (100%) is carried as 50%: 4 of 8",
		in:   with(func(in *Input) { in.Status, in.Pods = step(2, 50, time.Minute, 50, 4, 8), ready(4) }),
		want: Decision{Phase: Running, Status: step(2, 100, 0, 50, 4, 8), HoldStable: true, CanaryReplicas: 4, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryProgressing,
			Message: "Canary new at step 3 of 3, 50% of the traffic by Pods (4 of 8), for a 100% step: pauses",
			Event:   &Event{corev1.EventTypeNormal, appv1.ReasonCanaryStep, "Canary new at step 3 of 3: 50% of the traffic by Pods (4 of 8), for a 100% step"}},
	}, {
		name: "promoting: the canary keeps its Pods until the stable ones all run its template",
		in:   with(func(in *Input) { in.Status, in.Pods = step(3, 100, 0, 50, 4, 8), ready(4) }),
		want: Decision{Phase: Promoting, Status: step(3, 100, 0, 50, 4, 8), CanaryReplicas: 4, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryPromoting,
			Message: "Canary new promoted: the stable Pods roll to it; the canary keeps 50% of the traffic by Pods (4 of 8), for a 100% step until they have"},
	}, {
		name: "aborted, a stable Pod unavailable: the canary's Pods stay until it is back",
		in: with(func(in *Input) {
			in.Spec = spec.DeepCopy()
			in.Spec.Abort = true
			in.Status, in.Pods, in.StableAvailable = step(1, 25, time.Minute, 25, 1, 4), ready(1), 3
		}),
		want: Decision{Phase: Aborted, HoldStable: true, CanaryReplicas: 1, TrafficBy: by, PodsServe: true, Reason: appv1.ReasonCanaryAborted,
			Status: &appv1.CanaryStatus{StableTemplateHash: "old", TrafficBy: by, Share: 25, CanaryPods: 1, ServingPods: 4},
			Message: "Canary new aborted: spec.canary.abort is true (set it back to false to try again); " +
				"its Pods go once the stable Pods are all available",
			Event: &Event{corev1.EventTypeWarning, appv1.ReasonCanaryAborted, "Canary new aborted: spec.canary.abort is true " +
				"(set it back to false to try again); its Pods go once the stable Pods are all available"}},
	}, {
		name: "aborted, every stable Pod available: the canary's Pods go",
		in: with(func(in *Input) {
			in.Spec = spec.DeepCopy()
			in.Spec.Abort = true
			in.Status, in.Pods, in.StableRolledOut = step(1, 25, time.Minute, 20, 1, 5), ready(1), true
		}),
		want: Decision{Phase: Aborted, HoldStable: true, TrafficBy: by, PodsServe: true, Reason: appv1.ReasonCanaryAborted,
			Status:  &appv1.CanaryStatus{StableTemplateHash: "old"},
			Message: "Canary new aborted: spec.canary.abort is true (set it back to false to try again); the stable version serves all the traffic",
			Event: &Event{corev1.EventTypeWarning, appv1.ReasonCanaryAborted,
				"Canary new aborted: spec.canary.abort is true (set it back to false to try again); the stable version serves all the traffic"}},
	}, {
		name: "a route added during a canary by Pods: it goes on by Pods, no weight on the route",
		in: with(func(in *Input) {
			in.NoRoute, in.Status, in.Pods = false, step(0, 25, 20*time.Second, 20, 1, 5), ready(1)
		}),
		want: Decision{Phase: Running, Status: step(0, 25, 20*time.Second, 20, 1, 5), HoldStable: true, CanaryReplicas: 1, After: 40 * time.Second, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryProgressing,
			Message: "Canary new at step 1 of 3, 20% of the traffic by Pods (1 of 5), for a 25% step: pauses"},
	}, {
		name: "a route added during a canary by Pods, the cluster without the Gateway API: it goes on by Pods",
		in: with(func(in *Input) {
			in.NoRoute, in.RouteMissing, in.Status, in.Pods = false, true, step(0, 25, 20*time.Second, 20, 1, 5), ready(1)
		}),
		want: Decision{Phase: Running, Status: step(0, 25, 20*time.Second, 20, 1, 5), HoldStable: true, CanaryReplicas: 1, After: 40 * time.Second, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryProgressing,
			Message: "Canary new at step 1 of 3, 20% of the traffic by Pods (1 of 5), for a 25% step: pauses"},
	}, {
		name: "the route removed during a canary by route: it starts over, by Pods",
		in:   with(func(in *Input) { in.Status, in.Pods = byRoute(1, 25, 10*time.Second), ready(1) }),
		want: Decision{Phase: Running, Status: step(0, 0, 0, 20, 1, 5), HoldStable: true, CanaryReplicas: 1, After: deadline, TrafficBy: by, PodsServe: true,
			Reason:  appv1.ReasonCanaryProgressing,
			Message: "Canary new at step 1 of 3, 20% of the traffic by Pods (1 of 5): waits for its Pods"},
	}, {
		name: "the route removed during a promotion by route: the promotion goes on",
		in:   with(func(in *Input) { in.Status, in.Pods = byRoute(3, 100, 0), ready(4) }),
		want: Decision{Phase: Promoting, Status: func() *appv1.CanaryStatus {
			st := byRoute(3, 100, 0)
			st.TrafficBy, st.Share = appv1.CanaryByRoute, 100
			return st
		}(), CanaryReplicas: 4, RouteWeight: 100, TrafficBy: appv1.CanaryByRoute, Reason: appv1.ReasonCanaryPromoting,
			Message: "Canary new promoted: the stable Pods roll to it; the canary keeps 100% of the traffic by route until they have"},
	}, {
		name: "by route: the share is the route's weight",
		in:   with(func(in *Input) { in.NoRoute, in.Status, in.Pods = false, byRoute(0, 25, 20*time.Second), ready(1) }),
		want: Decision{Phase: Running, Status: func() *appv1.CanaryStatus {
			st := byRoute(0, 25, 20*time.Second)
			st.TrafficBy, st.Share = appv1.CanaryByRoute, 25
			return st
		}(), HoldStable: true, CanaryReplicas: 1, RouteWeight: 25, After: 40 * time.Second, TrafficBy: appv1.CanaryByRoute,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 25% of the traffic by route: pauses"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Decide(tc.in), edgeFields); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}

	// Testers need the route: by Pods, never.
	in := with(func(in *Input) {
		in.Spec = spec.DeepCopy()
		in.Spec.TesterHeaders = []appv1.TesterHeader{{Name: "x-canary", Value: "1"}}
		in.Status, in.Pods = step(0, 25, 20*time.Second, 20, 1, 5), ready(1)
	})
	if Decide(in).Testers {
		t.Errorf("a canary by Pods sends the testers to the canary: it has no route to")
	}
}

// TestShrinkReplicas: with shrinkStable, the canary's Pods are the
// nearest to the weight's share of the spec's count, from 1 to all.
func TestShrinkReplicas(t *testing.T) {
	for _, tc := range []struct{ size, weight, want int32 }{
		{4, 25, 1}, {4, 10, 1}, {4, 50, 2}, {4, 100, 4}, {10, 25, 2}, {10, 26, 3}, {3, 50, 1}, {3, 51, 2},
		{1, 10, 1}, {0, 50, 1}, {2147483647, 100, 2147483647},
	} {
		if got := ShrinkReplicas(tc.size, tc.weight); got != tc.want {
			t.Errorf("ShrinkReplicas(%d, %d) = %d, want %d", tc.size, tc.weight, got, tc.want)
		}
	}
	for n := int32(1); n <= 10; n++ {
		for w := int32(1); w <= 100; w++ {
			c := ShrinkReplicas(n, w)
			off := func(c int32) float64 { return math.Abs(100*float64(c)/float64(n) - float64(w)) }
			if c < 1 || c > n || (c > 1 && off(c-1) <= off(c) && c-1 >= 1) || (c < n && off(c+1) < off(c)) {
				t.Errorf("ShrinkReplicas(%d, %d) = %d: not the nearest share from 1 to %d", n, w, c, n)
			}
		}
	}
}

// TestDecideShrinkStable: a canary by Pods whose stable gives up a Pod for
// each of its own, once they are available: the Pods behind the Service
// stay at the spec's 4 through the steps, and the stable takes them back
// before the canary's go.
func TestDecideShrinkStable(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	spec := &appv1.Canary{ShrinkStable: true, Steps: []appv1.CanaryStep{{Weight: 25, PauseSeconds: 60}, {Weight: 50}, {Weight: 100}}}
	ready := func(n int32) *Pods { return &Pods{Observed: true, Replicas: n, Total: n, Updated: n, Available: n} }
	step := func(i, w int32, ago time.Duration) *appv1.CanaryStatus {
		return &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(i), Weight: w,
			StepStartTime: &metav1.Time{Time: now.Add(-ago)}, TrafficBy: appv1.CanaryByPods}
	}
	type want struct {
		phase          Phase
		canary         int32
		stable         *int32
		step, weight   int32
		share, of      int32
		messageHasPods string
		hold           bool
	}
	for _, tc := range []struct {
		name            string
		st              *appv1.CanaryStatus
		pods            *Pods
		stableAvailable int32
		rolledOut       bool
		abort           bool
		// serving: the canary's Deployment's replicas, behind the Service
		// (0: as many as its Pods); stuck: the stable past its deadline;
		// hash: the spec's template ("new" when empty).
		serving int32
		stuck   bool
		// The stable's status not observed for its spec, or its replicas
		// (4 when 0).
		stableUnobserved bool
		stableReplicas   int32
		hash             string
		steps            []appv1.CanaryStep
		want             want
	}{
		{name: "a new template: the canary's Pod first, the stable keeps its 4", st: &appv1.CanaryStatus{StableTemplateHash: "old"},
			stableAvailable: 4, want: want{Running, 1, new(int32(4)), 0, 0, 0, 4, "(0 of 4)", false}},
		{name: "step 1's Pod available: the stable gives one up", st: step(0, 0, time.Second), pods: ready(1),
			stableAvailable: 4, want: want{Running, 1, new(int32(3)), 0, 25, 20, 5, "(1 of 5)", false}},
		{name: "mid-pause, the stable at 3: 1 of 4", st: step(0, 25, time.Second), pods: ready(1),
			stableAvailable: 3, want: want{Running, 1, new(int32(3)), 0, 25, 25, 4, "(1 of 4)", false}},
		{name: "step 2 asks for 2 Pods; the stable keeps 3 until they are available", st: step(0, 25, time.Minute), pods: ready(1),
			stableAvailable: 3, want: want{Running, 2, new(int32(3)), 1, 25, 25, 4, "(1 of 4)", false}},
		{name: "step 3 (100%) available: the stable at 0, all 4 Pods the canary's", st: step(2, 50, 0), pods: ready(4),
			stableAvailable: 2, want: want{Running, 4, new(int32(0)), 2, 100, 67, 6, "(4 of 6)", false}},
		{name: "promoting: the stable back to 4 on the new template, the canary kept", st: step(3, 100, 0), pods: ready(4),
			want: want{Promoting, 4, nil, 3, 100, 100, 4, "(4 of 4)", false}},
		{name: "aborted: the stable back to 4, the canary's Pods kept until they are available", st: step(1, 50, time.Second), pods: ready(2),
			stableAvailable: 2, abort: true, want: want{Aborted, 2, nil, -1, 0, 50, 4, "its Pods go once the stable Pods are all available", false}},
		{name: "aborted, the stable's 4 available: the canary's Pods go", st: step(1, 50, time.Second), pods: ready(2),
			stableAvailable: 4, rolledOut: true, abort: true, want: want{Aborted, 0, nil, -1, 0, 0, 0, "the stable version serves all the traffic", false}},
		{name: "aborted, the stable past its deadline (no room): the canary's Pods go", st: step(1, 50, time.Second), pods: ready(2),
			stableAvailable: 2, stuck: true, abort: true, want: want{Aborted, 0, nil, -1, 0, 0, 0, "the stable version serves all the traffic", false}},
		{name: "a newer template mid-canary: the canary held as it is, the stable back to 4 first", st: step(1, 50, time.Second), pods: nil,
			serving: 2, stableAvailable: 2, hash: "newer",
			want: want{Running, 2, new(int32(4)), 0, 0, 50, 4, "(2 of 4)", true}},
		{name: "a newer template, the stable back at 4 available: the canary changes", st: step(1, 50, time.Second), pods: nil,
			serving: 2, stableAvailable: 4, rolledOut: true, hash: "newer",
			want: want{Running, 1, new(int32(4)), 0, 0, 33, 6, "(2 of 6)", false}},
		{name: "a lower step next: the canary keeps its 2 until the stable has 3 available", st: step(0, 50, time.Minute), pods: ready(2),
			stableAvailable: 2, steps: []appv1.CanaryStep{{Weight: 50, PauseSeconds: 60}, {Weight: 25}, {Weight: 100}},
			want: want{Running, 2, new(int32(3)), 1, 50, 50, 4, "(2 of 4)", true}},
		{name: "the lower step, the stable at 3 available: the canary goes to 1, the stable stays at 3", st: step(1, 50, time.Second),
			pods: &Pods{Observed: true, Replicas: 2, Total: 2, Updated: 2, Available: 2}, serving: 2, stableAvailable: 3,
			steps: []appv1.CanaryStep{{Weight: 50, PauseSeconds: 60}, {Weight: 25}, {Weight: 100}},
			want:  want{Running, 1, new(int32(3)), 1, 50, 40, 5, "(2 of 5)", false}},
		{name: "the lower step, the stable's status from before its scale-down to 2: held", st: step(1, 50, time.Second),
			pods: &Pods{Observed: true, Replicas: 2, Total: 2, Updated: 2, Available: 2}, serving: 2, stableAvailable: 4, stableReplicas: 2,
			steps: []appv1.CanaryStep{{Weight: 50, PauseSeconds: 60}, {Weight: 25}, {Weight: 100}},
			want:  want{Running, 2, new(int32(3)), 1, 50, 33, 6, "(2 of 6)", true}},
		{name: "the lower step, the stable's status not observed yet: held", st: step(1, 50, time.Second),
			pods: &Pods{Observed: true, Replicas: 2, Total: 2, Updated: 2, Available: 2}, serving: 2, stableAvailable: 3, stableUnobserved: true,
			steps: []appv1.CanaryStep{{Weight: 50, PauseSeconds: 60}, {Weight: 25}, {Weight: 100}},
			want:  want{Running, 2, new(int32(3)), 1, 50, 40, 5, "(2 of 5)", true}},
		{name: "15 min into a step whose Pods start: within the doubled deadline, no abort", st: step(1, 25, 15*time.Minute),
			pods: &Pods{Observed: true, Replicas: 2, Total: 2, Updated: 2, Available: 1}, stableAvailable: 3,
			want: want{Running, 2, new(int32(3)), 1, 25, 25, 4, "(1 of 4)", false}},
		{name: "21 min into it: aborted", st: step(1, 25, 21*time.Minute),
			pods: &Pods{Observed: true, Replicas: 2, Total: 2, Updated: 2, Available: 1}, stableAvailable: 3,
			want: want{Aborted, 2, nil, -1, 0, 25, 4, "not available within the progress deadline (20m0s)", false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := spec.DeepCopy()
			c.Abort = tc.abort
			if tc.steps != nil {
				c.Steps = tc.steps
			}
			hash, serving := tc.hash, tc.serving
			if hash == "" {
				hash = "new"
			}
			if serving == 0 && tc.pods != nil {
				serving = tc.pods.Replicas
			}
			servingAvailable := serving
			if tc.pods != nil {
				servingAvailable = tc.pods.Available
			}
			before := tc.st.DeepCopy()
			// The stable as its controller last counted it: observed, at 4
			// replicas but where a test says otherwise.
			stable := &Pods{Observed: !tc.stableUnobserved, Replicas: 4, Available: tc.stableAvailable}
			if tc.stableReplicas > 0 {
				stable.Replicas = tc.stableReplicas
			}
			d := Decide(Input{Spec: c, Hash: hash, StableReplicas: 4, StableAvailable: tc.stableAvailable, Stable: stable, StableRolledOut: tc.rolledOut,
				StableStuck: tc.stuck, CanaryServing: serving, CanaryServingAvailable: servingAvailable, ProgressDeadline: 10 * time.Minute, NoRoute: true, Status: tc.st, Pods: tc.pods, Now: now})
			if diff := cmp.Diff(before, tc.st); diff != "" {
				t.Errorf("Decide changed the status it was given (-before +after):\n%s", diff)
			}
			got := want{phase: d.Phase, canary: d.CanaryReplicas, stable: d.StableReplicas, step: -1, hold: d.HoldCanary}
			if st := d.Status; st != nil {
				if st.Step != nil {
					got.step, got.weight = *st.Step, st.Weight
				}
				got.share, got.of = st.Share, st.ServingPods
			}
			got.messageHasPods = tc.want.messageHasPods
			if !strings.Contains(d.Message, tc.want.messageHasPods) {
				got.messageHasPods = d.Message
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}
