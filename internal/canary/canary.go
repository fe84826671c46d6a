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

// Package canary decides where an AppService's canary (spec.canary) stands
// and what its children should be: which template the stable Deployment
// keeps, how many Pods the canary runs, which weight the HTTPRoute sends it,
// when to promote and when to abort. It is the whole decision, as one pure
// function (Decide) of the spec's steps, the status the last edge recorded,
// what the children show and the time, tested by a table; the controller
// (package main, canary.go there) reads the inputs and writes what it says.
//
// Its share of the traffic is carried by the route's weights, or, when the
// AppService has no httpRoute, by its Pods beside the stable ones behind
// the one Service (TrafficBy, PodReplicas): the same steps, and a status
// that gives the share the Pods really carry, never the step's weight.
//
// With spec.canary.analysis, each routed step is also judged by
// measurements of what the canary serves (analysis.go).
//
// It is level-triggered: which step the canary is on, and since when, come
// from the status (CanaryStatus), recorded at the step edges only; between
// them a Decision changes nothing, so that a sync during a pause writes
// nothing, and a restarted controller neither skips a step nor starts a
// pause over.
//
// Of this repository it may import only internal/plural and the API's
// types (pkg/apis/app/v1).
package canary

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Phase is where a canary stands.
type Phase int

const (
	// None: no canary under way; the stable Deployment runs the spec's
	// template (or is being brought to it, as without spec.canary).
	None Phase = iota
	// Running: the canary runs the new template and the stable Deployment
	// keeps the old one; the route sends the canary the step's weight.
	Running
	// Promoting: the last step passed; the stable Deployment rolls to the
	// new template, the canary keeps its weight until that is done.
	Promoting
	// Aborted: the stable Deployment keeps the old template and serves all
	// the traffic; the canary's Pods are gone.
	Aborted
	// RollingBack: the spec asks for one of the last stable templates
	// (spec.canary.rollbackWindow): the stable Deployment rolls to it at
	// once, without a canary.
	RollingBack
	// AwaitingRoute: the spec asks for a template the stable Pods do not
	// run, and the canary's route cannot exist (the cluster serves no
	// HTTPRoutes): it holds at its start, with no step, no Pods and no
	// weight, and the stable Deployment keeps its template. Its steps
	// start once the route can exist.
	AwaitingRoute
	// AwaitingAnalysis: as AwaitingRoute, while the analysis's templates
	// cannot be resolved (Analysis.Unresolved).
	AwaitingAnalysis
)

func (p Phase) String() string {
	return [...]string{"None", "Running", "Promoting", "Aborted", "RollingBack", "AwaitingRoute", "AwaitingAnalysis"}[p]
}

// Input is what the controller knows when it decides.
type Input struct {
	// Spec is spec.canary (nil: off, and Decide says None).
	Spec *appv1.Canary
	// Hash is the hash of the template the spec asks for.
	Hash string
	// StableInLine: the stable Deployment runs the spec's template
	// already, or does not exist yet (it is then created with it: there is
	// nothing to compare with).
	StableInLine bool
	// StableRolledOut: every stable replica runs the stable Deployment's
	// template and is available.
	StableRolledOut bool
	// StableReplicas is the stable Deployment's replica count.
	StableReplicas int32
	// Pods is what the canary Deployment reports, when it runs the
	// template Hash names (nil: there is none, or it runs another).
	Pods *Pods
	// Status is the canary status the last edge recorded (nil: none).
	Status *appv1.CanaryStatus
	// ProgressDeadline is how long a step may wait for its Pods to be
	// available (the Deployment's progressDeadlineSeconds).
	ProgressDeadline time.Duration
	// Analysis is what the controller has of spec.canary.analysis's
	// measurements (analysis.go).
	Analysis Analysis
	// RouteMissing: one of the canary's routes cannot exist, for the
	// cluster serves no routes of its kind (the Gateway API is not
	// installed).
	RouteMissing bool
	// RouteUnsupported says which feature the canary needs of its route
	// the class of a Gateway it attaches to does not support ("": none
	// missing, or none known).
	RouteUnsupported string
	// NoRoute: the spec has no httpRoute nor grpcRoute; a canary's share is carried by
	// its Pods beside the stable ones, behind the one Service.
	NoRoute bool
	// StableAvailable is the stable Deployment's available Pods, and
	// Stable its rollout (nil: none), whose status a hold (HoldCanary)
	// trusts only once observed for its current spec.
	StableAvailable int32
	Stable          *Pods
	// StableStuck: the stable Deployment's rollout passed its progress
	// deadline (a cluster without room for its Pods, say): a canary by Pods
	// held for it is let go, to make room.
	StableStuck bool
	// CanaryServing is the replica count of the canary's Deployment when
	// its Pods are behind the AppService's Service (a canary by Pods),
	// whatever template it runs, and CanaryServingAvailable its available
	// Pods; 0 otherwise.
	CanaryServing, CanaryServingAvailable int32
	// Tests is what the controller's cache has of the Activities of the
	// tests the status records, by the Activity's name (tests.go).
	Tests map[string]TestRun
	// TestActivity names the Activity of a step's test of the canary of
	// Hash begun at begin (children.TestActivityName; nil in a test of the
	// decision: a name of its own).
	TestActivity func(step int32, test string, begin metav1.Time) string
	Now          time.Time

	// by is how the canary's share is carried (TrafficBy), and serve
	// whether its Pods serve behind the Service (PodsServe): set by Decide.
	by    appv1.CanaryTraffic
	serve bool
}

