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
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestCachedMetadata: a Cached object keeps decoded what the keys, the
// indexes and the handlers read, its labels only when asked to, and loses
// nothing of the metadata: what it does not keep decoded comes back from
// Decode.
func TestCachedMetadata(t *testing.T) {
	deleted := metav1.Unix(1700000100, 0)
	whole := func(controller bool) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Name: "web", Namespace: fixtures.Namespace, UID: "s-uid", ResourceVersion: "42", Generation: 3,
				GenerateName: "web-", CreationTimestamp: metav1.Unix(1700000000, 0), DeletionTimestamp: &deleted,
				DeletionGracePeriodSeconds: new(int64(30)), Finalizers: []string{"example.com/keep"},
				Labels:          map[string]string{appv1.LabelAppService: "web"},
				Annotations:     map[string]string{"app.example.com/annotations": ""},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "app.example.com/v1", Kind: "AppService", Name: "web", UID: fixtures.UID, Controller: &controller}},
			},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		}
	}
	for _, tc := range []struct {
		name       string
		controller bool
		encode     func(*corev1.Service) (*Cached, error)
		labelsKept bool
	}{
		{"a child with a controller", true, func(s *corev1.Service) (*Cached, error) { return Encode(s) }, false},
		{"a child without one", false, func(s *corev1.Service) (*Cached, error) { return Encode(s) }, true},
		{"labels encoded", false, func(s *corev1.Service) (*Cached, error) { return EncodeLabelled(s) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := whole(tc.controller)
			c, err := tc.encode(whole(tc.controller))
			if err != nil {
				t.Fatal(err)
			}
			m, err := meta.Accessor(c)
			if err != nil {
				t.Fatal(err)
			}
			if m.GetName() != "web" || m.GetNamespace() != fixtures.Namespace || m.GetUID() != "s-uid" ||
				m.GetResourceVersion() != "42" || !m.GetDeletionTimestamp().Equal(&deleted) ||
				len(m.GetOwnerReferences()) != 1 || m.GetOwnerReferences()[0].UID != fixtures.UID {
				t.Errorf("kept decoded: %+v", c)
			}
			if got := m.GetLabels() != nil; got != tc.labelsKept {
				t.Errorf("labels kept decoded: %v, want %v", got, tc.labelsKept)
			}
			if m.GetAnnotations() != nil || m.GetFinalizers() != nil {
				t.Errorf("annotations %v and finalizers %v kept decoded, want encoded", m.GetAnnotations(), m.GetFinalizers())
			}
			got, err := Decode[*corev1.Service](c)
			if err != nil {
				t.Fatal(err)
			}
			fixtures.CheckEqual(t, "decoded", want, got)
			copied, ok := c.DeepCopyObject().(*Cached)
			if !ok {
				t.Fatal("DeepCopyObject is not a *Cached")
			}
			fromCopy, err := Decode[*corev1.Service](copied)
			if err != nil {
				t.Fatal(err)
			}
			fixtures.CheckEqual(t, "decoded from a deep copy", want, fromCopy)
		})
	}
}

// TestCompressed: what a cache keeps of a realistic AppService is its CBOR
// compressed to less than a third, and the dictionary is the same in every
// process.
func TestCompressed(t *testing.T) {
	as := fixtures.RealisticAppService("web")
	as.ManagedFields = nil
	plain, err := direct.Marshal(as)
	if err != nil {
		t.Fatal(err)
	}
	c, err := EncodeLabelled(as.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Data)*3 > len(plain) {
		t.Errorf("cached in %d bytes, its CBOR %d: want less than a third", len(c.Data), len(plain))
	}
	got, err := Decode[*appv1.AppService](c)
	if err != nil {
		t.Fatal(err)
	}
	fixtures.CheckEqual(t, "decoded", as, got)
	if !bytes.Equal(dictionary(), dictionary()) {
		t.Error("the dictionary differs from one making to the next")
	}
}
