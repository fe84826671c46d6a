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

// The words an AppService's user sees: the label on its children, the types
// and reasons of its conditions and the reasons of its Events. They are part
// of the API (selectors, alerts and scripts match on them), so they live here,
// next to the types, as core/v1 keeps its well-known labels and reasons.

// LabelAppService marks every object the controller creates with the name of
// its AppService. The controller lists and watches only objects carrying it,
// and it is the Pod selector of both the Deployment and the Service.
const LabelAppService = "app.example.com/appservice"

// LabelCanary selects the Pods of an AppService's canary (spec.canary):
// they carry it, with the AppService's name, instead of LabelAppService, so
// that neither the stable Deployment nor the Service (nor the
// PodDisruptionBudget) selects them. The canary's own Deployment and
// Service select them by it.
const LabelCanary = "app.example.com/canary"

// LabelTemplate names, on a blue-green preview's Pods (spec.canary.blueGreen),
// the hash of their template (status.canary.canaryTemplateHash): the
// AppService's Service selects it with LabelCanary at the switch, so that
// it sends the users to those Pods only.
const LabelTemplate = "app.example.com/template"

// LabelCanaryTest names, on the Activity that runs a canary's test
// (spec.canary.steps[].tests), the test; it also carries LabelAppService,
// and AnnotationCanaryStep the step's number.
const (
	LabelCanaryTest      = "app.example.com/canary-test"
	AnnotationCanaryStep = "app.example.com/canary-step"
)

// AnnotationPodLabels and AnnotationPodAnnotations, on a Deployment, list
// (comma-separated, sorted) the pod template's label and annotation keys
// that came from the AppService's podLabels and podAnnotations: the keys the
// controller owns there, and removes when they leave the spec. Keys not
// listed belong to others and are kept.
const (
	AnnotationPodLabels      = "app.example.com/pod-labels"
	AnnotationPodAnnotations = "app.example.com/pod-annotations"
)

// AnnotationVolumes, on a Deployment, lists (comma-separated, sorted) the
// names of the pod template's volumes that came from the AppService's
// volumes: the controller owns those, and the mounts of them in its
// container, and removes one when it leaves the spec. Volumes others add to
// the template, and their mounts (in any container), are kept.
const AnnotationVolumes = "app.example.com/volumes"

// AnnotationContainers, on a Deployment, lists (comma-separated, sorted) the
// init containers and sidecars of its pod template that came from the
// AppService's initContainers and sidecars: the names the controller removes
// when they leave the spec. Init containers others add are kept.
const AnnotationContainers = "app.example.com/containers"

// AnnotationConfigDigest, on the pod template of a Deployment whose
// AppService sets rolloutOnConfigChange, lists (comma-separated, sorted)
// a digest of the data of every ConfigMap and Secret the Pods read:
// "configmap/NAME=DIGEST", "secret/NAME=DIGEST", or "=missing" for one
// that does not exist. A new digest changes the template, so the Pods
// roll. The digest is an HMAC keyed by the object's UID, so it tells
// nothing of a Secret's data to those who can read Pods. The controller
// alone sets it: podAnnotations may not.
const AnnotationConfigDigest = "app.example.com/config-digest"

// AnnotationConfigRollout, on a Deployment, is the config digest its Pod
// template was last rolled to because a ConfigMap or Secret changed
// (rolloutOnConfigChange), not the spec. While that rollout is under way,
// it counts against the controller's cap on config rollouts
// (-max-config-rollouts). The controller sets it with such a template
// change, and removes it with a template change the spec makes.
const AnnotationConfigRollout = "app.example.com/config-rollout"

// AnnotationRouteFilters, on an HTTPRoute, lists (comma-separated, sorted)
// the filters of the controller's rules that the controller wrote, as
// RULE/HASH, the hash being of the filter's JSON: those it removes when
// they leave the spec. Filters others add to its rules are kept, as are
// the rules others add to the route: the controller's rules are those it
// named (children.OwnRuleName).
const AnnotationRouteFilters = "app.example.com/route-filters"

// AnnotationAnnotations, on a child other than the Deployment (the
// ServiceAccount, the Ingress), lists (comma-separated, sorted) the keys of
// its annotations that came from the AppService: the controller owns those,
// and removes one when it leaves the spec. Annotations others add are kept.
const AnnotationAnnotations = "app.example.com/annotations"

