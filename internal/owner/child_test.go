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

package owner

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
)

// TestControlledBy: the controller index files children by a hash of their
// controller's UID, many owners to a bucket; ControlledBy returns an
// owner's own children only: not those of another owner in its bucket, nor
// one controlled by an object of another kind with its UID, nor one it
// merely owns.
func TestControlledBy(t *testing.T) {
	informer := informers.NewSharedInformerFactory(k8sfake.NewClientset(), 0).Core().V1().Services().Informer()
	cache, err := NewChildCache[*corev1.Service](informer, appServiceKind)
	if err != nil {
		t.Fatal(err)
	}
	// Two owners whose UIDs share a bucket, and one in another.
	owner := types.UID("6b1a5c3e-0000-4000-8000-000000000000")
	var neighbour, elsewhere types.UID
	for i := 1; neighbour == "" || elsewhere == ""; i++ {
		uid := types.UID(fmt.Sprintf("6b1a5c3e-0000-4000-8000-%012d", i))
		if controllerBucket(uid) == controllerBucket(owner) {
			neighbour = uid
		} else {
			elsewhere = uid
		}
	}
	service := func(name string, uid types.UID, kind string, controller bool) {
		t.Helper()
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: fixtures.Namespace, Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: children.ControllerKind.GroupVersion().String(),
				Kind: kind, Name: name, UID: uid, Controller: &controller}}}}
		cached, err := children.Trim(s)
		if err != nil {
			t.Fatal(err)
		}
		fixtures.MustAdd(t, informer.GetIndexer(), cached)
	}
	service("web", owner, children.ControllerKind.Kind, true)
	service("web-canary", owner, children.ControllerKind.Kind, true)
	service("neighbour", neighbour, children.ControllerKind.Kind, true)
	service("elsewhere", elsewhere, children.ControllerKind.Kind, true)
	service("other-kind", owner, "Other", true)
	service("owned-only", owner, children.ControllerKind.Kind, false)

	for uid, want := range map[types.UID][]string{
		owner:     {"web", "web-canary"},
		neighbour: {"neighbour"},
		elsewhere: {"elsewhere"},
		"none":    nil,
	} {
		got, err := cache.ControlledBy(uid)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range got {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("ControlledBy(%s): %v, want %v", uid, names, want)
		}
	}
}
