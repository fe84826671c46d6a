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
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// State is an AppService's state in a word, as list's STATUS column and
// get's Status line say it.
type State string

// The states, from the conditions the controller writes (Ready,
// Reconciling, Stalled), spec.suspend and observedGeneration.
const (
	// Healthy: Ready, every replica runs the current template.
	Healthy State = "Healthy"
	// Progressing: the controller or a rollout (a canary's steps among
	// them) works toward the spec.
	Progressing State = "Progressing"
	// Degraded: Stalled, progress needs the user (an aborted canary, an
	// object in the way, a rollout past its deadline).
	Degraded State = "Degraded"
	// Suspended: spec.suspend holds the app at 0 replicas.
	Suspended State = "Suspended"
	// Gated: a canary's step waits at its gate for kubectl appservice
	// promote.
	Gated State = "Gated"
)

// The symbols of get's tree, after Argo Rollouts' (docs/plugin.md, "The
// tree's symbols").
const (
	symbolHealthy     = "✔"
	symbolProgressing = "◌"
	symbolFailed      = "✖"
	symbolPaused      = "॥"
	symbolWarning     = "⚠"
)

// Symbol is the state's symbol in get's tree.
func (s State) Symbol() string {
	switch s {
	case Healthy:
		return symbolHealthy
	case Degraded:
		return symbolFailed
	case Suspended, Gated:
		return symbolPaused
	}
	return symbolProgressing
}

// StateOf is an AppService's state. A Stalled AppService is Degraded
// whatever else holds; a status that has not observed the spec yet is
// Progressing, whatever it said of the spec before.
func StateOf(as *appv1.AppService) State {
	conds := as.Status.Conditions
	switch {
	case meta.IsStatusConditionTrue(conds, appv1.ConditionStalled):
		return Degraded
	case as.Spec.Suspend != nil && *as.Spec.Suspend:
		return Suspended
	case as.Status.ObservedGeneration < as.Generation:
		return Progressing
	case reconcilingReason(as) == appv1.ReasonCanaryGated:
		return Gated
	case meta.IsStatusConditionTrue(conds, appv1.ConditionReconciling):
		return Progressing
	case meta.IsStatusConditionTrue(conds, appv1.ConditionReady):
		return Healthy
	}
	return Progressing
}

func reconcilingReason(as *appv1.AppService) string {
	if c := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionReconciling); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason
	}
	return ""
}

// CanaryPhase is where an AppService's canary stands, as its status says.
type CanaryPhase int

const (
	// NoCanary: none runs (or the AppService has no spec.canary).
	NoCanary CanaryPhase = iota
	// CanaryRunning: at one of its steps.
	CanaryRunning
	// CanaryPromoting: its last step passed; the stable Pods roll to it.
	CanaryPromoting
	// CanaryAborted: aborted, the stable Pods serving all the traffic,
	// until a retry, a new template or spec.canary.abort back to false.
	CanaryAborted
	// CanarySwitched: a blue-green release past its steps, at its switch:
	// waiting for its preview at full size (Weight 0), or switched, the
	// old Pods kept until the scale-down delay's end (Weight 100).
	CanarySwitched
	// CanaryAwaitingRoute: held at its start, with no step and no
	// traffic, until the cluster serves its HTTPRoute (the Gateway API).
	CanaryAwaitingRoute
	// CanaryAwaitingAnalysis: held at its start, with no step and no
	// traffic, until its analysis's templates resolve (Canary.Held says
	// which template and why).
	CanaryAwaitingAnalysis
)

// Canary is what the plugin reads of an AppService's canary.
type Canary struct {
	Phase CanaryPhase
	// Hash is the canary's template (the aborted one's when Aborted).
	Hash string
	// Step is the index of the current step; Steps their number.
	Step, Steps int32
	// Weight is the step's weight, once its Pods are available, and Mirror
	// its mirror.
	Weight, Mirror int32
	// By is how its share is carried: Route or Pods; Share the share (the
	// route's weight, or its available Pods' share), and by Pods
	// CanaryPods of ServingPods available Pods.
	By                             appv1.CanaryTraffic
	Share, CanaryPods, ServingPods int32
	// Routed: the step's weight went to the route, and its pause counts
	// (from Since).
	Routed bool
	// Since is when the step began, or got its weight.
	Since time.Time
	// SpecAbort: spec.canary.abort is true.
	SpecAbort bool
	// Testing names the step's tests running (Running).
	Testing []string
	// Held says why its analysis cannot be resolved: a template missing,
	// an argument without a value (AwaitingAnalysis; Running, for a
	// template added while it runs).
	Held string
	// Unsupported says which feature its route needs a Gateway's class
	// does not support (AwaitingRoute).
	Unsupported string
}

