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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/appcache"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/configrollout"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Rolling the Pods when their config changes (spec.rolloutOnConfigChange).
// The controller must notice a change of the data of the ConfigMaps and
// Secrets the Pods read without holding the cluster's ConfigMaps and
// Secrets in memory:
//
//   - It watches them as metadata only (client-go's metadata client and
//     reflector), and only in the namespaces where an AppService turns
//     rolloutOnConfigChange on: the AppServices' handler starts and stops
//     those watches.
//   - The reflectors' store (versionStore) keeps nothing of an object no
//     AppService reads; an informer's cache would hold every ConfigMap and
//     Secret of those namespaces. Of one that is read, the watch keeps the
//     resourceVersion last seen and queues its readers when it changes;
//     they are found through an index of the AppService informer
//     (configRefIndex).
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
		as := indexedAppService(obj)
		if as == nil {
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
		if as := indexedAppService(obj); as != nil && len(children.ConfigRefs(as)) > 0 {
			return []string{as.Namespace}, nil
		}
		return nil, nil
	},
}

// indexedAppService is the AppService the cache holds as obj, decoded (an
// index function that returned an error would stop the process: an
// AppService that cannot be decoded, which only a bug could make, is
// reported and left out of the indexes).
func indexedAppService(obj any) *appv1.AppService {
	as, err := appcache.Decode(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	return as
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

// configVersion is what the config watch knows of an object AppServices
// read: the resourceVersion its watch last saw ("" for none yet), and the
// digest of its data at the resourceVersion it was read at.
type configVersion struct {
	watched               string
	digestVersion, digest string
}

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
	// namespaces holds the running watches, by namespace: the function
	// that stops them.
	namespaces map[string]context.CancelFunc
	// versions holds what is known of the objects AppServices read.
	versions map[configKey]*configVersion
}

func newConfigWatch(ctx context.Context, client metadata.Interface, kube kubernetes.Interface,
	appServices cache.SharedIndexInformer, enqueue func(cache.ObjectName)) (*configWatch, error) {
	if err := appServices.AddIndexers(configIndexers); err != nil {
		return nil, err
	}
	return &configWatch{
		ctx: ctx, metadata: client, kube: kube, appServices: appServices.GetIndexer(), enqueue: enqueue,
		namespaces: map[string]context.CancelFunc{}, versions: map[configKey]*configVersion{},
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
	stop, running := w.namespaces[namespace]
	switch {
	case len(users) > 0 && !running:
		w.namespaces[namespace] = w.watch(namespace)
	case len(users) == 0 && running:
		stop()
		delete(w.namespaces, namespace)
		for k := range w.versions {
			if k.namespace == namespace {
				delete(w.versions, k)
			}
		}
	}
}

// watch starts the metadata watches of one namespace and returns the
// function that stops them. No resync: the AppServices have their own.
func (w *configWatch) watch(namespace string) context.CancelFunc {
	ctx, stop := context.WithCancel(w.ctx)
	for kind, gvr := range configKinds {
		client := w.metadata.Resource(gvr).Namespace(namespace)
		// As client-go's metadata informer builds it: a client that
		// cannot stream the first list (a fake) gets a plain one.
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return client.List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				return client.Watch(ctx, opts)
			},
		}, w.metadata)
		r := cache.NewReflectorWithOptions(lw, &metav1.PartialObjectMetadata{}, &versionStore{w: w, kind: kind, namespace: namespace},
			cache.ReflectorOptions{Name: "config watch " + namespace + "/" + gvr.Resource, TypeDescription: gvr.Resource + " metadata"})
		go r.RunWithContext(ctx)
	}
	return stop
}

// versionStore is a reflector's store for one kind in one namespace. It
// holds nothing itself: it hands each object to configWatch.observe, which
// keeps the resourceVersion of those AppServices read.
type versionStore struct {
	w               *configWatch
	kind, namespace string
}

func (s *versionStore) Add(obj any) error    { s.w.observe(s.kind, obj, false); return nil }
func (s *versionStore) Update(obj any) error { s.w.observe(s.kind, obj, false); return nil }
func (s *versionStore) Delete(obj any) error { s.w.observe(s.kind, obj, true); return nil }
func (s *versionStore) Resync() error        { return nil }

