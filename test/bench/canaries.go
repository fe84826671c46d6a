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
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	appinformers "example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// The canaries: N AppServices each released through three steps at once,
// by route or by Pods, timed from the spec change to the first weighted
// traffic and to the end, from the route's and the shares' versions as
// watches saw them (measureCanaries).

// Canaries: N AppServices of two replicas behind an HTTPRoute (or, by
// Pods, without one), each with a canary of three steps (10%, 50%, 100%,
// no pause), all given a new image at once, on a cluster that runs their
// Pods. From the spec change to the first weighted traffic (the route's
// canary weight above 0, or by Pods the status's share above 0, seen
// through a watch), median and slowest; until every canary is promoted
// and gone; and the controller's writes per canary, in all and of the
// children. BlueGreen: instead, a blue-green release of one step of
// weight 0 without a route, a scale-down delay of 0, switched by the
// Service's selector (its first weighted traffic: the status's share).
type Canaries struct {
	N                    int            `json:"n"`
	ByPods               bool           `json:"byPods,omitempty"`
	BlueGreen            bool           `json:"blueGreen,omitempty"`
	FirstWeightMedian    float64        `json:"firstWeightMedianSeconds"`
	FirstWeightMax       float64        `json:"firstWeightMaxSeconds"`
	PromotedSeconds      float64        `json:"promotedSeconds"`
	WritesPerCanary      float64        `json:"writesPerCanary"`
	ChildWritesPerCanary float64        `json:"childWritesPerCanary"`
	Writes               map[string]int `json:"writes"`
}

// measureAllCanaries runs the canaries by route, by Pods, and blue-green by
// the Service's selector (-skip canary-route, canary-pods or bluegreen
// leaves one out; canary, all).
func measureAllCanaries(o options, res *Results) error {
	if o.skip["canary"] {
		return nil
	}
	for _, run := range []struct {
		skip, what        string
		byPods, blueGreen bool
		into              *Canaries
	}{
		{"canary-route", "canaries", false, false, &res.Canaries},
		{"canary-pods", "canaries by Pods", true, false, &res.CanariesByPods},
		{"bluegreen", "blue-green releases", true, true, &res.CanariesBlueGreen},
	} {
		if o.skip[run.skip] {
			continue
		}
		logf(run.what)
		c, err := measureCanaries(o, 100, run.byPods, run.blueGreen)
		if err != nil {
			return err
		}
		*run.into = c
	}
	return nil
}

// measureCanaries creates n AppServices of two replicas with an HTTPRoute
// and a canary of three steps without pauses, waits until they run, gives
// them all a new image, and measures until every canary is promoted (see
// Canaries).
func measureCanaries(o options, n int, byPods, blueGreen bool) (Canaries, error) {
	res := Canaries{N: n, ByPods: byPods, BlueGreen: blueGreen}
	e, closeAll, err := startRouted(o, "canaries")
	if err != nil {
		return res, err
	}
	defer closeAll()
	ctx := context.Background()
	routes, err := watchRoutes(e)
	if err != nil {
		return res, err
	}
	defer routes.close()
	shares, err := watchShares(e)
	if err != nil {
		return res, err
	}
	defer shares.close()
	// The first weighted traffic: the route's, or by Pods the status's share.
	first := routes.firstWeight
	weighted := routes.weighted
	if byPods {
		first, weighted = shares.firstShare, shares.shared
	}

	name := func(i int) string { return fmt.Sprintf("app-%05d", i) }
	c := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10}, {Weight: 50}, {Weight: 100}}}
	if blueGreen {
		c = &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 0}}, BlueGreen: &appv1.BlueGreen{ScaleDownDelaySeconds: new(int32(0))}}
	}
	if err := createCanaried(ctx, e, n, name, c, routes, !byPods); err != nil {
		return res, err
	}

	start := time.Now()
	changed := make([]time.Time, n)
	if err := inParallel(n, func(i int) error {
		changed[i] = time.Now()
		_, err := e.apps.AppV1().AppServices(benchNamespace).Patch(ctx, name(i), types.MergePatchType,
			[]byte(`{"spec":{"image":"nginx:1.28"}}`), metav1.PatchOptions{})
		return err
	}); err != nil {
		return res, err
	}
	// The first weighted traffic of each comes before its promotion.
	if err := poll("a canary's traffic on every AppService", func() (bool, error) { return weighted() == n, nil }); err != nil {
		return res, err
	}
	if err := poll("the canaries promoted", canariesDone(ctx, e, n, routes, !byPods)); err != nil {
		return res, err
	}
	res.PromotedSeconds = time.Since(start).Seconds()
	latencies := make([]float64, n)
	for i := range n {
		latencies[i] = first(name(i)).Sub(changed[i]).Seconds()
	}
	slices.Sort(latencies)
	res.FirstWeightMedian, res.FirstWeightMax = percentile(latencies, 0.5), latencies[len(latencies)-1]

	writes, err := e.cluster.Writes(controllerUser, start)
	if err != nil {
		return res, err
	}
	res.Writes = map[string]int{}
	total, toChildren := 0, 0
	for _, w := range writes {
		if w.ObjectRef == nil || w.ObjectRef.Resource == eventsResource {
			continue
		}
		res.Writes[w.Verb+" "+strings.TrimSuffix(w.ObjectRef.Resource+"/"+w.ObjectRef.Subresource, "/")]++
		total++
		if w.ObjectRef.Resource != "appservices" {
			toChildren++
		}
	}
	res.WritesPerCanary = float64(total) / float64(n)
	res.ChildWritesPerCanary = float64(toChildren) / float64(n)
	return res, nil
}