// Pods is the state of a Deployment's rollout, as its status says.
type Pods struct {
	// Observed: the Deployment's controller has observed its current
	// generation (the other numbers are about it).
	Observed bool
	// Replicas is the count its spec asks for; Total, Updated and
	// Available those its status reports: Pods, Pods of its current
	// template, and available Pods.
	Replicas, Total, Updated, Available int32
	// DeadlineExceeded: the Deployment's controller says its rollout made
	// no progress within its progress deadline (Progressing False,
	// ProgressDeadlineExceeded).
	DeadlineExceeded bool
}

// available reports whether every one of want Pods runs the template and is
// available, and no other Pod is left.
func (p *Pods) available(want int32) bool {
	return p != nil && p.Observed && p.Replicas == want && p.Total == want && p.Updated >= want && p.Available >= want
}

// serving reports whether at least one Pod of the Deployment is
// available, so that its Service has an endpoint to send the traffic to.
// Whether the Deployment's controller has observed a new replica count
// does not matter: the Pods it had are still there.
func (p *Pods) serving() bool {
	return p != nil && p.Available > 0
}

// Decision is what the children and the status should be.
type Decision struct {
	Phase Phase
	// Status is the canary status to record (nil: none, spec.canary off).
	Status *appv1.CanaryStatus
	// HoldStable: the stable Deployment keeps the template its Pods run
	// (children.HoldTemplate); its other fields follow the spec.
	HoldStable bool
	// CanaryReplicas is the canary Deployment's replica count; 0: there is
	// no canary Deployment nor Service.
	CanaryReplicas int32
	// RouteWeight is the percentage of the traffic the HTTPRoute sends to
	// the canary's Service (0: all of it to the AppService's, as without a
	// canary, and always by Pods).
	RouteWeight int32
	// RouteMirror is the percentage of the HTTPRoute's requests copied to
	// the canary's Service: the step's mirror, from when its Pods are
	// available to the step's end (0: none).
	RouteMirror int32
	// StickyCookie is the value of spec.canary.sticky's cookie, the
	// canary's template hash, while the route keeps the users who got it
	// on the canary: from its first available Pod to the promotion ("":
	// none).
	StickyCookie string
	// After is when to look again though nothing changes (the end of a
	// pause, a step's deadline); 0: no need.
	After time.Duration
	// Reason and Message say what is under way, for the conditions: the
	// reason is ReasonCanaryProgressing, ReasonCanaryPromoting or
	// ReasonCanaryAborted ("" for None).
	Reason, Message string
	// Event is the Event this decision's edge calls for (nil: none).
	Event *Event
	// Events are those of the measurements this decision's status records
	// (analysis.go).
	Events []Event
	// Round is a round of the analysis's measurements due now (nil: none).
	Round *Round
	// Stalled: the canary cannot go on without the user (beyond Aborted):
	// it has an analysis and the controller no Prometheus.
	Stalled bool
	// Testers: the HTTPRoute sends the requests with spec.canary's
	// testerHeaders to the canary (it has an available Pod).
	Testers bool
	// StableReplicas is the stable Deployment's replica count while a
	// canary by Pods with spec.canary.shrinkStable runs (nil: the spec's):
	// it gives up a Pod for each canary Pod of the step whose weight is
	// carried, once they are available.
	StableReplicas *int32
	// TrafficBy is how the canary's share is carried: Route or Pods (its
	// Pods are then labelled for the AppService's Service, and it has no
	// Service of its own).
	TrafficBy appv1.CanaryTraffic
	// HoldCanary: the canary's Deployment stays as it is, neither changed
	// nor deleted (CanaryReplicas is its count), while the stable one
	// takes back the Pods it gave up (shrinkStable): a canary by Pods whose
	// Pods would otherwise go, or change template, before the stable's
	// replacements are available.
	HoldCanary bool
	// PodsServe: the canary's Pods are labelled for the AppService's
	// Service (by Pods, once its first Before tests passed: PodsServe).
	PodsServe bool
	// SwitchService: a blue-green release without a route has switched:
	// the AppService's Service selects its preview's Pods
	// (children.SwitchedSelector).
	SwitchService bool
	// PreviewRoute: a blue-green release's HTTPRoute NAME-preview sends
	// spec.canary.blueGreen.previewHostname to its preview (from the
	// preview's first available Pod to the release's end).
	PreviewRoute bool
	// Edge is the edge of the release this decision makes, which the
	// notifications hear of ("": none), and EdgeStep its step (from 0).
	// Gated is decided at every sync a step waits at its gate: the edge
	// is its first.
	Edge     appv1.ReleaseEdge
	EdgeStep int32
}