// Condition types of an AppService.
const (
	// ConditionAvailable mirrors the Deployment's Available condition: the
	// minimum number of replicas is available.
	ConditionAvailable = "Available"
	// ConditionProgressing mirrors the Deployment's Progressing condition: a
	// rollout is under way or has completed.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the controller cannot bring the
	// children in line with the spec; its message says why.
	ConditionDegraded = "Degraded"

	// ConditionReady, ConditionReconciling and ConditionStalled are the
	// conditions kstatus (sigs.k8s.io/cli-utils/pkg/kstatus) reads, and with
	// it Flux's health checks, kpt and `kubectl wait --for=condition=Ready`.
	// Ready is True when every child the spec asks for is in line and the
	// Deployment has rolled the current template out to every replica.
	ConditionReady = "Ready"
	// ConditionReconciling ("abnormal-true") is True while the controller or
	// the Deployment is still working toward the spec: the Deployment being
	// created or rolled out, the autoscaler still scaling up to its minimum,
	// a sync failing in a way that retrying may fix.
	ConditionReconciling = "Reconciling"
	// ConditionStalled ("abnormal-true") is True when progress needs the
	// user: an object of a child's name in the way, the Gateway API missing
	// for a route, a child the API server refuses, a rollout past its
	// progress deadline.
	ConditionStalled = "Stalled"

	// ConditionSuspended is True while spec.suspend holds the app at 0
	// replicas, and False (reason Resumed) once it no longer does. An
	// AppService never suspended does not carry it, as a Job does not.
	ConditionSuspended = "Suspended"
)

// Reasons of the Ready, Reconciling and Stalled conditions. Ready False
// carries the reason of Stalled when that is True, else of Reconciling.
// Stalled True for a child's failure carries that failure's reason (as
// Degraded does: ResourceExists, RouteAPIMissing, CreateFailed, ...).
const (
	// ReasonRolloutComplete: every child is in line and every replica runs
	// the current template (Ready True, Reconciling False).
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonRollingOut: the Deployment is being created, has not observed
	// the current generation, or is replacing or scaling its Pods.
	ReasonRollingOut = "RollingOut"
	// ReasonScalingToMinimum: the autoscaler has not yet brought the
	// Deployment to the AppService's minReplicas.
	ReasonScalingToMinimum = "ScalingToMinimum"
	// ReasonRetrying: a sync failed in a way retrying may fix (the API
	// server unreachable or overloaded); it is retried with backoff.
	ReasonRetrying = "Retrying"
	// ReasonProgressDeadlineExceeded: the Deployment's rollout made no
	// progress within its progressDeadlineSeconds (the Deployment's own
	// reason).
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonSuspending: spec.suspend is true and the Deployment's Pods are
	// still going (Reconciling True).
	ReasonSuspending = "Suspending"
	// ReasonSuspended: spec.suspend is true and the Deployment is at 0
	// replicas, as asked (Ready True, Reconciling False; and the reason of
	// Suspended True).
	ReasonSuspended = "Suspended"
	// ReasonResumed: spec.suspend was true and no longer is (Suspended
	// False).
	ReasonResumed = "Resumed"
	// ReasonConfigRolloutQueued: a ConfigMap or Secret the Pods read
	// changed, and the rollout it calls for waits its turn under the
	// controller's cap on config rollouts (Reconciling True).
	ReasonConfigRolloutQueued = "ConfigRolloutQueued"
	// ReasonCanaryProgressing: a canary (spec.canary) is under way; the
	// message says at which step and weight.
	ReasonCanaryProgressing = "CanaryProgressing"
	// ReasonCanaryPromoting: the canary's last step passed, and the stable
	// Pods roll to its template.
	ReasonCanaryPromoting = "CanaryPromoting"
	// ReasonCanaryAborted: the canary was aborted, its Pods not available
	// within the progress deadline or spec.canary.abort true: the stable
	// version serves all the traffic (Stalled, until the template changes
	// or abort is set back to false). Also a Warning Event's reason.
	ReasonCanaryAborted = "CanaryAborted"
	// ReasonCanaryAnalysisFailed: the canary was aborted by its analysis
	// (spec.canary.analysis), a metric failed more often than its
	// failureLimit or erred more often in a row than its errorLimit (as
	// ReasonCanaryAborted otherwise). Also a Warning Event's reason.
	ReasonCanaryAnalysisFailed = "CanaryAnalysisFailed"
	// ReasonCanaryTestFailed: the canary was aborted by one of its steps'
	// tests (spec.canary.steps[].tests), which exited non-zero or passed
	// its deadline (as ReasonCanaryAborted otherwise). Also a Warning
	// Event's reason.
	ReasonCanaryTestFailed = "CanaryTestFailed"
	// ReasonCanaryTest: a canary's test began, or passed (a Normal Event).
	ReasonCanaryTest = "CanaryTest"
	// ReasonCanaryAnalysisNotConfigured: the canary has an analysis and
	// the controller no Prometheus to query (-prometheus-url): it holds its
	// step (Stalled) until it has. Also a Warning Event's reason.
	ReasonCanaryAnalysisNotConfigured = "CanaryAnalysisNotConfigured"
	// ReasonCanaryGated: the canary's step passed its pause (and
	// analysis) and waits at its gate for a person (kubectl appservice
	// promote), with no time limit (Reconciling True).
	ReasonCanaryGated = "CanaryGated"
	// ReasonCanaryRollingBack: the spec went back to one of the last
	// stable templates (spec.canary.rollbackWindow): the stable Pods roll
	// to it at once, without a canary.
	ReasonCanaryRollingBack = "CanaryRollingBack"
	// ReasonCanaryAnalysisUnresolved: the analysis's templates cannot be
	// resolved (one missing, an argument without a value, two metrics of
	// one name): the canary holds at its start, with no traffic (Stalled),
	// until they can. Also a Warning Event's reason.
	ReasonCanaryAnalysisUnresolved = "CanaryAnalysisUnresolved"
)

