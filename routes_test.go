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
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryfake "k8s.io/client-go/discovery/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"example.com/appservice-controller/internal/appcache"
	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/owner"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestRouteInformerStartsWhenServed: on a cluster that serves HTTPRoutes
// the informer starts at once. On one that does not, no sync needs to
// happen for it to start later: the informer's own loop asks discovery
// every recheck, starts it once the Gateway API is served and, once it has
// synced, calls waiting (which queues the AppServices that ask for a
// route), once. A controller that waited for an AppService's retry to ask
// again found the route a backoff later (77 s in a user's try).
func TestRouteInformerStartsWhenServed(t *testing.T) {
	newInformer := func(t *testing.T, served bool) (*routeInformer, *switchedDiscovery) {
		disc := &switchedDiscovery{FakeDiscovery: k8sfake.NewClientset().Discovery().(*discoveryfake.FakeDiscovery)}
		disc.served.Store(served)
		client := gatewayfake.NewSimpleClientset()
		factory := gatewayinformers.NewSharedInformerFactory(client, 0)
		r := newRouteInformer(disc, &GatewayAPI{Client: client, Informers: factory}, cache.ResourceEventHandlerFuncs{})
		t.Cleanup(factory.Shutdown)
		return r, disc
	}
	t.Run("served at the start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r, _ := newInformer(t, true)
		synced := r.run(ctx, func() { t.Error("waiting called though nothing waited") })
		if synced == nil || !r.http.served() || !r.grpc.served() {
			t.Fatal("not started on a cluster that serves HTTPRoutes and GRPCRoutes")
		}
		if !cache.WaitForCacheSync(ctx.Done(), synced) {
			t.Error("the informer never synced")
		}
	})
	t.Run("served later", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r, disc := newInformer(t, false)
		r.recheck = 10 * time.Millisecond
		woken := make(chan struct{}, 2)
		if synced := r.run(ctx, func() { woken <- struct{}{} }); synced != nil || r.http.served() || r.grpc.served() {
			t.Fatal("started on a cluster without the Gateway API")
		}
		// Asked again without any sync asking.
		for deadline := time.Now().Add(10 * time.Second); disc.asked.Load() < 3; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("discovery asked %d times in 10 s, every %s", disc.asked.Load(), r.recheck)
			}
		}
		select {
		case <-woken:
			t.Fatal("waiting called before the Gateway API was served")
		default:
		}
		disc.served.Store(true)
		select {
		case <-woken:
		case <-time.After(10 * time.Second):
			t.Fatal("the Gateway API is served, and nothing woke the AppServices waiting for it")
		}
		if !r.http.served() || !r.http.hasSynced() || !r.grpc.served() || !r.grpc.hasSynced() {
			t.Errorf("woken with the informers started %v %v, synced %v %v", r.http.served(), r.grpc.served(), r.http.hasSynced(), r.grpc.hasSynced())
		}
		asked := disc.asked.Load()
		time.Sleep(10 * r.recheck)
		if disc.asked.Load() != asked || len(woken) != 0 {
			t.Errorf("after the start, discovery asked %d more times, waiting called %d more", disc.asked.Load()-asked, len(woken))
		}
	})
	t.Run("installed just after an answer", func(t *testing.T) {
		// The Gateway API is installed right after discovery said it
		// was not: one answer decides both kinds, so neither starts until
		// the next round, and then both start and wake the AppServices
		// once.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r, disc := newInformer(t, false)
		disc.installedAfter.Store(1)
		r.recheck = 10 * time.Millisecond
		woken := make(chan struct{}, 2)
		if synced := r.run(ctx, func() { woken <- struct{}{} }); synced != nil || r.http.served() || r.grpc.served() {
			t.Fatalf("started HTTPRoutes %v, GRPCRoutes %v from an answer that served neither", r.http.served(), r.grpc.served())
		}
		select {
		case <-woken:
		case <-time.After(10 * time.Second):
			t.Fatal("the Gateway API is served, and nothing woke the AppServices waiting for it")
		}
		if !r.http.hasSynced() || !r.grpc.hasSynced() {
			t.Errorf("woken with the informers synced %v %v, want both", r.http.hasSynced(), r.grpc.hasSynced())
		}
		time.Sleep(10 * r.recheck)
		if asked := disc.asked.Load(); asked != 2 || len(woken) != 0 {
			t.Errorf("discovery asked %d times, want 2; waiting called %d more times, want 0", asked, len(woken))
		}
	})
	t.Run("served later, a sync nudging", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r, disc := newInformer(t, false)
		r.recheck = time.Hour
		woken := make(chan struct{}, 1)
		if synced := r.run(ctx, func() { woken <- struct{}{} }); synced != nil {
			t.Fatal("started on a cluster without the Gateway API")
		}
		disc.served.Store(true)
		// What a sync that wants a route does: asked at once, not in an
		// hour.
		as := fixtures.AppService()
		as.Spec.HTTPRoute = &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
		if _, err := newAppSync(&Controller{routes: r}, as).syncHTTPRoute(ctx); !errors.Is(err, errRouteAPIMissing) {
			t.Fatalf("before the start: %v, want the route API missing", err)
		}
		select {
		case <-woken:
		case <-time.After(10 * time.Second):
			t.Fatal("a sync that wants a route did not have discovery asked before the recheck")
		}
	})
	t.Run("GRPCRoutes served after HTTPRoutes", func(t *testing.T) {
		// A Gateway API from before GRPCRoutes: the HTTPRoutes' informer
		// starts at once, the GRPCRoutes' once they are served.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r, disc := newInformer(t, true)
		disc.noGRPC.Store(true)
		r.recheck = 10 * time.Millisecond
		woken := make(chan struct{}, 2)
		synced := r.run(ctx, func() { woken <- struct{}{} })
		if synced == nil || !r.http.served() || r.grpc.served() {
			t.Fatalf("started HTTPRoutes %v, GRPCRoutes %v: want only the HTTPRoutes'", r.http.served(), r.grpc.served())
		}
		as := fixtures.AppService()
		as.Spec.GRPCRoute = &appv1.GRPCRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
		if err := newAppSync(&Controller{routes: r}, as).syncGRPCRoute(ctx); !errors.Is(err, errGRPCRouteAPIMissing) {
			t.Fatalf("before the start: %v, want the GRPCRoute API missing", err)
		}
		if !r.routeMissing(as) {
			t.Error("routeMissing is false for a GRPCRoute the cluster does not serve")
		}
		disc.noGRPC.Store(false)
		select {
		case <-woken:
		case <-time.After(10 * time.Second):
			t.Fatal("GRPCRoutes are served, and nothing woke the AppServices waiting for them")
		}
		if !r.grpc.served() || !r.grpc.hasSynced() || r.routeMissing(as) {
			t.Errorf("woken with the GRPCRoutes' informer started %v, synced %v", r.grpc.served(), r.grpc.hasSynced())
		}
	})
}