// Event is an Event to record once the status that the decision brings is
// written.
type Event struct {
	Type, Reason, Message string
}

// Decide is the canary's whole decision. See the package comment.
func Decide(in Input) Decision {
	in.by = TrafficBy(in)
	in.serve = in.Spec != nil && len(in.Spec.Steps) > 0 && PodsServe(in)
	d := decide(in)
	if d.Status != nil {
		// Of its own: decide may return the input's status, which the
		// caller compares the decision's with.
		d.Status = d.Status.DeepCopy()
		if len(d.Status.Tests) > 0 {
			step := int32(-1)
			if d.Status.Step != nil {
				step = *d.Status.Step
			}
			d.Status.Tests = in.stopRunning(d.Status.Tests, d.Phase == Running, step)
		}
	}
	d.TrafficBy = in.by
	if in.by == appv1.CanaryByPods {
		// Running, as the status recorded says (a Before test's pass
		// relabels the Pods once it is recorded, never before: a status
		// write that fails must not leave them serving untested);
		// otherwise its Pods serve as they did (an abort holds only
		// serving ones).
		d.PodsServe = d.Phase != Running || in.serve
	}
	if in.by == appv1.CanaryByPods {
		// No route weight: the Service sends the canary its Pods' share.
		d.RouteWeight = 0
	}
	in.routeRules(&d)
	if in.shrinking() && d.Phase == Running {
		// The stable gives up the Pods of the step carried: none until the
		// first step's are available, the next step's only once its own
		// are. The Pods serving never drop below the spec's count.
		// A lower step gives up fewer: as many as the canary keeps.
		stable := in.StableReplicas
		if d.Status.Weight > 0 {
			stable = max(0, stable-min(in.replicas(d.Status.Weight), d.CanaryReplicas))
		}
		d.StableReplicas = &stable
	}
	if in.Spec != nil && in.Spec.ShrinkStable && in.CanaryServing > 0 && !in.StableStuck &&
		(in.Pods == nil || d.CanaryReplicas < in.CanaryServing) {
		// The canary's serving Pods would go (a lower step, an end), or
		// all be replaced (a newer template): first the stable takes back
		// as many as that needs, and they become available.
		need := in.StableReplicas
		if in.Pods != nil {
			need = max(0, need-d.CanaryReplicas)
		}
		// Its available Pods, as its controller counted them for its
		// current count: just after a scale-down, its status still counts
		// the Pods that go.
		up := int32(0)
		if s := in.Stable; s != nil && s.Observed {
			up = min(s.Available, s.Replicas)
		}
		if up < need {
			d.HoldCanary, d.CanaryReplicas, d.StableReplicas = true, in.CanaryServing, &need
		}
	}
	if d.Status != nil && d.CanaryReplicas > 0 {
		d.Status.TrafficBy = in.by
		d.Status.Share, d.Status.CanaryPods, d.Status.ServingPods = d.RouteWeight, 0, 0
		if in.by == appv1.CanaryByPods {
			d.Status.Share, d.Status.CanaryPods, d.Status.ServingPods = podShare(in)
		}
	}
	in.serviceSwitch(&d)
	return d
}

