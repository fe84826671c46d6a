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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
	"sigs.k8s.io/gateway-api/pkg/features"

	"example.com/appservice-controller/internal/canary"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/owner"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The routes, HTTPRoutes and GRPCRoutes, are the children whose kinds a
// cluster may not serve: the Gateway API is installed separately, as
// CRDs. The informer of each kind is registered and started only once
// discovery shows the kind served: at start-up, or afterwards, when a loop
// of its own that asks discovery every routeRecheck (and at once when a
// sync that wants a route nudges it) finds it, so that installing the
// Gateway API needs no restart. Once an informer started late has synced,
// that loop queues every AppService that asks for a route: those that
// waited for it are synced within routeRecheck of the kind being served,
// whatever their retries' backoff has grown to (it reaches 1000 s). Until
// then an AppService that asks for a route of that kind is Degraded
// (RouteAPIMissing), its canary holds at its start (canary.go), and the
// rest of it is synced as usual. A route left from before is seen by the
// informer's first list, whose events queue its owner.

// routeRecheck is how often discovery is asked again whether the cluster
// serves a kind of route while it does not.
const routeRecheck = 30 * time.Second

// routeInformer is the routes' informers, each started on demand.
type routeInformer struct {
	discovery discovery.DiscoveryInterface
	client    gatewayclient.Interface
	factory   gatewayinformers.SharedInformerFactory
	// http and grpc are the two kinds; their caches are set when their
	// informers are registered, before they start.
	http, grpc *routeKind
	httpCache  owner.ChildCache[*gatewayv1.HTTPRoute]
	grpcCache  owner.ChildCache[*gatewayv1.GRPCRoute]
	// recheck is routeRecheck (shorter in tests).
	recheck time.Duration
	// nudged asks the loop to ask discovery now: a sync wants a route.
	nudged chan struct{}

	// features are the features of the Gateways' classes the routes
	// attach to, read when a release needs one (featuresOf).
	features featureCache
}

// routeKind is the informer of one kind of route.
type routeKind struct {
	// resource is the kind's name in discovery ("httproutes"), kind its
	// Kind.
	resource, kind string
	// register registers the kind's informer in the factory, with the
	// controller's handler and index, and returns its HasSynced: once,
	// just before the factory starts it.
	register func() (cache.InformerSynced, error)

	mu      sync.Mutex
	started bool
	synced  cache.InformerSynced
}

// served reports whether the kind's informer has started: the cluster
// serves the kind. False for a controller without the Gateway API's
// client.
func (k *routeKind) served() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.started
}

// hasSynced reports whether the kind's informer has started and synced.
func (k *routeKind) hasSynced() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	synced := k.synced
	k.mu.Unlock()
	return synced != nil && synced()
}

// GatewayAPI is the Gateway API's client and informer factory (expected to
// list only objects carrying appv1.LabelAppService, as the children's are).
type GatewayAPI struct {
	Client    gatewayclient.Interface
	Informers gatewayinformers.SharedInformerFactory
}

// newRouteInformer makes the routes' informers of g, registered with the
// controller's index and handler once each kind is served; nothing starts
// yet.
func newRouteInformer(d discovery.DiscoveryInterface, g *GatewayAPI, handler cache.ResourceEventHandler) *routeInformer {
	r := &routeInformer{discovery: d, client: g.Client, factory: g.Informers, recheck: routeRecheck, nudged: make(chan struct{}, 1)}
	r.http = &routeKind{resource: "httproutes", kind: "HTTPRoute", register: func() (cache.InformerSynced, error) {
		informer := g.Informers.Gateway().V1().HTTPRoutes().Informer()
		var err error
		r.httpCache, err = registerRoutes[*gatewayv1.HTTPRoute](informer, handler)
		return informer.HasSynced, err
	}}
	r.grpc = &routeKind{resource: "grpcroutes", kind: "GRPCRoute", register: func() (cache.InformerSynced, error) {
		informer := g.Informers.Gateway().V1().GRPCRoutes().Informer()
		var err error
		r.grpcCache, err = registerRoutes[*gatewayv1.GRPCRoute](informer, handler)
		return informer.HasSynced, err
	}}
	return r
}

// registerRoutes adds the controller's handler and index to a route
// informer, and returns its cache.
func registerRoutes[T metav1.Object](informer cache.SharedIndexInformer, handler cache.ResourceEventHandler) (owner.ChildCache[T], error) {
	if _, err := informer.AddEventHandler(handler); err != nil {
		return owner.ChildCache[T]{}, err
	}
	return owner.NewChildCache[T](informer, appServiceKind)
}

// kinds are the routes' kinds.
func (r *routeInformer) kinds() []*routeKind { return []*routeKind{r.http, r.grpc} }

