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
)

// The Activity is the kubebuilder tutorial's second operator (group ego,
// kind Activity): a command run once. Its fields keep the tutorial's names
// (command, host, execuser, execcwd, envs, prosta), so that a reader of the
// tutorial recognises them; each one's description says what it becomes in
// the batch/v1 Job that runs it. Its CRD is artifacts/examples/crd-activity.yaml.

// Activity runs a shell command once, as a Job of one Pod that is not
// retried (backoffLimit 0, restartPolicy Never). The spec cannot change
// once created: a run is a run; to run again, create a new Activity
// (`kubectl create` with metadata.generateName names each one).
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=act
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.prosta`,description="Pending, Running, Succeeded or Failed"
// +kubebuilder:printcolumn:name="Exit Code",type=integer,JSONPath=`.status.exitCode`,description="The command's exit code, once it has finished"
// +kubebuilder:printcolumn:name="Command",type=string,JSONPath=`.spec.command`
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.host`,priority=1,description="The node it runs on, if the spec chose one"
// +kubebuilder:printcolumn:name="Started",type=date,JSONPath=`.status.startTime`,priority=1
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label (at most 63 lower case letters, digits or '-', starting and ending with a letter or digit): it names the Job, and labels its Pod"
type Activity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the command to run and how. It cannot be changed.
	// +required
	Spec ActivitySpec `json:"spec"`

	// Status is the run as last observed by the controller.
	// +optional
	Status ActivityStatus `json:"status,omitempty"`
}

// DefaultActivityImage is the image an Activity runs in when its spec names
// none: BusyBox, a shell and the usual commands in about 2 MB, pulled in a
// second where the tutorial's ubuntu takes ten times as long.
const DefaultActivityImage = "busybox:1.37"

// ActivitySpec is the command an Activity runs, where and as whom.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: an Activity is one run; to run again, create a new Activity"
type ActivitySpec struct {
	// Command is a shell command line, run as `/bin/sh -c COMMAND` in the
	// image (the Job's container command); its exit code is the
	// Activity's.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16384
	Command string `json:"command"`

	// Image is the container image the command runs in; it must have
	// /bin/sh. The default, busybox:1.37, is a small image with a shell and
	// the common commands (the tutorial's ubuntu is 30 times its size).
	// +optional
	// +kubebuilder:default="busybox:1.37"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^\S+$`
	Image string `json:"image,omitempty"`

	// Host is the node to run on: the Pod's nodeSelector
	// kubernetes.io/hostname=HOST (not nodeName), so that the scheduler
	// still checks the node's resources and taints. The value is the
	// node's kubernetes.io/hostname label, usually its name. Unset, the
	// scheduler chooses.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')",message="must be a node's kubernetes.io/hostname label value: letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	Host string `json:"host,omitempty"`

	// ExecUser is the user the command runs as: a numeric UID, or UID:GID
	// (the container's securityContext runAsUser and runAsGroup). Unset,
	// the image's user. User names are refused: a Pod runs as numbers, and
	// only the image's /etc/passwd could turn a name into one, which
	// Kubernetes does not read.
	// +optional
	// +kubebuilder:validation:MaxLength=21
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+(:[0-9]+)?$')",message="must be a numeric UID or UID:GID, such as 1000 or 1000:1000: a Pod runs as numbers, and Kubernetes cannot look a user name up in the image's /etc/passwd"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+(:[0-9]+)?$') || self.split(':').all(id, size(id) <= 10 && int(id) <= 2147483647)",message="a UID or GID may be at most 2147483647"
	ExecUser string `json:"execuser,omitempty"`

	// ExecCwd is the directory the command runs in (the container's
	// workingDir), an absolute path. Unset, the image's.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="must be an absolute path"
	ExecCwd string `json:"execcwd,omitempty"`

	// Envs are the command's environment variables, as NAME=value strings
	// (the container's env). A name is printable ASCII but '=' (the API
	// server's rule for env var names), and no name may appear twice. At
	// most 64 of them, of at most 1024 characters each: the check for a name
	// twice compares every pair, and these bounds keep its cost within the
	// API server's CEL budget.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[ -<>-~]+=')",message="must be NAME=value, the name printable ASCII characters other than '='"
	// +kubebuilder:validation:XValidation:rule="self.all(e, e.indexOf('=') < 1 || self.exists_one(f, f.startsWith(e.substring(0, e.indexOf('=') + 1))))",message="each name may appear only once"
	Envs []string `json:"envs,omitempty"`

	// Resources are the compute resources of the command's container
	// (core/v1 Container.resources): in a namespace whose ResourceQuota
	// requires limits, a Pod without them is refused. The rules are an
	// AppService's resources' (hack/crdtrim copies them).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// ServiceAccountName is the ServiceAccount the command's Pod runs as
	// (core/v1 PodSpec.serviceAccountName); unset, the namespace's default
	// one. While it does not exist, the run waits (Stalled,
	// ServiceAccountNotFound) instead of starting.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// ActiveDeadlineSeconds bounds the run (the Job's
	// activeDeadlineSeconds): a command still running after it is stopped,
	// and the Activity Fails with reason DeadlineExceeded. Unset, no bound.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// TTLSecondsAfterFinished deletes the run this many seconds after the
	// command finished, as a Job's does: the Job and its Pod (the Job's
	// ttlSecondsAfterFinished, done by the cluster's ttl-after-finished
	// controller), then the Activity, once its Job is gone. Unset, a
	// finished Activity and its Job stay until the Activity is deleted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ActivityStatus is the state of an Activity's run.
type ActivityStatus struct {
	// ObservedGeneration is the generation of the Activity this status was
	// computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Prosta (the tutorial's "process status") is the run's phase: Pending
	// (the Job is not yet running its Pod), Running, Succeeded (the command
	// exited 0) or Failed (it exited otherwise, was stopped by its
	// deadline, or its Job was deleted before it finished). Succeeded and
	// Failed are final. A Pod that cannot start (an image that cannot be
	// pulled, a host that does not exist) stays Pending: activeDeadlineSeconds
	// bounds that too.
	// +optional
	// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
	Prosta ActivityPhase `json:"prosta,omitempty"`

	// StartTime is when the Job started the run.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the run ended, successfully or not.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// ExitCode is the command's exit code, once it has exited.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// Message, when the run failed, says why: the container's termination
	// reason and the last lines the command wrote (its termination message,
	// or the tail of its log), or why there was no run.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`

	// Conditions are Complete and Failed (True once the run has ended so,
	// as a Job's are), and Reconciling and Stalled, which kstatus reads:
	// Reconciling is True until the run ends, Stalled is True when it
	// failed or cannot start.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ActivityPhase is the phase of an Activity's run: status.prosta.
type ActivityPhase string

// The phases of an Activity's run.
const (
	ActivityPending   ActivityPhase = "Pending"
	ActivityRunning   ActivityPhase = "Running"
	ActivitySucceeded ActivityPhase = "Succeeded"
	ActivityFailed    ActivityPhase = "Failed"
)

// Finished reports whether the phase is final: Succeeded or Failed.
func (p ActivityPhase) Finished() bool {
	return p == ActivitySucceeded || p == ActivityFailed
}

// ActivityList is a list of Activities.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type ActivityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []Activity `json:"items"`
}