// Reasons of the Available and Progressing conditions while the Deployment
// has nothing to mirror; otherwise they carry the Deployment's own reasons.
const (
	// ReasonDeploymentMissing: the Deployment does not exist (yet).
	ReasonDeploymentMissing = "DeploymentMissing"
	// ReasonAwaitingDeploymentStatus: the Deployment has not reported the
	// condition yet.
	ReasonAwaitingDeploymentStatus = "AwaitingDeploymentStatus"
	// ReasonDeploymentTrue, ReasonDeploymentFalse, ReasonDeploymentUnknown:
	// the Deployment's condition has this status and gives no reason of its
	// own.
	ReasonDeploymentTrue    = "DeploymentTrue"
	ReasonDeploymentFalse   = "DeploymentFalse"
	ReasonDeploymentUnknown = "DeploymentUnknown"
)

// Reasons of the Degraded condition, also the reasons of the Warning Events
// that announce it.
const (
	// ReasonAsExpected: the children match the spec (Degraded is False).
	ReasonAsExpected = "AsExpected"
	// ReasonResourceExists: an object of a child's name exists and is not
	// controlled by the AppService; it is left untouched.
	ReasonResourceExists = "ResourceExists"
	// ReasonCreateFailed, ReasonUpdateFailed, ReasonDeleteFailed: the API
	// server refused a write to a child; the message carries its answer.
	ReasonCreateFailed = "CreateFailed"
	ReasonUpdateFailed = "UpdateFailed"
	ReasonDeleteFailed = "DeleteFailed"
	// ReasonRouteFeatureUnsupported: the canary needs of its route what the
	// class of a Gateway it attaches to says it does not support (its
	// status.supportedFeatures lacks a mirror step's or sticky users'
	// feature): the canary holds at its start.
	ReasonRouteFeatureUnsupported = "RouteFeatureUnsupported"
	// ReasonRouteAPIMissing: the spec asks for an HTTPRoute and the cluster
	// does not serve them (the Gateway API is not installed).
	ReasonRouteAPIMissing = "RouteAPIMissing"
	// ReasonConfigUnreadable: a ConfigMap or Secret the Pods read could not
	// be read to compute its digest (rolloutOnConfigChange), e.g. for lack
	// of RBAC; its digest on the pod template is kept until it can be.
	ReasonConfigUnreadable = "ConfigUnreadable"
	// ReasonSyncFailed is any other failure of a sync, such as a read the
	// API server refused.
	ReasonSyncFailed = "SyncFailed"
)

