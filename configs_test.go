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
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"example.com/appservice-controller/internal/appcache"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/configrollout"
	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

var configMapsResource = corev1.SchemeGroupVersion.WithResource("configmaps")

// settings is a ConfigMap the Pods read through envFrom.
func settings() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: fixtures.Namespace, UID: "settings-uid", ResourceVersion: "7"},
		Data:       map[string]string{"LOG_LEVEL": "info"},
	}
}

// readingSettings makes the seed read settings, with rolloutOnConfigChange.
func readingSettings(s *appv1.AppServiceSpec) {
	s.RolloutOnConfigChange = true
	s.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
}

// TestSyncPutsConfigDigestOnTemplate: with rolloutOnConfigChange, the sync
// reads the ConfigMap and writes its digest on the pod template, in one
// update with one Event.
func TestSyncPutsConfigDigestOnTemplate(t *testing.T) {
	as := withStatus(fixtures.AppService(), currentStatus())
	readingSettings(&as.Spec)
	live := fixtures.LiveDeployment()
	fixtures.Container(live).EnvFrom = as.Spec.EnvFrom

	f := newFixture(t, as)
	f.deployments = []*appsv1.Deployment{live}
	f.services = []*corev1.Service{fixtures.LiveService()}
	f.apiOnly = []runtime.Object{settings()}
	f.kubeActions = append(f.kubeActions, core.NewGetAction(configMapsResource, fixtures.Namespace, "settings"))
	want := live.DeepCopy()
	digest := "configmap/settings=" + children.ConfigMapDigest(settings())
	children.SetConfigDigest(want, digest)
	f.expectUpdate(want)
	f.events = []string{fixtures.Normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: config digest added (rolloutOnConfigChange is on)")}
	if err := f.run(testKey); err != nil {
		t.Fatalf("syncHandler: %v", err)
	}
}

// oldDigest is the config digest of settings before the change the tests
// roll out.
const oldDigest = "configmap/settings=0000000000000000"

// rollingOther is another AppService's Deployment, mid-way through a
// config rollout: it holds a place.
func rollingOther() *appsv1.Deployment {
	d := fixtures.LiveDeployment()
	d.Name, d.UID = "other", "other-uid"
	d.OwnerReferences[0].Name, d.OwnerReferences[0].UID = "other", "other-as-uid"
	d.Labels = map[string]string{appv1.LabelAppService: "other"}
	children.SetConfigDigest(d, oldDigest)
	d.Annotations = map[string]string{appv1.AnnotationConfigRollout: oldDigest}
	d.Status.UpdatedReplicas = 1
	return d
}

// TestSyncHandlerConfigRolloutThrottle: a rollout that a config change
// alone calls for goes when the cap on config rollouts has room, its
// Deployment marked with the digest it rolls to; it waits, writing no
// Deployment and saying ConfigRolloutQueued, while others fill the cap; a
// spec change is never held, and unmarks the Deployment.
func TestSyncHandlerConfigRolloutThrottle(t *testing.T) {
	newDigest := "configmap/settings=" + children.ConfigMapDigest(settings())
	tests := []struct {
		name        string
		max         int
		others      bool   // another AppService's config rollout under way
		image       string // a spec change besides
		marked      bool   // the live Deployment carries a mark
		wantWritten bool
		wantMark    string
	}{
		{name: "room: rolled, and marked", max: 1, wantWritten: true, wantMark: newDigest},
		{name: "no cap: rolled, and marked", max: 0, others: true, wantWritten: true, wantMark: newDigest},
		{name: "full: waits, nothing written", max: 1, others: true},
		{name: "full, with a spec change: rolled, not held, and not marked", max: 1, others: true, image: "nginx:1.27", wantWritten: true},
		{name: "a spec change unmarks an earlier config rollout", max: 1, image: "nginx:1.27", marked: true, wantWritten: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			readingSettings(&as.Spec)
			if tc.image != "" {
				as.Spec.Image = tc.image
			}
			live := fixtures.LiveDeployment()
			fixtures.Container(live).EnvFrom = as.Spec.EnvFrom
			children.SetConfigDigest(live, oldDigest)
			if tc.marked {
				live.Annotations = map[string]string{appv1.AnnotationConfigRollout: oldDigest}
			}
			f := newFixture(t, as)
			f.maxConfigRollouts = tc.max
			f.deployments = []*appsv1.Deployment{live}
			if tc.others {
				f.deployments = append(f.deployments, rollingOther())
			}
			f.services = []*corev1.Service{fixtures.LiveService()}
			f.apiOnly = []runtime.Object{settings()}
			f.kubeActions = append(f.kubeActions, core.NewGetAction(configMapsResource, fixtures.Namespace, "settings"))
			if tc.wantWritten {
				want := live.DeepCopy()
				children.SetConfigDigest(want, newDigest)
				want.Annotations = nil
				if tc.wantMark != "" {
					want.Annotations = map[string]string{appv1.AnnotationConfigRollout: tc.wantMark}
				}
				what := "config of ConfigMap settings"
				if tc.image != "" {
					fixtures.Container(want).Image = tc.image
					what = "config of ConfigMap settings, image"
				}
				f.expectUpdate(want)
				f.events = []string{fixtures.Normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: "+what)}
			} else {
				st := currentStatus()
				for _, c := range reconcilingConditions(appv1.ReasonConfigRolloutQueued,
					"A ConfigMap or Secret the Pods read changed: their rollout waits its turn (at most 1 AppService rolls for a config change at once)") {
					setCondition(&st, c)
				}
				f.expectStatusUpdate(withStatus(as, st))
			}
			if err := f.run(testKey); err != nil {
				t.Fatalf("syncHandler: %v", err)
			}
		})
	}
}

// TestConfigRolloutHeldKeepsTheDigestItUpdates: a config rollout held
// (waiting its turn, or sent by an earlier sync whose write the cache did
// not show) keeps the digest of the Deployment the update is made from. The
// cache may bring an earlier sync's write, the new digest and its mark,
// between the throttle's read and the update's: the sync must write
// nothing then, not roll that write back to the old digest. (The e2e's
// TestConfigRolloutThrottle once found a Deployment written three times in
// three seconds, each write on its latest resourceVersion: new, old, new
// is the sequence that explains it.)
func TestConfigRolloutHeldKeepsTheDigestItUpdates(t *testing.T) {
	newDigest := "configmap/settings=" + children.ConfigMapDigest(settings())
	tests := []struct {
		name string
		// sent: an earlier sync of this AppService was admitted and wrote
		// the new digest, and the throttle still holds its admission; else
		// the throttle dropped that admission (a look at the cache showed
		// the write) and another AppService's rollout fills the cap.
		sent bool
	}{
		{name: "sent by an earlier sync", sent: true},
		{name: "waiting its turn", sent: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			readingSettings(&as.Spec)
			stale := fixtures.LiveDeployment()
			fixtures.Container(stale).EnvFrom = as.Spec.EnvFrom
			children.SetConfigDigest(stale, oldDigest)
			stale.ResourceVersion = "10"
			// What the earlier sync's write made of it.
			written := stale.DeepCopy()
			children.SetConfigDigest(written, newDigest)
			written.Annotations = map[string]string{appv1.AnnotationConfigRollout: newDigest}
			written.ResourceVersion = "11"

			f := newFixture(t, as)
			f.maxConfigRollouts = 1
			f.deployments = []*appsv1.Deployment{stale}
			if !tc.sent {
				f.deployments = append(f.deployments, rollingOther())
			}
			f.apiOnly = []runtime.Object{settings()}
			_, ctx := ktesting.NewTestContext(t)
			c := f.newController(ctx)
			key := cache.MetaObjectToName(as)
			if tc.sent && c.configRollouts.Admit(key, newDigest, time.Now()) != configrollout.Go {
				t.Fatal("the earlier sync's rollout was not admitted")
			}

			s := newAppSync(c, as)
			desired := children.NewDeployment(as)
			if err := s.setConfigDigest(ctx, desired); err != nil {
				t.Fatal(err)
			}
			queued, err := s.throttleConfigRollout(desired)
			if tc.sent && !syncerr.IsStale(err) {
				t.Fatalf("throttleConfigRollout: %v, want the stale view of a rollout sent", err)
			}
			if !tc.sent && (!queued || err != nil) {
				t.Fatalf("throttleConfigRollout: queued %v, %v; want queued", queued, err)
			}
			// The earlier write reaches the cache (and is the API server's).
			if err := f.kubeInformers.Apps().V1().Deployments().Informer().GetIndexer().Update(trimmed(t, written)); err != nil {
				t.Fatal(err)
			}
			if err := f.kubeClient.Tracker().Update(deploymentsResource, written, written.Namespace); err != nil {
				t.Fatal(err)
			}
			f.kubeClient.ClearActions()

			if _, err := s.syncDeployments(ctx, desired); err != nil {
				t.Fatalf("syncDeployments: %v", err)
			}
			for _, a := range filterInformerActions(f.kubeClient.Actions()) {
				what := a.GetVerb() + " " + a.GetResource().Resource
				if p, ok := a.(core.PatchAction); ok {
					what += " " + string(p.GetPatch())
				}
				t.Errorf("a held config rollout wrote (%s), want nothing: the Deployment has the new digest already", what)
			}
		})
	}
}