// Replace takes a whole list (the first one, or a new one after the watch
// was interrupted): every object in it is observed, and one known that it
// lacks was deleted meanwhile.
func (s *versionStore) Replace(list []any, _ string) error {
	listed := make(map[string]bool, len(list))
	for _, obj := range list {
		if m, err := meta.Accessor(obj); err == nil {
			listed[m.GetName()] = true
		}
		s.w.observe(s.kind, obj, false)
	}
	s.w.mu.Lock()
	var gone []configKey
	for k := range s.w.versions {
		if k.kind == s.kind && k.namespace == s.namespace && !listed[k.name] {
			gone = append(gone, k)
		}
	}
	s.w.mu.Unlock()
	for _, k := range gone {
		s.w.observeKey(k, "", true)
	}
	return nil
}

// Transformer trims the objects of a streamed first list, which the
// reflector holds together for a moment (cache.TransformingStore).
func (s *versionStore) Transformer() cache.TransformFunc { return trimToVersion }

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

// observe takes an object of kind a watch saw listed, created, changed or
// deleted.
func (w *configWatch) observe(kind string, obj any, deleted bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("decoding object: %T is not an object", obj))
		return
	}
	w.observeKey(configKey{kind: kind, namespace: m.GetNamespace(), name: m.GetName()}, m.GetResourceVersion(), deleted)
}

// observeKey keeps the resourceVersion of an object AppServices read, and
// queues them when the object is new to the watch, changed or deleted. Of
// an object no AppService reads, nothing is kept.
func (w *configWatch) observeKey(key configKey, version string, deleted bool) {
	readers, err := w.appServices.ByIndex(configRefIndex, key.String())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	w.mu.Lock()
	v := w.versions[key]
	switch {
	case deleted || len(readers) == 0:
		delete(w.versions, key)
	case v == nil:
		w.versions[key] = &configVersion{watched: version}
	case v.watched == version:
		w.mu.Unlock()
		return // seen already: listed again after an interrupted watch
	default:
		v.watched = version
	}
	w.mu.Unlock()
	for _, obj := range readers {
		if name, err := cache.ObjectToName(obj); err == nil {
			w.enqueue(name)
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
	live, _, err := s.c.deployments.Get(desired.Namespace, desired.Name)
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
// template has for it, and its error is returned. A missing object that is
// not optional keeps it too, without an error: the Pods cannot start
// without it, and rolling the running ones into that would only stop the
// app.
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
		return children.FormatConfigDigest(digests), &syncerr.ChildError{Reason: appv1.ReasonConfigUnreadable, Err: err}
	}
	return children.FormatConfigDigest(digests), nil
}

// digest is the digest of one object's data, children.MissingDigest when it
// does not exist. The data is read only when the watch's resourceVersion is
// not the one the digest was computed from, or the watch has not told of
// the object (not listed yet, created a moment ago, or listed before an
// AppService read it).
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
	v := w.versions[key]
	if v == nil {
		v = &configVersion{}
		w.versions[key] = v
	}
	if v.watched == "" {
		// The watch has not told of it yet; its next change will.
		v.watched = version
	}
	v.digestVersion, v.digest = version, d
	w.mu.Unlock()
	return d, nil
}

// cached is the known digest of an object whose watched resourceVersion
// is the one it was computed from.
func (w *configWatch) cached(key configKey) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.versions[key]
	if v == nil || v.watched == "" || v.watched != v.digestVersion {
		return "", false
	}
	return v.digest, true
}

// readFailed is the outcome of a failed read: missing for an object that
// is not there, else the error.
func (w *configWatch) readFailed(key configKey, err error) (string, error) {
	if apierrors.IsNotFound(err) {
		w.mu.Lock()
		delete(w.versions, key)
		w.mu.Unlock()
		return children.MissingDigest, nil
	}
	return "", err
}

// Config rollouts, throttled (internal/configrollout). A rollout that only
// a config change calls for (the Pod template would change by its config
// digest alone) waits while -max-config-rollouts AppServices are rolling
// for one already; a spec change is never held. What counts is read from
// the Deployments, through an index of their informer.

// configRolloutIndex indexes the Deployments mid-way through a rollout a
// config change started (configrollout.Rolling), under one value.
const configRolloutIndex = "config-rollouts"

