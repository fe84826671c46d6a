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

// Package appcache is how the controller's informer caches the AppServices:
// each AppService encoded, and a lister that decodes it for whoever reads
// it.
//
// The cache keeps the part of an AppService's metadata that the informer's
// keys and the handlers read decoded, and the rest (spec, status, labels,
// annotations) as compressed CBOR, in a children.Cached
// (children.EncodeLabelled). A label selector is matched once decoded. A
// realistic AppService takes 5254 bytes of Go heap decoded and about 550
// so (424 of them the compressed CBOR): the Go structs of a spec are
// mostly empty fields and pointers. What reads an AppService whole decodes
// it: Lister, which the sync and the per-object metrics read through, and
// the config watch's indexes (configs.go at the root, through Decode). A
// decode costs about 16 µs and 6.5 KB of garbage, once per sync
// (BenchmarkDecode; BENCHMARKS.md has the figures).
//
// Of this repository it may import internal/children (the encoding), the
// API's types (pkg/apis/app/v1) and the generated listers
// (pkg/generated/...), and nothing else of it.
package appcache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// Transform is the transform of the informer factory of the AppServices:
// an AppService is kept encoded, without its managedFields; any other
// object of the factory (an Activity, a tombstone) only loses its
// managedFields, if it has any.
func Transform(obj any) (any, error) {
	if as, ok := obj.(*appv1.AppService); ok {
		as.ManagedFields = nil
		return children.EncodeLabelled(as)
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// Decode returns the AppService an informer's cache holds as obj: encoded
// (Transform), or whole (as tests fill a cache). Like any cached object,
// it must not be modified.
func Decode(obj any) (*appv1.AppService, error) {
	switch o := obj.(type) {
	case *appv1.AppService:
		return o, nil
	case *children.Cached:
		return children.Decode[*appv1.AppService](o)
	}
	return nil, fmt.Errorf("the AppServices' cache holds a %T", obj)
}

// Lister is the generated AppServiceLister's interface over the encoded
// cache: each AppService it returns is decoded for the caller.
type Lister struct{ indexer cache.Indexer }

var _ listers.AppServiceLister = Lister{}

// NewLister lists the AppServices of an informer's indexer.
func NewLister(indexer cache.Indexer) Lister {
	return Lister{indexer: indexer}
}

// List returns the AppServices whose labels selector matches.
func (l Lister) List(selector labels.Selector) ([]*appv1.AppService, error) {
	return decodeAll(selector, func(add cache.AppendFunc) error { return cache.ListAll(l.indexer, labels.Everything(), add) })
}

// Each calls visit with each AppService, decoded for that call alone, so
// that a reader of them all (the per-object metrics) never holds them all
// decoded at once.
func (l Lister) Each(visit func(*appv1.AppService)) error {
	for _, obj := range l.indexer.List() {
		as, err := Decode(obj)
		if err != nil {
			return err
		}
		visit(as)
	}
	return nil
}

// AppServices returns the lister of one namespace's AppServices.
func (l Lister) AppServices(namespace string) listers.AppServiceNamespaceLister {
	return namespaceLister{indexer: l.indexer, namespace: namespace}
}

type namespaceLister struct {
	indexer   cache.Indexer
	namespace string
}

// List returns the namespace's AppServices whose labels selector matches.
func (l namespaceLister) List(selector labels.Selector) ([]*appv1.AppService, error) {
	return decodeAll(selector, func(add cache.AppendFunc) error {
		return cache.ListAllByNamespace(l.indexer, l.namespace, labels.Everything(), add)
	})
}

// Get returns the namespace's AppService called name, or a NotFound error.
func (l namespaceLister) Get(name string) (*appv1.AppService, error) {
	obj, exists, err := l.indexer.GetByKey(l.namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, errors.NewNotFound(appv1.Resource("appservice"), name)
	}
	return Decode(obj)
}

// decodeAll decodes the AppServices list hands to its function, and
// returns those whose labels selector matches (the labels are encoded with
// the rest), stopping at the first that does not decode.
func decodeAll(selector labels.Selector, list func(cache.AppendFunc) error) ([]*appv1.AppService, error) {
	var (
		ret       []*appv1.AppService
		decodeErr error
	)
	err := list(func(obj any) {
		if decodeErr != nil {
			return
		}
		as, err := Decode(obj)
		if err != nil {
			decodeErr = err
			return
		}
		if selector.Empty() || selector.Matches(labels.Set(as.Labels)) {
			ret = append(ret, as)
		}
	})
	if err != nil {
		return nil, err
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	return ret, nil
}