// configWatchFor is a config watch over kube's objects, with the
// AppServices in its index; its watches are not started (tests tell it what
// they see with observeKey).
func configWatchFor(t *testing.T, kube *k8sfake.Clientset, appServices ...*appv1.AppService) *configWatch {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &appv1.AppService{}, 0, cache.Indexers{})
	w, err := newConfigWatch(ctx, metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), kube, informer, func(cache.ObjectName) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, as := range appServices {
		fixtures.MustAdd(t, w.appServices, as)
	}
	return w
}

// keyOf is the config watch's key of cm.
func keyOf(cm *corev1.ConfigMap) configKey {
	return configKey{kind: children.ConfigMapRef, namespace: cm.Namespace, name: cm.Name}
}

func countGets(kube *k8sfake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "get" {
			n++
		}
	}
	return n
}

// TestConfigDigestReadsOnlyNewVersions: the data is read once per
// resourceVersion the watch shows; a label-only edit is read once more and
// gives the same digest.
func TestConfigDigestReadsOnlyNewVersions(t *testing.T) {
	as := fixtures.AppService()
	readingSettings(&as.Spec)
	cm := settings()
	kube := k8sfake.NewClientset(cm)
	w := configWatchFor(t, kube, as)
	w.observeKey(keyOf(cm), cm.ResourceVersion, false)
	ctx := context.Background()
	want := "configmap/settings=" + children.ConfigMapDigest(cm)

	for range 3 {
		got, err := w.configDigest(ctx, as, "")
		if err != nil || got != want {
			t.Fatalf("configDigest: got %q, %v; want %q", got, err, want)
		}
	}
	if n := countGets(kube); n != 1 {
		t.Errorf("%d reads of an unchanged ConfigMap, want 1", n)
	}

	relabelled := cm.DeepCopy()
	relabelled.Labels = map[string]string{"team": "web"}
	relabelled.ResourceVersion = "8"
	if _, err := kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, relabelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.observeKey(keyOf(cm), relabelled.ResourceVersion, false)
	kube.ClearActions()
	for range 2 {
		if got, err := w.configDigest(ctx, as, ""); err != nil || got != want {
			t.Errorf("after a label-only edit: got %q, %v; want %q", got, err, want)
		}
	}
	if n := countGets(kube); n != 1 {
		t.Errorf("%d reads after a new resourceVersion, want 1", n)
	}
}

