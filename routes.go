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
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/owner"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// HTTPRoutes are the one child whose kind a cluster may not serve: the
// Gateway API is installed separately, as CRDs. Their informer starts only
// once discovery shows the kind served: at start-up, or afterwards, when a
// loop of its own that asks discovery every routeRecheck (and at once when
// a sync that wants a route nudges it) finds it, so that
// installing the Gateway API needs no restart. Once the informer has synced,
// that loop queues every AppService that asks for a route: those that
// waited for it are synced within routeRecheck of the API being served,
// whatever their retries' backoff has grown to (it reaches 1000 s). Until
// then an AppService that asks for a route is Degraded (RouteAPIMissing),
// its canary holds at its start (canary.go), and the rest of it is synced as
// usual. A route left from before is seen by the informer's first list,
// whose events queue its owner.

// routeRecheck is how often discovery is asked again whether the cluster
// serves HTTPRoutes while it does not.
const routeRecheck = 30 * time.Second

// routeInformer is the HTTPRoute informer, started on demand.
type routeInformer struct {
	discovery discovery.DiscoveryInterface
	client    gatewayclient.Interface
	factory   gatewayinformers.SharedInformerFactory
	cache     owner.ChildCache[*gatewayv1.HTTPRoute]
	synced    cache.InformerSynced
	// recheck is routeRecheck (shorter in tests).
	recheck time.Duration
	// nudged asks the loop to ask discovery now: a sync wants a route.
	nudged chan struct{}

	mu      sync.Mutex
	started bool
}

// GatewayAPI is the Gateway API's client and informer factory (expected to
// list only objects carrying appv1.LabelAppService, as the children's are).
type GatewayAPI struct {
	Client    gatewayclient.Interface
	Informers gatewayinformers.SharedInformerFactory
}

// newRouteInformer registers the HTTPRoute informer of g, with the
// controller's index and handler; nothing starts yet.
func newRouteInformer(d discovery.DiscoveryInterface, g *GatewayAPI, handler cache.ResourceEventHandler) (*routeInformer, error) {
	client, factory := g.Client, g.Informers
	informer := factory.Gateway().V1().HTTPRoutes().Informer()
	if _, err := informer.AddEventHandler(handler); err != nil {
		return nil, err
	}
	c, err := owner.NewChildCache[*gatewayv1.HTTPRoute](informer, appServiceKind)
	if err != nil {
		return nil, err
	}
	return &routeInformer{discovery: d, client: client, factory: factory, cache: c, synced: informer.HasSynced, recheck: routeRecheck,
		nudged: make(chan struct{}, 1)}, nil
}

// run starts the informer, on ctx's lifetime, if the cluster serves
// HTTPRoutes, and returns its HasSynced. Otherwise it returns nil and
// asks discovery again every recheck, and when a sync that wants a route
// nudges it (at most once a second), until the cluster does; then it
// starts the informer and, once it has synced, calls waiting.
func (r *routeInformer) run(ctx context.Context, waiting func()) cache.InformerSynced {
	if r.startIfServed(ctx) {
		return r.synced
	}
	klog.FromContext(ctx).Info("The cluster does not serve HTTPRoutes (no Gateway API): AppServices that ask for one are Degraded until it does",
		"recheck", r.recheck)
	go func() {
		tick := time.NewTicker(r.recheck)
		defer tick.Stop()
		// It was just asked: next at the recheck, or when nudged.
		for served := false; !served; served = r.startIfServed(ctx) {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-r.nudged:
				// A burst of syncs asks once; the others wait a second.
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		}
		if cache.WaitForCacheSync(ctx.Done(), r.synced) {
			waiting()
		}
	}()
	return nil
}

// nudge has the loop ask discovery now rather than at its next recheck:
// a sync wants a route (the Gateway API may have just been installed).
func (r *routeInformer) nudge() {
	if r == nil {
		return
	}
	select {
	case r.nudged <- struct{}{}:
	default: // one is waiting already
	}
}

// startIfServed starts the informer when the cluster serves HTTPRoutes, and
// reports whether it did.
func (r *routeInformer) startIfServed(ctx context.Context) bool {
	gv := children.HTTPRouteGroupVersion
	ok, err := served(r.discovery, schema.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: "httproutes"})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Asking discovery for HTTPRoutes; asking again later", "recheck", r.recheck)
	}
	if !ok {
		return false
	}
	klog.FromContext(ctx).Info("The cluster serves HTTPRoutes: starting their informer")
	r.factory.Start(ctx.Done())
	r.mu.Lock()
	r.started = true
	r.mu.Unlock()
	return true
}

// served reports whether the informer has started: the cluster serves
// HTTPRoutes. False for a controller without the Gateway API's client.
func (r *routeInformer) served() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// errRouteAPIMissing is the failure of an AppService asking for a route on a
// cluster that serves no HTTPRoutes.
var errRouteAPIMissing = &syncerr.ChildError{
	Reason: appv1.ReasonRouteAPIMissing,
	Err: fmt.Errorf("HTTPRoute: the cluster does not serve %s HTTPRoutes (the Gateway API is not installed); the route is created once it is",
		children.HTTPRouteGroupVersion),
}

// syncHTTPRoute syncs the AppService's HTTPRoute: when the cluster serves
// them and the cache has synced. It returns the live route (nil for none).
func (s *appSync) syncHTTPRoute(ctx context.Context) (*gatewayv1.HTTPRoute, error) {
	desired := children.NewHTTPRoute(s.as)
	children.SplitHTTPRoute(desired, s.as, children.RouteSplit{
		Weight: s.canary.RouteWeight, Mirror: s.canary.RouteMirror, Testers: s.canary.Testers, Sticky: s.canary.StickyCookie,
	})
	r := s.c.routes
	switch {
	case !r.served() && desired != nil:
		r.nudge()
		return nil, errRouteAPIMissing
	case !r.served():
		return nil, nil // no route wanted, and the cluster can hold none
	case !r.synced() && desired != nil:
		// Just started (the Gateway API appeared while we ran).
		return nil, fmt.Errorf("HTTPRoutes: %w", syncerr.ErrCacheLag)
	case !r.synced():
		// No route wanted: one left from before is deleted by a later
		// sync (its informer's events and the resyncs bring the
		// AppService back); the others' syncs do not wait for it.
		return nil, nil
	}
	return s.httpRoutes().Sync(ctx, &s.Sync, desired)
}

func (s *appSync) httpRoutes() owner.ChildKind[*gatewayv1.HTTPRoute] {
	return owner.ChildKind[*gatewayv1.HTTPRoute]{
		Name: "HTTPRoute", Client: s.c.routes.client.GatewayV1().HTTPRoutes(s.as.Namespace),
		Cache: s.c.routes.cache, Diff: children.UpdateHTTPRoute, Unwanted: "the spec has no httpRoute (or no ports)",
	}
}
