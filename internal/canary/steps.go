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
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The steps' machine: a canary started at its first step, each step's
// Pods, Before tests, weight (and mirror), pause, analysis, During tests
// and gate in turn, the next step, then the promotion.

// atStep is the decision of a canary running step (before its promotion),
// st its status, promote a request that passes the step: its Pods, its
// Before tests, its weight, then what passes it (routedStep).
func (in Input) atStep(st *appv1.CanaryStatus, step int32, promote bool) Decision {
	c, steps := in.Spec, int32(len(in.Spec.Steps))
	want := c.Steps[step]
	begin := metav1.Time{Time: startTime(st, in.Now)}
	since := in.Now.Sub(begin.Time)
	running1 := func(status *appv1.CanaryStatus, replicas int32, after time.Duration, what string) Decision {
		return runningAt(in, status, replicas, after, what)
	}
	replicas := in.replicas(want.Weight)
	routed := in.routedAt(st, want)
	tested := beforePassed(c, st, step)
	if !tested && in.by == appv1.CanaryByPods && st.Weight > 0 {
		// By Pods, the step's Pods are its weight: they wait for its
		// Before tests, which test the last step's.
		replicas = in.replicas(st.Weight)
	}
	if last := testsClock(st, step); !routed && last.After(begin.Time) {
		// Its Pods were available when its Before tests began, and the
		// Pods of its weight come once they passed: the deadline counts
		// from the last of those.
		since = in.Now.Sub(last)
	}
	if !in.Pods.available(replicas) && !in.passedAhead(st, step, replicas, tested) {
		// Until the step's weight is routed, its deadline counts from
		// the step's start (or from its Before tests' pass). After, its
		// pause has begun: a Pod lost then aborts once the canary's
		// Deployment itself says it made no progress within the deadline
		// (its clock starts at the loss, not at the pause's start); its
		// status change wakes the sync. So too while its Before tests run:
		// its Pods were available when they began.
		// With shrinkStable, the stable's Pods may first have to come
		// back (HoldCanary), for at most its own progress deadline: the
		// step's Pods have that time too.
		deadline := in.ProgressDeadline
		if in.shrinking() {
			deadline *= 2
		}
		timed := !routed && (tested || testsClock(st, step).IsZero())
		if (timed && since >= deadline) || (in.Pods != nil && in.Pods.DeadlineExceeded) {
			return deadlineAbort(in, st, fmt.Sprintf("its Pods were not available within the progress deadline (%s) at step %d of %d",
				deadline, step+1, steps))
		}
		after := deadline - since
		if !timed {
			after = 0
		}
		return running1(st, replicas, after, "waits for its Pods")
	}
	names := in.testActivity
	var events []Event
	if !tested {
		// The step's Pods are available: its Before tests run, and its
		// weight waits for them (a step of the last one's weight holds
		// it, carrying nothing more, until they passed).
		r := in.stepTests(st, step, appv1.CanaryTestBefore, begin, names)
		if r.failed != "" {
			return testAbort(in, r.status, r.failed, r.events)
		}
		if !r.passed {
			d := running1(r.status, replicas, r.after, waitingFor(appv1.CanaryTestBefore, r.waiting))
			d.Events = r.events
			return d
		}
		st, events, replicas = r.status, r.events, in.replicas(want.Weight)
		if !in.Pods.available(replicas) || (in.by == appv1.CanaryByPods && !in.serve) {
			// By Pods, the step's Pods come now (or join the Service).
			d := running1(st, replicas, in.ProgressDeadline, "waits for its Pods")
			d.Events = events
			return d
		}
	}
	if !routed {
		// The step's Pods are available (and tested): its weight goes to
		// the route, its pause starts, and its During tests begin.
		next := st.DeepCopy()
		next.Weight, next.Mirror, next.StepStartTime = want.Weight, want.Mirror, &metav1.Time{Time: in.Now}
		next.PreviewReady = in.blueGreen()
		r := in.stepTests(next, step, appv1.CanaryTestDuring, begin, names)
		event := &Event{corev1.EventTypeNormal, appv1.ReasonCanaryStep,
			fmt.Sprintf("Canary %s at step %d of %d: %s%s", in.Hash, step+1, steps, in.traffic(want.Weight), mirrored(want.Mirror))}
		if step+1 < steps && holdsForNothing(c, want) {
			// Nothing holds the step once its weight is routed: it passes
			// in the same decision, and its weight and the next step are
			// one status write, not two. A sync that stops before its
			// status write has routed the weight and asked for the next
			// step's Pods: the next decides this again (passedAhead). (The
			// last step's weight and the promotion stay two writes: the
			// stable rolls to the canary's template only once the status
			// says 100%.)
			d := advance(in, r.status, step)
			d.Event, d.Events = event, append(events, r.events...)
			d.Edge, d.EdgeStep = appv1.EdgeStep, step
			if promote {
				d.Events = append(d.Events, Event{corev1.EventTypeNormal, appv1.ReasonCanaryRequested,
					fmt.Sprintf("Canary %s promoted on request past step %d of %d", in.Hash, step+1, steps)})
			}
			return d
		}
		d := running1(r.status, replicas, time.Duration(want.PauseSeconds)*time.Second, "pauses")
		if len(r.waiting) > 0 {
			d.After = minAfter(d.After, r.after)
		}
		d.RouteWeight = want.Weight
		d.Event = event
		d.Edge, d.EdgeStep = appv1.EdgeStep, step
		d.Events = append(events, r.events...)
		return d
	}
	during := in.stepTests(st, step, appv1.CanaryTestDuring, begin, names)
	if during.failed != "" {
		return testAbort(in, during.status, during.failed, during.events)
	}
	st = during.status
	d := in.routedStep(st, step, replicas, since, promote, during)
	d.Events = append(during.events, d.Events...)
	return d
}