// TestConfigDigestMissingAndUnreadable: what an object that is missing or
// cannot be read contributes, with the live template's digests given.
func TestConfigDigestMissingAndUnreadable(t *testing.T) {
	forbidden := apierrors.NewForbidden(configMapsResource.GroupResource(), "settings", errors.New("RBAC"))
	tests := []struct {
		name     string
		optional bool
		getErr   error
		live     string
		want     string
		wantErr  bool
	}{
		{name: "missing optional", optional: true, live: "configmap/settings=aa", want: "configmap/settings=missing"},
		{name: "missing required keeps the running Pods' digest", live: "configmap/settings=aa", want: "configmap/settings=aa"},
		{name: "missing required, no Deployment yet", want: "configmap/settings=missing"},
		{name: "unreadable keeps the running Pods' digest", getErr: forbidden, live: "configmap/settings=aa", want: "configmap/settings=aa", wantErr: true},
		{name: "unreadable, no digest yet", getErr: forbidden, want: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService()
			readingSettings(&as.Spec)
			as.Spec.EnvFrom[0].ConfigMapRef.Optional = new(tc.optional)
			kube := k8sfake.NewClientset()
			if tc.getErr != nil {
				kube.PrependReactor("get", "configmaps", func(core.Action) (bool, runtime.Object, error) { return true, nil, tc.getErr })
			}
			w := configWatchFor(t, kube, as)
			got, err := w.configDigest(context.Background(), as, tc.live)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			var ce *syncerr.ChildError
			switch {
			case !tc.wantErr && err != nil:
				t.Errorf("error: %v", err)
			case tc.wantErr && (!errors.As(err, &ce) || ce.Reason != appv1.ReasonConfigUnreadable || syncerr.NeedsUser(err) == nil):
				t.Errorf("error %v: want a %s error that needs the user", err, appv1.ReasonConfigUnreadable)
			}
		})
	}
}