// CanaryOf reads the AppService's canary from its status, with the rules
// the controller keeps (docs/canary.md): a canary runs while
// canaryTemplateHash and step are set and step is below the number of
// steps, is promoting at that number, and is aborted while Stalled for it
// with no canary template. A canary template with no step is one held at
// its start until its route can exist, or, Stalled for it, until its
// analysis's templates resolve.
func CanaryOf(as *appv1.AppService) Canary {
	c := Canary{}
	if as.Spec.Canary == nil {
		return c
	}
	c.Steps, c.SpecAbort = int32(len(as.Spec.Canary.Steps)), as.Spec.Canary.Abort
	st := as.Status.Canary
	if st == nil {
		return c
	}
	c.Weight, c.Mirror, c.By, c.Share, c.CanaryPods, c.ServingPods = st.Weight, st.Mirror, st.TrafficBy, st.Share, st.CanaryPods, st.ServingPods
	if c.By == "" {
		// Written by a controller before canaries by Pods: by route, its
		// weight.
		c.By, c.Share = appv1.CanaryByRoute, st.Weight
	}
	if st.StepStartTime != nil {
		c.Since = st.StepStartTime.Time
	}
	if s := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionStalled); s != nil && s.Status == metav1.ConditionTrue &&
		s.Reason == appv1.ReasonCanaryAnalysisUnresolved {
		_, c.Held, _ = strings.Cut(s.Message, "cannot be resolved: ")
	}
	if s := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionStalled); s != nil && s.Status == metav1.ConditionTrue &&
		s.Reason == appv1.ReasonRouteFeatureUnsupported {
		_, c.Unsupported, _ = strings.Cut(s.Message, "does not support: ")
	}
	switch {
	case st.CanaryTemplateHash != "" && st.Step != nil:
		c.Hash, c.Step = st.CanaryTemplateHash, *st.Step
		if c.Step == c.Steps && as.Spec.Canary.BlueGreen != nil {
			c.Phase = CanarySwitched
		} else if c.Step < c.Steps {
			c.Phase = CanaryRunning
			step := as.Spec.Canary.Steps[c.Step]
			c.Routed = st.Weight == step.Weight && st.Mirror == step.Mirror && (st.PreviewReady || as.Spec.Canary.BlueGreen == nil)
			for _, rec := range st.Tests {
				if rec.Step == c.Step && rec.Phase == appv1.TestRunning {
					c.Testing = append(c.Testing, rec.Name)
				}
			}
		} else {
			c.Phase = CanaryPromoting
		}
	case st.CanaryTemplateHash != "" && c.Held != "":
		c.Phase, c.Hash = CanaryAwaitingAnalysis, st.CanaryTemplateHash
	case st.CanaryTemplateHash != "":
		c.Phase, c.Hash = CanaryAwaitingRoute, st.CanaryTemplateHash
	case st.CanaryTemplateHash == "" && canaryStalled(as):
		c.Phase, c.Hash = CanaryAborted, st.AbortedTemplateHash
	}
	return c
}

// canaryStalled: the AppService is Stalled by an aborted canary.
func canaryStalled(as *appv1.AppService) bool {
	c := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionStalled)
	return c != nil && c.Status == metav1.ConditionTrue &&
		(c.Reason == appv1.ReasonCanaryAborted || c.Reason == appv1.ReasonCanaryAnalysisFailed || c.Reason == appv1.ReasonCanaryTestFailed)
}

// Traffic is the canary's share and how it is carried: "10% of the
// traffic by route", "20% of the traffic by Pods (1 of 5 Pods)".
func (c Canary) Traffic() string {
	if c.By == appv1.CanaryByService {
		return fmt.Sprintf("%d%% of the traffic by the Service's selector", c.Share)
	}
	if c.By == appv1.CanaryByPods {
		return fmt.Sprintf("%d%% of the traffic by Pods (%d of %d Pods)", c.Share, c.CanaryPods, c.ServingPods)
	}
	return fmt.Sprintf("%d%% of the traffic by route", c.Share)
}

// ShortTraffic is Traffic in a column: "10% by route", "20% by Pods (1/5)".
func (c Canary) ShortTraffic() string {
	if c.By == appv1.CanaryByService {
		return fmt.Sprintf("%d%% by Service", c.Share)
	}
	if c.By == appv1.CanaryByPods {
		return fmt.Sprintf("%d%% by Pods (%d/%d)", c.Share, c.CanaryPods, c.ServingPods)
	}
	return fmt.Sprintf("%d%% by route", c.Share)
}

// Step is "N of M", the step counted from 1.
func (c Canary) StepString() string {
	return fmt.Sprintf("%d of %d", c.Step+1, c.Steps)
}

// PauseLeft is what is left of the running step's pause at now (0 when
// its weight is not routed yet, or the pause is over).
func (c Canary) PauseLeft(as *appv1.AppService, now time.Time) time.Duration {
	if c.Phase != CanaryRunning || !c.Routed || c.Since.IsZero() {
		return 0
	}
	pause := time.Duration(as.Spec.Canary.Steps[c.Step].PauseSeconds) * time.Second
	return max(0, c.Since.Add(pause).Sub(now))
}

// gated: the step waits at its gate for a person.
func (c Canary) gated(as *appv1.AppService) bool {
	return c.Phase == CanaryRunning && reconcilingReason(as) == appv1.ReasonCanaryGated
}
