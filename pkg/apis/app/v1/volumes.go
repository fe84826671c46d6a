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
	"k8s.io/apimachinery/pkg/api/resource"
)

// The volume types below are a focused subset of core/v1's: the six sources
// applications use (configMap, secret, emptyDir, persistentVolumeClaim,
// projected, downwardAPI), each with the fields of its core/v1 namesake that
// are generally available. Field names and meanings are core/v1's, so a
// Pod's volumes carry over by copy and paste; fields the API server only
// keeps behind a feature gate (the file owners of atomic-writer volumes,
// cluster trust bundles, pod certificates, bind mount options) are left
// out, since a field the server drops would be written again on every sync.
// The builders in internal/children turn them into core/v1 volumes.

// Volume is a volume of the Pods (core/v1 Volume), with exactly one source.
//
// +kubebuilder:validation:XValidation:rule="[has(self.configMap), has(self.secret), has(self.emptyDir), has(self.persistentVolumeClaim), has(self.projected), has(self.downwardAPI)].filter(x, x).size() == 1",message="must set exactly one of configMap, secret, emptyDir, persistentVolumeClaim, projected or downwardAPI"
type Volume struct {
	// Name names the volume for volumeMounts: a DNS-1123 label, unique
	// among the volumes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// ConfigMap puts a ConfigMap's keys in files (core/v1
	// ConfigMapVolumeSource).
	// +optional
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`

	// Secret puts a Secret's keys in files (core/v1 SecretVolumeSource).
	// +optional
	Secret *SecretVolumeSource `json:"secret,omitempty"`

	// EmptyDir is a directory that lives as long as the Pod (core/v1
	// EmptyDirVolumeSource).
	// +optional
	EmptyDir *EmptyDirVolumeSource `json:"emptyDir,omitempty"`

	// PersistentVolumeClaim mounts a PersistentVolumeClaim of the
	// AppService's namespace (core/v1 PersistentVolumeClaimVolumeSource).
	// Every replica mounts the same claim.
	// +optional
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`

	// Projected puts several sources in one directory (core/v1
	// ProjectedVolumeSource).
	// +optional
	Projected *ProjectedVolumeSource `json:"projected,omitempty"`

	// DownwardAPI puts the Pod's own fields in files (core/v1
	// DownwardAPIVolumeSource).
	// +optional
	DownwardAPI *DownwardAPIVolumeSource `json:"downwardAPI,omitempty"`
}

// KeyToPath puts one key in a file (core/v1 KeyToPath).
type KeyToPath struct {
	// Key is the key to project.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`

	// Path is the file's path below the mount point, without '..'.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(?:[^/.][^/]*|\.[^/.][^/]*|\.)(?:/(?:[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+|\.|))*$`
	Path string `json:"path"`

	// Mode is the file's permission bits (0 to 0777); default defaultMode.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	Mode *int32 `json:"mode,omitempty"`
}

