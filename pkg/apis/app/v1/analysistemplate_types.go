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

// A fleet's judge, defined once: an AnalysisTemplate (in a namespace) or a
// ClusterAnalysisTemplate (for the whole cluster) holds metrics written as
// spec.canary.analysis.metrics are, with arguments; an AppService names it
// in spec.canary.analysis.templates, and each canary runs its metrics as
// they were resolved at the canary's start (status.canary.templates).
// Their CRDs are artifacts/examples/crd-analysistemplate.yaml and
// crd-clusteranalysistemplate.yaml.

// AnalysisTemplate is metrics that the canaries of the AppServices of its
// namespace may run (spec.canary.analysis.templates).
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
//
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="Metrics",type=string,JSONPath=`.spec.metrics[*].name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AnalysisTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AnalysisTemplateSpec `json:"spec"`
}

// ClusterAnalysisTemplate is metrics that the canaries of every namespace
// may run (spec.canary.analysis.templates, kind ClusterAnalysisTemplate).
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Metrics",type=string,JSONPath=`.spec.metrics[*].name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterAnalysisTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AnalysisTemplateSpec `json:"spec"`
}

// AnalysisTemplateSpec is a template's arguments and metrics.
// +kubebuilder:validation:XValidation:rule="self.metrics.all(m, m.query.findAll('[{][{] *args[.][A-Za-z0-9_]+ *[}][}]').all(p, has(self.args) && p.replace('args.', ' ').replace('{{', ' ').replace('}}', ' ').trim() in self.args.map(a, a.name)))",message="a query uses an argument that spec.args does not declare",fieldPath=".metrics"
type AnalysisTemplateSpec struct {
	// Args are the arguments its queries use as {{ args.NAME }}; a
	// reference gives their values (spec.canary.analysis.templates[].args).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Args []AnalysisArg `json:"args,omitempty"`

	// Metrics are measured as spec.canary.analysis.metrics are.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=5
	Metrics []AnalysisMetric `json:"metrics"`
}

// AnalysisArg is an argument of a template.
type AnalysisArg struct {
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_]*$`
	Name string `json:"name"`

	// Value is its default, for a reference that gives none.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Value *string `json:"value,omitempty"`
}

// AnalysisTemplateRef names a template of an AppService's analysis.
type AnalysisTemplateRef struct {
	// +required
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Kind is AnalysisTemplate (in the AppService's namespace) or
	// ClusterAnalysisTemplate.
	// +optional
	// +kubebuilder:default=AnalysisTemplate
	Kind AnalysisTemplateKind `json:"kind,omitempty"`

	// Args are the values of the template's arguments, by name; an
	// argument left out takes its default.
	// +optional
	// +kubebuilder:validation:MaxProperties=10
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 63 && k.matches('^[A-Za-z][A-Za-z0-9_]*$') && size(self[k]) <= 1024)",message="an argument's name is a letter then letters, digits or _ (at most 63), its value at most 1024 characters"
	Args map[string]string `json:"args,omitempty"`
}

// AnalysisTemplateKind is the kind of a template an analysis names.
// +kubebuilder:validation:Enum=AnalysisTemplate;ClusterAnalysisTemplate
type AnalysisTemplateKind string

// The kinds of templates.
const (
	KindAnalysisTemplate        AnalysisTemplateKind = "AnalysisTemplate"
	KindClusterAnalysisTemplate AnalysisTemplateKind = "ClusterAnalysisTemplate"
)

// PinnedTemplate is a template as a canary resolved it at its start.
type PinnedTemplate struct {
	// +required
	Kind AnalysisTemplateKind `json:"kind"`
	// +required
	Name string `json:"name"`

	// Digest is a digest of what was resolved: its metrics, with the
	// arguments in place.
	// +required
	Digest string `json:"digest"`

	// Metrics are its metrics as resolved.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	Metrics []PinnedMetric `json:"metrics"`

	// Latest is the digest of the template as it is now, when an edit
	// changed it after the canary started: the next canary runs it.
	// +optional
	Latest string `json:"latest,omitempty"`
}

// PinnedMetric is a template's metric with its arguments in place.
type PinnedMetric struct {
	// +required
	Name string `json:"name"`
	// +required
	Query string `json:"query"`
	// +optional
	Min *string `json:"min,omitempty"`
	// +optional
	Max *string `json:"max,omitempty"`
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// AnalysisTemplateList is a list of AnalysisTemplates.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type AnalysisTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []AnalysisTemplate `json:"items"`
}

// ClusterAnalysisTemplateList is a list of ClusterAnalysisTemplates.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterAnalysisTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []ClusterAnalysisTemplate `json:"items"`
}