// TestConfigIndexesReadEncoded: the config watch's indexes read the
// AppServices as the informer caches them, encoded (appcache.Transform).
func TestConfigIndexesReadEncoded(t *testing.T) {
	informer := cache.NewSharedIndexInformer(nil, &appv1.AppService{}, 0, cache.Indexers{})
	if err := informer.AddIndexers(configIndexers); err != nil {
		t.Fatal(err)
	}
	web, other, plain := fixtures.RealisticAppService("web"), fixtures.RealisticAppService("other"), fixtures.RealisticAppService("plain")
	other.Namespace = "elsewhere"
	plain.Namespace, plain.Spec.RolloutOnConfigChange = "elsewhere", false
	for _, as := range []*appv1.AppService{web, other, plain} {
		cached, err := appcache.Transform(as.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		fixtures.MustAdd(t, informer.GetIndexer(), cached)
	}
	readers, err := informer.GetIndexer().ByIndex(configRefIndex, configKey{kind: children.ConfigMapRef, namespace: web.Namespace, name: "settings"}.String())
	if err != nil || len(readers) != 1 {
		t.Errorf("the config index by the ConfigMap web reads: %d AppServices, %v; want 1", len(readers), err)
	}
	if users, err := informer.GetIndexer().ByIndex(configNamespaceIndex, "elsewhere"); err != nil || len(users) != 1 {
		t.Errorf("the config index by namespace: %d AppServices, %v; want 1 (other; plain has no rolloutOnConfigChange)", len(users), err)
	}
}

// TestConfigWatchFollowsAppServices: a namespace is watched while an
// AppService there reads ConfigMaps or Secrets with rolloutOnConfigChange;
// of what the watch lists, only what is read is kept, and only its readers
// are queued; what is known there is dropped when the watch stops.
func TestConfigWatchFollowsAppServices(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	partial := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fixtures.Namespace, ResourceVersion: "1", Labels: map[string]string{"big": "label"}},
		}
	}
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, partial("settings"), partial("unrelated"))
	var mu sync.Mutex
	var queued []cache.ObjectName
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &appv1.AppService{}, 0, cache.Indexers{})
	w, err := newConfigWatch(ctx, meta, k8sfake.NewClientset(), informer, func(key cache.ObjectName) {
		mu.Lock()
		defer mu.Unlock()
		queued = append(queued, key)
	})
	if err != nil {
		t.Fatal(err)
	}
	reader := fixtures.AppService()
	readingSettings(&reader.Spec)
	bystander := fixtures.AppService()
	bystander.Name = "bystander" // reads the same, but has the feature off
	bystander.Spec.EnvFrom = reader.Spec.EnvFrom
	other := fixtures.AppService()
	other.Namespace = "elsewhere"
	for _, as := range []*appv1.AppService{reader, bystander, other} {
		fixtures.MustAdd(t, w.appServices, as)
		w.track(as.Namespace)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for ns := range w.namespaces {
			yield(ns)
		}
	}); !slices.Equal(got, []string{fixtures.Namespace}) {
		t.Fatalf("watched namespaces: %v, want [%s]", got, fixtures.Namespace)
	}

	// The watch's first list adds both ConfigMaps: only the reader is queued.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(queued) > 0, nil
	}); err != nil {
		t.Fatalf("no AppService queued: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // room for a wrong one to show up
	mu.Lock()
	fixtures.CheckEqual(t, "queued", []cache.ObjectName{{Namespace: fixtures.Namespace, Name: fixtures.Name}}, queued)
	mu.Unlock()
	w.mu.Lock()
	if v := w.versions[keyOf(settings())]; len(w.versions) != 1 || v == nil || *v != (configVersion{watched: "1"}) {
		t.Errorf("kept of what the watch listed: %d objects, settings %+v; want settings alone, at version 1", len(w.versions), v)
	}
	w.mu.Unlock()

	if err := w.appServices.Delete(reader); err != nil {
		t.Fatal(err)
	}
	w.track(fixtures.Namespace)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.namespaces) != 0 || len(w.versions) != 0 {
		t.Errorf("after the last reader went: watching %d namespaces, %d objects known; want none", len(w.namespaces), len(w.versions))
	}
}

