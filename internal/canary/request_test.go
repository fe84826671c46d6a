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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestDecideRequests: a gated step waits for a person, and a request in
// the status (kubectl appservice promote, abort, retry) acts once, on the
// canary and step it names only; any other request goes.
func TestDecideRequests(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-ago)} }
	gatedSpec := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 60, Gate: true}, {Weight: 50, PauseSeconds: 30}, {Weight: 100}}}
	ready := func(n int32) *Pods { return &Pods{Observed: true, Replicas: n, Total: n, Updated: n, Available: n} }
	starting := func(n int32) *Pods { return &Pods{Observed: true, Replicas: n, Total: n, Updated: n} }
	request := func(action appv1.CanaryAction, hash string, step ...int32) *appv1.CanaryRequest {
		r := &appv1.CanaryRequest{Action: action, TemplateHash: hash}
		if len(step) > 0 {
			r.Step = new(step[0])
		}
		return r
	}
	// At step i of template "new", weight w routed ago, with request r.
	step := func(i, w int32, ago time.Duration, r *appv1.CanaryRequest) *appv1.CanaryStatus {
		return &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(i), Weight: w, StepStartTime: at(ago), Request: r}
	}
	aborted := func(r *appv1.CanaryRequest) *appv1.CanaryStatus {
		return &appv1.CanaryStatus{StableTemplateHash: "old", AbortedTemplateHash: "new", Request: r}
	}
	in := func(st *appv1.CanaryStatus, pods *Pods) Input {
		return Input{Spec: gatedSpec, Hash: "new", StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now, Status: st, Pods: pods}
	}
	requested := func(msg string) *Event { return &Event{corev1.EventTypeNormal, appv1.ReasonCanaryRequested, msg} }
	const gateMessage = "Canary new at step 1 of 3, 10% of the traffic by route: waits at its gate for kubectl appservice promote"
	onRequest := "Canary new aborted: aborted on request (kubectl appservice retry, or a new template, starts it again); the stable version serves all the traffic"

	for _, tc := range []struct {
		name string
		in   Input
		want Decision
	}{{
		name: "a gated step mid-pause: pauses",
		in:   in(step(0, 10, 20*time.Second, nil), ready(1)),
		want: Decision{Phase: Running, Status: step(0, 10, 20*time.Second, nil), HoldStable: true, CanaryReplicas: 1, RouteWeight: 10, After: 40 * time.Second,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 10% of the traffic by route: pauses"},
	}, {
		name: "a gated step past its pause, a day later: waits for a person, with no time limit",
		in:   in(step(0, 10, 24*time.Hour, nil), ready(1)),
		want: Decision{Phase: Running, Status: step(0, 10, 24*time.Hour, nil), HoldStable: true, CanaryReplicas: 1, RouteWeight: 10,
			Reason: appv1.ReasonCanaryGated, Message: gateMessage},
	}, {
		name: "promoted at its gate: the next step asks for its Pods, the request goes",
		in:   in(step(0, 10, time.Hour, request(appv1.CanaryPromote, "new", 0)), ready(1)),
		want: Decision{Phase: Running, Status: step(1, 10, 0, nil), HoldStable: true, CanaryReplicas: 2, RouteWeight: 10, After: 10 * time.Minute,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 2 of 3, 10% of the traffic by route: waits for its Pods",
			Event: requested("Canary new promoted on request past step 1 of 3")},
	}, {
		name: "promoted mid-pause: the pause is skipped",
		in:   in(step(0, 10, time.Second, request(appv1.CanaryPromote, "new", 0)), ready(1)),
		want: Decision{Phase: Running, Status: step(1, 10, 0, nil), HoldStable: true, CanaryReplicas: 2, RouteWeight: 10, After: 10 * time.Minute,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 2 of 3, 10% of the traffic by route: waits for its Pods",
			Event: requested("Canary new promoted on request past step 1 of 3")},
	}, {
		name: "promoted before the step's Pods are available: the request waits in the status for the weight's routing (no write)",
		in:   in(step(0, 0, time.Minute, request(appv1.CanaryPromote, "new", 0)), starting(1)),
		want: Decision{Phase: Running, Status: step(0, 0, time.Minute, request(appv1.CanaryPromote, "new", 0)), HoldStable: true, CanaryReplicas: 1,
			After: 9 * time.Minute, Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 0% of the traffic by route: waits for its Pods"},
	}, {
		name: "a stale promotion (of the step before, as after a restart that wrote the step): it goes, the step waits",
		in:   in(step(1, 50, 0, request(appv1.CanaryPromote, "new", 0)), ready(2)),
		want: Decision{Phase: Running, Status: step(1, 50, 0, nil), HoldStable: true, CanaryReplicas: 2, RouteWeight: 50, After: 30 * time.Second,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 2 of 3, 50% of the traffic by route: pauses"},
	}, {
		name: "a promotion of another canary's template: it goes, the gate holds",
		in:   in(step(0, 10, time.Hour, request(appv1.CanaryPromote, "older", 0)), ready(1)),
		want: Decision{Phase: Running, Status: step(0, 10, time.Hour, nil), HoldStable: true, CanaryReplicas: 1, RouteWeight: 10,
			Reason: appv1.ReasonCanaryGated, Message: gateMessage},
	}, {
		name: "a promotion without a step: it goes",
		in:   in(step(0, 10, time.Hour, request(appv1.CanaryPromote, "new")), ready(1)),
		want: Decision{Phase: Running, Status: step(0, 10, time.Hour, nil), HoldStable: true, CanaryReplicas: 1, RouteWeight: 10,
			Reason: appv1.ReasonCanaryGated, Message: gateMessage},
	}, {
		name: "promoted fully: the steps left are skipped, the stable Pods roll to it",
		in:   in(step(0, 10, time.Second, request(appv1.CanaryPromoteFull, "new")), ready(1)),
		want: Decision{Phase: Promoting, Status: step(3, 10, 0, nil), CanaryReplicas: 1, RouteWeight: 10, Reason: appv1.ReasonCanaryPromoting,
			Message: "Canary new promoted: the stable Pods roll to it; the canary keeps 10% of the traffic by route until they have",
			Event:   requested("Canary new promoted on request at step 1 of 3, skipping the steps left: the stable Pods roll to it")},
	}, {
		name: "aborted on request: all the traffic to the stable Pods, the request kept as the record",
		in:   in(step(0, 10, time.Second, request(appv1.CanaryAbort, "new")), ready(1)),
		want: Decision{Phase: Aborted, Status: aborted(request(appv1.CanaryAbort, "new")), HoldStable: true, Reason: appv1.ReasonCanaryAborted,
			Message: onRequest, Event: &Event{corev1.EventTypeWarning, appv1.ReasonCanaryAborted, onRequest}},
	}, {
		name: "aborted on request: stays aborted, without a second Event",
		in:   in(aborted(request(appv1.CanaryAbort, "new")), nil),
		want: Decision{Phase: Aborted, Status: aborted(request(appv1.CanaryAbort, "new")), HoldStable: true, Reason: appv1.ReasonCanaryAborted, Message: onRequest},
	}, {
		name: "retried: starts again at the first step, the template no longer aborted",
		in:   in(aborted(request(appv1.CanaryRetry, "new")), nil),
		want: Decision{Phase: Running, Status: &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(int32(0)), StepStartTime: at(0)},
			HoldStable: true, CanaryReplicas: 1, After: 10 * time.Minute,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 0% of the traffic by route: waits for its Pods",
			Event: requested("Canary new retried on request: it starts again at step 1 of 3")},
	}, {
		name: "a retry of another template: it goes, the canary stays aborted",
		in:   in(aborted(request(appv1.CanaryRetry, "older")), nil),
		want: Decision{Phase: Aborted, Status: aborted(nil), HoldStable: true, Reason: appv1.ReasonCanaryAborted,
			Message: "Canary new aborted: its Pods were not available within the progress deadline (change the template to start a new canary); the stable version serves all the traffic"},
	}, {
		name: "a retry while running: it goes",
		in:   in(step(0, 10, time.Second, request(appv1.CanaryRetry, "new")), ready(1)),
		want: Decision{Phase: Running, Status: step(0, 10, time.Second, nil), HoldStable: true, CanaryReplicas: 1, RouteWeight: 10, After: 59 * time.Second,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary new at step 1 of 3, 10% of the traffic by route: pauses"},
	}, {
		name: "spec.canary.abort wins over a retry",
		in: func() Input {
			i := in(aborted(request(appv1.CanaryRetry, "new")), nil)
			i.Spec = gatedSpec.DeepCopy()
			i.Spec.Abort = true
			return i
		}(),
		want: Decision{Phase: Aborted, Status: aborted(nil), HoldStable: true, Reason: appv1.ReasonCanaryAborted,
			Message: "Canary new aborted: spec.canary.abort is true (set it back to false to try again); the stable version serves all the traffic"},
	}, {
		name: "promoted and rolled out: a request left goes with the canary",
		in: func() Input {
			i := in(step(3, 10, time.Minute, request(appv1.CanaryPromote, "new", 0)), ready(1))
			i.StableInLine, i.StableRolledOut = true, true
			return i
		}(),
		want: Decision{Phase: None, Status: &appv1.CanaryStatus{StableTemplateHash: "new"},
			Event: &Event{corev1.EventTypeNormal, appv1.ReasonCanaryPromoted, "Canary new promoted: every Pod runs it, all the traffic goes to the Service again, the canary's objects are deleted"}},
	}, {
		name: "a new template: a request for the last canary goes",
		in: func() Input {
			i := in(step(0, 10, time.Minute, request(appv1.CanaryPromote, "new", 0)), nil)
			i.Hash = "newer"
			return i
		}(),
		want: Decision{Phase: Running, Status: &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "newer", Step: new(int32(0)), StepStartTime: at(0)},
			HoldStable: true, CanaryReplicas: 1, After: 10 * time.Minute,
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary newer at step 1 of 3, 0% of the traffic by route: waits for its Pods"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.in)
			if diff := cmp.Diff(tc.want, got, carrierFields, edgeFields); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideRollback: a change back to one of the last stable templates
// within spec.canary.rollbackWindow rolls the stable Pods to it at once;
// the history is the stable templates, newest first, as long as the window.
func TestDecideRollback(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 60}, {Weight: 100}}, RollbackWindow: 2}
	stable := func(hash string, history ...string) *appv1.CanaryStatus {
		return &appv1.CanaryStatus{StableTemplateHash: hash, History: history}
	}
	in := func(hash string, st *appv1.CanaryStatus, f func(*Input)) Input {
		i := Input{Spec: spec, Hash: hash, StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now, Status: st}
		if f != nil {
			f(&i)
		}
		return i
	}
	rolling := func(to string, st *appv1.CanaryStatus) Decision {
		return Decision{Phase: RollingBack, Status: st, Reason: appv1.ReasonCanaryRollingBack,
			Message: "Rolling back to " + to + " without a canary (one of the last 2 stable templates, spec.canary.rollbackWindow): the stable Pods roll to it"}
	}
	inLine := func(in *Input) { in.StableInLine = true }
	rolledOut := func(in *Input) { in.StableInLine, in.StableRolledOut = true, true }

	for _, tc := range []struct {
		name string
		in   Input
		want Decision
	}{{
		name: "back to the last stable template: the stable Deployment takes it at once, no canary",
		in:   in("a", stable("c", "a", "b"), nil),
		want: rolling("a", stable("c", "a", "b")),
	}, {
		name: "back to the second last, mid-canary: the canary and its request go",
		in: in("b", &appv1.CanaryStatus{StableTemplateHash: "c", History: []string{"a", "b"}, CanaryTemplateHash: "x", Step: new(int32(0)),
			Weight: 10, StepStartTime: &metav1.Time{Time: now}, Request: &appv1.CanaryRequest{Action: appv1.CanaryAbort, TemplateHash: "x"}}, nil),
		want: rolling("b", stable("c", "a", "b")),
	}, {
		name: "the stable Pods rolling to it: rolling back (no write)",
		in:   in("a", stable("c", "a", "b"), inLine),
		want: rolling("a", stable("c", "a", "b")),
	}, {
		name: "rolled out: done, the template before it first in the history, once",
		in:   in("a", stable("c", "a", "b"), rolledOut),
		want: Decision{Phase: None, Status: stable("a", "c", "b"),
			Event: &Event{corev1.EventTypeNormal, appv1.ReasonCanaryRolledBack,
				"Rolled back to a without a canary: every Pod runs it (one of the last 2 stable templates, spec.canary.rollbackWindow)"}},
	}, {
		name: "outside the window: a canary",
		in:   in("b", stable("c", "a", "b"), func(in *Input) { in.Spec = spec.DeepCopy(); in.Spec.RollbackWindow = 1 }),
		want: Decision{Phase: Running, HoldStable: true, CanaryReplicas: 1, After: 10 * time.Minute,
			Status: &appv1.CanaryStatus{StableTemplateHash: "c", History: []string{"a", "b"}, CanaryTemplateHash: "b", Step: new(int32(0)), StepStartTime: &metav1.Time{Time: now}},
			Reason: appv1.ReasonCanaryProgressing, Message: "Canary b at step 1 of 2, 0% of the traffic by route: waits for its Pods"},
	}, {
		name: "spec.canary.abort holds a rollback too",
		in:   in("a", stable("c", "a"), func(in *Input) { in.Spec = spec.DeepCopy(); in.Spec.Abort = true }),
		want: Decision{Phase: Aborted, HoldStable: true, Status: stable("c", "a"), Reason: appv1.ReasonCanaryAborted,
			Message: "Canary a aborted: spec.canary.abort is true (set it back to false to try again); the stable version serves all the traffic"},
	}, {
		name: "a promotion done: the template before it joins the history, the oldest leaves",
		in:   in("n", &appv1.CanaryStatus{StableTemplateHash: "c", History: []string{"a", "b"}, CanaryTemplateHash: "n", Step: new(int32(2)), Weight: 100}, rolledOut),
		want: Decision{Phase: None, Status: stable("n", "c", "a"),
			Event: &Event{corev1.EventTypeNormal, appv1.ReasonCanaryPromoted, "Canary n promoted: every Pod runs it, all the traffic goes to the Service again, the canary's objects are deleted"}},
	}, {
		name: "without a window: no history",
		in: in("n", &appv1.CanaryStatus{StableTemplateHash: "c", CanaryTemplateHash: "n", Step: new(int32(2)), Weight: 100}, func(in *Input) {
			rolledOut(in)
			in.Spec = spec.DeepCopy()
			in.Spec.RollbackWindow = 0
		}),
		want: Decision{Phase: None, Status: stable("n"),
			Event: &Event{corev1.EventTypeNormal, appv1.ReasonCanaryPromoted, "Canary n promoted: every Pod runs it, all the traffic goes to the Service again, the canary's objects are deleted"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.in)
			if diff := cmp.Diff(tc.want, got, carrierFields, edgeFields); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideTesters: the testers' rules are on from the canary's first
// available Pod to the end of its promotion.
func TestDecideTesters(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 60}, {Weight: 100}},
		TesterHeaders: []appv1.TesterHeader{{Name: "x-canary", Value: "1"}}}
	at := func(step, weight int32) *appv1.CanaryStatus {
		return &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(step), Weight: weight, StepStartTime: &metav1.Time{Time: now}}
	}
	ready := &Pods{Observed: true, Replicas: 1, Total: 1, Updated: 1, Available: 1}
	for _, tc := range []struct {
		name string
		st   *appv1.CanaryStatus
		pods *Pods
		f    func(*Input)
		want bool
	}{
		{name: "Pods starting", st: at(0, 0), pods: &Pods{Observed: true, Replicas: 1, Total: 1}},
		{name: "a Pod available, before the weight", st: at(0, 0), pods: ready, want: true},
		{name: "mid-pause", st: at(0, 10), pods: ready, want: true},
		{name: "promoting", st: at(2, 10), pods: ready, want: true},
		{name: "aborted", st: at(0, 10), pods: ready, f: func(in *Input) { in.Spec = spec.DeepCopy(); in.Spec.Abort = true }},
		{name: "promoted", st: at(2, 10), pods: ready, f: func(in *Input) { in.StableInLine, in.StableRolledOut = true, true }},
		{name: "no tester headers", st: at(0, 10), pods: ready, f: func(in *Input) { in.Spec = spec.DeepCopy(); in.Spec.TesterHeaders = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Spec: spec, Hash: "new", StableReplicas: 4, ProgressDeadline: time.Minute, Now: now, Status: tc.st, Pods: tc.pods}
			if tc.f != nil {
				tc.f(&in)
			}
			if got := Decide(in).Testers; got != tc.want {
				t.Errorf("Testers = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDecideMirror: a mirror step (of weight 0, or beside a weight) is
// routed once its Pods are available, as a weight is: its status records
// the mirror, the route copies the requests while it holds, and the mirror
// ends with the step, at an abort, and at the promotion. The sticky cookie
// keeps users on the canary from its first available Pod to the promotion.
func TestDecideMirror(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Mirror: 50, PauseSeconds: 60}, {Weight: 20, Mirror: 10, PauseSeconds: 60}, {Weight: 100}},
		Sticky: &appv1.CanarySticky{CookieName: "canary"}}
	at := func(step, weight, mirror int32, ago time.Duration) *appv1.CanaryStatus {
		return &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(step), Weight: weight, Mirror: mirror,
			StepStartTime: &metav1.Time{Time: now.Add(-ago)}}
	}
	ready := func(n int32) *Pods { return &Pods{Observed: true, Replicas: n, Total: n, Updated: n, Available: n} }
	for _, tc := range []struct {
		name   string
		st     *appv1.CanaryStatus
		pods   *Pods
		f      func(*Input)
		status *appv1.CanaryStatus // the decision's; nil: as st
		weight int32
		mirror int32
		sticky bool
		event  string
	}{
		{name: "step 1's Pod starting: no mirror yet", st: at(0, 0, 0, 0), pods: &Pods{Observed: true, Replicas: 1, Total: 1}},
		{name: "step 1's Pod available: its mirror is routed, at weight 0", st: at(0, 0, 0, time.Minute), pods: ready(1),
			status: at(0, 0, 50, 0), mirror: 50, sticky: true,
			event: "Canary new at step 1 of 3: 0% of the traffic by route, and a copy of 50% of the requests"},
		{name: "mid-pause: the mirror holds", st: at(0, 0, 50, 30*time.Second), pods: ready(1), mirror: 50, sticky: true},
		{name: "the pause over: the mirror ends with the step, the next waits for its Pods", st: at(0, 0, 50, time.Minute), pods: ready(1),
			status: at(1, 0, 0, 0), sticky: true},
		{name: "step 2's Pods available: weight and mirror routed together", st: at(1, 0, 0, time.Minute), pods: ready(1),
			status: at(1, 20, 10, 0), weight: 20, mirror: 10, sticky: true,
			event: "Canary new at step 2 of 3: 20% of the traffic by route, and a copy of 10% of the requests"},
		{name: "aborted: no mirror, no cookie", st: at(1, 20, 10, 0), pods: ready(1),
			f:     func(in *Input) { in.Spec = spec.DeepCopy(); in.Spec.Abort = true },
			event: "Canary new aborted: spec.canary.abort is true (set it back to false to try again); the stable version serves all the traffic"},
		{name: "promoting: no mirror, no cookie", st: at(3, 100, 0, 0), pods: ready(4), weight: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Spec: spec, Hash: "new", StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now, Status: tc.st, Pods: tc.pods}
			if tc.f != nil {
				tc.f(&in)
			}
			d := Decide(in)
			type route struct {
				weight, mirror int32
				cookie         string
			}
			want := route{tc.weight, tc.mirror, ""}
			if tc.sticky {
				want.cookie = "new"
			}
			if got := (route{d.RouteWeight, d.RouteMirror, d.StickyCookie}); got != want {
				t.Errorf("weight, mirror, cookie = %+v; want %+v (%s)", got, want, d.Message)
			}
			if tc.status != nil {
				if d.Status == nil || d.Status.Weight != tc.status.Weight || d.Status.Mirror != tc.status.Mirror || *d.Status.Step != *tc.status.Step {
					t.Errorf("status %+v, want step %d, weight %d, mirror %d", d.Status, *tc.status.Step, tc.status.Weight, tc.status.Mirror)
				}
			}
			if (d.Event != nil) != (tc.event != "") || (d.Event != nil && d.Event.Message != tc.event) {
				t.Errorf("Event %+v, want %q", d.Event, tc.event)
			}
		})
	}
}

// TestDecideRouteUnsupported: a canary whose route needs a feature a
// Gateway's class does not list holds at its start, Stalled, and looks
// again in FeaturesRecheck; one running starts over once it can.
func TestDecideRouteUnsupported(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Mirror: 50, PauseSeconds: 60}, {Weight: 100}}}
	why := "GatewayClass limited (of Gateway infra/public) does not list HTTPRouteRequestMirror among its supportedFeatures, which spec.canary.steps[0].mirror needs"
	for _, tc := range []struct {
		name string
		st   *appv1.CanaryStatus
	}{
		{name: "a new template", st: &appv1.CanaryStatus{StableTemplateHash: "old"}},
		{name: "a canary at its first step", st: &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(int32(0)),
			Mirror: 50, StepStartTime: &metav1.Time{Time: now}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Spec: spec, Hash: "new", StableReplicas: 2, ProgressDeadline: time.Minute, Now: now, Status: tc.st,
				RouteUnsupported: why, Pods: &Pods{Observed: true, Replicas: 1, Total: 1, Updated: 1, Available: 1}}
			d := Decide(in)
			if d.Phase != AwaitingRoute || !d.Stalled || d.Reason != appv1.ReasonRouteFeatureUnsupported || d.After != FeaturesRecheck ||
				d.CanaryReplicas != 0 || d.RouteMirror != 0 || d.Status.Step != nil {
				t.Errorf("decision %+v; want held at its start, Stalled (RouteFeatureUnsupported), no Pods, no mirror, looked at again in %s",
					d, FeaturesRecheck)
			}
			if want := "Canary new holds at its start, with no step and no traffic: its route needs what the Gateway does not support: " + why; d.Message != want {
				t.Errorf("message %q, want %q", d.Message, want)
			}
		})
	}
	promoting := Input{Spec: spec, Hash: "new", StableReplicas: 2, Now: now, RouteUnsupported: why,
		Status: &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(int32(2)), Weight: 100}}
	if d := Decide(promoting); d.Phase != Promoting {
		t.Errorf("a promotion under way: %s, want it to go on (it needs no mirror)", d.Phase)
	}
}
