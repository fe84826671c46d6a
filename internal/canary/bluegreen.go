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

// Blue-green (spec.canary.blueGreen): the canary's Deployment is a
// preview, which the steps' stages judge (each step's weight is 0: its
// tests, pause, analysis and gate, the testers' rule and the mirror) while
// the users get none of its traffic. After the last step the status's step
// is the steps' number, and the release goes through:
//
//   - the switch's wait (weight 0): the preview grows to the stable's
//     size, and waits for all its Pods to be available;
//   - the switch (weight 100, stepStartTime its time): one write sends the
//     users to the preview, the route's backend or the Service's selector
//     (SwitchService); the stable Pods keep the old template at full size
//     for scaleDownDelaySeconds, while the analysis goes on. A failure, or
//     an abort, switches back in one write;
//   - the promotion (step one more): the stable Pods roll to the new
//     template while the preview keeps the traffic, then the Service or
//     route send it to them again and the preview goes, as a canary's.

// blueGreen reports whether the release is a blue-green one.
func (in Input) blueGreen() bool {
	return in.Spec != nil && in.Spec.BlueGreen != nil
}

// fullSize is the preview's size at the switch: the stable's.
func (in Input) fullSize() int32 {
	return max(1, in.StableReplicas)
}

// previewSize is the preview's size before the switch.
func (in Input) previewSize() int32 {
	if p := in.Spec.BlueGreen.PreviewReplicas; p != nil {
		return max(1, *p)
	}
	return in.fullSize()
}

// ScaleDownDelay is how long the old Pods stay at full size after the
// switch (spec.canary.blueGreen.scaleDownDelaySeconds, 30 s when unset).
func ScaleDownDelay(bg *appv1.BlueGreen) time.Duration {
	if bg.ScaleDownDelaySeconds == nil {
		return 30 * time.Second
	}
	return time.Duration(*bg.ScaleDownDelaySeconds) * time.Second
}

// serviceSwitch decides whether the AppService's Service selects the
// preview (SwitchService), for a blue-green release without a route: all
// of the users or none, from the switch to the promotion's end, and only
// to Pods that serve. The status's share says so. With a preview
// hostname, whether its route is there (PreviewRoute): while the preview
// has a Pod to serve it.
func (in Input) serviceSwitch(d *Decision) {
	if in.blueGreen() && in.Spec.BlueGreen.PreviewHostname != "" {
		d.PreviewRoute = (d.Phase == Running || d.Phase == Promoting) && d.CanaryReplicas > 0 && in.Pods.serving()
	}
	if in.by != appv1.CanaryByService {
		return
	}
	d.SwitchService = d.Status != nil && d.Status.Weight == 100 && (d.Phase == Running || d.Phase == Promoting) && in.Pods.serving()
	d.RouteWeight = 0
	if d.Status != nil && d.CanaryReplicas > 0 {
		d.Status.Share = 0
		if d.SwitchService {
			d.Status.Share = 100
		}
	}
}

// switchStage is the decision of a blue-green release whose steps all
// passed, before its promotion: the switch's wait, or the switch's stage.
// An abort switches back; a promotion asked for once switched ends the
// scale-down delay.
func (in Input) switchStage(st *appv1.CanaryStatus) Decision {
	steps := int32(len(in.Spec.Steps))
	switch a := requested(st, in.Hash); {
	case a == appv1.CanaryAbort:
		return abortOnRequest(in, st, true)
	case st.Weight == 100 && (a == appv1.CanaryPromoteFull || (a == appv1.CanaryPromote && *st.Request.Step == steps)):
		next := st.DeepCopy()
		next.Step, next.StepStartTime = new(steps+1), &metav1.Time{Time: in.Now}
		d := promoting(in, next)
		d.Event = &Event{corev1.EventTypeNormal, appv1.ReasonCanaryRequested,
			fmt.Sprintf("Canary %s promoted on request before its scale-down delay's end: the stable Pods roll to it", in.Hash)}
		return d
	}
	if st.Request != nil {
		st = st.DeepCopy()
		st.Request = nil
	}
	if st.Weight < 100 {
		return in.toSwitch(st)
	}
	return in.switched(st)
}

