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

package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/metrics"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// The AppServices' cache keeps each AppService encoded: its metadata
// decoded, as the informer's keys, the handlers and label selectors read
// it, and the rest (spec, status, annotations) as the JSON it came in, in a
// children.Cached. A realistic AppService takes 4.8 KB of Go heap decoded
// and 2.2 KB so: the Go structs of a spec are mostly empty fields and
// pointers. What reads an AppService whole decodes it from the cache:
// appServiceLister, which the sync and the metrics read through, and the
// config watch's indexes (configs.go). A decode costs about 25 µs and
// 5 KB of garbage, once per sync; BENCHMARKS.md has the figures.

// cacheAppService is the AppService informer's transform: an AppService is
// kept encoded, without its managedFields; any other object of the factory
// (an Activity) only loses its managedFields.
func cacheAppService(obj any) (any, error) {
	if as, ok := obj.(*appv1.AppService); ok {
		as.ManagedFields = nil
		return children.Encode(as)
	}
	return stripManagedFields(obj)
}

// decodeAppService returns the AppService an informer's cache holds as
// obj: encoded (cacheAppService), or whole (as tests fill a cache). Like
// any cached object, it must not be modified.
func decodeAppService(obj any) (*appv1.AppService, error) {
	switch o := obj.(type) {
	case *appv1.AppService:
		return o, nil
	case *children.Cached:
		return children.Decode[*appv1.AppService](o)
	}
	return nil, fmt.Errorf("the AppServices' cache holds a %T", obj)
}

// appServiceLister is the generated AppServiceLister's interface over the
// encoded cache: each AppService it returns is decoded for the caller. It
// is also metrics.AppServices.
type appServiceLister struct{ indexer cache.Indexer }

var (
	_ listers.AppServiceLister = appServiceLister{}
	_ metrics.AppServices      = appServiceLister{}
)

// newAppServiceLister lists the AppServices of informer's cache.
func newAppServiceLister(informer cache.SharedIndexInformer) appServiceLister {
	return appServiceLister{indexer: informer.GetIndexer()}
}

// List returns the AppServices whose labels selector matches.
func (l appServiceLister) List(selector labels.Selector) (ret []*appv1.AppService, err error) {
	err = cache.ListAll(l.indexer, selector, func(obj any) {
		if err != nil {
			return
		}
		var as *appv1.AppService
		if as, err = decodeAppService(obj); err == nil {
			ret = append(ret, as)
		}
	})
	return ret, err
}

// Each calls visit with each AppService, decoded for that call alone: the
// per-object metrics read them so (metrics.AppServices).
func (l appServiceLister) Each(visit func(*appv1.AppService)) error {
	for _, obj := range l.indexer.List() {
		as, err := decodeAppService(obj)
		if err != nil {
			return err
		}
		visit(as)
	}
	return nil
}

// AppServices returns the lister of one namespace's AppServices.
func (l appServiceLister) AppServices(namespace string) listers.AppServiceNamespaceLister {
	return appServiceNamespaceLister{indexer: l.indexer, namespace: namespace}
}

type appServiceNamespaceLister struct {
	indexer   cache.Indexer
	namespace string
}

// List returns the namespace's AppServices whose labels selector matches.
func (l appServiceNamespaceLister) List(selector labels.Selector) (ret []*appv1.AppService, err error) {
	err = cache.ListAllByNamespace(l.indexer, l.namespace, selector, func(obj any) {
		if err != nil {
			return
		}
		var as *appv1.AppService
		if as, err = decodeAppService(obj); err == nil {
			ret = append(ret, as)
		}
	})
	return ret, err
}

// Get returns the namespace's AppService called name, or a NotFound error.
func (l appServiceNamespaceLister) Get(name string) (*appv1.AppService, error) {
	obj, exists, err := l.indexer.GetByKey(l.namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, errors.NewNotFound(appv1.Resource("appservice"), name)
	}
	return decodeAppService(obj)
}