// ConfigMapVolumeSource is core/v1's, without the feature-gated file owner.
type ConfigMapVolumeSource struct {
	// Name is the ConfigMap's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Items chooses keys and the files they go to; unset, every key goes
	// to a file of its name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Items []KeyToPath `json:"items,omitempty"`

	// DefaultMode is the files' permission bits (0 to 0777), default 0644.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	DefaultMode *int32 `json:"defaultMode,omitempty"`

	// Optional lets the Pods start without the ConfigMap or its keys.
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// SecretVolumeSource is core/v1's, without the feature-gated file owner.
type SecretVolumeSource struct {
	// SecretName is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName"`

	// Items chooses keys and the files they go to; unset, every key goes
	// to a file of its name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Items []KeyToPath `json:"items,omitempty"`

	// DefaultMode is the files' permission bits (0 to 0777), default 0644.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	DefaultMode *int32 `json:"defaultMode,omitempty"`

	// Optional lets the Pods start without the Secret or its keys.
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// EmptyDirVolumeSource is core/v1's, on disk or in memory.
//
// +kubebuilder:validation:XValidation:rule="!has(self.sizeLimit) || quantity(string(self.sizeLimit)).compareTo(quantity('0')) >= 0",message="must not be negative",fieldPath=".sizeLimit"
type EmptyDirVolumeSource struct {
	// Medium is "" (the node's disk, the default) or Memory (a tmpfs,
	// counted against the container's memory).
	// +optional
	// +kubebuilder:validation:Enum="";Memory
	Medium corev1.StorageMedium `json:"medium,omitempty"`

	// SizeLimit is the most the directory may hold; the Pod is evicted
	// beyond it.
	// +optional
	SizeLimit *resource.Quantity `json:"sizeLimit,omitempty"`
}

// PersistentVolumeClaimVolumeSource is core/v1's.
type PersistentVolumeClaimVolumeSource struct {
	// ClaimName is the PersistentVolumeClaim's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`

	// ReadOnly mounts the claim read-only in every mount.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`
}

// ProjectedVolumeSource is core/v1's, with the generally available
// sources. No two files of its configMap, secret and downwardAPI sources
// may have the same path.
//
// +kubebuilder:validation:XValidation:rule="self.sources.all(s, (has(s.configMap) && has(s.configMap.items) ? s.configMap.items.map(i, i.path) : has(s.secret) && has(s.secret.items) ? s.secret.items.map(i, i.path) : has(s.downwardAPI) && has(s.downwardAPI.items) ? s.downwardAPI.items.map(i, i.path) : []).all(p, self.sources.map(t, (has(t.configMap) && has(t.configMap.items) ? t.configMap.items.filter(i, i.path == p).size() : has(t.secret) && has(t.secret.items) ? t.secret.items.filter(i, i.path == p).size() : has(t.downwardAPI) && has(t.downwardAPI.items) ? t.downwardAPI.items.filter(i, i.path == p).size() : 0)).sum() == 1))",message="no two files of the sources may have the same path",fieldPath=".sources"
type ProjectedVolumeSource struct {
	// Sources are the projections, each with exactly one source.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Sources []VolumeProjection `json:"sources"`

	// DefaultMode is the files' permission bits (0 to 0777), default 0644.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	DefaultMode *int32 `json:"defaultMode,omitempty"`
}

// VolumeProjection is one source of a projected volume (core/v1
// VolumeProjection).
//
// +kubebuilder:validation:XValidation:rule="[has(self.configMap), has(self.secret), has(self.downwardAPI), has(self.serviceAccountToken)].filter(x, x).size() == 1",message="must set exactly one of configMap, secret, downwardAPI or serviceAccountToken"
type VolumeProjection struct {
	// ConfigMap projects a ConfigMap's keys.
	// +optional
	ConfigMap *ConfigMapProjection `json:"configMap,omitempty"`

	// Secret projects a Secret's keys.
	// +optional
	Secret *SecretProjection `json:"secret,omitempty"`

	// DownwardAPI projects the Pod's own fields.
	// +optional
	DownwardAPI *DownwardAPIProjection `json:"downwardAPI,omitempty"`

	// ServiceAccountToken projects a token of the Pods' ServiceAccount,
	// refreshed before it expires.
	// +optional
	ServiceAccountToken *ServiceAccountTokenProjection `json:"serviceAccountToken,omitempty"`
}

// ConfigMapProjection is core/v1's.
type ConfigMapProjection struct {
	// Name is the ConfigMap's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Items chooses keys and the files they go to.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Items []KeyToPath `json:"items,omitempty"`

	// Optional lets the Pods start without the ConfigMap or its keys.
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// SecretProjection is core/v1's.
type SecretProjection struct {
	// Name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Items chooses keys and the files they go to.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Items []KeyToPath `json:"items,omitempty"`

	// Optional lets the Pods start without the Secret or its keys.
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// DownwardAPIProjection is core/v1's.
type DownwardAPIProjection struct {
	// Items are the files.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Items []DownwardAPIVolumeFile `json:"items,omitempty"`
}

// ServiceAccountTokenProjection is core/v1's, without the feature-gated
// file owner.
type ServiceAccountTokenProjection struct {
	// Audience is the audience the token is for; unset, the API server's.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Audience string `json:"audience,omitempty"`

	// ExpirationSeconds is how long the token is valid, at least 600 (ten
	// minutes) and at most 2^32. Default 3600.
	// +optional
	// +kubebuilder:validation:Minimum=600
	// +kubebuilder:validation:Maximum=4294967296
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`

	// Path is the file's path, relative to the mount point.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(?:[^/.][^/]*|\.[^/.][^/]*|\.)(?:/(?:[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+|\.|))*$`
	Path string `json:"path"`
}

// DownwardAPIVolumeSource is core/v1's, without the feature-gated file
// owner.
type DownwardAPIVolumeSource struct {
	// Items are the files.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Items []DownwardAPIVolumeFile `json:"items,omitempty"`

	// DefaultMode is the files' permission bits (0 to 0777), default 0644.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	DefaultMode *int32 `json:"defaultMode,omitempty"`
}

// DownwardAPIVolumeFile is one file of the Pod's own fields (core/v1
// DownwardAPIVolumeFile): exactly one of fieldRef or resourceFieldRef.
//
// +kubebuilder:validation:XValidation:rule="has(self.fieldRef) != has(self.resourceFieldRef)",message="must set exactly one of fieldRef or resourceFieldRef"
type DownwardAPIVolumeFile struct {
	// Path is the file's path, relative to the mount point.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(?:[^/.][^/]*|\.[^/.][^/]*|\.)(?:/(?:[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+|\.|))*$`
	Path string `json:"path"`

	// FieldRef is a field of the Pod: metadata.name, metadata.namespace,
	// metadata.uid, metadata.labels, metadata.annotations, or one label or
	// annotation as metadata.labels['<key>'].
	// +optional
	FieldRef *ObjectFieldSelector `json:"fieldRef,omitempty"`

	// ResourceFieldRef is a request or limit of the AppService's
	// container.
	// +optional
	ResourceFieldRef *ResourceFieldSelector `json:"resourceFieldRef,omitempty"`

	// Mode is the file's permission bits (0 to 0777); default defaultMode.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	Mode *int32 `json:"mode,omitempty"`
}

// ObjectFieldSelector is core/v1's, with the field paths a volume accepts.
//
// +kubebuilder:validation:XValidation:rule="!self.fieldPath.contains('/') || self.fieldPath.indexOf('/') - self.fieldPath.indexOf('[') - 2 <= 253",message="a label or annotation key's prefix must be at most 253 characters",fieldPath=".fieldPath"
type ObjectFieldSelector struct {
	// APIVersion is the version of fieldPath's schema: v1, the default.
	// +optional
	// +kubebuilder:validation:Enum=v1
	APIVersion string `json:"apiVersion,omitempty"`

	// FieldPath is the field.
	// +required
	// +kubebuilder:validation:MaxLength=340
	// +kubebuilder:validation:Pattern=`^(metadata\.(name|namespace|uid|labels|annotations)|metadata\.(labels|annotations)\['([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?'\])$`
	FieldPath string `json:"fieldPath"`
}

// ResourceFieldSelector is core/v1's. A volume's must name the container;
// here it may leave it empty, for the only one there is.
//
// +kubebuilder:validation:XValidation:rule="!has(self.divisor) || size(self.divisor) == 0 || (self.resource.endsWith('.cpu') ? self.divisor in ['1m', '1'] : self.divisor != '1m')",message="divisor must be 1m or 1 for cpu, and 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi or 1Ei otherwise",fieldPath=".divisor"
type ResourceFieldSelector struct {
	// ContainerName is empty or the AppService's name (its container's).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ContainerName string `json:"containerName,omitempty"`

	// Resource is limits.cpu, limits.memory, limits.ephemeral-storage,
	// requests.cpu, requests.memory, requests.ephemeral-storage, or a
	// hugepages request or limit.
	// +required
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^(limits|requests)\.(cpu|memory|ephemeral-storage|hugepages-[0-9]+(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?)$`
	Resource string `json:"resource"`

	// Divisor is the value's unit: 1m (cpu only), 1, 1k to 1E, 1Ki to 1Ei
	// (spelt so); default 1.
	// +optional
	// +kubebuilder:validation:Enum="";"1m";"1";"1k";"1M";"1G";"1T";"1P";"1E";"1Ki";"1Mi";"1Gi";"1Ti";"1Pi";"1Ei"
	Divisor string `json:"divisor,omitempty"`
}

// VolumeMount mounts a volume in the AppService's container (core/v1
// VolumeMount, without mount propagation, which matters only for host
// paths and, Bidirectional, needs a privileged container; and without the
// feature-gated bind mount options).
//
// +kubebuilder:validation:XValidation:rule="!has(self.subPath) || size(self.subPath) == 0 || !has(self.subPathExpr) || size(self.subPathExpr) == 0",message="subPath and subPathExpr are mutually exclusive",fieldPath=".subPathExpr"
// +kubebuilder:validation:XValidation:rule="!has(self.recursiveReadOnly) || self.recursiveReadOnly == 'Disabled' || (has(self.readOnly) && self.readOnly)",message="may only be Enabled or IfPossible when readOnly is true",fieldPath=".recursiveReadOnly"
type VolumeMount struct {
	// Name is the name of one of spec.volumes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// MountPath is where the volume appears in the container, unique
	// among the mounts.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	MountPath string `json:"mountPath"`

	// ReadOnly mounts the volume read-only.
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`

	// RecursiveReadOnly makes submounts read-only too: Disabled (the
	// default), IfPossible or Enabled, the last two with readOnly.
	// +optional
	// +kubebuilder:validation:Enum=Disabled;IfPossible;Enabled
	RecursiveReadOnly *corev1.RecursiveReadOnlyMode `json:"recursiveReadOnly,omitempty"`

	// SubPath mounts this path of the volume instead of its root: relative,
	// with no '..' element.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^(?:(?:[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+|\.)(?:/(?:[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+|\.|))*)?$`
	SubPath string `json:"subPath,omitempty"`

	// SubPathExpr is subPath with $(VAR) replaced by the container's env.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^(?:(?:[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+|\.)(?:/(?:[^/.][^/]*|\.[^/.][^/]*|\.\.[^/]+|\.|))*)?$`
	SubPathExpr string `json:"subPathExpr,omitempty"`
}