// TestVersionStore: what the reflector hands its store queues the readers
// of an object new to the watch, changed or deleted, and nothing else; a new
// list after an interrupted watch tells of deletions missed meanwhile.
func TestVersionStore(t *testing.T) {
	as := fixtures.AppService()
	readingSettings(&as.Spec)
	var queued int
	w := configWatchFor(t, k8sfake.NewClientset(), as)
	w.enqueue = func(cache.ObjectName) { queued++ }
	s := &versionStore{w: w, kind: children.ConfigMapRef, namespace: fixtures.Namespace}
	obj := func(name, version string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fixtures.Namespace, ResourceVersion: version}}
	}
	steps := []struct {
		name   string
		do     func() error
		queued int
		known  int
	}{
		{"first list", func() error { return s.Replace([]any{obj("settings", "1"), obj("other", "1")}, "1") }, 1, 1},
		{"listed again, unchanged", func() error { return s.Replace([]any{obj("settings", "1"), obj("other", "2")}, "2") }, 0, 1},
		{"an unread object changed", func() error { return s.Update(obj("other", "3")) }, 0, 1},
		{"changed", func() error { return s.Update(obj("settings", "4")) }, 1, 1},
		{"deleted while the watch was down", func() error { return s.Replace([]any{obj("other", "3")}, "5") }, 1, 0},
		{"created", func() error { return s.Add(obj("settings", "6")) }, 1, 1},
		{"deleted", func() error { return s.Delete(cache.DeletedFinalStateUnknown{Obj: obj("settings", "6")}) }, 1, 0},
	}
	for _, step := range steps {
		queued = 0
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		if queued != step.queued || len(w.versions) != step.known {
			t.Errorf("%s: queued %d, %d known; want %d, %d", step.name, queued, len(w.versions), step.queued, step.known)
		}
	}
}
