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
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The blocks of the spec that ask for children besides the Deployment and
// the Service. Each block present makes one child, named after the
// AppService (the ServiceAccount may be named otherwise); removing the block
// deletes it. The rules the children's own validation would apply are in
// config/crd/patches/children-rules.yaml where a marker line cannot hold
// them.

// ServiceAccount is the identity the Pods run as: an existing ServiceAccount
// (name only), or one the controller creates and owns (create).
//
// +kubebuilder:validation:XValidation:rule="self.create || (has(self.name) && size(self.name) > 0)",message="name is required unless create is true",fieldPath=".name"
// +kubebuilder:validation:XValidation:rule="self.create || !has(self.annotations)",message="annotations are set only on a ServiceAccount the controller creates (create: true)",fieldPath=".annotations"
type ServiceAccount struct {
	// Create makes the controller create the ServiceAccount, own it and
	// delete it with the AppService (or when this block goes). Without it,
	// the Pods use the existing ServiceAccount called name.
	// +optional
	// +kubebuilder:default=false
	Create bool `json:"create"`

	// Name of the ServiceAccount. With create, it defaults to the
	// AppService's name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name,omitempty"`

	// Annotations on the created ServiceAccount, such as a cloud provider's
	// workload identity (eks.amazonaws.com/role-arn). Annotations others
	// add are kept; a key removed from here is removed from it.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Annotations map[string]string `json:"annotations,omitempty"`

	// AutomountToken is whether the Pods get the ServiceAccount's API token
	// mounted (core/v1 PodSpec.automountServiceAccountToken, and the created
	// ServiceAccount's automountServiceAccountToken). Unset, Kubernetes'
	// default: mounted.
	// +optional
	AutomountToken *bool `json:"automountToken,omitempty"`
}