// TrafficBy is how the canary in decides on carries its share: as its
// status recorded at its start while it runs the spec's template, else
// by the spec (Pods without httpRoute). A canary by route whose route
// was removed before its promotion goes by Pods: it starts over.
func TrafficBy(in Input) appv1.CanaryTraffic {
	if st := in.Status; st != nil && in.Spec != nil && st.CanaryTemplateHash != "" && st.CanaryTemplateHash == in.Hash && st.Step != nil {
		recorded := recordedBy(st)
		if recorded == appv1.CanaryByPods || !in.NoRoute || *st.Step >= int32(len(in.Spec.Steps)) {
			return recorded
		}
	}
	switch {
	case in.NoRoute && in.blueGreen():
		return appv1.CanaryByService
	case in.NoRoute:
		return appv1.CanaryByPods
	}
	return appv1.CanaryByRoute
}

// recordedBy is how the status's canary carries its share (a status
// written before canaries by Pods existed says nothing: by route).
func recordedBy(st *appv1.CanaryStatus) appv1.CanaryTraffic {
	if st.TrafficBy == "" {
		return appv1.CanaryByRoute
	}
	return st.TrafficBy
}

func decide(in Input) Decision {
	c, st := in.Spec, in.Status
	if st == nil {
		st = &appv1.CanaryStatus{}
	}
	if c == nil || len(c.Steps) == 0 {
		return Decision{Phase: None}
	}
	steps := int32(len(c.Steps))
	running := st.CanaryTemplateHash != "" && st.Step != nil

	if in.StableInLine {
		return inLine(in, st, running)
	}

	// The spec asks for a template the stable Pods do not run.
	aborted := func(why string, event bool) Decision { return abort(in, st, why, event) }
	if c.Abort {
		return aborted("spec.canary.abort is true (set it back to false to try again)", running)
	}
	if rollback(c, st, in.Hash) {
		return rollingBack(in, st)
	}
	if st.AbortedTemplateHash == in.Hash && !running {
		return stillAborted(in, st)
	}
	if holdForRoute(in, st, running) {
		return awaitRoute(in, st)
	}
	if holdForFeatures(in, st, running) {
		return awaitFeatures(in, st)
	}
	if !running || st.CanaryTemplateHash != in.Hash || recordedBy(st) != in.by {
		// A new template, or a newer one than the canary's: the canary
		// starts (over) at the first step, with no traffic until its Pods
		// are available. A request for another canary goes. So does a
		// canary by route whose route was removed: by Pods, from step 1.
		return start(in, st, st.AbortedTemplateHash)
	}

	step := *st.Step
	if in.blueGreen() && step == steps {
		// Its steps passed: the switch (bluegreen.go).
		return in.switchStage(st)
	}
	if step >= steps {
		// The last step passed: the stable Deployment rolls to the
		// canary's template (this sync writes it).
		return promoting(in, st)
	}
	acted, promote, st := onRequest(in, st)
	if acted != nil {
		return *acted
	}
	return in.atStep(st, step, promote)
}

// rollback reports whether hash is one of the last stable templates
// within spec.canary.rollbackWindow, other than the stable one.
func rollback(c *appv1.Canary, st *appv1.CanaryStatus, hash string) bool {
	return st.StableTemplateHash != "" && hash != st.StableTemplateHash &&
		slices.Contains(st.History[:min(len(st.History), int(c.RollbackWindow))], hash)
}

func rollbackWhy(c *appv1.Canary) string {
	return fmt.Sprintf("one of the last %d stable templates, spec.canary.rollbackWindow", c.RollbackWindow)
}