// Reasons of the Normal Events that record what a sync changed, one Event per
// reason and sync, naming every child it touched.
const (
	ReasonCreated = "Created"
	ReasonUpdated = "Updated"
	ReasonDeleted = "Deleted"
	// ReasonAdopted: an existing child without a controller, labelled for
	// the AppService, was made its own.
	ReasonAdopted = "Adopted"
	// ReasonReleased: a child no longer labelled for the AppService was let
	// go (its owner reference removed).
	ReasonReleased = "Released"
	// ReasonCanaryStep: a canary step's weight went to the HTTPRoute.
	ReasonCanaryStep = "CanaryStep"
	// ReasonCanarySwitched: a blue-green release switched the traffic to
	// its preview (the route's backend, or the Service's selector).
	ReasonCanarySwitched = "CanarySwitched"
	// ReasonCanaryPromoted: a canary's template became the stable one, and
	// the canary's objects went.
	ReasonCanaryPromoted = "CanaryPromoted"
	// ReasonCanaryMeasurementFailed, ReasonCanaryMeasurementNoData,
	// ReasonCanaryMeasurementError: a measurement of a canary's analysis
	// did not pass (Warning Events, one per metric and measurement).
	ReasonCanaryMeasurementFailed = "CanaryMeasurementFailed"
	ReasonCanaryMeasurementNoData = "CanaryMeasurementNoData"
	ReasonCanaryMeasurementError  = "CanaryMeasurementError"
	// ReasonCanaryRequested: a request in status.canary.request (kubectl
	// appservice promote, abort or retry) took effect.
	ReasonCanaryRequested = "CanaryRequested"
	// ReasonCanaryRolledBack: a rollback (ReasonCanaryRollingBack) is done.
	ReasonCanaryRolledBack = "CanaryRolledBack"
	// ReasonNotificationFailed: a delivery of a release's edge to a
	// NotificationDestination was given up (a Warning Event).
	ReasonNotificationFailed = "NotificationFailed"
	// ReasonNotificationBlocked: a delivery waits for the user (its
	// destination's Secret missing, say), tried again meanwhile (a
	// Warning Event).
	ReasonNotificationBlocked = "NotificationBlocked"
	// ReasonAnalysisTemplateChanged: a template a running canary pinned
	// changed; the canary keeps what it pinned, the next one runs the
	// change (a Normal Event).
	ReasonAnalysisTemplateChanged = "AnalysisTemplateChanged"
)

// The Activity's words: the label on its Job and Pod, its conditions and the
// reasons they and its Events carry.

// LabelActivity marks the Job of an Activity, and its Pod, with the
// Activity's name. The controller lists and watches only Jobs carrying it.
const LabelActivity = "app.example.com/activity"

// FinalizerActivityStatus, on an Activity's Job, holds the Job until the
// controller has recorded how the run ended in the Activity's status: a
// Job deleted meanwhile (by its TTL, by a user, by the garbage collector)
// would otherwise take the run's outcome with it. The controller removes it
// once the status is final, once the Activity is gone or being deleted, and
// from a Job left by an earlier Activity of the same name. A Job the
// controller adopts or did not create (an upgrade from a version without
// it) does not carry it.
const FinalizerActivityStatus = "app.example.com/activity-status"

// Condition types of an Activity, besides ConditionReconciling and
// ConditionStalled (which it has too, for kstatus).
const (
	// ConditionComplete is True once the command has exited 0, as a Job's
	// Complete condition.
	ConditionComplete = "Complete"
	// ConditionFailed is True once the run has failed, as a Job's Failed
	// condition.
	ConditionFailed = "Failed"
)

// Reasons of an Activity's conditions and Events. Complete and Failed carry
// the Job's own reasons (CompletionsReached, BackoffLimitExceeded,
// DeadlineExceeded, ...) when it gives them.
const (
	// ReasonPending: the Job is being created or has not started the
	// command's Pod running (Reconciling True).
	ReasonPending = "Pending"
	// ReasonRunning: the command is running (Reconciling True).
	ReasonRunning = "Running"
	// ReasonSucceeded: the command exited 0 (Reconciling False, and the
	// reason of the Normal Event that announces it).
	ReasonSucceeded = "Succeeded"
	// ReasonJobFailed: the run failed and the Job gave no reason of its
	// own; also the reason of the Warning Event that announces a failure.
	ReasonJobFailed = "Failed"
	// ReasonJobDeleted: the Job was deleted before the command finished.
	// The Activity fails rather than run the command a second time.
	ReasonJobDeleted = "JobDeleted"
	// ReasonServiceAccountNotFound: the ServiceAccount spec.serviceAccountName
	// names does not exist; the run starts once it does (Stalled until
	// then).
	ReasonServiceAccountNotFound = "ServiceAccountNotFound"
)