// routedStep is the decision of a step whose weight is routed, since ago,
// and whose During tests stand as tests say: it passes once its pause,
// its analysis, its tests and its gate have (or on request).
func (in Input) routedStep(st *appv1.CanaryStatus, step, replicas int32, since time.Duration, promote bool, tests testsResult) Decision {
	c, want, steps := in.Spec, in.Spec.Steps[step], len(in.Spec.Steps)
	running1 := func(status *appv1.CanaryStatus, replicas int32, after time.Duration, what string) Decision {
		return runningAt(in, status, replicas, after, what)
	}
	if promote {
		// Its weight is routed: the request passes the step, whatever its
		// pause, analysis or gate.
		d := advance(in, st, step)
		d.Event = &Event{corev1.EventTypeNormal, appv1.ReasonCanaryRequested,
			fmt.Sprintf("Canary %s promoted on request past step %d of %d", in.Hash, step+1, steps)}
		return d
	}
	pause := time.Duration(want.PauseSeconds) * time.Second
	if c.Analysis != nil {
		// The step's weight is routed: the analysis measures it.
		return analysed(in, st, replicas, since, pause, tests)
	}
	if since < pause {
		d := running1(st, replicas, pause-since, "pauses")
		if !tests.passed {
			d.After = minAfter(d.After, tests.after)
		}
		return d
	}
	if !tests.passed {
		return running1(st, replicas, tests.after, waitingFor(appv1.CanaryTestDuring, tests.waiting))
	}
	if want.Gate {
		// It passed its pause, and waits for a person.
		d := running1(st, replicas, 0, gateWait)
		d.Reason = appv1.ReasonCanaryGated
		d.Edge, d.EdgeStep = appv1.EdgeGated, step
		return d
	}
	return advance(in, st, step)
}

