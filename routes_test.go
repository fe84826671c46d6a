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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryfake "k8s.io/client-go/discovery/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestRouteInformerStartsWhenServed: the HTTPRoute informer starts only
// once discovery shows the Gateway API; while it does not, discovery is
// asked again at most every routeRecheck, and Run's check is forced.
func TestRouteInformerStartsWhenServed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	disc := k8sfake.NewClientset().Discovery().(*discoveryfake.FakeDiscovery)
	client := gatewayfake.NewSimpleClientset()
	factory := gatewayinformers.NewSharedInformerFactory(client, 0)
	r, err := newRouteInformer(disc, &GatewayAPI{Client: client, Informers: factory}, cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); factory.Shutdown() }()

	if started, err := r.startIfServed(ctx, true); started || err != nil {
		t.Fatalf("before Run: started %v (%v), want false", started, err)
	}
	if synced := r.run(ctx); synced != nil {
		t.Fatal("started on a cluster without the Gateway API")
	}
	disc.Resources = []*metav1.APIResourceList{{
		GroupVersion: "gateway.networking.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "httproutes", Kind: "HTTPRoute", Namespaced: true}},
	}}
	if started, err := r.startIfServed(ctx, false); started || err != nil {
		t.Fatalf("asked again within %s: started %v (%v), want false", routeRecheck, started, err)
	}
	r.lastCheck = time.Now().Add(-routeRecheck)
	if started, err := r.startIfServed(ctx, false); !started || err != nil {
		t.Fatalf("served and due: started %v (%v), want true", started, err)
	}
	if !cache.WaitForCacheSync(ctx.Done(), r.synced) {
		t.Error("the started informer never synced")
	}
	// Started once: no more questions to discovery.
	disc.Resources = nil
	if started, err := r.startIfServed(ctx, true); !started || err != nil {
		t.Errorf("after the start: started %v (%v), want true", started, err)
	}
}

// TestSyncHTTPRouteWhileTheRouteCacheSyncs: a Gateway API that appeared
// while the controller ran has a route cache still filling. An AppService
// that wants a route waits for it (stale, retried); one that wants none
// does not.
func TestSyncHTTPRouteWhileTheRouteCacheSyncs(t *testing.T) {
	c := &Controller{routes: &routeInformer{started: true, synced: func() bool { return false }}}
	as := fixtures.AppService()
	if _, err := newAppSync(c, as).syncHTTPRoute(context.Background()); err != nil {
		t.Errorf("no route wanted: %v, want nil", err)
	}
	as.Spec.HTTPRoute = &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
	if _, err := newAppSync(c, as).syncHTTPRoute(context.Background()); !syncerr.IsStale(err) {
		t.Errorf("a route wanted: %v, want a stale error (cache lag)", err)
	}
}
