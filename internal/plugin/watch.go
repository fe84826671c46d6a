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

package plugin

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// get --watch: one informer for each kind of object the view shows, each
// filtered to the AppService's own (the AppService and its routes by
// name, the Deployments, ReplicaSets and Pods by label), no resync: after
// the first list (or watch-list), the API server pushes every change and
// the plugin asks for nothing. Each change redraws the view from the
// caches, at most every Options.Coalesce.

// source is one informer of the watch, and what to say when the API
// server refuses it.
type source struct {
	informer cache.SharedIndexInformer
	req      request
	// optional tells the refusals for which the view goes on without
	// the source: an API the cluster may not serve (the Gateway API's
	// HTTPRoutes, not found), or one the user may not read (the
	// dashboard's Events, forbidden). Its informer stops, and off says
	// so. nil: none.
	optional func(error) bool
	off      atomic.Bool
	// offBy is the refusal that turned it off.
	offBy atomic.Pointer[error]
}

// watcher runs the sources, and tells of their changes and failures.
type watcher struct {
	changed chan struct{}
	failed  chan error
	sources []*source
}

func newWatcher() *watcher {
	return &watcher{changed: make(chan struct{}, 1), failed: make(chan error, 1)}
}

func (w *watcher) notify() {
	select {
	case w.changed <- struct{}{}:
	default: // a redraw is due already
	}
}

func (w *watcher) fail(err error) {
	select {
	case w.failed <- err:
	default:
	}
}

// add runs the informer until ctx ends.
func (w *watcher) add(ctx context.Context, informer cache.SharedIndexInformer, req request, optional func(error) bool) *source {
	ctx, cancel := context.WithCancel(ctx)
	s := &source{informer: informer, req: req, optional: optional}
	_ = informer.SetTransform(stripManagedFields)
	notify := func(any) { w.notify() }
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, DeleteFunc: notify, UpdateFunc: func(any, any) { w.notify() },
	})
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		switch {
		case optional != nil && optional(err):
			err = apiError(err, req)
			s.offBy.Store(&err)
			s.off.Store(true)
			cancel()
			w.notify()
		case apierrors.IsForbidden(err), apierrors.IsNotFound(err), apierrors.IsUnauthorized(err):
			// Retrying would not help: say it and stop.
			w.fail(apiError(err, req))
		default:
			// A dropped connection: the informer lists and watches again,
			// with backoff.
			cache.DefaultWatchErrorHandler(ctx, r, err)
		}
	})
	w.sources = append(w.sources, s)
	go informer.RunWithContext(ctx)
	return s
}

// synced is closed once every source has its first list (the caches'
// own check: no request).
func (w *watcher) synced(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), func() bool {
			for _, s := range w.sources {
				if !s.synced() {
					return false
				}
			}
			return true
		}) {
			close(done)
		}
	}()
	return done
}

// listWatcher is a typed client of one resource in a namespace: its List
// returns L.
type listWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// informerFor is an informer of client's objects (of obj's type) that
// tweak selects, without resync.
func informerFor[L runtime.Object](c *Clients, client listWatcher[L], obj runtime.Object, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			return client.Watch(ctx, opts)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, watchList(!c.NoWatchList)), obj,
		cache.SharedIndexInformerOptions{Indexers: cache.Indexers{}})
}

// watchList tells client-go's reflector whether the clients stream a
// watch's initial list (watchlist.DoesClientNotSupportWatchListSemantics).
type watchList bool

func (w watchList) IsWatchListSemanticsUnSupported() bool { return !bool(w) }

func (s *source) synced() bool {
	return s.off.Load() || s.informer.HasSynced()
}

// stripManagedFields keeps the caches small: the view never reads them.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// storeItems are the objects of a source's cache, of type T.
func storeItems[T any](s *source) []T {
	var out []T
	for _, obj := range s.informer.GetStore().List() {
		if t, ok := obj.(*T); ok {
			out = append(out, *t)
		}
	}
	return out
}

