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
	"context"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Rolling the Pods when their config changes (spec.rolloutOnConfigChange).
// The controller must notice a change of the data of the ConfigMaps and
// Secrets the Pods read without holding the cluster's ConfigMaps and
// Secrets in memory:
//
//   - It watches them as metadata only (client-go's metadata informers),
//     each cached object trimmed to its name, namespace and
//     resourceVersion, and only in the namespaces where an AppService turns
//     rolloutOnConfigChange on: the AppServices' handler starts and stops
//     those watches.
//   - An event for one queues the AppServices that read it, found through
//     an index of the AppService informer (configRefIndex).
//   - The sync reads an object's data only when its resourceVersion is not
//     the one its digest was computed from, and keeps only the digest
//     (children.ConfigMapDigest, SecretDigest). A label-only edit costs one
//     read and no write. Nothing of a Secret's data is logged or kept.

// The AppService informer's indexes for the config watch: by the
// ConfigMaps and Secrets an AppService's Pods read ("NAMESPACE/configmap/NAME"),
// and by the namespaces where one needs the watch.
const (
	configRefIndex       = "config-refs"
	configNamespaceIndex = "config-namespaces"
)

// configIndexers index AppServices with rolloutOnConfigChange by what they
// read; the others are in neither index.
var configIndexers = cache.Indexers{
	configRefIndex: func(obj any) ([]string, error) {
		as, ok := obj.(*appv1.AppService)
		if !ok {
			return nil, nil
		}
		refs := children.ConfigRefs(as)
		keys := make([]string, len(refs))
		for i, r := range refs {
			keys[i] = configKey{kind: r.Kind, namespace: as.Namespace, name: r.Name}.String()
		}
		return keys, nil
	},
	configNamespaceIndex: func(obj any) ([]string, error) {
		if as, ok := obj.(*appv1.AppService); ok && len(children.ConfigRefs(as)) > 0 {
			return []string{as.Namespace}, nil
		}
		return nil, nil
	},
}

// configKinds are the watched kinds, by the name children.ConfigRef gives
// them.
var configKinds = map[string]schema.GroupVersionResource{
	children.ConfigMapRef: corev1.SchemeGroupVersion.WithResource("configmaps"),
	children.SecretRef:    corev1.SchemeGroupVersion.WithResource("secrets"),
}

// configKey names one ConfigMap or Secret.
type configKey struct{ kind, namespace, name string }

func (k configKey) String() string { return k.namespace + "/" + k.kind + "/" + k.name }

// knownDigest is the digest of an object's data at a resourceVersion.
type knownDigest struct{ resourceVersion, digest string }

// configWatch watches the ConfigMaps and Secrets that AppServices read, and
// knows their digests.
type configWatch struct {
	// ctx bounds the watches: the process's.
	ctx         context.Context
	metadata    metadata.Interface
	kube        kubernetes.Interface
	appServices cache.Indexer
	// enqueue queues an AppService that reads an object that changed.
	enqueue func(cache.ObjectName)

	mu sync.Mutex
	// namespaces holds the running watches, by namespace.
	namespaces map[string]*namespaceWatch
	// known holds the digests computed so far.
	known map[configKey]knownDigest
}

// namespaceWatch is the metadata watches of one namespace.
type namespaceWatch struct {
	stop   context.CancelFunc
	stores map[string]cache.Store // by kind
}

func newConfigWatch(ctx context.Context, client metadata.Interface, kube kubernetes.Interface,
	appServices cache.SharedIndexInformer, enqueue func(cache.ObjectName)) (*configWatch, error) {
	if err := appServices.AddIndexers(configIndexers); err != nil {
		return nil, err
	}
	return &configWatch{
		ctx: ctx, metadata: client, kube: kube, appServices: appServices.GetIndexer(), enqueue: enqueue,
		namespaces: map[string]*namespaceWatch{}, known: map[configKey]knownDigest{},
	}, nil
}

// track starts the watches of a namespace when an AppService there reads
// ConfigMaps or Secrets with rolloutOnConfigChange, and stops them when none
// does any more. Called from the AppServices' handler, after the informer's
// indexer has taken the change: it never blocks and never calls the API
// itself (the watches run on their own goroutines).
func (w *configWatch) track(namespace string) {
	users, err := w.appServices.ByIndex(configNamespaceIndex, namespace)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	nw, running := w.namespaces[namespace]
	switch {
	case len(users) > 0 && !running:
		w.namespaces[namespace] = w.watch(namespace)
	case len(users) == 0 && running:
		nw.stop()
		delete(w.namespaces, namespace)
		for k := range w.known {
			if k.namespace == namespace {
				delete(w.known, k)
			}
		}
	}
}

// watch starts the metadata watches of one namespace.
func (w *configWatch) watch(namespace string) *namespaceWatch {
	ctx, stop := context.WithCancel(w.ctx)
	nw := &namespaceWatch{stop: stop, stores: map[string]cache.Store{}}
	for kind, gvr := range configKinds {
		// No resync (the AppServices have their own) and no index: only
		// what the sync looks up by key.
		informer := metadatainformer.NewFilteredMetadataInformer(w.metadata, gvr, namespace, 0, cache.Indexers{}, nil).Informer()
		if err := informer.SetTransform(trimToVersion); err != nil {
			utilruntime.HandleError(err)
		}
		if _, err := informer.AddEventHandler(w.handler(kind)); err != nil {
			utilruntime.HandleError(err)
		}
		nw.stores[kind] = informer.GetStore()
		go informer.RunWithContext(ctx)
	}
	return nw
}