// passedAhead reports whether the canary's Pods are as the decision that
// passes step (one that holds for nothing, tested) with its weight left
// them: the next step's count asked for, at least this step's available.
// That decision's status write was lost (a conflict, a restart), and the
// step's Pods count as available: it is decided again, the same.
func (in Input) passedAhead(st *appv1.CanaryStatus, step, replicas int32, tested bool) bool {
	c := in.Spec
	want := c.Steps[step]
	if !tested || step+1 >= int32(len(c.Steps)) || in.routedAt(st, want) || !holdsForNothing(c, want) {
		return false
	}
	next := advance(in, &appv1.CanaryStatus{Step: new(step), Weight: want.Weight, Mirror: want.Mirror}, step).CanaryReplicas
	p := in.Pods
	return next != replicas && p != nil && p.Observed && p.Replicas == next && p.Total == next &&
		p.Updated >= replicas && p.Available >= replicas
}

// routedAt reports whether the status's step has its weight and mirror
// routed: its pause counts, and its During tests run. A blue-green step,
// whose weight is always 0, has once its preview was available
// (PreviewReady).
func (in Input) routedAt(st *appv1.CanaryStatus, want appv1.CanaryStep) bool {
	return st.Weight == want.Weight && st.Mirror == want.Mirror && (st.PreviewReady || !in.blueGreen())
}

// holdsForNothing reports whether step passes as soon as its weight is
// routed: no pause, no analysis, no During test, no gate.
func holdsForNothing(c *appv1.Canary, step appv1.CanaryStep) bool {
	return step.PauseSeconds == 0 && c.Analysis == nil && !step.Gate && !hasTests(step, appv1.CanaryTestDuring)
}

// deadlineAbort is the abort of a release whose Pods were not available
// within the progress deadline (why), its template remembered.
func deadlineAbort(in Input, st *appv1.CanaryStatus, why string) Decision {
	d := abort(in, st, why, true)
	d.Status.AbortedTemplateHash = in.Hash
	d.Edge = appv1.EdgeProgressDeadline
	return d
}

// gateWait says what a step at its gate waits for.
const gateWait = "waits at its gate for kubectl appservice promote"

// start is the decision that starts a canary of in.Hash at its first step,
// its analysis's templates pinned as resolved now; one whose templates
// cannot be resolved holds at its start instead (awaitAnalysis).
func start(in Input, last *appv1.CanaryStatus, aborted string) Decision {
	if in.Analysis.Unresolved != "" {
		return awaitAnalysis(in, last, aborted)
	}
	st := &appv1.CanaryStatus{
		StableTemplateHash: last.StableTemplateHash, CanaryTemplateHash: in.Hash,
		Step: new(int32(0)), StepStartTime: &metav1.Time{Time: in.Now},
		AbortedTemplateHash: aborted, History: last.History, Templates: in.Analysis.Pins,
	}
	return Decision{
		Phase: Running, Status: st, HoldStable: true,
		CanaryReplicas: in.replicas(in.Spec.Steps[0].Weight), After: in.ProgressDeadline,
		Reason:  appv1.ReasonCanaryProgressing,
		Message: in.stepMessage(0, 0, "waits for its Pods"),
		Edge:    appv1.EdgeStarted,
	}
}

// runningAt is the decision of a canary at status's step, with replicas
// Pods, to look again after (0: when something changes), doing what.
func runningAt(in Input, status *appv1.CanaryStatus, replicas int32, after time.Duration, what string) Decision {
	return Decision{
		Phase: Running, Status: status, HoldStable: true, CanaryReplicas: replicas,
		RouteWeight: routed(status.Weight, in.Pods.serving()), After: after,
		Reason: appv1.ReasonCanaryProgressing, Message: in.stepMessage(*status.Step, status.Weight, what),
	}
}