// previewGrows is the decision that asks for the switch once the last
// step passed (st at the steps' number): the preview grows to the
// stable's size.
func (in Input) previewGrows(st *appv1.CanaryStatus, after time.Duration) Decision {
	d := runningAt(in, st, in.fullSize(), after, "")
	d.Message = fmt.Sprintf("Canary %s passed its %d steps: its preview grows to %d Pods, then the traffic switches to it",
		in.Hash, len(in.Spec.Steps), in.fullSize())
	return d
}

// toSwitch is the decision of the switch's wait: once every Pod of the
// preview at the stable's size is available, the switch, its edge; at the
// progress deadline, an abort.
func (in Input) toSwitch(st *appv1.CanaryStatus) Decision {
	full := in.fullSize()
	if !in.Pods.available(full) {
		since := in.Now.Sub(startTime(st, in.Now))
		if since >= in.ProgressDeadline || (in.Pods != nil && in.Pods.DeadlineExceeded) {
			return deadlineAbort(in, st, fmt.Sprintf("its preview's %d Pods were not available within the progress deadline (%s) for the switch",
				full, in.ProgressDeadline))
		}
		return in.previewGrows(st, in.ProgressDeadline-since)
	}
	next := st.DeepCopy()
	next.Weight, next.StepStartTime = 100, &metav1.Time{Time: in.Now}
	d := in.switched(next)
	d.Event = &Event{corev1.EventTypeNormal, appv1.ReasonCanarySwitched,
		fmt.Sprintf("Canary %s switched: %s, to its %d Pods; the old Pods stay at full size for %s (scaleDownDelaySeconds)",
			in.Hash, in.traffic(100), full, ScaleDownDelay(in.Spec.BlueGreen))}
	d.Edge, d.EdgeStep = appv1.EdgeSwitched, int32(len(in.Spec.Steps))-1
	return d
}

// switched is the decision of the switch's stage: the preview serves the
// users, the stable Pods keep the old template until the scale-down delay
// has passed (and, with an analysis, a round measured after the switch);
// then the promotion. The analysis's failure switches back.
func (in Input) switched(st *appv1.CanaryStatus) Decision {
	a, steps := in.Spec.Analysis, int32(len(in.Spec.Steps))
	delay := ScaleDownDelay(in.Spec.BlueGreen)
	since := in.Now.Sub(startTime(st, in.Now))
	j := judged{status: st, passed: true}
	if a != nil {
		j = judge(a, in.Analysis, st, in.Hash, in.Now)
		if j.abort != "" {
			return j.failed(in, st, " after the switch, which goes back")
		}
	}
	if since >= delay && j.passed && in.Analysis.Unresolved == "" {
		next := j.status.DeepCopy()
		next.Step, next.StepStartTime = new(steps+1), &metav1.Time{Time: in.Now}
		d := promoting(in, next)
		d.Events = j.events
		return d
	}
	after, what := delay-since, fmt.Sprintf("the old Pods stay at full size until %s", startTime(st, in.Now).Add(delay).UTC().Format(time.RFC3339))
	if since >= delay {
		after, what = 0, "the old Pods stay until its analysis passes a round after the switch: "+j.hold
	}
	if a != nil {
		if wait := j.wake(a, in.Now); wait > 0 && (after <= 0 || wait < after) {
			after = wait
		}
	}
	d := runningAt(in, j.status, in.fullSize(), after, "")
	d.Message = fmt.Sprintf("Canary %s switched, %s: %s", in.Hash, in.traffic(100), what)
	d.Events, d.Round = j.events, j.round
	if a != nil {
		in.analysisStalled(&d, since >= delay, func(what string) string { return fmt.Sprintf("Canary %s switched: %s", in.Hash, what) })
	}
	return d
}
