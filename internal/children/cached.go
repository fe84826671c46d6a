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

package children

import (
	"maps"
	"slices"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Cached is an object as the informers' caches keep it (Encode, Trim): the
// metadata the informer's keys, the indexes and the event handlers read,
// decoded, and the rest of the object, the rest of its metadata with it,
// encoded (protobuf for the built-in kinds; for HTTPRoutes and
// AppServices, which have no protobuf form, the API machinery's CBOR, which
// the API server also speaks: 16% smaller than their JSON and decoded in
// half the time), then compressed (compress.go). Decode returns the object
// whole.
//
// It is a metav1.Object of its own rather than a metav1.ObjectMeta
// embedded: that struct has room for every field of the metadata, 232
// bytes whatever it holds, and this one for the six it keeps, 128 with the
// encoded object's slice: at 10,000 AppServices with their children, 5 MB
// of the controller's heap (BENCHMARKS.md, issue 74). What is encoded reads
// as empty here (the generation, the annotations, the finalizers, the
// creation time, a child's labels when it has a controller), and setting it
// does nothing: like every cached object, a Cached one is never modified.
type Cached struct {
	name, namespace   string
	uid               types.UID
	resourceVersion   string
	deletionTimestamp *metav1.Time
	ownerReferences   []metav1.OwnerReference
	// labels are kept decoded when the handlers read them (a child without
	// a controller is found its owner by our label), else encoded.
	labels map[string]string
	// Data is the object without the metadata above, encoded and
	// compressed.
	Data []byte
}

var (
	_ metav1.Object  = &Cached{}
	_ runtime.Object = &Cached{}
)

// newCached takes out of m what a Cached object keeps decoded (the labels
// too, if labels is false), leaving in m what is encoded with the object.
func newCached(m *metav1.ObjectMeta, labels bool) *Cached {
	c := &Cached{
		name: m.Name, uid: m.UID, resourceVersion: m.ResourceVersion,
		// A few namespaces hold many objects: their names are shared.
		namespace:         unique.Make(m.Namespace).Value(),
		deletionTimestamp: m.DeletionTimestamp, ownerReferences: m.OwnerReferences,
	}
	m.Name, m.Namespace, m.UID, m.ResourceVersion = "", "", "", ""
	m.DeletionTimestamp, m.OwnerReferences = nil, nil
	if !labels {
		c.labels, m.Labels = m.Labels, nil
	}
	return c
}

// NewCached is a Cached object of this metadata, its labels kept decoded,
// and of this encoded object (for tests: Encode makes them).
func NewCached(m metav1.ObjectMeta, data []byte) *Cached {
	c := newCached(&m, false)
	c.Data = data
	return c
}

// metadata is the whole metadata of the object c holds: rest, as decoded
// from Data, with what c keeps decoded.
func (c *Cached) metadata(rest metav1.ObjectMeta) metav1.ObjectMeta {
	rest.Name, rest.Namespace, rest.UID, rest.ResourceVersion = c.name, c.namespace, c.uid, c.resourceVersion
	rest.DeletionTimestamp, rest.OwnerReferences = c.deletionTimestamp, c.ownerReferences
	if c.labels != nil {
		rest.Labels = c.labels
	}
	return rest
}

// DeepCopyObject makes Cached a runtime.Object, as informers need.
func (c *Cached) DeepCopyObject() runtime.Object {
	out := *c
	out.deletionTimestamp = c.deletionTimestamp.DeepCopy()
	out.ownerReferences = nil
	for i := range c.ownerReferences {
		out.ownerReferences = append(out.ownerReferences, *c.ownerReferences[i].DeepCopy())
	}
	out.labels = maps.Clone(c.labels)
	out.Data = slices.Clone(c.Data)
	return &out
}

// GetObjectKind: the kind is the informer's, not kept with each object.
func (c *Cached) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// The metadata kept decoded.

func (c *Cached) GetNamespace() string                            { return c.namespace }
func (c *Cached) SetNamespace(namespace string)                   { c.namespace = namespace }
func (c *Cached) GetName() string                                 { return c.name }
func (c *Cached) SetName(name string)                             { c.name = name }
func (c *Cached) GetUID() types.UID                               { return c.uid }
func (c *Cached) SetUID(uid types.UID)                            { c.uid = uid }
func (c *Cached) GetResourceVersion() string                      { return c.resourceVersion }
func (c *Cached) SetResourceVersion(version string)               { c.resourceVersion = version }
func (c *Cached) GetDeletionTimestamp() *metav1.Time              { return c.deletionTimestamp }
func (c *Cached) SetDeletionTimestamp(t *metav1.Time)             { c.deletionTimestamp = t }
func (c *Cached) GetOwnerReferences() []metav1.OwnerReference     { return c.ownerReferences }
func (c *Cached) SetOwnerReferences(refs []metav1.OwnerReference) { c.ownerReferences = refs }
func (c *Cached) GetLabels() map[string]string                    { return c.labels }
func (c *Cached) SetLabels(labels map[string]string)              { c.labels = labels }

// The metadata encoded with the object: empty here (Decode reads it).

func (c *Cached) GetGeneration() int64                          { return 0 }
func (c *Cached) SetGeneration(int64)                           {}
func (c *Cached) GetGenerateName() string                       { return "" }
func (c *Cached) SetGenerateName(string)                        {}
func (c *Cached) GetSelfLink() string                           { return "" }
func (c *Cached) SetSelfLink(string)                            {}
func (c *Cached) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (c *Cached) SetCreationTimestamp(metav1.Time)              {}
func (c *Cached) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (c *Cached) SetDeletionGracePeriodSeconds(*int64)          {}
func (c *Cached) GetAnnotations() map[string]string             { return nil }
func (c *Cached) SetAnnotations(map[string]string)              {}
func (c *Cached) GetFinalizers() []string                       { return nil }
func (c *Cached) SetFinalizers([]string)                        {}
func (c *Cached) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (c *Cached) SetManagedFields([]metav1.ManagedFieldsEntry)  {}
