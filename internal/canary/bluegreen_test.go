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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// bgRelease drives blue-green decisions as a controller would: each
// decision's status is recorded, its preview's Pods become available at its
// count, the stable rolls out once the decision lets its template go, and
// the clock moves by step (or to the decision's After).
type bgRelease struct {
	t   *testing.T
	in  Input
	log []string
}

// sync decides once, records what the children would show, and returns
// the decision.
func (r *bgRelease) sync() Decision {
	r.t.Helper()
	d := Decide(r.in)
	r.in.Status = d.Status
	if d.CanaryReplicas > 0 {
		r.in.Pods = &Pods{Observed: true, Replicas: d.CanaryReplicas, Total: d.CanaryReplicas, Updated: d.CanaryReplicas, Available: d.CanaryReplicas}
	} else {
		r.in.Pods = nil
	}
	if d.Phase != None && !d.HoldStable && d.Phase != Aborted {
		// The stable Deployment got the new template: it rolls out.
		r.in.StableInLine, r.in.StableRolledOut = true, true
	}
	line := fmt.Sprintf("%s pods=%d route=%d service=%t hold=%t preview-route=%t", d.Phase, d.CanaryReplicas, d.RouteWeight, d.SwitchService, d.HoldStable,
		d.PreviewRoute)
	if d.Edge != "" {
		line += " edge=" + string(d.Edge)
	}
	if d.Event != nil {
		line += " event=" + d.Event.Reason
	}
	r.log = append(r.log, line)
	return d
}

func (r *bgRelease) wait(d time.Duration) { r.in.Now = r.in.Now.Add(d) }

func TestDecideBlueGreen(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	spec := func(by string) (*appv1.Canary, bool) {
		c := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 0, PauseSeconds: 60}, {Weight: 0, Gate: true}},
			BlueGreen: &appv1.BlueGreen{PreviewReplicas: new(int32(2)), ScaleDownDelaySeconds: new(int32(30))}}
		if by == "route" {
			c.BlueGreen.PreviewHostname = "preview.example.com"
		}
		return c, by == "service"
	}
	for _, by := range []string{"route", "service"} {
		t.Run(by, func(t *testing.T) {
			c, noRoute := spec(by)
			r := &bgRelease{t: t, in: Input{Spec: c, Hash: "green", StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now,
				NoRoute: noRoute, Status: &appv1.CanaryStatus{StableTemplateHash: "blue"}}}
			route, service := int32(0), false
			if by == "route" {
				route = 100
			} else {
				service = true
			}
			if d := r.sync(); d.PreviewRoute { // started: the preview at 2 Pods
				t.Errorf("the preview's hostname routed before it had a Pod")
			}
			if d := r.sync(); d.PreviewRoute != (by == "route") { // step 1's preview ready: its stage begins
				t.Errorf("the preview's hostname: routed %t once it has Pods", d.PreviewRoute)
			}
			r.wait(61 * time.Second)
			r.sync() // step 1 passed: step 2
			r.sync() // step 2's preview ready: it waits at its gate
			d := r.sync()
			if d.Edge != appv1.EdgeGated {
				t.Fatalf("step 2: %s, want it gated", d.Message)
			}
			r.in.Status.Request = &appv1.CanaryRequest{Action: appv1.CanaryPromote, TemplateHash: "green", Step: new(int32(1))}
			r.in.Pods = &Pods{Observed: true, Replicas: 4, Total: 4, Updated: 4, Available: 2}
			d = r.sync() // promoted past the gate: the preview grows to 4
			r.in.Pods.Available = 2
			d = r.sync() // still growing: no switch with 2 of 4 available
			if d.RouteWeight != 0 || d.SwitchService || d.Status.Weight != 0 {
				t.Fatalf("switched before the preview was at full size: %+v", d)
			}
			r.in.Pods.Available = 4
			d = r.sync() // the switch
			if d.RouteWeight != route || d.SwitchService != service || !d.HoldStable || d.Edge != appv1.EdgeSwitched {
				t.Fatalf("the switch: %+v", d)
			}
			if service && d.Status.Share != 100 {
				t.Errorf("switched by the Service: share %d, want 100", d.Status.Share)
			}
			r.wait(20 * time.Second)
			d = r.sync() // within the scale-down delay: blue held
			if !d.HoldStable || d.After != 10*time.Second || !strings.Contains(d.Message, "the old Pods stay at full size until") {
				t.Fatalf("within the delay: hold %t after %s: %s", d.HoldStable, d.After, d.Message)
			}
			r.wait(10 * time.Second)
			d = r.sync() // the delay passed: the stable rolls to green, the preview keeps the traffic
			if d.Phase != Promoting || d.HoldStable || d.RouteWeight != route || d.SwitchService != service || d.CanaryReplicas != 4 {
				t.Fatalf("after the delay: %+v", d)
			}
			d = r.sync() // rolled out: promoted, the preview goes
			if d.Phase != None || d.Edge != appv1.EdgePromoted || d.CanaryReplicas != 0 || d.RouteWeight != 0 || d.SwitchService || d.PreviewRoute {
				t.Fatalf("promoted: %+v", d)
			}
			for _, line := range r.log {
				if strings.Contains(line, "Running pods=") && !strings.Contains(line, "pods=2") && !strings.Contains(line, "pods=4") {
					t.Errorf("a preview not at its size: %s", line)
				}
			}
			t.Log(strings.Join(r.log, "\n"))
		})
	}
}