// newConfigRollouts adds the index to the Deployments' informer (before it
// starts) and returns the controller's throttle of max config rollouts
// (0: no cap).
func newConfigRollouts(c *Controller, deployments cache.SharedIndexInformer, maxRollouts int) (*configrollout.Throttle, error) {
	err := deployments.AddIndexers(cache.Indexers{configRolloutIndex: func(obj any) ([]string, error) {
		cached, ok := obj.(*children.Cached)
		if !ok {
			return nil, nil
		}
		// An index function's error would take the cache down: a
		// Deployment that does not decode is only not counted.
		d, err := children.Decode[*appsv1.Deployment](cached)
		if err != nil {
			utilruntime.HandleError(fmt.Errorf("indexing config rollouts: %w", err))
			return nil, nil
		}
		if configrollout.Rolling(d) {
			return []string{"rolling"}, nil
		}
		return nil, nil
	}})
	indexer := deployments.GetIndexer()
	rolling := func() int {
		items, err := indexer.ByIndex(configRolloutIndex, "rolling")
		if err != nil {
			utilruntime.HandleError(err)
		}
		return len(items)
	}
	shows := func(key cache.ObjectName, digest string) bool {
		d, found, err := c.deployments.Get(key.Namespace, key.Name)
		return err == nil && found && d.Annotations[appv1.AnnotationConfigRollout] == digest
	}
	return configrollout.NewThrottle(maxRollouts, rolling, shows, c.queue.Add), err
}

// throttleConfigRollout holds back a rollout that only a config change
// calls for until the cap on config rollouts has room: the Deployment then
// keeps its live digest (s.configHeld), and the sync reports the
// AppService ConfigRolloutQueued. Admitted, the digest is recorded in
// s.configRollout (configrollout.Mark marks the Deployment with it). It
// returns whether the rollout waits; and, when an earlier sync started it
// and the cache does not show that write yet, a stale error (the
// Deployment then keeps its live digest too: the write is not sent twice).
//
// The digest kept is that of the live Deployment the update is made from
// (deployments' Diff), not of the one read here: the cache may bring the
// write of an earlier sync between the two reads, and the digest read
// here would then roll that write back.
func (s *appSync) throttleConfigRollout(desired *appsv1.Deployment) (bool, error) {
	t, key := s.c.configRollouts, cache.MetaObjectToName(s.as)
	want := children.ConfigDigestOf(desired)
	if want == "" || (s.as.Spec.Canary != nil && !children.Suspended(s.as)) {
		// rolloutOnConfigChange is off: no cached Deployment to decode.
		// Or a canary paces the change: it goes out as one, its steps in
		// place of the cap.
		t.Done(key)
		return false, nil
	}
	live, found, err := s.c.deployments.Get(desired.Namespace, desired.Name)
	if err != nil || !found {
		t.Done(key)
		return false, nil
	}
	have := children.ConfigDigestOf(live)
	// No change of digest; or the first digest, which turning
	// rolloutOnConfigChange on (the spec) brings; or a template that
	// changes for the spec anyway, which takes the new digest along.
	if want == have || have == "" || templateChangesBeyondDigest(live, desired, have) {
		t.Done(key)
		return false, nil
	}
	s.configRolloutSince = queuedSince(s.as)
	decision := t.Admit(key, want, s.configRolloutSince)
	if decision == configrollout.Go {
		s.configRollout = want
		return false, nil
	}
	// Waiting, or sent by an earlier sync: the template keeps the live
	// digest, so that nothing is written.
	s.configHeld = true
	if decision == configrollout.Sent {
		return false, fmt.Errorf("the config rollout of Deployment %s/%s started: %w", desired.Namespace, desired.Name, syncerr.ErrCacheLag)
	}
	return true, nil
}

// templateChangesBeyondDigest reports whether bringing live in line with
// desired would change its Pod template even with the live config digest,
// have: a change of the spec.
func templateChangesBeyondDigest(live, desired *appsv1.Deployment, have string) bool {
	probe := desired.DeepCopy()
	probe.Spec.Template.Annotations[appv1.AnnotationConfigDigest] = have
	return children.TemplateChanges(live, probe)
}

// queuedSince is when the AppService's config rollout began to wait, as
// its status says (Reconciling, ConfigRolloutQueued), so that a restarted
// controller keeps the order; now if it has not waited yet.
func queuedSince(as *appv1.AppService) time.Time {
	if c := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionReconciling); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == appv1.ReasonConfigRolloutQueued {
		return c.LastTransitionTime.Time
	}
	return time.Now()
}
