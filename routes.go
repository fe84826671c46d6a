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
// once discovery shows the kind served: at start-up, or afterwards from any
// sync, at most once per routeRecheck (every sync, not only those that ask
// for a route: a route left from before must be seen to be deleted), so that
// installing the Gateway API needs no restart. Until then an AppService
// that asks for a route is Degraded (RouteAPIMissing) and the rest of it is
// synced as usual.

// routeRecheck is how often, at most, discovery is asked again whether the
// cluster serves HTTPRoutes while it did not.
const routeRecheck = 30 * time.Second

// routeInformer is the HTTPRoute informer, started on demand.
type routeInformer struct {
	discovery discovery.DiscoveryInterface
	client    gatewayclient.Interface
	factory   gatewayinformers.SharedInformerFactory
	cache     owner.ChildCache[*gatewayv1.HTTPRoute]
	synced    cache.InformerSynced

	mu        sync.Mutex
	stop      <-chan struct{} // set by Run
	started   bool
	lastCheck time.Time
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
	return &routeInformer{discovery: d, client: client, factory: factory, cache: c, synced: informer.HasSynced}, nil
}

// run lets the informer start, on ctx's lifetime: at once if the cluster
// serves HTTPRoutes, later (startIfServed) otherwise. It returns the
// informer's HasSynced when it started.
func (r *routeInformer) run(ctx context.Context) cache.InformerSynced {
	r.mu.Lock()
	r.stop = ctx.Done()
	r.mu.Unlock()
	started, err := r.startIfServed(ctx, true)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Asking discovery for HTTPRoutes; asking again when an AppService wants one")
	}
	if !started {
		klog.FromContext(ctx).Info("The cluster does not serve HTTPRoutes (no Gateway API): AppServices that ask for one are Degraded until it does")
		return nil
	}
	return r.synced
}

// startIfServed starts the informer when the cluster serves HTTPRoutes
// (asking discovery at most once per routeRecheck, unless force) and
// reports whether it has started.
func (r *routeInformer) startIfServed(ctx context.Context, force bool) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return true, nil
	}
	if r.stop == nil || (!force && time.Since(r.lastCheck) < routeRecheck) {
		return false, nil
	}
	r.lastCheck = time.Now()
	gv := children.HTTPRouteGroupVersion
	ok, err := served(r.discovery, schema.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: "httproutes"})
	if err != nil || !ok {
		return false, err
	}
	klog.FromContext(ctx).Info("The cluster serves HTTPRoutes: starting their informer")
	r.factory.Start(r.stop)
	r.started = true
	return true, nil
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
	children.SplitHTTPRoute(desired, s.as, s.canary.RouteWeight, s.canary.Testers)
	r := s.c.routes
	if r == nil {
		if desired != nil {
			return nil, errRouteAPIMissing
		}
		return nil, nil
	}
	started, err := r.startIfServed(ctx, false)
	switch {
	case err != nil:
		return nil, err
	case !started && desired != nil:
		return nil, errRouteAPIMissing
	case !started:
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
