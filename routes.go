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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

	// features are the features of the Gateways' classes the routes
	// attach to, read when a release needs one (featuresOf).
	features featureCache
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

// The features a canary needs of its route (a mirror step, sticky users)
// are checked against the supportedFeatures the class of each Gateway it
// attaches to lists in its status (GEP-2162): a class that lists them and
// lacks one holds the canary at its start (canary.RouteUnsupported:
// Stalled, RouteFeatureUnsupported, a Warning Event), rather than pretend
// to mirror or keep users. A class that lists none, or a Gateway or class
// that cannot be read, says nothing: the route's own status does. They are
// read, not watched, and only for an AppService whose release is pending or
// under way and needs one of them: Gateways are few, read by name, and kept
// for half canary.FeaturesRecheck, the interval at which a held canary
// looks again.

// routeFeatures are the Gateway API features the canary of as needs of
// its route, each with the field that needs it.
func routeFeatures(as *appv1.AppService) [][2]string {
	c := as.Spec.Canary
	if c == nil || as.Spec.HTTPRoute == nil {
		return nil
	}
	var out [][2]string
	for i, st := range c.Steps {
		if st.Mirror == 0 {
			continue
		}
		field := fmt.Sprintf("spec.canary.steps[%d].mirror", i)
		out = append(out, [2]string{string(features.SupportHTTPRouteRequestMirror), field})
		if st.Mirror < 100 {
			out = append(out, [2]string{string(features.SupportHTTPRouteRequestPercentageMirror), field})
		}
		break
	}
	if c.Sticky != nil {
		out = append(out, [2]string{string(features.SupportHTTPRouteResponseHeaderModification), "spec.canary.sticky"})
	}
	return out
}

// unsupported says which feature the canary of as needs of its route the
// class of one of its Gateways does not list ("" for none, or none known).
func (r *routeInformer) unsupported(ctx context.Context, as *appv1.AppService) string {
	needs := routeFeatures(as)
	if len(needs) == 0 || !r.served() {
		return ""
	}
	for _, p := range as.Spec.HTTPRoute.ParentRefs {
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
		for _, need := range needs {
			if !listed[need[0]] {
				return fmt.Sprintf("GatewayClass %s (of Gateway %s/%s) does not list %s among its supportedFeatures, which %s needs",
					class, ns, p.Name, need[0], need[1])
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