// DisruptionBudget limits voluntary disruptions of the Pods, such as node
// drains, through a PodDisruptionBudget (policy/v1). Exactly one of
// minAvailable and maxUnavailable, each a number of Pods or a percentage.
//
// +kubebuilder:validation:XValidation:rule="has(self.minAvailable) != has(self.maxUnavailable)",message="exactly one of minAvailable and maxUnavailable must be set"
type DisruptionBudget struct {
	// MinAvailable is how many Pods must stay available during a
	// disruption: a number, or a percentage of the desired Pods (e.g. 50%).
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`

	// MaxUnavailable is how many Pods may be unavailable during a
	// disruption: a number, or a percentage of the desired Pods (e.g. 25%).
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// Autoscaling scales the Deployment with a HorizontalPodAutoscaler
// (autoscaling/v2) on the Pods' average CPU and memory utilization, as a
// percentage of their requests (set spec.resources.requests). While it is
// set, the autoscaler owns the replica count: the Deployment is created with
// minReplicas, the controller never writes its replicas again, and
// spec.size is ignored. Without either target, the autoscaler's default
// applies: 80% CPU.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="must be greater than or equal to minReplicas",fieldPath=".maxReplicas"
type Autoscaling struct {
	// MinReplicas is the fewest replicas the autoscaler keeps. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the most replicas the autoscaler may scale to.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	MaxReplicas int32 `json:"maxReplicas"`

	// TargetCPUUtilizationPercentage is the average CPU use the autoscaler
	// aims at, as a percentage of the Pods' CPU requests.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`

	// TargetMemoryUtilizationPercentage is the average memory use the
	// autoscaler aims at, as a percentage of the Pods' memory requests.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	TargetMemoryUtilizationPercentage *int32 `json:"targetMemoryUtilizationPercentage,omitempty"`

	// Behavior tunes how fast the autoscaler scales up and down
	// (autoscaling/v2 HorizontalPodAutoscalerSpec.behavior); the rules are
	// in config/crd/patches/children-rules.yaml.
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// Ingress routes HTTP and HTTPS from outside the cluster to the AppService's
// Service through an Ingress (networking/v1); spec.ports must not be empty.
//
// +kubebuilder:validation:XValidation:rule="!has(self.className) || !has(self.annotations) || !('kubernetes.io/ingress.class' in self.annotations) || self.annotations['kubernetes.io/ingress.class'] == self.className",message="the kubernetes.io/ingress.class annotation must match className when both are set",fieldPath=".annotations"
type Ingress struct {
	// ClassName is the IngressClass, which picks the ingress controller
	// (networking/v1 IngressSpec.ingressClassName). Unset, the cluster's
	// default class, which the API server fills in when the Ingress is
	// created; the controller leaves that one alone.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClassName string `json:"className,omitempty"`

	// Annotations on the Ingress, read by the ingress controller (e.g.
	// nginx.ingress.kubernetes.io/rewrite-target) or cert-manager.
	// Annotations others add are kept; a key removed from here is removed
	// from it.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`

	// Hosts are the host names routed to the Service, each with its paths.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Hosts []IngressHost `json:"hosts"`

	// TLS terminates HTTPS for these hosts with the certificate in the
	// Secret (networking/v1 IngressTLS).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	TLS []networkingv1.IngressTLS `json:"tls,omitempty"`
}

// IngressHost is a host name and the paths routed under it.
type IngressHost struct {
	// Host is a DNS name, or a wildcard (*.example.com) matching one label;
	// not an IP address. Unset, every host.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+(\\\\.[0-9]+){3}$')",message="must be a DNS name, not an IP address"
	Host string `json:"host,omitempty"`

	// Paths are routed to the Service.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Paths []IngressPath `json:"paths"`
}

// IngressPath is one path routed to one of the Service's ports.
type IngressPath struct {
	// Path is matched against the request's path; default /. The rules the
	// Ingress checks are in config/crd/patches/children-rules.yaml.
	// +optional
	// +kubebuilder:default="/"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path,omitempty"`

	// PathType is how the path matches: Prefix (the default, by path
	// element), Exact, or ImplementationSpecific (up to the IngressClass).
	// +optional
	// +kubebuilder:default=Prefix
	// +kubebuilder:validation:Enum=Exact;Prefix;ImplementationSpecific
	PathType networkingv1.PathType `json:"pathType,omitempty"`

	// Port is the Service's port the path goes to: one of spec.ports, by
	// number or by name. Unset, the first of spec.ports.
	// +optional
	Port *intstr.IntOrString `json:"port,omitempty"`
}

// HTTPRoute routes HTTP from Gateways to the AppService's Service through an
// HTTPRoute (Gateway API, gateway.networking.k8s.io/v1); spec.ports must not
// be empty. The Gateway API is not built into Kubernetes: on a cluster
// without it, the AppService is Degraded (the rest of it works) until it is
// installed.
//
// +kubebuilder:validation:XValidation:rule="self.parentRefs.all(p1, self.parentRefs.exists_one(p2, p1.name == p2.name && (!has(p1.sectionName) || !has(p2.sectionName) || p1.sectionName == p2.sectionName)))",message="a parent named twice needs a different sectionName in each reference",fieldPath=".parentRefs"
type HTTPRoute struct {
	// ParentRefs are the Gateways the route attaches to (Gateway API
	// ParentReference: name, and optionally namespace, sectionName, port).
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	ParentRefs []gatewayv1.ParentReference `json:"parentRefs"`

	// Hostnames are the Host headers the route matches (a wildcard *. prefix
	// allowed); unset, those of the Gateway's listeners. The first that is
	// not a wildcard is in the status as url.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Hostnames []gatewayv1.Hostname `json:"hostnames,omitempty"`

	// Rules match requests and send them to one of the Service's ports.
	// Unset, every request goes to the first of spec.ports.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Rules []HTTPRouteRule `json:"rules,omitempty"`
}

// HTTPRouteRule is one rule of the route: which requests (matches), what is
// done to them on the way (filters, timeouts), and the Service's port they
// go to. A requestRedirect filter answers instead of the Service, and has no
// place here.
//
// +kubebuilder:validation:XValidation:rule="!has(self.filters) || self.filters.all(f, !has(f.requestRedirect))",message="a requestRedirect filter answers instead of the Service, which is this route's backend",fieldPath=".filters"
// +kubebuilder:validation:XValidation:rule="!(has(self.filters) && self.filters.exists_one(f, has(f.urlRewrite) && has(f.urlRewrite.path) && f.urlRewrite.path.type == 'ReplacePrefixMatch' && has(f.urlRewrite.path.replacePrefixMatch))) || (has(self.matches) && size(self.matches) == 1 && has(self.matches[0].path) && self.matches[0].path.type == 'PathPrefix')",message="a urlRewrite with path.replacePrefixMatch needs exactly one PathPrefix match",fieldPath=".filters"
type HTTPRouteRule struct {
	// Matches select the requests of this rule (Gateway API
	// HTTPRouteMatch: path, headers, queryParams, method); any matches.
	// Unset, every request (path prefix /).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Matches []gatewayv1.HTTPRouteMatch `json:"matches,omitempty"`

	// Filters change requests and responses on the way (Gateway API
	// HTTPRouteFilter): header modifiers, URL rewrites, mirrors, CORS.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.filter(f, f.type == 'CORS').size() <= 1",message="CORS filter cannot be repeated"
	// +kubebuilder:validation:XValidation:rule="self.filter(f, f.type == 'RequestHeaderModifier').size() <= 1",message="RequestHeaderModifier filter cannot be repeated"
	// +kubebuilder:validation:XValidation:rule="self.filter(f, f.type == 'ResponseHeaderModifier').size() <= 1",message="ResponseHeaderModifier filter cannot be repeated"
	// +kubebuilder:validation:XValidation:rule="self.filter(f, f.type == 'URLRewrite').size() <= 1",message="URLRewrite filter cannot be repeated"
	Filters []gatewayv1.HTTPRouteFilter `json:"filters,omitempty"`

	// Timeouts for the request and for the Service's answer (Gateway API
	// HTTPRouteTimeouts).
	// +optional
	Timeouts *gatewayv1.HTTPRouteTimeouts `json:"timeouts,omitempty"`

	// Port is the Service's port the requests go to: one of spec.ports, by
	// number or by name. Unset, the first of spec.ports.
	// +optional
	Port *intstr.IntOrString `json:"port,omitempty"`
}

// GRPCRoute routes gRPC from Gateways to the AppService's Service through a
// GRPCRoute (Gateway API, gateway.networking.k8s.io/v1), beside or instead
// of httpRoute; spec.ports must not be empty. A canary's weights, testers
// and mirror go to it as to the HTTPRoute (sticky users do not: gRPC
// clients keep no cookies). As for httpRoute, on a cluster without the
// Gateway API's GRPCRoutes the AppService is Degraded until they are
// served.
//
// +kubebuilder:validation:XValidation:rule="self.parentRefs.all(p1, self.parentRefs.exists_one(p2, p1.name == p2.name && (!has(p1.sectionName) || !has(p2.sectionName) || p1.sectionName == p2.sectionName)))",message="a parent named twice needs a different sectionName in each reference",fieldPath=".parentRefs"
type GRPCRoute struct {
	// ParentRefs are the Gateways the route attaches to (Gateway API
	// ParentReference: name, and optionally namespace, sectionName, port).
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	ParentRefs []gatewayv1.ParentReference `json:"parentRefs"`

	// Hostnames are the authorities the route matches (a wildcard *.
	// prefix allowed); unset, those of the Gateway's listeners.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Hostnames []gatewayv1.Hostname `json:"hostnames,omitempty"`

	// Rules match calls and send them to one of the Service's ports.
	// Unset, every call goes to the first of spec.ports.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Rules []GRPCRouteRule `json:"rules,omitempty"`
}

// GRPCRouteRule is one rule of the GRPCRoute: which calls (matches), what
// is done to them on the way (filters), and the Service's port they go to.
type GRPCRouteRule struct {
	// Matches select the calls of this rule (Gateway API GRPCRouteMatch:
	// method, headers); any matches. Unset, every call.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Matches []gatewayv1.GRPCRouteMatch `json:"matches,omitempty"`

	// Filters change calls and answers on the way (Gateway API
	// GRPCRouteFilter): header modifiers, mirrors.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.filter(f, f.type == 'RequestHeaderModifier').size() <= 1",message="RequestHeaderModifier filter cannot be repeated"
	// +kubebuilder:validation:XValidation:rule="self.filter(f, f.type == 'ResponseHeaderModifier').size() <= 1",message="ResponseHeaderModifier filter cannot be repeated"
	Filters []gatewayv1.GRPCRouteFilter `json:"filters,omitempty"`

	// Port is the Service's port the calls go to: one of spec.ports, by
	// number or by name. Unset, the first of spec.ports.
	// +optional
	Port *intstr.IntOrString `json:"port,omitempty"`
}