// trimToVersion keeps only what the config watch reads of an object: its
// name, namespace and resourceVersion.
func trimToVersion(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion,
	}}, nil
}

// handler queues the AppServices that read an object of kind when it is
// created, deleted, or changed (a new resourceVersion).
func (w *configWatch) handler(kind string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.changed(kind, obj, false) },
		UpdateFunc: func(oldObj, obj any) {
			o, err1 := meta.Accessor(oldObj)
			n, err2 := meta.Accessor(obj)
			if err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			w.changed(kind, obj, false)
		},
		DeleteFunc: func(obj any) { w.changed(kind, obj, true) },
	}
}

func (w *configWatch) changed(kind string, obj any, deleted bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("decoding object: %T is not an object", obj))
		return
	}
	key := configKey{kind: kind, namespace: m.GetNamespace(), name: m.GetName()}
	if deleted {
		w.mu.Lock()
		delete(w.known, key)
		w.mu.Unlock()
	}
	readers, err := w.appServices.ByIndex(configRefIndex, key.String())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, obj := range readers {
		if as, ok := obj.(*appv1.AppService); ok {
			w.enqueue(cache.ObjectName{Namespace: as.Namespace, Name: as.Name})
		}
	}
}

// setConfigDigest puts the config digest on the desired Deployment's pod
// template, when rolloutOnConfigChange asks for one. An error leaves the
// digests it could not compute as the live Deployment has them: the rest of
// the sync goes on.
func (s *appSync) setConfigDigest(ctx context.Context, desired *appsv1.Deployment) error {
	if !s.as.Spec.RolloutOnConfigChange {
		return nil
	}
	live, _, err := s.c.deployments.get(desired.Namespace, desired.Name)
	if err != nil {
		return err
	}
	value, err := s.c.configs.configDigest(ctx, s.as, children.ConfigDigestOf(live))
	children.SetConfigDigest(desired, value)
	return err
}

// configDigest is the value of the pod template's AnnotationConfigDigest
// for an AppService ("" when it needs none), given the one on its live
// Deployment. An object that cannot be read keeps the digest the live
// template has for it, and its error is returned; so does a missing
// object that is not optional: the Pods cannot start without it, and
// rolling the running ones into that would only stop the app.
func (w *configWatch) configDigest(ctx context.Context, as *appv1.AppService, live string) (string, error) {
	refs := children.ConfigRefs(as)
	if len(refs) == 0 {
		return "", nil
	}
	before := children.ParseConfigDigest(live)
	digests := make(map[string]string, len(refs))
	var errs []error
	for _, ref := range refs {
		d, err := w.digest(ctx, as.Namespace, ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s/%s for its digest: %w", as.Namespace, ref, err))
		}
		if err != nil || (d == children.MissingDigest && !ref.Optional) {
			if old, ok := before[ref.Key()]; ok {
				d = old
			}
		}
		if d != "" {
			digests[ref.Key()] = d
		}
	}
	if err := errors.Join(errs...); err != nil {
		return children.FormatConfigDigest(digests), &childError{reason: appv1.ReasonConfigUnreadable, err: err}
	}
	return children.FormatConfigDigest(digests), nil
}

// digest is the digest of one object's data, children.MissingDigest when it
// does not exist. The data is read only when the watch's resourceVersion is
// not the one the digest was computed from, or the watch does not have the
// object (not synced yet, or created a moment ago).
func (w *configWatch) digest(ctx context.Context, namespace string, ref children.ConfigRef) (string, error) {
	key := configKey{kind: ref.Kind, namespace: namespace, name: ref.Name}
	if d, ok := w.cached(key); ok {
		return d, nil
	}
	var version, d string
	switch ref.Kind {
	case children.ConfigMapRef:
		cm, err := w.kube.CoreV1().ConfigMaps(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return w.readFailed(key, err)
		}
		version, d = cm.ResourceVersion, children.ConfigMapDigest(cm)
	case children.SecretRef:
		s, err := w.kube.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return w.readFailed(key, err)
		}
		version, d = s.ResourceVersion, children.SecretDigest(s)
	default:
		return "", fmt.Errorf("unknown kind %q", ref.Kind)
	}
	w.mu.Lock()
	w.known[key] = knownDigest{resourceVersion: version, digest: d}
	w.mu.Unlock()
	return d, nil
}

// cached is the known digest of an object whose watched resourceVersion
// is the one it was computed from.
func (w *configWatch) cached(key configKey) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	known, ok := w.known[key]
	nw := w.namespaces[key.namespace]
	if !ok || nw == nil {
		return "", false
	}
	item, exists, err := nw.stores[key.kind].GetByKey(key.namespace + "/" + key.name)
	if err != nil || !exists {
		return "", false
	}
	m, err := meta.Accessor(item)
	if err != nil || m.GetResourceVersion() != known.resourceVersion {
		return "", false
	}
	return known.digest, true
}

// readFailed is the outcome of a failed read: missing for an object that
// is not there, else the error.
func (w *configWatch) readFailed(key configKey, err error) (string, error) {
	if apierrors.IsNotFound(err) {
		w.mu.Lock()
		delete(w.known, key)
		w.mu.Unlock()
		return children.MissingDigest, nil
	}
	return "", err
}