// TestDecideBlueGreenSwitchBack: switched, an abort, or a failed analysis
// round after the switch, sends the users back to the stable Pods, which
// kept the old template, and removes the preview.
func TestDecideBlueGreenSwitchBack(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 0}}, BlueGreen: &appv1.BlueGreen{},
		Analysis: &appv1.CanaryAnalysis{IntervalSeconds: 10, FailureLimit: 1,
			Metrics: []appv1.AnalysisMetric{{Name: "errors", Query: "q", Max: new("0.05")}}}}
	switched := &appv1.CanaryStatus{StableTemplateHash: "blue", CanaryTemplateHash: "green", Step: new(int32(1)), Weight: 100, TrafficBy: appv1.CanaryByService,
		StepStartTime: &metav1.Time{Time: now.Add(-15 * time.Second)}}
	full := &Pods{Observed: true, Replicas: 4, Total: 4, Updated: 4, Available: 4}
	base := Input{Spec: c, Hash: "green", StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now, NoRoute: true,
		Status: switched, Pods: full, Analysis: Analysis{Configured: true}}

	d := Decide(base)
	if d.Phase != Running || !d.SwitchService || !d.HoldStable || d.Round == nil || d.Round.Step != 1 {
		t.Fatalf("switched, 15 s of 30: %+v", d)
	}
	if d.After != 10*time.Second {
		t.Errorf("switched: after %s, want the analysis's interval (10s)", d.After)
	}

	failed := base
	failed.Analysis.Measurements = []Measurement{{Metric: "errors", Hash: "green", Step: 1, Time: now.Add(-time.Second), Value: 0.5},
		{Metric: "errors", Hash: "green", Step: 1, Time: now, Value: 0.5}}
	d = Decide(failed)
	if d.Phase != Aborted || d.SwitchService || !d.HoldStable || d.CanaryReplicas != 0 || d.Edge != appv1.EdgeAborted ||
		d.Reason != appv1.ReasonCanaryAnalysisFailed || d.Status.AbortedTemplateHash != "green" {
		t.Fatalf("a failed round after the switch: %+v", d)
	}
	if !strings.Contains(d.Message, "after the switch, which goes back") {
		t.Errorf("message %q", d.Message)
	}

	// The delay has passed, but no round after the switch has: blue stays.
	late := base
	late.Now = now.Add(20 * time.Second)
	d = Decide(late)
	if !d.HoldStable || d.Phase != Running {
		t.Fatalf("past the delay without a passed round: %+v", d)
	}

	aborted := base
	aborted.Status = switched.DeepCopy()
	aborted.Status.Request = &appv1.CanaryRequest{Action: appv1.CanaryAbort, TemplateHash: "green"}
	d = Decide(aborted)
	if d.Phase != Aborted || d.SwitchService || !d.HoldStable || d.CanaryReplicas != 0 || d.Edge != appv1.EdgeAborted {
		t.Fatalf("aborted once switched: %+v", d)
	}

	// A promote once switched ends the delay.
	promoted := base
	promoted.Status = switched.DeepCopy()
	promoted.Status.Request = &appv1.CanaryRequest{Action: appv1.CanaryPromoteFull, TemplateHash: "green"}
	d = Decide(promoted)
	if d.Phase != Promoting || d.HoldStable || !d.SwitchService || *d.Status.Step != 2 || d.Status.Request != nil {
		t.Fatalf("promoted on request once switched: %+v", d)
	}

	// The switch's wait, past the progress deadline: aborted, never switched.
	waiting := base
	waiting.Status = switched.DeepCopy()
	waiting.Status.Weight, waiting.Status.StepStartTime = 0, &metav1.Time{Time: now.Add(-11 * time.Minute)}
	waiting.Pods = &Pods{Observed: true, Replicas: 4, Total: 4, Updated: 4, Available: 3}
	d = Decide(waiting)
	if d.Phase != Aborted || d.SwitchService || d.Edge != appv1.EdgeProgressDeadline {
		t.Fatalf("the switch's wait past the deadline: %+v", d)
	}
}