// switchedDiscovery serves HTTPRoutes and GRPCRoutes while served is true
// (GRPCRoutes not while noGRPC is), and counts the questions; served
// becomes true just after the installedAfter-th answer, if set.
type switchedDiscovery struct {
	*discoveryfake.FakeDiscovery
	served, noGRPC atomic.Bool
	asked          atomic.Int32
	installedAfter atomic.Int32
}

func (d *switchedDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	served := d.served.Load()
	if n := d.asked.Add(1); n == d.installedAfter.Load() {
		d.served.Store(true)
	}
	if gv != "gateway.networking.k8s.io/v1" || !served {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "discovery"}, gv)
	}
	list := &metav1.APIResourceList{GroupVersion: gv,
		APIResources: []metav1.APIResource{{Name: "httproutes", Kind: "HTTPRoute", Namespaced: true}}}
	if !d.noGRPC.Load() {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: "grpcroutes", Kind: "GRPCRoute", Namespaced: true})
	}
	return list, nil
}

// TestSyncHTTPRouteWhileTheRouteCacheSyncs: a Gateway API that appeared
// while the controller ran has a route cache still filling. An AppService
// that wants a route waits for it (stale, retried); one that wants none
// does not.
func TestSyncHTTPRouteWhileTheRouteCacheSyncs(t *testing.T) {
	filling := func(kind string) *routeKind {
		return &routeKind{kind: kind, started: true, synced: func() bool { return false }}
	}
	c := &Controller{routes: &routeInformer{http: filling("HTTPRoute"), grpc: filling("GRPCRoute")}}
	as := fixtures.AppService()
	if _, err := newAppSync(c, as).syncHTTPRoute(context.Background()); err != nil {
		t.Errorf("no route wanted: %v, want nil", err)
	}
	if err := newAppSync(c, as).syncGRPCRoute(context.Background()); err != nil {
		t.Errorf("no GRPCRoute wanted: %v, want nil", err)
	}
	as.Spec.HTTPRoute = &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
	if _, err := newAppSync(c, as).syncHTTPRoute(context.Background()); !syncerr.IsStale(err) {
		t.Errorf("a route wanted: %v, want a stale error (cache lag)", err)
	}
	as.Spec.GRPCRoute = &appv1.GRPCRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
	if err := newAppSync(c, as).syncGRPCRoute(context.Background()); !syncerr.IsStale(err) {
		t.Errorf("a GRPCRoute wanted: %v, want a stale error (cache lag)", err)
	}
}

