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
)

// The init containers and sidecars are focused core/v1 Containers: the
// fields keep their core/v1 names and meanings, so a container carries over
// by copy and paste, and each field shared with the AppService's own
// container has the same schema and rules as its namesake in the spec
// (hack/crdtrim copies them from there, with shorter lists). Ports, probes
// and lifecycle handlers are for sidecars only: an init container runs to
// completion before the next one starts, and the API server refuses them
// there.

// Container is an init container or a sidecar: a focused core/v1 Container.
//
// +kubebuilder:validation:XValidation:rule="!has(self.env) || self.env.all(e, !has(e.valueFrom) || !has(e.valueFrom.resourceFieldRef) || !has(e.valueFrom.resourceFieldRef.containerName) || size(e.valueFrom.resourceFieldRef.containerName) == 0 || e.valueFrom.resourceFieldRef.containerName == self.name)",message="resourceFieldRef.containerName must be empty or this container's name",fieldPath=".env"
type Container struct {
	// Name names the container: a DNS-1123 label, unique among the Pod's
	// containers (the app's is the AppService's name).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Image is the container's image.
	// +required
	Image string `json:"image"`

	// ImagePullPolicy is as spec.imagePullPolicy.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// Command is the entrypoint, as spec.command.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`

	// Args are the entrypoint's arguments, as spec.args.
	// +optional
	// +listType=atomic
	Args []string `json:"args,omitempty"`

	// WorkingDir is as spec.workingDir.
	// +optional
	WorkingDir string `json:"workingDir,omitempty"`

	// Env is the container's environment, as spec.envs.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Env []corev1.EnvVar `json:"env,omitempty"`

	// EnvFrom is as spec.envFrom.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// Resources are the container's compute resources, as spec.resources.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// VolumeMounts mount spec.volumes in the container, as
	// spec.volumeMounts.
	// +optional
	// +listType=map
	// +listMapKey=mountPath
	// +kubebuilder:validation:MaxItems=16
	VolumeMounts []VolumeMount `json:"volumeMounts,omitempty"`

	// SecurityContext is as spec.securityContext.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`

	// Ports are the sidecar's ports (sidecars only). None may clash with
	// another sidecar's or the app container's (from spec.ports), by number
	// and protocol or by name.
	// +optional
	// +listType=map
	// +listMapKey=containerPort
	// +listMapKey=protocol
	// +kubebuilder:validation:MaxItems=8
	Ports []ContainerPort `json:"ports,omitempty"`

	// LivenessProbe is as spec.livenessProbe (sidecars only).
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// ReadinessProbe is as spec.readinessProbe (sidecars only): a sidecar
	// that is not ready makes the Pod not ready.
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// StartupProbe is as spec.startupProbe (sidecars only): the app
	// starts once it succeeds.
	// +optional
	StartupProbe *corev1.Probe `json:"startupProbe,omitempty"`

	// Lifecycle is as spec.lifecycle (sidecars only).
	// +optional
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`
}

// ContainerPort is a sidecar's port (core/v1 ContainerPort, without host
// ports).
type ContainerPort struct {
	// Name names the port: an IANA service name.
	// +optional
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9](-?[a-z0-9])*$`
	// +kubebuilder:validation:XValidation:rule="self.matches('[a-z]')",message="must contain at least one letter (an IANA service name)"
	Name string `json:"name,omitempty"`

	// ContainerPort is the port number.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ContainerPort int32 `json:"containerPort"`

	// Protocol is TCP (the default), UDP or SCTP.
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol corev1.Protocol `json:"protocol,omitempty"`
}