// rollingBack is the decision of a rollback to in.Hash (rollback): the
// stable Deployment rolls to it at once; a canary under way goes, its
// request with it.
func rollingBack(in Input, st *appv1.CanaryStatus) Decision {
	return Decision{
		Phase: RollingBack,
		Status: &appv1.CanaryStatus{StableTemplateHash: st.StableTemplateHash, AbortedTemplateHash: st.AbortedTemplateHash, History: st.History,
			Tests: st.Tests},
		Reason: appv1.ReasonCanaryRollingBack,
		Message: fmt.Sprintf("Rolling back to %s without a canary (%s): the stable Pods roll to it",
			in.Hash, rollbackWhy(in.Spec)),
	}
}

// history is the status's history once the stable Pods run hash: the
// template they ran before first, as many as spec.canary.rollbackWindow.
func history(c *appv1.Canary, st *appv1.CanaryStatus, hash string) []string {
	h := st.History
	if st.StableTemplateHash != "" && st.StableTemplateHash != hash {
		h = append([]string{st.StableTemplateHash}, slices.DeleteFunc(slices.Clone(h), func(s string) bool {
			return s == hash || s == st.StableTemplateHash
		})...)
	}
	if len(h) > int(c.RollbackWindow) {
		h = h[:c.RollbackWindow]
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

// inLine is the decision once the stable Deployment runs the spec's
// template (or is being created with it): a promotion or a rollback
// rolling out, or no canary.
func inLine(in Input, st *appv1.CanaryStatus, running bool) Decision {
	c, steps := in.Spec, int32(len(in.Spec.Steps))
	promoted := running && st.CanaryTemplateHash == in.Hash
	if promoted && *st.Step < steps {
		// Only the promotion gives the stable Deployment the canary's
		// template: this is a status read before the promotion's
		// status write reached the cache.
		st = st.DeepCopy()
		st.Step = new(steps)
	}
	if promoted && !in.StableRolledOut {
		// The canary keeps its share until the stable Pods all run
		// its template.
		return promoting(in, st)
	}
	back := !promoted && rollback(c, st, in.Hash)
	if back && !in.StableRolledOut {
		return rollingBack(in, st)
	}
	// The last canary's measurements stay until the next one starts.
	d := Decision{Phase: None, Status: &appv1.CanaryStatus{StableTemplateHash: in.Hash, Analysis: st.Analysis,
		History: history(c, st, in.Hash), Tests: st.Tests, Templates: st.Templates}}
	if c.Analysis == nil {
		// No analysis any more: nor its results, nor the templates that
		// judged the last canary.
		d.Status.Analysis, d.Status.Templates = nil, nil
	}
	switch {
	case promoted:
		d.Event = &Event{corev1.EventTypeNormal, appv1.ReasonCanaryPromoted,
			fmt.Sprintf("Canary %s promoted: every Pod runs it, all the traffic goes to the Service again, the canary's objects are deleted", in.Hash)}
		d.Edge, d.EdgeStep = appv1.EdgePromoted, steps-1
	case back:
		d.Event = &Event{corev1.EventTypeNormal, appv1.ReasonCanaryRolledBack,
			fmt.Sprintf("Rolled back to %s without a canary: every Pod runs it (%s)", in.Hash, rollbackWhy(c))}
		d.Edge = appv1.EdgeRolledBack
	}
	return d
}

// stillAborted is the decision of a canary aborted (at its deadline, by
// its analysis or on request) whose template the spec still asks for: it
// stays so, unless a Retry asks for it again.
func stillAborted(in Input, st *appv1.CanaryStatus) Decision {
	c := in.Spec
	switch requested(st, in.Hash) {
	case appv1.CanaryRetry:
		d := start(in, st, "")
		d.Event = &Event{corev1.EventTypeNormal, appv1.ReasonCanaryRequested,
			fmt.Sprintf("Canary %s retried on request: it starts again at step 1 of %d", in.Hash, len(c.Steps))}
		return d
	case appv1.CanaryAbort:
		// The request stays: it is the record of why.
		return abortOnRequest(in, st, false)
	}
	if f := failedTest(st); f != nil {
		// Aborted by a test, whose record stays in the status.
		d := abort(in, st, in.testFailure(*f), false)
		d.Reason, d.Status.AbortedTemplateHash, d.Status.Analysis = appv1.ReasonCanaryTestFailed, in.Hash, st.Analysis
		return d
	}
	if c.Analysis != nil && len(st.Analysis) > 0 {
		// Aborted by its analysis, whose results stay in the status.
		d := abort(in, st, analysisAbort(c.Analysis, st)+" (change the template to start a new canary)", false)
		d.Reason, d.Status.Analysis = appv1.ReasonCanaryAnalysisFailed, st.Analysis
		return d
	}
	return abort(in, st, "its Pods were not available within the progress deadline (change the template to start a new canary)", false)
}

// onRequest is what the status's request does to a running canary (st,
// before its last step's end): the decision when it acts at once (an
// Abort, a PromoteFull); promote when it is a Promote of the current step,
// which passes it once the step's weight is routed; and the status to go
// on from, without any request that does neither.
func onRequest(in Input, st *appv1.CanaryStatus) (*Decision, bool, *appv1.CanaryStatus) {
	step, steps := *st.Step, int32(len(in.Spec.Steps))
	switch requested(st, in.Hash) {
	case appv1.CanaryAbort:
		d := abortOnRequest(in, st, true)
		return &d, false, st
	case appv1.CanaryPromoteFull:
		next := st.DeepCopy()
		next.Step, next.StepStartTime = new(steps), &metav1.Time{Time: in.Now}
		d, then := promoting(in, next), "the stable Pods roll to it"
		if in.blueGreen() {
			// Not past the switch: to it.
			next.Weight, next.Mirror, next.PreviewReady, next.Request = 0, 0, false, nil
			d, then = in.previewGrows(next, in.ProgressDeadline), "its preview grows to full size for the switch"
		}
		d.Event = &Event{corev1.EventTypeNormal, appv1.ReasonCanaryRequested,
			fmt.Sprintf("Canary %s promoted on request at step %d of %d, skipping the steps left: %s", in.Hash, step+1, steps, then)}
		return &d, false, st
	case appv1.CanaryPromote:
		if *st.Request.Step == step {
			return nil, true, st
		}
	}
	if st.Request != nil {
		// A request for another canary, step or action: it goes.
		st = st.DeepCopy()
		st.Request = nil
	}
	return nil, false, st
}

// requested is the action of the status's request when it is for the
// canary of template hash ("" when there is none, or it is for another).
func requested(st *appv1.CanaryStatus, hash string) appv1.CanaryAction {
	r := st.Request
	if r == nil || r.TemplateHash != hash || (r.Action == appv1.CanaryPromote && r.Step == nil) {
		return ""
	}
	return r.Action
}

// abortOnRequest is the decision of a canary aborted by the status's
// request, which stays in the status as the record of it (with the
// analysis's last results), with the abort's Warning Event when event.
func abortOnRequest(in Input, st *appv1.CanaryStatus, event bool) Decision {
	d := abort(in, st, "aborted on request (kubectl appservice retry, or a new template, starts it again)", event)
	d.Status.AbortedTemplateHash, d.Status.Request, d.Status.Analysis = in.Hash, st.Request, st.Analysis
	return d
}

// abort is the decision that aborts the canary, or keeps it aborted, for
// why (with a Warning Event: the abort's edge).
func abort(in Input, st *appv1.CanaryStatus, why string, event bool) Decision {
	d := Decision{
		Phase: Aborted, HoldStable: true, Reason: appv1.ReasonCanaryAborted,
		Status: &appv1.CanaryStatus{StableTemplateHash: st.StableTemplateHash, AbortedTemplateHash: st.AbortedTemplateHash, History: st.History,
			Tests: st.Tests, Templates: st.Templates},
		Message: fmt.Sprintf("Canary %s aborted: %s; the stable version serves all the traffic", in.Hash, why),
	}
	if in.by == appv1.CanaryByPods && in.serve && in.Pods != nil && in.Pods.Replicas > 0 && !in.StableRolledOut && !in.StableStuck {
		// By Pods, the canary's Pods serve beside the stable ones: they
		// go only once every stable Pod is available, so that the Pods
		// serving never drop below what the stable Deployment promises.
		d.CanaryReplicas = in.Pods.Replicas
		d.Message = fmt.Sprintf("Canary %s aborted: %s; its Pods go once the stable Pods are all available", in.Hash, why)
	}
	if event {
		d.Event = &Event{corev1.EventTypeWarning, appv1.ReasonCanaryAborted, d.Message}
		d.Edge = appv1.EdgeAborted
		if st.Step != nil {
			d.EdgeStep = *st.Step
		}
	}
	return d
}