// TestQueueRouted: once the Gateway API is served, the AppServices that ask
// for a route are queued, and no other.
func TestQueueRouted(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	routed, grpc, plain := fixtures.AppService(), fixtures.AppService(), fixtures.AppService()
	routed.Name, grpc.Name, plain.Name = "routed", "grpc", "plain"
	routed.Spec.HTTPRoute = &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
	grpc.Spec.GRPCRoute = &appv1.GRPCRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
	for _, as := range []*appv1.AppService{routed, grpc, plain} {
		if err := indexer.Add(as); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{appServicesLister: appcache.NewLister(indexer), queue: owner.NewQueue("test")}
	defer c.queue.ShutDown()
	c.queueRouted()
	if c.queue.Len() != 2 {
		t.Fatalf("%d keys queued, want 2", c.queue.Len())
	}
	got := map[cache.ObjectName]bool{}
	for range 2 {
		key, _ := c.queue.Get()
		got[key] = true
	}
	if !got[cache.MetaObjectToName(routed)] || !got[cache.MetaObjectToName(grpc)] {
		t.Errorf("queued %v, want %v and %v", got, cache.MetaObjectToName(routed), cache.MetaObjectToName(grpc))
	}
}

// TestRouteUnsupported: a canary's mirror and sticky users are checked
// against the supportedFeatures of the class of each Gateway its route
// attaches to: a class that lists them and lacks one says which and why;
// one that lists none, a Gateway or class that cannot be read, or a canary
// that needs none of them says nothing. (The gateway clientset is a fake:
// this is the one step that reads them.)
func TestRouteUnsupported(t *testing.T) {
	class := func(name string, features ...string) *gatewayv1.GatewayClass {
		gc := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, f := range features {
			gc.Status.SupportedFeatures = append(gc.Status.SupportedFeatures, gatewayv1.SupportedFeature{Name: gatewayv1.FeatureName(f)})
		}
		return gc
	}
	gateway := func(ns, name, class string) *gatewayv1.Gateway {
		return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(class)}}
	}
	client := gatewayfake.NewSimpleClientset(
		class("full", "HTTPRoute", "HTTPRouteRequestMirror", "HTTPRouteRequestPercentageMirror", "HTTPRouteResponseHeaderModification", "GRPCRoute"),
		class("limited", "HTTPRoute", "HTTPRouteRequestMirror"),
		class("silent"),
	)
	// Created, not given to the fake: its tracker files a Gateway given
	// so under a resource the Gets do not ask for.
	for _, g := range []*gatewayv1.Gateway{gateway("infra", "full", "full"), gateway("infra", "limited", "limited"),
		gateway("infra", "silent", "silent"), gateway("infra", "orphan", "missing")} {
		if _, err := client.GatewayV1().Gateways(g.Namespace).Create(context.Background(), g, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := &routeInformer{client: client}
	app := func(gw string, mirror int32, sticky bool) *appv1.AppService {
		as := fixtures.AppService()
		as.Spec.HTTPRoute = &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gw), Namespace: new(gatewayv1.Namespace("infra"))}}}
		as.Spec.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, Mirror: mirror}, {Weight: 100}}}
		if sticky {
			as.Spec.Canary.Sticky = &appv1.CanarySticky{CookieName: "canary"}
		}
		return as
	}
	grpcApp := func(gw string) *appv1.AppService {
		as := app(gw, 0, false)
		as.Spec.HTTPRoute = nil
		as.Spec.GRPCRoute = &appv1.GRPCRoute{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gw), Namespace: new(gatewayv1.Namespace("infra"))}}}
		return as
	}
	for _, tc := range []struct {
		name string
		as   *appv1.AppService
		want string
	}{
		{"all listed", app("full", 20, true), ""},
		{"a percentage mirror not listed", app("limited", 20, false),
			"GatewayClass limited (of Gateway infra/limited) does not list HTTPRouteRequestPercentageMirror among its supportedFeatures, which spec.canary.steps[0].mirror needs"},
		{"a whole mirror listed", app("limited", 100, false), ""},
		{"sticky not listed", app("limited", 0, true),
			"GatewayClass limited (of Gateway infra/limited) does not list HTTPRouteResponseHeaderModification among its supportedFeatures, which spec.canary.sticky needs"},
		{"a class that lists none", app("silent", 20, true), ""},
		{"a class that cannot be read", app("orphan", 20, true), ""},
		{"a Gateway that cannot be read", app("nowhere", 20, true), ""},
		{"no feature needed", app("limited", 0, false), ""},
		{"a GRPCRoute listed", grpcApp("full"), ""},
		{"a GRPCRoute not listed", grpcApp("limited"),
			"GatewayClass limited (of Gateway infra/limited) does not list GRPCRoute among its supportedFeatures, which spec.grpcRoute needs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.unsupported(context.Background(), tc.as); got != tc.want {
				t.Errorf("unsupported = %q, want %q", got, tc.want)
			}
		})
	}
	if got := (*routeInformer)(nil).unsupported(context.Background(), app("limited", 20, false)); got != "" {
		t.Errorf("without the Gateway API: %q, want nothing", got)
	}
}