// analysed is the decision of a step whose weight is routed, since ago,
// with a pause of pause, judged by its analysis (analysis.go).
func analysed(in Input, st *appv1.CanaryStatus, replicas int32, since, pause time.Duration, tests testsResult) Decision {
	a := in.Spec.Analysis
	j := judge(a, in.Analysis, st, in.Hash, in.Now)
	if j.abort != "" {
		return j.failed(in, st, "")
	}
	// A template added while the canary runs, which does not resolve,
	// holds the step: its metrics are not measured.
	passed := j.passed && tests.passed && in.Analysis.Unresolved == ""
	gate := since >= pause && passed && in.Spec.Steps[*st.Step].Gate
	if since >= pause && passed && !gate {
		d := advance(in, j.status, *st.Step)
		d.Events = j.events
		return d
	}
	what, after := "pauses", time.Duration(0)
	if since >= pause {
		what = j.hold
		if j.passed && !tests.passed {
			what = waitingFor(appv1.CanaryTestDuring, tests.waiting)
		}
		if gate {
			// Measured on while it waits: a failure still aborts.
			what = gateWait
		}
	} else {
		after = pause - since
	}
	if wait := j.wake(a, in.Now); wait > 0 && (after == 0 || wait < after) {
		after = wait
	}
	if !tests.passed {
		after = minAfter(after, tests.after)
	}
	d := runningAt(in, j.status, replicas, after, what)
	d.Events, d.Round = j.events, j.round
	if gate {
		d.Reason = appv1.ReasonCanaryGated
		d.Edge, d.EdgeStep = appv1.EdgeGated, *st.Step
	}
	in.analysisStalled(&d, since >= pause, func(what string) string { return in.stepMessage(*st.Step, st.Weight, what) })
	return d
}

// advance is the decision once step's pause has passed (and its analysis,
// if any, too): the next step asks for its Pods, at this weight until they
// are available; after the last, promotion.
func advance(in Input, st *appv1.CanaryStatus, step int32) Decision {
	steps := int32(len(in.Spec.Steps))
	next := st.DeepCopy()
	// The step's mirror ends with it; its weight holds until the next
	// step's Pods are available.
	next.Step, next.StepStartTime, next.Request, next.Mirror, next.PreviewReady = new(step+1), &metav1.Time{Time: in.Now}, nil, 0, false
	if step+1 >= steps && in.blueGreen() {
		// The switch's wait, then the switch, in a sync of their own.
		return in.previewGrows(next, in.ProgressDeadline)
	}
	if step+1 >= steps {
		return promoting(in, next)
	}
	nextReplicas := in.replicas(in.Spec.Steps[step+1].Weight)
	if in.by == appv1.CanaryByPods && hasTests(in.Spec.Steps[step+1], appv1.CanaryTestBefore) {
		// Its Pods are its weight: they wait for its Before tests.
		nextReplicas = in.replicas(next.Weight)
	}
	return Decision{
		Phase: Running, Status: next, HoldStable: true, CanaryReplicas: nextReplicas,
		RouteWeight: routed(next.Weight, in.Pods.serving()), After: in.ProgressDeadline,
		Reason: appv1.ReasonCanaryProgressing, Message: in.stepMessage(step+1, next.Weight, "waits for its Pods"),
	}
}

// promoting is the decision once the last step passed (st says so): the
// stable Deployment rolls to the canary's template, and the canary keeps
// its Pods and its share of the traffic until the stable Pods all run it.
func promoting(in Input, st *appv1.CanaryStatus) Decision {
	if st.Request != nil {
		// Nothing left to request.
		st = st.DeepCopy()
		st.Request = nil
	}
	return Decision{
		Phase: Promoting, Status: st, CanaryReplicas: in.replicas(st.Weight),
		RouteWeight: routed(st.Weight, in.Pods.serving()), Reason: appv1.ReasonCanaryPromoting,
		Message: fmt.Sprintf("Canary %s promoted: the stable Pods roll to it; the canary keeps %s until they have", in.Hash, in.traffic(st.Weight)),
	}
}

// startTime is when the status's step began (now if it does not say).
func startTime(st *appv1.CanaryStatus, now time.Time) time.Time {
	if st.StepStartTime == nil {
		return now
	}
	return st.StepStartTime.Time
}

func (in Input) stepMessage(step, weight int32, what string) string {
	return fmt.Sprintf("Canary %s at step %d of %d, %s: %s", in.Hash, step+1, len(in.Spec.Steps), in.traffic(weight), what)
}