// startRouted starts a control plane that runs Pods (a controller manager,
// a scheduler, two nodes) and serves the Gateway API, and the controller on
// it, ready; closeAll stops both.
func startRouted(o options, label string) (e *env, closeAll func(), err error) {
	if e, err = newEnvWith(o, label, localcluster.Options{ControllerManager: true, Scheduler: true, Nodes: 2}); err != nil {
		return nil, nil, err
	}
	closeAll = e.cluster.Stop
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	if err = localcluster.InstallGatewayAPI(context.Background(), e.cfg); err != nil {
		return nil, nil, err
	}
	ctrl, err := startController(o, e)
	if err != nil {
		return nil, nil, err
	}
	closeAll = func() { stop(ctrl); e.cluster.Stop() }
	if _, err = waitReady(ctrl); err != nil {
		return nil, nil, err
	}
	return e, closeAll, nil
}

// createCanaried creates n AppServices named name(i), of two replicas
// behind an HTTPRoute (without one unless route), with the canary c, and
// waits until each runs with its route to the one Service (the canaries'
// and the analyses' runs).
func createCanaried(ctx context.Context, e *env, n int, name func(int) string, c *appv1.Canary, routes *routeWatch, route bool) error {
	if err := inParallel(n, func(i int) error {
		spec := appv1.AppServiceSpec{
			Size: new(int32(2)), Image: benchImage, Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
			HTTPRoute: &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayName}}},
			Canary:    c.DeepCopy(),
		}
		if !route {
			spec.HTTPRoute = nil
		}
		as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name(i)}, Spec: spec}
		_, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, as, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	return poll("the AppServices running", canariesDone(ctx, e, n, routes, route))
}

// canariesDone reports whether the n AppServices run, no canary under
// way, each route (when route) to the one Service.
func canariesDone(ctx context.Context, e *env, n int, routes *routeWatch, route bool) func() (bool, error) {
	return func() (bool, error) {
		ready, err := canariesSettled(ctx, e)
		return ready == n && (!route || routes.single() == n), err
	}
}

// poll calls done until it reports true, for at most 15 minutes.
func poll(what string, done func() (bool, error)) error {
	return pollEvery(100*time.Millisecond, what, done)
}

// canariesSettled counts the AppServices that are Ready, their current
// spec observed, with a canary status and no canary under way.
func canariesSettled(ctx context.Context, e *env) (int, error) {
	list, err := e.apps.AppV1().AppServices(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	ready := 0
	for _, as := range list.Items {
		c := apimeta.FindStatusCondition(as.Status.Conditions, appv1.ConditionReady)
		if as.Status.ObservedGeneration == as.Generation && c != nil && c.Status == metav1.ConditionTrue &&
			as.Status.Canary != nil && as.Status.Canary.CanaryTemplateHash == "" {
			ready++
		}
	}
	return ready, nil
}

// routeWatch follows the bench namespace's HTTPRoutes: when each first
// sent a canary traffic, and whether it has one backend.
type routeWatch struct {
	mu            sync.Mutex
	first         map[string]time.Time
	singleBackend map[string]bool
	stop          chan struct{}
}

func watchRoutes(e *env) (*routeWatch, error) {
	w := &routeWatch{first: map[string]time.Time{}, singleBackend: map[string]bool{}, stop: make(chan struct{})}
	observe := func(obj any) {
		r, ok := obj.(*gatewayv1.HTTPRoute)
		if !ok || len(r.Spec.Rules) == 0 {
			return
		}
		refs := r.Spec.Rules[0].BackendRefs
		w.mu.Lock()
		defer w.mu.Unlock()
		w.singleBackend[r.Name] = len(refs) == 1
		if _, seen := w.first[r.Name]; !seen && len(refs) == 2 && refs[1].Weight != nil && *refs[1].Weight > 0 {
			w.first[r.Name] = time.Now()
		}
	}
	gf := gatewayinformers.NewSharedInformerFactoryWithOptions(e.gateway, 0, gatewayinformers.WithNamespace(benchNamespace))
	if _, err := gf.Gateway().V1().HTTPRoutes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return nil, err
	}
	gf.Start(w.stop)
	gf.WaitForCacheSync(w.stop)
	return w, nil
}

func (w *routeWatch) close() { close(w.stop) }

// shareWatch follows the bench namespace's AppServices: when the status of
// each first gave its canary a share of the traffic.
type shareWatch struct {
	mu    sync.Mutex
	first map[string]time.Time
	stop  chan struct{}
}

func watchShares(e *env) (*shareWatch, error) {
	w := &shareWatch{first: map[string]time.Time{}, stop: make(chan struct{})}
	observe := func(obj any) {
		as, ok := obj.(*appv1.AppService)
		if !ok || as.Status.Canary == nil || as.Status.Canary.Share <= 0 {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, seen := w.first[as.Name]; !seen {
			w.first[as.Name] = time.Now()
		}
	}
	af := appinformers.NewSharedInformerFactoryWithOptions(e.apps, 0, appinformers.WithNamespace(benchNamespace))
	if _, err := af.App().V1().AppServices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return nil, err
	}
	af.Start(w.stop)
	af.WaitForCacheSync(w.stop)
	return w, nil
}

func (w *shareWatch) close() { close(w.stop) }

// shared counts the AppServices whose canary got a share.
func (w *shareWatch) shared() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.first)
}

// firstShare is when the AppService name's canary first got a share.
func (w *shareWatch) firstShare(name string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first[name]
}

// single counts the routes with one backend.
func (w *routeWatch) single() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, one := range w.singleBackend {
		if one {
			n++
		}
	}
	return n
}

// weighted counts the routes that have sent a canary traffic.
func (w *routeWatch) weighted() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.first)
}

// firstWeight is when the route name first sent a canary traffic.
func (w *routeWatch) firstWeight(name string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first[name]
}