// TestSyncPreviewHTTPRoute: a blue-green preview's hostname gets its route
// beside the AppService's while the decision says so, and loses it when it
// no longer does; a sync whose decision could not be made keeps it as it
// is, neither written nor deleted.
func TestSyncPreviewHTTPRoute(t *testing.T) {
	ctx := context.Background()
	client := gatewayfake.NewClientset()
	informer := gatewayinformers.NewSharedInformerFactory(client, 0).Gateway().V1().HTTPRoutes().Informer()
	routes, err := owner.NewChildCache[*gatewayv1.HTTPRoute](informer, appServiceKind)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go informer.Run(stop)
	cache.WaitForCacheSync(stop, informer.HasSynced)
	served := &routeKind{kind: "HTTPRoute", started: true, synced: func() bool { return true }}
	c := &Controller{routes: &routeInformer{client: client, http: served, grpc: &routeKind{kind: "GRPCRoute"}, httpCache: routes}}
	as := fixtures.AppService()
	as.Spec.HTTPRoute = &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
	as.Spec.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{}}, BlueGreen: &appv1.BlueGreen{PreviewHostname: "preview.example.com"}}
	names := func() []string {
		list, err := client.GatewayV1().HTTPRoutes(as.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range list.Items {
			out = append(out, r.Name)
		}
		return out
	}
	// waitCached waits until the cache has the routes named.
	waitCached := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(informer.GetStore().List()) != want {
			if time.Now().After(deadline) {
				t.Fatalf("the cache has %d routes, want %d", len(informer.GetStore().List()), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	sync := func(f func(s *appSync)) {
		t.Helper()
		s := newAppSync(c, as)
		f(s)
		if _, err := s.syncHTTPRoute(ctx); err != nil {
			t.Fatal(err)
		}
	}

	sync(func(s *appSync) { s.canary.PreviewRoute = true })
	if got := names(); len(got) != 2 {
		t.Fatalf("routes %v, want the AppService's and the preview's", got)
	}
	waitCached(2)
	client.ClearActions()
	sync(func(s *appSync) { s.canaryUnknown = true })
	if got := names(); len(got) != 2 {
		t.Errorf("routes %v after a sync without a decision, want both kept", got)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("a sync without a decision wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	sync(func(*appSync) {})
	if got := names(); len(got) != 1 || got[0] != as.Name {
		t.Errorf("routes %v once the decision has no preview route, want %s alone", got, as.Name)
	}
}
