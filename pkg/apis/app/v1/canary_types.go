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

package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Canary is the steps of a canary (after Argo Rollouts' setWeight and
// pause steps, on the HTTPRoute's backendRefs weights as Flagger writes
// them).
// +kubebuilder:validation:XValidation:rule="has(self.blueGreen) || self.steps.all(s, s.weight > 0 || has(s.mirror))",message="a step of weight 0 serves no one: give it a mirror, or a weight",fieldPath=".steps"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || self.steps.all(s, s.weight == 0)",message="with blueGreen each step's weight is 0: users reach the preview only at the switch",fieldPath=".steps"
// +kubebuilder:validation:XValidation:rule="!has(self.blueGreen) || (!has(self.sticky) && !self.?shrinkStable.orValue(false))",message="blueGreen sends users nothing before the switch: not with sticky nor shrinkStable",fieldPath=".blueGreen"
type Canary struct {
	// Steps are the canary's stages, in order; after the last, the
	// running Pods roll to the new template.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	Steps []CanaryStep `json:"steps"`

	// Abort stops the canary: all the traffic goes back to the running
	// Pods and the canary's go. False again starts a new canary.
	// +optional
	Abort bool `json:"abort,omitempty"`

	// Analysis judges each step by Prometheus queries (docs/canary.md).
	// +optional
	Analysis *CanaryAnalysis `json:"analysis,omitempty"`

	// TesterHeaders: requests with all of them go to the canary while it
	// has an available Pod, beside the step's weight.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	TesterHeaders []TesterHeader `json:"testerHeaders,omitempty"`

	// ShrinkStable: without a route, the stable Deployment gives up a Pod
	// for each canary Pod, so that the Pods behind the Service stay at
	// size, as in Argo Rollouts' canary without a traffic router
	// (docs/canary.md). Not with httpRoute, grpcRoute nor autoscaling.
	// +optional
	ShrinkStable bool `json:"shrinkStable,omitempty"`

	// RollbackWindow: a change back to one of this many last stable
	// templates skips the steps.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	RollbackWindow int32 `json:"rollbackWindow,omitempty"`

	// Sticky keeps a user the route sent to the canary on it for the rest
	// of the release, by a cookie (docs/canary.md).
	// +optional
	Sticky *CanarySticky `json:"sticky,omitempty"`

	// BlueGreen releases by a full-size preview that users never reach,
	// switched in one write after the steps (docs/canary.md).
	// +optional
	BlueGreen *BlueGreen `json:"blueGreen,omitempty"`
}

// BlueGreen turns the canary's steps into stages of a preview, NAME-preview,
// which the steps' tests, analysis and gates judge while users get none of
// its traffic; after the last, the traffic switches to it in one write (the
// route's backend, or the Service's selector), and the stable Pods keep the
// old template for scaleDownDelaySeconds, to switch back to.
type BlueGreen struct {
	// PreviewReplicas is the preview's size before the switch (default:
	// the stable's); it grows to the stable's before it.
	// +optional
	// +kubebuilder:validation:Minimum=1
	PreviewReplicas *int32 `json:"previewReplicas,omitempty"`

	// ScaleDownDelaySeconds: after the switch, the old Pods stay at full
	// size this long, while the analysis goes on; then they roll to the
	// new template.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	ScaleDownDelaySeconds *int32 `json:"scaleDownDelaySeconds,omitempty"`

	// AntiAffinity keeps the preview's Pods off the stable Pods' nodes
	// where the scheduler can.
	// +optional
	AntiAffinity bool `json:"antiAffinity,omitempty"`

	// PreviewHostname: an HTTPRoute NAME-preview sends this host's
	// requests to the preview, from its first available Pod to its end.
	// +optional
	PreviewHostname gatewayv1.Hostname `json:"previewHostname,omitempty"`
}

// CanarySticky is the cookie that keeps a user on the canary: the canary's
// answers set it, and a rule sends the requests that carry it to the
// canary, until the promotion or an abort.
type CanarySticky struct {
	// CookieName names the cookie.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]+$`
	CookieName string `json:"cookieName"`

	// MaxAgeSeconds is how long the browser keeps the cookie; unset, until
	// it closes.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2592000
	MaxAgeSeconds int32 `json:"maxAgeSeconds,omitempty"`
}

// TesterHeader is a request header's exact value.
type TesterHeader struct {
	// +required
	Name gatewayv1.HTTPHeaderName `json:"name"`

	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`
}

// CanaryAnalysis is the measurements that judge a canary's steps: its own
// metrics and its templates', measured together.
// +kubebuilder:validation:XValidation:rule="has(self.metrics) || has(self.templates)",message="set metrics, templates or both"
// +kubebuilder:validation:XValidation:rule="!has(self.metrics) || self.metrics.all(m, !m.query.matches('[{][{] *args[.]'))",message="{{ args.NAME }} is a template's: an inline query has no arguments",fieldPath=".metrics"
type CanaryAnalysis struct {
	// Metrics are measured every interval while a step's weight is routed.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	Metrics []AnalysisMetric `json:"metrics,omitempty"`

	// Templates are AnalysisTemplates and ClusterAnalysisTemplates whose
	// metrics are measured beside these, as they were when a canary
	// started (docs/canary.md).
	// +optional
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=5
	Templates []AnalysisTemplateRef `json:"templates,omitempty"`

	// IntervalSeconds is the time between measurements.
	// +optional
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	IntervalSeconds int32 `json:"intervalSeconds,omitempty"`

	// FailureLimit is the failures of a metric tolerated; one more aborts.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailureLimit int32 `json:"failureLimit,omitempty"`

	// ErrorLimit is the errors of a metric in a row tolerated (the step
	// holds); one more aborts. Default 4.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	ErrorLimit *int32 `json:"errorLimit,omitempty"`

	// NoData: an empty or NaN result holds the step (Hold, the default) or
	// fails (Fail).
	// +optional
	// +kubebuilder:validation:Enum=Hold;Fail
	NoData AnalysisNoData `json:"noData,omitempty"`
}

// AnalysisNoData is what a measurement without data does.
type AnalysisNoData string

// What a measurement without data does.
const (
	AnalysisNoDataHold AnalysisNoData = "Hold"
	AnalysisNoDataFail AnalysisNoData = "Fail"
)

// AnalysisMetric is one query and the values that pass.
// +kubebuilder:validation:XValidation:rule="has(self.min) || has(self.max)",message="set min, max or both"
// +kubebuilder:validation:XValidation:rule="!has(self.min) || !has(self.max) || double(self.min) <= double(self.max)",message="min may not be above max",fieldPath=".min"
type AnalysisMetric struct {
	// Name names the metric.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Query is PromQL that returns one number; it may use {{ namespace }},
	// {{ name }}, {{ target }} (the canary's name), {{ interval }} and, in
	// a template, {{ args.NAME }}.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^([^{]|[{][^{]|[{][{] *(namespace|name|target|interval|args[.][A-Za-z][A-Za-z0-9_]*) *[}][}])*[{]?$')",message="a {{ opens one of {{ namespace }}, {{ name }}, {{ target }}, {{ interval }} or {{ args.NAME }}"
	Query string `json:"query"`

	// Min is the least value that passes, such as "0.99".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^-?[0-9]+([.][0-9]+)?$`
	Min *string `json:"min,omitempty"`

	// Max is the greatest value that passes.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^-?[0-9]+([.][0-9]+)?$`
	Max *string `json:"max,omitempty"`

	// DryRun: measured, never holds nor aborts.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// CanaryStep is one stage of a canary.
type CanaryStep struct {
	// Weight is the percentage of the traffic the canary gets: the
	// routes' weight; without a route, its share of the Pods, as near as
	// whole Pods come (docs/canary.md). 0 only beside a mirror, and
	// always with blueGreen.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`

	// Mirror is the percentage of the route's requests copied to the
	// canary while the step holds (a route's RequestMirror filter): its
	// answers are dropped, and its analysis and tests judge it.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Mirror int32 `json:"mirror,omitempty"`

	// PauseSeconds is how long the weight holds, once the canary's Pods
	// are available, before the next step.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	PauseSeconds int32 `json:"pauseSeconds,omitempty"`

	// Gate: after its pause (and analysis) the step waits for a person,
	// with no time limit: kubectl appservice promote NAME.
	// +optional
	Gate bool `json:"gate,omitempty"`

	// Tests are commands run once for the step, each as an Activity the
	// AppService owns: Before its weight is carried (a smoke test), or
	// During it (a load test). One that fails aborts the canary.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=2
	Tests []CanaryTest `json:"tests,omitempty"`
}

// CanaryTest is a command run once for a step, as an Activity (its fields
// are the Activity's). It gets the canary's address in CANARY_URL, and the
// queries' placeholders in its command.
type CanaryTest struct {
	// +required
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// When it runs: Before the step's weight is carried, which waits for it
	// to pass, or During the step, which passes only once it has.
	// +required
	// +kubebuilder:validation:Enum=Before;During
	When CanaryTestMoment `json:"when"`

	// Command is run as /bin/sh -c COMMAND; exit 0 passes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16384
	// +kubebuilder:validation:XValidation:rule="self.matches('^([^{]|[{][^{]|[{][{] *(namespace|name|target|interval) *[}][}])*[{]?$')",message="a {{ opens one of {{ namespace }}, {{ name }}, {{ target }} or {{ interval }}"
	Command string `json:"command"`

	// +optional
	// +kubebuilder:default="busybox:1.37"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^\S+$`
	Image string `json:"image,omitempty"`

	// Envs are NAME=value strings, as an Activity's; a name given here wins
	// over the CANARY_ ones.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[ -<>-~]+=')",message="must be NAME=value, the name printable ASCII characters other than '='"
	// +kubebuilder:validation:XValidation:rule="self.all(e, e.indexOf('=') < 1 || self.exists_one(f, f.startsWith(e.substring(0, e.indexOf('=') + 1))))",message="each name may appear only once"
	Envs []string `json:"envs,omitempty"`

	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// DeadlineSeconds bounds the run (the Job's activeDeadlineSeconds): a
	// test still running then fails.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	DeadlineSeconds int32 `json:"deadlineSeconds,omitempty"`
}

// CanaryTestMoment is when a canary's test runs in its step.
type CanaryTestMoment string

// When a canary's test runs.
const (
	CanaryTestBefore CanaryTestMoment = "Before"
	CanaryTestDuring CanaryTestMoment = "During"
)

// CanaryStatus is a canary's progress, recorded at its edges only: the
// step it is on, and when the step's current stage began, come from here
// (and from the children), so that a restarted controller neither skips a
// step nor starts its pause over.
type CanaryStatus struct {
	// StableTemplateHash names the template the stable Pods run.
	// +optional
	StableTemplateHash string `json:"stableTemplateHash,omitempty"`

	// CanaryTemplateHash names the template the canary runs.
	// +optional
	CanaryTemplateHash string `json:"canaryTemplateHash,omitempty"`

	// Step indexes spec.canary.steps; their number while promoting. With
	// blueGreen, their number is the switch (weight 100 once switched),
	// and one more the promotion.
	// +optional
	Step *int32 `json:"step,omitempty"`

	// Weight is the step's weight, once its Pods are available.
	// +optional
	Weight int32 `json:"weight,omitempty"`

	// Mirror is the step's mirror, once its Pods are available.
	// +optional
	Mirror int32 `json:"mirror,omitempty"`

	// PreviewReady: a blue-green step's preview was available at its
	// size, and the step's stage (its tests, pause, analysis and gate)
	// began at stepStartTime.
	// +optional
	PreviewReady bool `json:"previewReady,omitempty"`

	// TrafficBy is how the canary's share is carried: Route (the
	// routes' weights) or Pods (its share of the Pods behind the
	// Service).
	// +optional
	TrafficBy CanaryTraffic `json:"trafficBy,omitempty"`

	// Share is the percentage of the traffic the canary gets: the route's
	// weight, or its available Pods' share of those behind the Service.
	// +optional
	Share int32 `json:"share,omitempty"`

	// CanaryPods and ServingPods: by Pods, the canary's available Pods and
	// all the available Pods behind the Service (Share is their ratio).
	// +optional
	CanaryPods int32 `json:"canaryPods,omitempty"`
	// +optional
	ServingPods int32 `json:"servingPods,omitempty"`

	// StepStartTime is when the step began, or got its weight.
	// +optional
	StepStartTime *metav1.Time `json:"stepStartTime,omitempty"`

	// AbortedTemplateHash names the last template aborted at its deadline
	// or by its analysis.
	// +optional
	AbortedTemplateHash string `json:"abortedTemplateHash,omitempty"`

	// Analysis is each metric's last change.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=35
	Analysis []MetricStatus `json:"analysis,omitempty"`

	// Templates are the analysis's templates as the canary resolved them
	// at its start: it runs these, whatever edits they get meanwhile.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	Templates []PinnedTemplate `json:"templates,omitempty"`

	// History is the templates the stable Pods ran before, newest first
	// (rollbackWindow of them).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	History []string `json:"history,omitempty"`

	// Request is a person's command, written to the status (kubectl
	// appservice): it acts once, on the canary it names only.
	// +optional
	Request *CanaryRequest `json:"request,omitempty"`

	// Tests are the canary's tests begun (the last canary's, once it ended).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=40
	Tests []CanaryTestStatus `json:"tests,omitempty"`
}

// CanaryTestStatus is a test's run.
type CanaryTestStatus struct {
	// Name is the test's; Step its step's index.
	// +required
	Name string `json:"name"`
	// +required
	Step int32 `json:"step"`

	// Activity is the Activity that runs it.
	// +required
	Activity string `json:"activity"`

	// Phase is Running, Succeeded, Failed, or Stopped (the canary ended
	// first: its Activity is deleted).
	// +required
	Phase CanaryTestPhase `json:"phase"`

	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// Message says why it failed, with its log's last lines.
	// +optional
	// +kubebuilder:validation:MaxLength=1536
	Message string `json:"message,omitempty"`

	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// CanaryTestPhase is the phase of a canary's test.
// +kubebuilder:validation:Enum=Running;Succeeded;Failed;Stopped
type CanaryTestPhase string

// The phases of a canary's test.
const (
	TestRunning   CanaryTestPhase = "Running"
	TestSucceeded CanaryTestPhase = "Succeeded"
	TestFailed    CanaryTestPhase = "Failed"
	TestStopped   CanaryTestPhase = "Stopped"
)

// CanaryTraffic is how a canary's share of the traffic is carried.
// +kubebuilder:validation:Enum=Route;Pods;Service
type CanaryTraffic string

// How a canary's share of the traffic is carried.
const (
	CanaryByRoute CanaryTraffic = "Route"
	CanaryByPods  CanaryTraffic = "Pods"
	// CanaryByService: a blue-green release without a route, switched by
	// the Service's selector.
	CanaryByService CanaryTraffic = "Service"
)

// CanaryRequest is a command for one canary. An Abort stays as the
// record of why the canary is aborted, until a Retry or a new template.
type CanaryRequest struct {
	// +required
	Action CanaryAction `json:"action"`

	// TemplateHash is the canary's canaryTemplateHash (abortedTemplateHash
	// for a Retry).
	// +required
	// +kubebuilder:validation:MaxLength=63
	TemplateHash string `json:"templateHash"`

	// Step is the step a Promote passes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Step *int32 `json:"step,omitempty"`
}

// CanaryAction is what a CanaryRequest asks for: Promote (the step,
// whatever its pause, analysis or gate), PromoteFull (every step left),
// Abort or Retry (an aborted canary starts again at its first step).
// +kubebuilder:validation:Enum=Promote;PromoteFull;Abort;Retry
type CanaryAction string

// The actions of a CanaryRequest.
const (
	CanaryPromote     CanaryAction = "Promote"
	CanaryPromoteFull CanaryAction = "PromoteFull"
	CanaryAbort       CanaryAction = "Abort"
	CanaryRetry       CanaryAction = "Retry"
)

// MetricStatus is a metric's last change (a round that changes only its
// value and time is not written), and its counts.
type MetricStatus struct {
	// +required
	Name string `json:"name"`

	// Result is Passed, Failed, NoData or Error.
	// +required
	Result MetricResult `json:"result"`

	// Value is what the round that last changed the entry returned.
	// +optional
	Value string `json:"value,omitempty"`

	// Message says why it did not pass.
	// +optional
	Message string `json:"message,omitempty"`

	// Time is that round's: since when the entry shows what it shows.
	// +required
	Time metav1.Time `json:"time"`

	// PassedStep is the step during which it last passed.
	// +optional
	PassedStep *int32 `json:"passedStep,omitempty"`

	// Failures counts its failures in this canary.
	// +optional
	Failures int32 `json:"failures,omitempty"`

	// Errors counts its errors in a row.
	// +optional
	Errors int32 `json:"errors,omitempty"`
}

// MetricResult is the result of a measurement.
type MetricResult string

// The results of a measurement.
const (
	MetricPassed MetricResult = "Passed"
	MetricFailed MetricResult = "Failed"
	MetricNoData MetricResult = "NoData"
	MetricError  MetricResult = "Error"
)