// TestDecideBlueGreenPromoteFull: a promotion of every step left, at a
// step, goes to the switch's wait, never straight to the stable's
// rollout: the users switch only to a preview at full size.
func TestDecideBlueGreenPromoteFull(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 0, Gate: true}, {Weight: 0, Gate: true}},
		BlueGreen: &appv1.BlueGreen{PreviewReplicas: new(int32(1))}}
	st := &appv1.CanaryStatus{StableTemplateHash: "blue", CanaryTemplateHash: "green", Step: new(int32(0)), PreviewReady: true,
		TrafficBy: appv1.CanaryByService, StepStartTime: &metav1.Time{Time: now.Add(-time.Minute)},
		Request: &appv1.CanaryRequest{Action: appv1.CanaryPromoteFull, TemplateHash: "green"}}
	d := Decide(Input{Spec: c, Hash: "green", StableReplicas: 3, ProgressDeadline: 10 * time.Minute, Now: now, NoRoute: true, Status: st,
		Pods: &Pods{Observed: true, Replicas: 1, Total: 1, Updated: 1, Available: 1}})
	if d.Phase != Running || !d.HoldStable || d.SwitchService || d.CanaryReplicas != 3 || *d.Status.Step != 2 || d.Status.Weight != 0 ||
		d.Status.PreviewReady || d.Status.Request != nil {
		t.Fatalf("promoted in full at step 1: %+v, status %+v", d, d.Status)
	}
	if d.Event == nil || !strings.Contains(d.Event.Message, "its preview grows to full size for the switch") {
		t.Errorf("event %+v", d.Event)
	}
}

// TestDecideBlueGreenSwitchedWithoutStart: a switched status without its
// time (written by hand, say) counts the delay from now, and decides.
func TestDecideBlueGreenSwitchedWithoutStart(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 0}}, BlueGreen: &appv1.BlueGreen{}}
	st := &appv1.CanaryStatus{StableTemplateHash: "blue", CanaryTemplateHash: "green", Step: new(int32(1)), Weight: 100, TrafficBy: appv1.CanaryByService}
	d := Decide(Input{Spec: c, Hash: "green", StableReplicas: 2, ProgressDeadline: time.Minute, Now: now, NoRoute: true, Status: st,
		Pods: &Pods{Observed: true, Replicas: 2, Total: 2, Updated: 2, Available: 2}})
	if !d.HoldStable || !d.SwitchService || d.After != 30*time.Second {
		t.Errorf("switched without a start time: %+v", d)
	}
}
