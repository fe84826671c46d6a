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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The validation markers below are compiled into the CRD's schema
// (artifacts/examples/crd.yaml). They refuse at admission what the API server
// would otherwise refuse later in the children built from an
// AppService, so that a user hears about a mistake from `kubectl apply`, with
// the field named, rather than from a status condition minutes later. What
// depends on the cluster's configuration (the NodePort range, ports already
// taken, quotas) can only fail at run time and is reported in the Degraded
// condition.

// AppService runs an image as a Deployment of `size` replicas and, when it
// declares ports, exposes them through a Service of the same name; its
// serviceAccount, ingress, httpRoute, grpcRoute, disruptionBudget and autoscaling
// blocks ask for the other children an app needs.
//
// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=appsvc
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`,description="Desired replicas"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Ready replicas"
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,description="Available replicas"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,description="Why the app is Ready or not: RolloutComplete, RollingOut, or what stalls it"
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`,description="Whether the app is suspended: its Deployment at 0 replicas"
// +kubebuilder:printcolumn:name="Canary",type=integer,JSONPath=`.status.canary.share`,description="Percentage of the traffic the canary gets: its route weight, or its share of the available Pods"
// +kubebuilder:printcolumn:name="By",type=string,JSONPath=`.status.canary.trafficBy`,priority=1,description="How the canary's share is carried: Route or Pods"
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.serviceType`,priority=1,description="Type of the Service"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`,priority=1,description="Where the app is reached from outside the cluster"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (at most 63 lower case letters, digits or '-', starting with a letter and ending with a letter or digit): it names the Service and labels the Pods"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.canary) || size(self.metadata.name) <= (has(self.spec.canary.blueGreen) ? 55 : 56)",message="metadata.name may have at most 56 characters with spec.canary, 55 with blueGreen: the canary's Service is named NAME-canary, the preview's NAME-preview"
type AppService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the application.
	// +required
	Spec AppServiceSpec `json:"spec"`

	// Status is the state of the application as last observed by the controller.
	// +optional
	Status AppServiceStatus `json:"status,omitempty"`
}