// run starts, on ctx's lifetime, the informers of the kinds the cluster
// serves, and returns the HasSynced of those (nil for none). For the
// others it asks discovery again every recheck, and when a sync that
// wants a route nudges it (at most once a second), until the cluster
// serves them; it starts each then and, once it has synced, calls
// waiting.
func (r *routeInformer) run(ctx context.Context, waiting func()) cache.InformerSynced {
	started := r.startServed(ctx)
	synced := make([]cache.InformerSynced, 0, len(started))
	for _, k := range started {
		synced = append(synced, k.synced)
	}
	var missing []string
	for _, k := range r.kinds() {
		if !k.served() {
			missing = append(missing, k.kind+"s")
		}
	}
	if len(missing) > 0 {
		klog.FromContext(ctx).Info("The cluster does not serve these routes (the Gateway API's): AppServices that ask for one are Degraded until it does",
			"kinds", missing, "recheck", r.recheck)
		go r.wait(ctx, waiting)
	}
	if len(synced) == 0 {
		return nil
	}
	return func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
}

// wait asks discovery every recheck, or when nudged, until every kind is
// served, starting each when it is; once one started so has synced, it
// calls waiting.
func (r *routeInformer) wait(ctx context.Context, waiting func()) {
	tick := time.NewTicker(r.recheck)
	defer tick.Stop()
	// It was just asked: next at the recheck, or when nudged.
	for !r.http.served() || !r.grpc.served() {
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
		started := r.startServed(ctx)
		for _, k := range started {
			if !cache.WaitForCacheSync(ctx.Done(), k.synced) {
				return
			}
		}
		if len(started) > 0 {
			waiting()
		}
	}
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

// startServed starts the informer of each kind not yet started that the
// cluster serves, and returns those it started. Discovery is asked once
// for all the kinds: one answer decides them all, so a Gateway API
// installed between two questions cannot start one kind in a round and
// the other in the next.
func (r *routeInformer) startServed(ctx context.Context) []*routeKind {
	var waiting []*routeKind
	for _, k := range r.kinds() {
		if !k.served() {
			waiting = append(waiting, k)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	resources, err := servedResources(r.discovery, children.HTTPRouteGroupVersion.String())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Asking discovery for the routes' kinds; asking again later", "recheck", r.recheck)
	}
	var started []*routeKind
	for _, k := range waiting {
		if !resources.Has(k.resource) {
			continue
		}
		synced, err := k.register()
		if err != nil {
			// Adding a handler or an index to an informer not started
			// does not fail.
			klog.FromContext(ctx).Error(err, "Registering a route informer", "kind", k.kind)
			continue
		}
		k.mu.Lock()
		k.started, k.synced = true, synced
		k.mu.Unlock()
		klog.FromContext(ctx).Info("The cluster serves these routes: starting their informer", "kind", k.kind)
		started = append(started, k)
	}
	if len(started) > 0 {
		r.factory.Start(ctx.Done())
	}
	return started
}

// kind is r's kind of route (http or grpc): nil for a controller without
// the Gateway API's client.
func (r *routeInformer) kind(grpc bool) *routeKind {
	switch {
	case r == nil:
		return nil
	case grpc:
		return r.grpc
	}
	return r.http
}

// The features a canary needs of its routes (a mirror step, sticky users,
// the GRPCRoute itself) are checked against the supportedFeatures the
// class of each Gateway they attach to lists in its status (GEP-2162): a class that lists them and
// lacks one holds the canary at its start (canary.RouteUnsupported:
// Stalled, RouteFeatureUnsupported, a Warning Event), rather than pretend
// to mirror or keep users. A class that lists none, or a Gateway or class
// that cannot be read, says nothing: the route's own status does. They are
// read, not watched, and only for an AppService whose release is pending or
// under way and needs one of them: Gateways are few, read by name, and kept
// for half canary.FeaturesRecheck, the interval at which a held canary
// looks again.

// routeNeeds are the Gateway API features the canary of as needs of one of
// its routes, each with the field that needs it, and the route's parents.
type routeNeeds struct {
	parents []gatewayv1.ParentReference
	needs   [][2]string
}

// routeFeatures are the features the canary of as needs of its routes: of
// the HTTPRoute, a mirror's and the sticky users'; of the GRPCRoute, the
// kind itself (the Gateway API names no feature for a GRPCRoute's mirror,
// which the route's status reports).
func routeFeatures(as *appv1.AppService) []routeNeeds {
	c := as.Spec.Canary
	if c == nil {
		return nil
	}
	var out []routeNeeds
	if r := as.Spec.HTTPRoute; r != nil {
		var needs [][2]string
		for i, st := range c.Steps {
			if st.Mirror == 0 {
				continue
			}
			field := fmt.Sprintf("spec.canary.steps[%d].mirror", i)
			needs = append(needs, [2]string{string(features.SupportHTTPRouteRequestMirror), field})
			if st.Mirror < 100 {
				needs = append(needs, [2]string{string(features.SupportHTTPRouteRequestPercentageMirror), field})
			}
			break
		}
		if c.Sticky != nil {
			needs = append(needs, [2]string{string(features.SupportHTTPRouteResponseHeaderModification), "spec.canary.sticky"})
		}
		if len(needs) > 0 {
			out = append(out, routeNeeds{parents: r.ParentRefs, needs: needs})
		}
	}
	if r := as.Spec.GRPCRoute; r != nil {
		out = append(out, routeNeeds{parents: r.ParentRefs, needs: [][2]string{{string(features.SupportGRPCRoute), "spec.grpcRoute"}}})
	}
	return out
}

// unsupported says which feature the canary of as needs of its routes the
// class of one of their Gateways does not list ("" for none, or none
// known).
func (r *routeInformer) unsupported(ctx context.Context, as *appv1.AppService) string {
	if r == nil {
		return ""
	}
	for _, route := range routeFeatures(as) {
		for _, p := range route.parents {
			if (p.Group != nil && *p.Group != gatewayv1.GroupName) || (p.Kind != nil && *p.Kind != "Gateway") {
				continue
			}
			ns := as.Namespace
			if p.Namespace != nil {
				ns = string(*p.Namespace)
			}
			class, listed := r.features.of(ctx, r.client, ns, string(p.Name))
			if listed == nil {
				continue
			}
			for _, need := range route.needs {
				if !listed[need[0]] {
					return fmt.Sprintf("GatewayClass %s (of Gateway %s/%s) does not list %s among its supportedFeatures, which %s needs",
						class, ns, p.Name, need[0], need[1])
				}
			}
		}
	}
	return ""
}

// featureCache keeps, by Gateway, its class and the features the class
// lists, for half canary.FeaturesRecheck.
type featureCache struct {
	mu   sync.Mutex
	byGW map[string]gatewayFeatures
}

type gatewayFeatures struct {
	class string
	// listed is nil when the class lists none, or the Gateway or its
	// class could not be read.
	listed map[string]bool
	at     time.Time
}

// of returns the class of Gateway ns/name and the features it lists (nil:
// none known), read through client when not kept.
func (f *featureCache) of(ctx context.Context, client gatewayclient.Interface, ns, name string) (string, map[string]bool) {
	key := ns + "/" + name
	f.mu.Lock()
	e, ok := f.byGW[key]
	f.mu.Unlock()
	if ok && time.Since(e.at) < canary.FeaturesRecheck/2 {
		return e.class, e.listed
	}
	e = gatewayFeatures{at: time.Now()}
	if gw, err := client.GatewayV1().Gateways(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		klog.FromContext(ctx).V(4).Info("Reading a Gateway for its class's features; taken as unknown", "gateway", key, "err", err)
	} else if gc, err := client.GatewayV1().GatewayClasses().Get(ctx, string(gw.Spec.GatewayClassName), metav1.GetOptions{}); err != nil {
		klog.FromContext(ctx).V(4).Info("Reading a GatewayClass for its features; taken as unknown", "gatewayClass", gw.Spec.GatewayClassName, "err", err)
		e.class = string(gw.Spec.GatewayClassName)
	} else {
		e.class = gc.Name
		for _, sf := range gc.Status.SupportedFeatures {
			if e.listed == nil {
				e.listed = map[string]bool{}
			}
			e.listed[string(sf.Name)] = true
		}
	}
	f.mu.Lock()
	if f.byGW == nil {
		f.byGW = map[string]gatewayFeatures{}
	}
	f.byGW[key] = e
	f.mu.Unlock()
	return e.class, e.listed
}

// errRouteAPIMissing and errGRPCRouteAPIMissing are the failures of an
// AppService asking for a route on a cluster that serves no routes of
// that kind.
var (
	errRouteAPIMissing = &syncerr.ChildError{
		Reason: appv1.ReasonRouteAPIMissing,
		Err: fmt.Errorf("HTTPRoute: the cluster does not serve %s HTTPRoutes (the Gateway API is not installed); the route is created once it is",
			children.HTTPRouteGroupVersion),
	}
	errGRPCRouteAPIMissing = &syncerr.ChildError{
		Reason: appv1.ReasonRouteAPIMissing,
		Err: fmt.Errorf("GRPCRoute: the cluster does not serve %s GRPCRoutes (the Gateway API is not installed, or too old); the route is created once it is",
			children.GRPCRouteGroupVersion),
	}
)

// routeMissing reports whether as asks for a route of a kind the cluster
// does not serve (yet).
func (r *routeInformer) routeMissing(as *appv1.AppService) bool {
	return (as.Spec.HTTPRoute != nil && !r.kind(false).served()) || (as.Spec.GRPCRoute != nil && !r.kind(true).served())
}

// gate says whether a route of kind k may be synced now, and if not, the
// error of the sync (nil when it wants no route): the cluster must serve
// the kind, and its cache must have synced.
func (r *routeInformer) gate(k *routeKind, wanted bool, missing error) (bool, error) {
	switch {
	case !k.served() && wanted:
		r.nudge()
		return false, missing
	case !k.served():
		return false, nil // no route wanted, and the cluster can hold none
	case !k.hasSynced() && wanted:
		// Just started (the Gateway API appeared while we ran).
		return false, fmt.Errorf("%ss: %w", k.kind, syncerr.ErrCacheLag)
	case !k.hasSynced():
		// No route wanted: one left from before is deleted by a later
		// sync (its informer's events and the resyncs bring the
		// AppService back); the others' syncs do not wait for it.
		return false, nil
	}
	return true, nil
}

// split is what the canary's decision asks of the routes.
func (s *appSync) split() children.RouteSplit {
	return children.RouteSplit{
		Weight: s.canary.RouteWeight, Mirror: s.canary.RouteMirror, Testers: s.canary.Testers, Sticky: s.canary.StickyCookie,
	}
}

// syncHTTPRoute syncs the AppService's HTTPRoute, and a blue-green
// preview's hostname's (PreviewRoute): when the cluster serves them and the
// cache has synced. It returns the live route (nil for none).
func (s *appSync) syncHTTPRoute(ctx context.Context) (*gatewayv1.HTTPRoute, error) {
	desired := children.NewHTTPRoute(s.as)
	children.SplitHTTPRoute(desired, s.as, s.split())
	if ok, err := s.c.routes.gate(s.c.routes.kind(false), desired != nil, errRouteAPIMissing); !ok {
		return nil, err
	}
	routes := s.httpRoutes()
	var preview *gatewayv1.HTTPRoute
	switch {
	case s.canaryUnknown:
		// No decision: the preview hostname's route, if any, as it is.
		if live, found, err := routes.Cache.Get(s.as.Namespace, children.CanaryName(s.as)); err == nil && found {
			preview = live
		}
	case s.canary.PreviewRoute:
		preview = children.NewPreviewHTTPRoute(s.as)
	}
	if preview == nil || desired == nil {
		return routes.Sync(ctx, &s.Sync, desired)
	}
	// A blue-green preview's hostname: its route beside the AppService's,
	// pruned with the preview's end, before its Service goes.
	live, err := routes.Ensure(ctx, &s.Sync, desired)
	var previewErr error
	if !s.canaryUnknown {
		_, previewErr = routes.Ensure(ctx, &s.Sync, preview)
	}
	return live, errors.Join(err, previewErr, routes.Prune(ctx, &s.Sync, desired, preview))
}

func (s *appSync) httpRoutes() owner.ChildKind[*gatewayv1.HTTPRoute] {
	return owner.ChildKind[*gatewayv1.HTTPRoute]{
		Name: "HTTPRoute", Client: s.c.routes.client.GatewayV1().HTTPRoutes(s.as.Namespace),
		Cache: s.c.routes.httpCache, Diff: children.UpdateHTTPRoute, Unwanted: "the spec has no httpRoute (or no ports)",
	}
}

// syncGRPCRoute is syncHTTPRoute for the GRPCRoute, which the status does
// not read.
func (s *appSync) syncGRPCRoute(ctx context.Context) error {
	desired := children.NewGRPCRoute(s.as)
	children.SplitGRPCRoute(desired, s.as, s.split())
	if ok, err := s.c.routes.gate(s.c.routes.kind(true), desired != nil, errGRPCRouteAPIMissing); !ok {
		return err
	}
	_, err := s.grpcRoutes().Sync(ctx, &s.Sync, desired)
	return err
}

func (s *appSync) grpcRoutes() owner.ChildKind[*gatewayv1.GRPCRoute] {
	return owner.ChildKind[*gatewayv1.GRPCRoute]{
		Name: "GRPCRoute", Client: s.c.routes.client.GatewayV1().GRPCRoutes(s.as.Namespace),
		Cache: s.c.routes.grpcCache, Diff: children.UpdateGRPCRoute, Unwanted: "the spec has no grpcRoute (or no ports)",
	}
}
