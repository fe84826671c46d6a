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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Hearing about a release: a NotificationDestination names where a
// release's edges go (a signed CloudEvents webhook, Slack or Teams), whose
// address and key live in a Secret beside it, and which AppServices of its
// namespace and which edges it hears of. Each edge is recorded in the
// AppService's status (status.notifications) with the status write that
// makes it, with a delivery per destination that the leader sends and
// records; its CRD is artifacts/examples/crd-notificationdestination.yaml.

// NotificationDestination is where the edges of the releases of AppServices
// of its namespace are sent.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
//
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.secretRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NotificationDestination struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NotificationDestinationSpec `json:"spec"`
}

// NotificationDestinationSpec is where to send, and what.
type NotificationDestinationSpec struct {
	// Type is webhook (a CloudEvent 1.0, structured JSON, signed with
	// HMAC-SHA256), slack (an incoming webhook) or teams (a workflow
	// webhook).
	// +required
	Type DestinationType `json:"type"`

	// SecretRef names the Secret beside it: its key "address" is the URL
	// to post to; a webhook's "signingKey" signs each message.
	// +required
	SecretRef SecretReference `json:"secretRef"`

	// Selector chooses the AppServices of the namespace it hears of by
	// their labels; all of them when it is not set.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn'] ? has(e.values) && size(e.values) > 0 : e.operator in ['Exists', 'DoesNotExist'] && (!has(e.values) || size(e.values) == 0))",message="an expression's operator is In or NotIn with values, or Exists or DoesNotExist without"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Edges are the edges it hears of; all of them when empty.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Enum=Started;Step;Gated;Switched;Promoted;Aborted;ProgressDeadline;RolledBack
	Edges []ReleaseEdge `json:"edges,omitempty"`
}

// SecretReference names a Secret in the same namespace.
type SecretReference struct {
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// DestinationType is how a destination is posted to.
// +kubebuilder:validation:Enum=webhook;slack;teams
type DestinationType string

// The types of destinations.
const (
	DestinationWebhook DestinationType = "webhook"
	DestinationSlack   DestinationType = "slack"
	DestinationTeams   DestinationType = "teams"
)

// The keys of a destination's Secret.
const (
	SecretKeyAddress    = "address"
	SecretKeySigningKey = "signingKey"
)

// ReleaseEdge is an edge of a release.
type ReleaseEdge string

// The edges of a release: a canary started; a step's weight went to the
// route; a step waits at its gate; a blue-green release switched the
// traffic to its preview; the canary was promoted; it was aborted
// (by hand, by its analysis or by a test); its Pods were not available
// within the progress deadline (and it was aborted); the spec went back to
// a recent template, without a canary.
const (
	EdgeStarted          ReleaseEdge = "Started"
	EdgeStep             ReleaseEdge = "Step"
	EdgeGated            ReleaseEdge = "Gated"
	EdgeSwitched         ReleaseEdge = "Switched"
	EdgePromoted         ReleaseEdge = "Promoted"
	EdgeAborted          ReleaseEdge = "Aborted"
	EdgeProgressDeadline ReleaseEdge = "ProgressDeadline"
	EdgeRolledBack       ReleaseEdge = "RolledBack"
)

// NotificationDestinationList is a list of NotificationDestinations.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type NotificationDestinationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []NotificationDestination `json:"items"`
}

// NotificationsStatus is what the edges of the last release owe the
// destinations that hear of them, and what was delivered: recorded with
// the edge's own status write, so that a restart or a new leader delivers
// what is owed.
type NotificationsStatus struct {
	// Release is the id of the last release with an edge: its template
	// hash and its start (Unix seconds).
	// +optional
	Release string `json:"release,omitempty"`

	// From and To are the images the release went from and to.
	// +optional
	From string `json:"from,omitempty"`
	// +optional
	To string `json:"to,omitempty"`

	// Edges are the last release's edges, oldest first, and those of
	// earlier ones with a delivery still owed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Edges []NotificationEdge `json:"edges,omitempty"`
}

// NotificationEdge is an edge and its deliveries.
type NotificationEdge struct {
	// ID is its release's, its kind and its step.
	// +required
	ID string `json:"id"`
	// +required
	Edge ReleaseEdge `json:"edge"`
	// +required
	Time metav1.Time `json:"time"`

	// Step is its step's index (from 0) of Steps.
	// +optional
	Step *int32 `json:"step,omitempty"`
	// +optional
	Steps int32 `json:"steps,omitempty"`
	// Weight is the canary's percentage of the traffic.
	// +optional
	Weight int32 `json:"weight,omitempty"`
	// ExitCode is a failed test's.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// Message says what happened.
	// +optional
	Message string `json:"message,omitempty"`

	// Deliveries are its deliveries, one per destination.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Deliveries []Delivery `json:"deliveries,omitempty"`
}

// Delivery is an edge's delivery to a destination.
type Delivery struct {
	// +required
	Destination string `json:"destination"`
	// +required
	Result DeliveryResult `json:"result"`
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// Message says why it failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// DeliveryResult is where a delivery stands.
type DeliveryResult string

// The results of a delivery: owed, delivered (the destination answered
// 2xx), or given up.
const (
	DeliveryPending   DeliveryResult = "Pending"
	DeliveryDelivered DeliveryResult = "Delivered"
	DeliveryFailed    DeliveryResult = "Failed"
)