// AppServiceSpec is the desired state of an AppService.
//
// +kubebuilder:validation:XValidation:rule="self.?serviceType.orValue('NodePort') != 'ClusterIP' || !has(self.ports) || self.ports.all(p, p.?nodePort.orValue(0) == 0)",message="nodePort may not be set when serviceType is ClusterIP",fieldPath=".ports"
// +kubebuilder:validation:XValidation:rule="!has(self.volumeMounts) || [has(self.volumes) ? self.volumes : []].all(vs, self.volumeMounts.all(m, vs.exists(v, v.name == m.name)))",message="each volumeMount must name one of spec.volumes",fieldPath=".volumeMounts"
// +kubebuilder:validation:XValidation:rule="!has(self.ingress) || size(self.?ports.orValue([])) > 0",message="an ingress routes to the Service: ports may not be empty",fieldPath=".ingress"
// +kubebuilder:validation:XValidation:rule="!has(self.ingress) || !has(self.ports) || [self.ports].all(ps, self.ingress.hosts.all(h, h.paths.all(p, !has(p.port) || (type(p.port) == int ? ps.exists(q, q.port == p.port) : ps.exists(q, has(q.name) && size(q.name) > 0 && q.name == p.port)))))",message="each ingress path's port must be one of spec.ports, by number or name",fieldPath=".ingress.hosts"
// +kubebuilder:validation:XValidation:rule="!has(self.httpRoute) || size(self.?ports.orValue([])) > 0",message="an httpRoute routes to the Service: ports may not be empty",fieldPath=".httpRoute"
// +kubebuilder:validation:XValidation:rule="!has(self.httpRoute) || !has(self.httpRoute.rules) || !has(self.ports) || [self.ports].all(ps, self.httpRoute.rules.all(r, !has(r.port) || (type(r.port) == int ? ps.exists(q, q.port == r.port) : ps.exists(q, has(q.name) && size(q.name) > 0 && q.name == r.port))))",message="each httpRoute rule's port must be one of spec.ports, by number or name",fieldPath=".httpRoute.rules"
// +kubebuilder:validation:XValidation:rule="!has(self.grpcRoute) || size(self.?ports.orValue([])) > 0",message="a grpcRoute routes to the Service: ports may not be empty",fieldPath=".grpcRoute"
// +kubebuilder:validation:XValidation:rule="!has(self.grpcRoute) || !has(self.grpcRoute.rules) || !has(self.ports) || [self.ports].all(ps, self.grpcRoute.rules.all(r, !has(r.port) || (type(r.port) == int ? ps.exists(q, q.port == r.port) : ps.exists(q, has(q.name) && size(q.name) > 0 && q.name == r.port))))",message="each grpcRoute rule's port must be one of spec.ports, by number or name",fieldPath=".grpcRoute.rules"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || !has(self.canary.testerHeaders) || has(self.httpRoute) || has(self.grpcRoute)",message="testers reach the canary through the route's rules: set spec.httpRoute or spec.grpcRoute too, or remove testerHeaders",fieldPath=".canary.testerHeaders"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || !self.canary.?shrinkStable.orValue(false) || (!has(self.httpRoute) && !has(self.grpcRoute) && !has(self.autoscaling))",message="shrinkStable sizes a canary by Pods against size: not with httpRoute or grpcRoute (their weights carry the share) nor autoscaling (the autoscaler owns the stable's replicas)",fieldPath=".canary.shrinkStable"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || !has(self.canary.testerHeaders) || !has(self.httpRoute) || !has(self.httpRoute.rules) || self.httpRoute.rules.all(r, !has(r.matches) || r.matches.all(m, !has(m.headers) || (size(m.headers) + size(self.canary.testerHeaders) <= 16 && !m.headers.exists(h, self.canary.testerHeaders.exists(t, t.name.lowerAscii() == h.name.lowerAscii())))))",message="the testers' rules add these headers to each match of httpRoute.rules: a match may not name one, nor have more than 16 with them",fieldPath=".canary.testerHeaders"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || !has(self.canary.testerHeaders) || !has(self.grpcRoute) || !has(self.grpcRoute.rules) || self.grpcRoute.rules.all(r, !has(r.matches) || r.matches.all(m, !has(m.headers) || (size(m.headers) + size(self.canary.testerHeaders) <= 16 && !m.headers.exists(h, self.canary.testerHeaders.exists(t, t.name.lowerAscii() == h.name.lowerAscii())))))",message="the testers' rules add these headers to each match of grpcRoute.rules: a match may not name one, nor have more than 16 with them",fieldPath=".canary.testerHeaders"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || !self.canary.steps.exists(s, has(s.mirror)) || has(self.httpRoute) || has(self.grpcRoute)",message="a mirror copies the route's requests: set spec.httpRoute or spec.grpcRoute too, or remove the steps' mirror",fieldPath=".canary.steps"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || !has(self.canary.blueGreen) || !has(self.canary.blueGreen.previewHostname) || has(self.httpRoute)",message="the preview's hostname is an HTTPRoute's: set spec.httpRoute too",fieldPath=".canary.blueGreen.previewHostname"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || !has(self.canary.sticky) || has(self.httpRoute)",message="a sticky canary is kept by the HTTPRoute's rules: set spec.httpRoute too, or remove sticky",fieldPath=".canary.sticky"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || !has(self.canary.sticky) || !has(self.canary.testerHeaders) || !has(self.httpRoute) || size(self.httpRoute.?rules.orValue([])) <= 5",message="with testerHeaders and sticky each httpRoute rule has two twins, and an HTTPRoute holds 16 rules: at most 5 rules",fieldPath=".canary.sticky"
// +kubebuilder:validation:XValidation:rule="!has(self.canary) || !has(self.canary.sticky) || !has(self.httpRoute) || !has(self.httpRoute.rules) || self.httpRoute.rules.all(r, !has(r.matches) || r.matches.all(m, !has(m.headers) || (size(m.headers) < 16 && !m.headers.exists(h, h.name.lowerAscii() == 'cookie'))))",message="the sticky rule adds a Cookie header match to each match: a match may have at most 15 headers, none of them Cookie",fieldPath=".canary.sticky"
// +kubebuilder:validation:XValidation:rule="!has(self.serviceAccount) || !has(self.serviceAccountName) || size(self.serviceAccountName) == 0",message="serviceAccountName and serviceAccount may not both be set: use serviceAccount.name",fieldPath=".serviceAccount"
// +kubebuilder:validation:XValidation:rule="self.?progressDeadlineSeconds.orValue(600) > self.?minReadySeconds.orValue(0)",message="must be greater than minReadySeconds (progressDeadlineSeconds defaults to 600)",fieldPath=".progressDeadlineSeconds"
type AppServiceSpec struct {
	// The rules on the whole spec read as few of its fields as they can, each
	// once: a scalar with a default (self.?x.orValue(d)), a list a loop needs
	// before the loop, as the one element of a list ([self.ports].all(ps, ...)
	// reads "let ps be spec.ports"). The API server copies the schema of all
	// the spec's properties on every read of one of them, which made these
	// rules the largest part of an AppService create's CPU (BENCHMARKS.md);
	// config/crd/patches/long-rules.yaml says more.

	// Size is the number of replicas of the Deployment. Ignored while
	// autoscaling is set: the HorizontalPodAutoscaler owns the count.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	Size *int32 `json:"size,omitempty"`

	// Suspend stops the app without deleting it: the Deployment goes to 0
	// replicas and the HorizontalPodAutoscaler is removed; the Service, the
	// route and the other objects stay. False brings the Pods back.
	// +optional
	// +kubebuilder:default=false
	Suspend *bool `json:"suspend,omitempty"`

	// Image is the container image the Pods run, e.g. nginx:1.7.9.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^\S+$`
	Image string `json:"image"`

	// ImagePullPolicy is when the kubelet pulls the image: Always,
	// IfNotPresent or Never (core/v1 Container.imagePullPolicy). Unset, it
	// follows the image as the API server would: Always for :latest or an
	// image with neither tag nor digest, IfNotPresent otherwise.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// Command is the container's entrypoint, instead of the image's
	// (core/v1 Container.command). $(VAR) names an env variable.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Command []string `json:"command,omitempty"`

	// Args are the arguments of the entrypoint, instead of the image's
	// (core/v1 Container.args). $(VAR) names an env variable.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	Args []string `json:"args,omitempty"`

	// WorkingDir is the container's working directory, instead of the
	// image's (core/v1 Container.workingDir).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	WorkingDir string `json:"workingDir,omitempty"`

	// LivenessProbe restarts the container when it fails (core/v1
	// Container.livenessProbe). Exactly one of exec, httpGet, tcpSocket or
	// grpc; the timings default as in a Pod (timeout 1 s, period 10 s,
	// success 1, failure 3). The rules are in
	// config/crd/patches/probe-rules.yaml.
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// ReadinessProbe takes the Pod out of the Service's endpoints while it
	// fails (core/v1 Container.readinessProbe).
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// StartupProbe holds the other probes back until it succeeds once
	// (core/v1 Container.startupProbe): for slow starters.
	// +optional
	StartupProbe *corev1.Probe `json:"startupProbe,omitempty"`

	// Rules: config/crd/patches/probe-rules.yaml.

	// Lifecycle runs postStart and preStop handlers (core/v1
	// Container.lifecycle). A preStop sleep lets load balancers stop sending
	// traffic before SIGTERM. stopSignal (alpha) is refused.
	// +optional
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`

	// Rules: config/crd/patches/security-rules.yaml.

	// SecurityContext is the container's security settings (core/v1
	// Container.securityContext). windowsOptions and an Unmasked procMount
	// are refused; a privileged container fails at the Deployment's creation
	// on clusters without --allow-privileged (Degraded).
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`

	// PodSecurityContext is the Pods' security settings (core/v1
	// PodSpec.securityContext). windowsOptions is refused; seLinuxChangePolicy
	// MountOption needs the SELinuxMount feature (else Degraded).
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// PodLabels are extra labels on the Pods (the Deployment's pod
	// template), e.g. for network policies or monitoring. They may not set
	// app.example.com/appservice, which selects the Pods, nor
	// pod-template-hash, which the Deployment controller sets. Labels others
	// put on the template are kept; a key removed from here is removed from
	// it.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are extra annotations on the Pods. Others' annotations
	// on the template are kept; the keys Kubernetes reads itself, and
	// kubectl rollout restart's, are refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// ServiceAccountName is the ServiceAccount the Pods run as (core/v1
	// PodSpec.serviceAccountName); unset, the namespace's default one.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// ServiceAccount is the Pods' ServiceAccount, with more to say than
	// serviceAccountName: a ServiceAccount the controller creates (create),
	// its annotations, and whether the Pods mount its token. Set this or
	// serviceAccountName, not both.
	// +optional
	ServiceAccount *ServiceAccount `json:"serviceAccount,omitempty"`

	// ImagePullSecrets name the Secrets, in the AppService's namespace, that
	// hold the credentials for pulling the image from a private registry
	// (core/v1 PodSpec.imagePullSecrets).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// NodeSelector places the Pods on nodes carrying all these labels
	// (core/v1 PodSpec.nodeSelector). Keys and values are label keys and
	// values; the rules are in config/crd/patches/long-rules.yaml.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let the Pods run on nodes with matching taints (core/v1
	// PodSpec.tolerations). The rules are in
	// config/crd/patches/long-rules.yaml.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity places the Pods by node labels and by the other Pods
	// already on a node or in a zone (core/v1 PodSpec.affinity): e.g. one
	// replica per node with podAntiAffinity. The rules are in
	// config/crd/patches/scheduling-rules.yaml.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Rules: config/crd/patches/scheduling-rules.yaml.

	// TopologySpreadConstraints spread the Pods across zones or nodes
	// (core/v1 PodSpec.topologySpreadConstraints), one per topologyKey and
	// whenUnsatisfiable. matchLabelKeys needs its feature (beta, on by
	// default).
	// +optional
	// +listType=map
	// +listMapKey=topologyKey
	// +listMapKey=whenUnsatisfiable
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PriorityClassName is the PriorityClass of the Pods (core/v1
	// PodSpec.priorityClassName); it must exist when the Pods are created.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// TerminationGracePeriodSeconds is how long a stopping Pod has between
	// SIGTERM and SIGKILL (core/v1 PodSpec.terminationGracePeriodSeconds).
	// Default 30.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// Strategy is how a new version replaces the old Pods (apps/v1
	// DeploymentSpec.strategy): RollingUpdate (the default, 25% unavailable
	// and 25% surge unless given) or Recreate. The rules the Deployment
	// checks are in config/crd/patches/long-rules.yaml.
	// +optional
	Strategy *appsv1.DeploymentStrategy `json:"strategy,omitempty"`

	// MinReadySeconds is how long a new Pod must be ready, without any
	// container crashing, to count as available (apps/v1
	// DeploymentSpec.minReadySeconds). Default 0; less than
	// progressDeadlineSeconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// RevisionHistoryLimit is how many old ReplicaSets are kept for a
	// rollback (apps/v1 DeploymentSpec.revisionHistoryLimit). Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// ProgressDeadlineSeconds is how long a rollout may make no progress
	// before it is reported as failed, in the Progressing condition (apps/v1
	// DeploymentSpec.progressDeadlineSeconds). Default 600; more than
	// minReadySeconds.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// Resources are the compute resources of the application's container.
	// The names, signs and units allowed in requests and limits are in
	// config/crd/patches; the rules comparing requests with limits are
	// below, and those for hugepages and extended resources, too long for a
	// marker line, in config/crd/patches/long-rules.yaml.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.claims) || size(self.claims) == 0",message="resource claims are not supported: the controller's Pods declare none",fieldPath=".claims"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || self.requests.all(k, !(k in self.limits) || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",message="each request must be less than or equal to its limit",fieldPath=".requests"
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Envs are the environment variables of the application's container.
	// The names' bounds are in config/crd/patches, as is the rule that a
	// resourceFieldRef names no container but the AppService's one (in
	// long-rules.yaml: it spans the AppService, and is too long for a
	// marker line).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:XValidation:rule="!has(self.valueFrom) || !has(self.value) || size(self.value) == 0",message="may not be set when value is not empty",fieldPath=".valueFrom"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.valueFrom) || [has(self.valueFrom.fieldRef), has(self.valueFrom.resourceFieldRef), has(self.valueFrom.configMapKeyRef), has(self.valueFrom.secretKeyRef)].filter(x, x).size() == 1",message="must set exactly one of fieldRef, resourceFieldRef, configMapKeyRef or secretKeyRef",fieldPath=".valueFrom"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.valueFrom) || !has(self.valueFrom.fileKeyRef)",message="fileKeyRef is not supported: it is feature-gated (EnvFiles)",fieldPath=".valueFrom"
	Envs []corev1.EnvVar `json:"envs,omitempty"`

	// EnvFrom fills the container's environment with every key of
	// ConfigMaps and Secrets (core/v1 Container.envFrom), each optionally
	// prefixed; envs win over them. Exactly one of configMapRef or
	// secretRef per entry; the rules are in config/crd/patches/long-rules.yaml.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// Volumes are the Pods' volumes: configMap, secret, emptyDir,
	// persistentVolumeClaim, projected or downwardAPI, each a focused
	// version of its core/v1 namesake (see volumes.go). Names are unique.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Volumes []Volume `json:"volumes,omitempty"`

	// RolloutOnConfigChange rolls the Pods when the data of a ConfigMap or
	// Secret they read (volume, envFrom or env) changes, through a digest in
	// the pod template's app.example.com/config-digest annotation. Off by
	// default; turning it off rolls once.
	// +optional
	RolloutOnConfigChange bool `json:"rolloutOnConfigChange,omitempty"`

	// VolumeMounts mount volumes in the container (core/v1
	// Container.volumeMounts); each names one of volumes, and mount paths
	// are unique.
	// +optional
	// +listType=map
	// +listMapKey=mountPath
	// +kubebuilder:validation:MaxItems=64
	VolumeMounts []VolumeMount `json:"volumeMounts,omitempty"`

	// InitContainers run in order, each to completion, before the app's
	// container and the sidecars start (core/v1 PodSpec.initContainers):
	// to wait for a database or run a migration. Names are unique among
	// the Pod's containers; no ports, probes or lifecycle. The rules that
	// span the spec are in config/crd/patches/container-rules.yaml.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	InitContainers []Container `json:"initContainers,omitempty"`

	// Sidecars run beside the app's container for the Pod's whole life:
	// native sidecars, init containers with restartPolicy Always placed
	// after initContainers, so they start after those and before the app,
	// and stop after it. To ship logs, proxy to a database, renew
	// certificates or export metrics.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Sidecars []Container `json:"sidecars,omitempty"`

	// Nested bounds and uniqueness by port and protocol: config/crd/patches.

	// Ports are the ports of the Service, each also declared on the
	// container (its targetPort, or port). No ports: no Service.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="size(self) <= 1 || self.all(p, has(p.name) && size(p.name) > 0)",message="each port must have a name when there is more than one"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.name) || size(p.name) == 0 || self.exists_one(q, has(q.name) && q.name == p.name))",message="port names must be unique"
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.nodePort) || p.nodePort == 0 || self.exists_one(q, has(q.nodePort) && q.nodePort == p.nodePort && q.protocol == p.protocol))",message="each nodePort and protocol may appear only once"
	Ports []corev1.ServicePort `json:"ports,omitempty"`

	// ServiceType is the type of the Service: NodePort (the default),
	// ClusterIP or LoadBalancer.
	// +optional
	// +kubebuilder:default=NodePort
	// +kubebuilder:validation:Enum=NodePort;ClusterIP;LoadBalancer
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`

	// Autoscaling makes a HorizontalPodAutoscaler scale the Deployment
	// between minReplicas and maxReplicas. While it is set, size is ignored:
	// the autoscaler owns the replica count.
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`

	// Ingress makes an Ingress that routes HTTP and HTTPS from outside the
	// cluster to the Service: needs ports. Its first named host is in the
	// status as url.
	// +optional
	Ingress *Ingress `json:"ingress,omitempty"`

	// HTTPRoute makes a Gateway API HTTPRoute that routes HTTP from
	// Gateways to the Service: needs ports, and the Gateway API installed
	// in the cluster. Its first named hostname is in the status as url when
	// there is no ingress.
	// +optional
	HTTPRoute *HTTPRoute `json:"httpRoute,omitempty"`

	// GRPCRoute makes a Gateway API GRPCRoute that routes gRPC from
	// Gateways to the Service: needs ports, and the Gateway API installed
	// in the cluster. It may go with httpRoute.
	// +optional
	GRPCRoute *GRPCRoute `json:"grpcRoute,omitempty"`

	// DisruptionBudget makes a PodDisruptionBudget that keeps enough Pods
	// running through voluntary disruptions such as node drains.
	// +optional
	DisruptionBudget *DisruptionBudget `json:"disruptionBudget,omitempty"`

	// Canary sends each step's share of the traffic to a Deployment
	// NAME-canary running a new Pod template, before the running Pods roll
	// to it: through the routes' weights, or without a route by its
	// share of the Pods behind the Service (docs/canary.md).
	// +optional
	Canary *Canary `json:"canary,omitempty"`
}

// AppServiceStatus is the observed state of an AppService.
type AppServiceStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of Pods of the Deployment.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas is the number of ready Pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of Pods ready for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// UpdatedReplicas is the number of Pods running the current spec.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// URL is where the app is reached from outside the cluster: the first
	// named host of its Ingress, https when the Ingress terminates TLS for
	// it, and that host's first path; without an Ingress, the first named
	// hostname of its HTTPRoute.
	// +optional
	URL string `json:"url,omitempty"`

	// Selector is the label selector of the Pods, in string form, for the
	// scale subresource (and so for HorizontalPodAutoscalers).
	// +optional
	Selector string `json:"selector,omitempty"`

	// Canary is where the canary stands.
	// +optional
	Canary *CanaryStatus `json:"canary,omitempty"`

	// Notifications are the last release's edges and their deliveries
	// (NotificationDestination).
	// +optional
	Notifications *NotificationsStatus `json:"notifications,omitempty"`

	// Conditions are Available, Progressing and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// AppServiceList is a list of AppServices.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type AppServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []AppService `json:"items"`
}
