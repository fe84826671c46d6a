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

package appcache

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestLister: the cache keeps each AppService encoded, under the keys the
// handlers use, and the lister gives it back whole, managedFields aside;
// an object that does not decode is an error, never a shorter list.
func TestLister(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	web, other, plain := fixtures.RealisticAppService("web"), fixtures.RealisticAppService("other"), fixtures.RealisticAppService("plain")
	other.Namespace, other.Labels = "elsewhere", nil
	plain.Namespace, plain.Labels = "elsewhere", nil
	for _, as := range []*appv1.AppService{web, other, plain} {
		cached, err := Transform(as.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cached.(*children.Cached); !ok {
			t.Fatalf("cached as %T, want *children.Cached", cached)
		}
		if name, err := cache.ObjectToName(cached); err != nil || name.Name != as.Name || name.Namespace != as.Namespace {
			t.Errorf("the handlers' key of the cached %s: %v, %v", as.Name, name, err)
		}
		fixtures.MustAdd(t, indexer, cached)
	}
	want := web.DeepCopy()
	want.ManagedFields = nil

	lister := NewLister(indexer)
	got, err := lister.AppServices(web.Namespace).Get("web")
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("Get decoded\n%+v\nwant\n%+v", got, want)
	}
	if _, err := lister.AppServices(web.Namespace).Get("missing"); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing AppService: %v, want NotFound", err)
	}
	all, err := lister.List(labels.Everything())
	if err != nil || len(all) != 3 {
		t.Errorf("List: %d AppServices, %v; want 3", len(all), err)
	}
	shop, err := lister.List(labels.SelectorFromSet(labels.Set{"team": "shop"}))
	if err != nil || len(shop) != 1 || shop[0].Name != "web" {
		t.Errorf("List team=shop: %v, %v; want web", shop, err)
	}
	inNamespace, err := lister.AppServices("elsewhere").List(labels.Everything())
	if err != nil || len(inNamespace) != 2 {
		t.Errorf("List in elsewhere: %v, %v; want other and plain", inNamespace, err)
	}
	visited := 0
	if err := lister.Each(func(as *appv1.AppService) { visited++ }); err != nil || visited != 3 {
		t.Errorf("Each visited %d AppServices, %v; want 3", visited, err)
	}

	// An AppService that does not decode (only a bug could cache one).
	fixtures.MustAdd(t, indexer, children.NewCached(metav1.ObjectMeta{Namespace: "elsewhere", Name: "broken"}, []byte("not CBOR")))
	if got, err := lister.List(labels.Everything()); err == nil {
		t.Errorf("List over an AppService that does not decode: %d AppServices and no error", len(got))
	}
	if got, err := lister.AppServices("elsewhere").List(labels.Everything()); err == nil {
		t.Errorf("List in elsewhere over an AppService that does not decode: %d AppServices and no error", len(got))
	}
	if err := lister.Each(func(*appv1.AppService) {}); err == nil {
		t.Error("Each over an AppService that does not decode: no error")
	}
}

// TestTransformOthers: what else the factory caches (the Activities) keeps
// no managedFields; tombstones pass through untouched.
func TestTransformOthers(t *testing.T) {
	a := &appv1.Activity{ObjectMeta: metav1.ObjectMeta{Name: "a",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}}}
	got, err := Transform(a)
	if err != nil || got != a || a.ManagedFields != nil {
		t.Errorf("Transform of an Activity: %v, %v; managedFields %v", got, err, a.ManagedFields)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "default/x", Obj: &appsv1.Deployment{}}
	if got, err := Transform(tombstone); err != nil || got != tombstone {
		t.Errorf("tombstone changed: %v, %v", got, err)
	}
}

// BenchmarkDecode is what the encoded cache costs a sync (one decode) and
// saves (bytes held), for a realistic AppService.
func BenchmarkDecode(b *testing.B) {
	cached, err := Transform(fixtures.RealisticAppService("web"))
	if err != nil {
		b.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	fixtures.MustAdd(b, indexer, cached)
	lister := NewLister(indexer).AppServices(fixtures.Namespace)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lister.Get("web"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(cached.(*children.Cached).Data)), "encoded-bytes")
}