// watchAppService is get --watch: the view (or, with p, the AppService
// object) at first and at every change, until ctx ends (the user's
// interrupt: exit 0), the AppService is deleted (exit 3) or a watch is
// refused.
func watchAppService(ctx context.Context, o *Options, c *Clients, name string, p printers.ResourcePrinter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ns := c.Namespace
	byName := func(opts *metav1.ListOptions) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
	byLabel := func(sel string) func(*metav1.ListOptions) {
		return func(opts *metav1.ListOptions) { opts.LabelSelector = sel }
	}
	w := newWatcher()
	apps := w.add(ctx, informerFor[*appv1.AppServiceList](c, c.AppV1.AppServices(ns), &appv1.AppService{}, byName),
		request{verbWatch, resourceAppServices, ns}, nil)
	deployments := w.add(ctx, informerFor[*appsv1.DeploymentList](c, c.AppsV1.Deployments(ns), &appsv1.Deployment{}, byLabel(stableSelector(name))),
		request{verbWatch, resourceDeployments, ns}, nil)
	sets, pods := make([]*source, 0, 2), make([]*source, 0, 2)
	for _, sel := range []string{stableSelector(name), canarySelector(name)} {
		sets = append(sets, w.add(ctx, informerFor[*appsv1.ReplicaSetList](c, c.AppsV1.ReplicaSets(ns), &appsv1.ReplicaSet{}, byLabel(sel)),
			request{verbWatch, resourceReplicaSets, ns}, nil))
		pods = append(pods, w.add(ctx, informerFor[*corev1.PodList](c, c.CoreV1.Pods(ns), &corev1.Pod{}, byLabel(sel)),
			request{verbWatch, resourcePods, ns}, nil))
	}
	routes := w.add(ctx, informerFor[*gatewayv1.HTTPRouteList](c, c.GatewayV1.HTTPRoutes(ns), &gatewayv1.HTTPRoute{}, byName),
		request{verbWatch, resourceRoutes, ns}, apierrors.IsNotFound)
	grpcRoutes := w.add(ctx, informerFor[*gatewayv1.GRPCRouteList](c, c.GatewayV1.GRPCRoutes(ns), &gatewayv1.GRPCRoute{}, byName),
		request{verbWatch, resourceGRPCRoutes, ns}, apierrors.IsNotFound)
	// A canary's tests: its Activities, and the Activities' Jobs and Pods.
	acts := w.add(ctx, informerFor[*appv1.ActivityList](c, c.AppV1.Activities(ns), &appv1.Activity{}, byLabel(stableSelector(name))),
		request{verbWatch, resourceActivities, ns}, nil)
	jobs := w.add(ctx, informerFor[*batchv1.JobList](c, c.BatchV1.Jobs(ns), &batchv1.Job{}, byLabel(testsSelector)),
		request{verbWatch, resourceJobs, ns}, nil)
	testPods := w.add(ctx, informerFor[*corev1.PodList](c, c.CoreV1.Pods(ns), &corev1.Pod{}, byLabel(testsSelector)),
		request{verbWatch, resourcePods, ns}, nil)

	select {
	case <-ctx.Done():
		return nil
	case err := <-w.failed:
		return err
	case <-w.synced(ctx):
	}

	snapshot := func() *Snapshot {
		s := &Snapshot{}
		for _, as := range storeItems[appv1.AppService](apps) {
			if as.Name == name {
				s.AppService = &as
			}
		}
		s.Deployments = storeItems[appsv1.Deployment](deployments)
		for i := range sets {
			s.ReplicaSets = append(s.ReplicaSets, storeItems[appsv1.ReplicaSet](sets[i])...)
			s.Pods = append(s.Pods, storeItems[corev1.Pod](pods[i])...)
		}
		for _, r := range storeItems[gatewayv1.HTTPRoute](routes) {
			if r.Name == name {
				s.Route = &r
			}
		}
		if routes.off.Load() {
			s.RouteProblem = routesNotServed
		}
		for _, r := range storeItems[gatewayv1.GRPCRoute](grpcRoutes) {
			if r.Name == name {
				s.GRPCRoute = &r
			}
		}
		if grpcRoutes.off.Load() && s.AppService != nil && s.AppService.Spec.GRPCRoute != nil {
			s.GRPCRouteProblem = grpcRoutesNotServed
		}
		s.Activities, s.Jobs = storeItems[appv1.Activity](acts), storeItems[batchv1.Job](jobs)
		s.Pods = append(s.Pods, storeItems[corev1.Pod](testPods)...)
		return s
	}
	f := &frames{o: o, terminal: o.Terminal(), printer: p}
	first := snapshot()
	if first.AppService == nil {
		return c.notFoundIn(ctx, name)
	}
	tick, err := f.draw(first)
	if err != nil {
		return err
	}
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-w.failed:
			return err
		case <-tick:
		case <-w.changed:
			// Coalesce a burst (a rollout's Pods, a step's writes): one
			// frame for all of it.
			if wait := o.Coalesce - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
			select {
			case <-w.changed:
			default:
			}
		}
		s := snapshot()
		if s.AppService == nil {
			return &Error{Code: ExitNotFound, Err: fmt.Errorf("appservice %q in namespace %q was deleted", name, ns)}
		}
		if tick, err = f.draw(s); err != nil {
			return err
		}
		last = time.Now()
	}
}

// frames writes get --watch's frames: on a terminal, each over the last
// (the screen cleared); elsewhere one after the other, a blank line
// between, and a frame the same as the last not again.
type frames struct {
	o        *Options
	terminal bool
	printer  printers.ResourcePrinter
	last     string
	printed  bool
}

// clearScreen moves the cursor home and clears the screen (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// draw writes the snapshot's frame if it changed, and returns a channel
// that fires when the frame should be drawn again though nothing changed
// (a pause's countdown, on a terminal), nil if never.
func (f *frames) draw(s *Snapshot) (<-chan time.Time, error) {
	var b strings.Builder
	now := f.o.Now()
	if f.printer != nil {
		if s.AppService.ResourceVersion == f.last {
			return nil, nil
		}
		f.last = s.AppService.ResourceVersion
		// kubectl's YAML printer separates documents with "---".
		return nil, printObject(f.printer, s.AppService, f.o.Out)
	}
	if err := Render(&b, s, now); err != nil {
		return nil, err
	}
	frame := b.String()
	var tick <-chan time.Time
	if f.terminal && CanaryOf(s.AppService).PauseLeft(s.AppService, now) > 0 {
		tick = time.After(time.Second)
	}
	if frame == f.last {
		return tick, nil
	}
	f.last = frame
	switch {
	case f.terminal:
		frame = clearScreen + frame
	case f.printed:
		frame = "\n" + frame
	}
	f.printed = true
	_, err := f.o.Out.Write([]byte(frame))
	return tick, err
}
