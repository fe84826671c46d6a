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
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/dashboard"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// kubectl appservice dashboard: internal/dashboard serves the page; here
// are its data (the informers of get --watch, widened to the namespace and
// shared by every open page) and its requests (the commands' own, sent as
// the user).

func newDashboardCommand(o *Options) *cobra.Command {
	var all bool
	var address string
	var port int
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a web page of the namespace's AppServices and their canaries, live, with their buttons",
		Long: `Serve a web page, on this machine, of the namespace's AppServices (-A: of every
namespace), and of each one's canary: its steps, weight, pause, gate, analysis,
tests, route, tree of Deployments, ReplicaSets and Pods, conditions and Events.
It follows them from watches, as get --watch does: one list and watch per kind
of object, whatever the number of pages open. Its buttons, promote, promote to
the end, abort and retry, send the same requests as the commands, as you, with
your kubeconfig's rights.

It listens on 127.0.0.1 and prints the URL to open, which holds a token: the
page refuses a browser without it, and requests another site sends.`,
		Example: `  kubectl appservice dashboard
  kubectl appservice dashboard -A --port 8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withClients(o, func(c *Clients) error {
				ns := c.Namespace
				if all {
					ns = metav1.NamespaceAll
				}
				return serveDashboard(cmd.Context(), o, c, ns, net.JoinHostPort(address, strconv.Itoa(port)))
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Show the AppServices of every namespace.")
	cmd.Flags().StringVar(&address, "address", "127.0.0.1",
		"The address to listen on. Another than the loopback lets others reach the page: the token is then all that guards it.")
	cmd.Flags().IntVar(&port, "port", 3100, "The port to listen on (0: any free port).")
	return cmd
}

// serveDashboard watches the namespace (all with ""), then serves the
// page until ctx ends (the user's interrupt) or a watch is refused.
func serveDashboard(ctx context.Context, o *Options, c *Clients, ns, addr string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nw := watchNamespace(ctx, c, ns)
	select {
	case <-ctx.Done():
		return nil
	case err := <-nw.w.failed:
		return err
	case <-nw.w.synced(ctx):
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return &Error{Code: ExitError, Err: fmt.Errorf("cannot listen on %s: %w", addr, err)}
	}
	src := &dashboardSource{c: c, nw: nw, namespace: ns, now: o.Now, changed: make(chan struct{}, 1)}
	srv, err := dashboard.New(src, l.Addr())
	if err != nil {
		_ = l.Close()
		return err
	}
	if tcp, ok := l.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		printf(o.ErrOut, "Warning: listening on %s, not the loopback: whoever reaches it with the URL acts as you.\n", l.Addr())
	}
	scope := fmt.Sprintf("namespace %q", ns)
	if ns == metav1.NamespaceAll {
		scope = "every namespace"
	}
	open := l.Addr().String()
	if tcp, ok := l.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		// Every address: the loopback's is one that this machine's
		// browser reaches (a browser does not open 0.0.0.0 or [::]).
		open = net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	}
	printf(o.Out, "The dashboard of %s: http://%s/?token=%s\n(Ctrl-C to stop.)\n", scope, open, srv.Token())
	go src.forward(ctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, l) }()
	select {
	case err := <-nw.w.failed:
		cancel()
		if serr := <-errc; serr != nil {
			return errors.Join(err, serr)
		}
		return err
	case err := <-errc:
		if err != nil && err != http.ErrServerClosed {
			return &Error{Code: ExitError, Err: err}
		}
		return nil
	}
}

// namespaceWatch is the informers of the dashboard: get --watch's kinds
// and selectors, of the whole namespace (by the labels' presence rather
// than their values), indexed by AppService; and the AppServices' Events.
type namespaceWatch struct {
	w                                       *watcher
	apps, deployments, routes, acts, events *source
	grpcRoutes                              *source
	sets, pods                              [2]*source
	jobs, testPods                          *source
}

// byAppService is the index of the objects of an AppService: namespace/
// the label's value.
const byAppService = "appservice"

func labelIndex(key string) cache.Indexers {
	return cache.Indexers{byAppService: func(obj any) ([]string, error) {
		m, err := metav1ObjectOf(obj)
		if err != nil {
			return nil, err
		}
		if v, ok := m.GetLabels()[key]; ok {
			return []string{m.GetNamespace() + "/" + v}, nil
		}
		return nil, nil
	}}
}

func metav1ObjectOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("not an object: %T", obj)
	}
	return m, nil
}

// eventIndex indexes Events by their object's namespace/name.
var eventIndex = cache.Indexers{byAppService: func(obj any) ([]string, error) {
	if e, ok := obj.(*corev1.Event); ok {
		return []string{e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name}, nil
	}
	return nil, nil
}}

func watchNamespace(ctx context.Context, c *Clients, ns string) *namespaceWatch {
	has := func(key string) func(*metav1.ListOptions) {
		return func(opts *metav1.ListOptions) { opts.LabelSelector = key }
	}
	everything := func(*metav1.ListOptions) {}
	indexed := func(informer cache.SharedIndexInformer, idx cache.Indexers) cache.SharedIndexInformer {
		_ = informer.AddIndexers(idx)
		return informer
	}
	w := newWatcher()
	nw := &namespaceWatch{w: w}
	nw.apps = w.add(ctx, informerFor[*appv1.AppServiceList](c, c.AppV1.AppServices(ns), &appv1.AppService{}, everything),
		request{verbWatch, resourceAppServices, ns}, nil)
	nw.deployments = w.add(ctx, indexed(informerFor[*appsv1.DeploymentList](c, c.AppsV1.Deployments(ns), &appsv1.Deployment{}, has(appv1.LabelAppService)),
		labelIndex(appv1.LabelAppService)), request{verbWatch, resourceDeployments, ns}, nil)
	for i, key := range []string{appv1.LabelAppService, appv1.LabelCanary} {
		nw.sets[i] = w.add(ctx, indexed(informerFor[*appsv1.ReplicaSetList](c, c.AppsV1.ReplicaSets(ns), &appsv1.ReplicaSet{}, has(key)),
			labelIndex(key)), request{verbWatch, resourceReplicaSets, ns}, nil)
		nw.pods[i] = w.add(ctx, indexed(informerFor[*corev1.PodList](c, c.CoreV1.Pods(ns), &corev1.Pod{}, has(key)),
			labelIndex(key)), request{verbWatch, resourcePods, ns}, nil)
	}
	nw.routes = w.add(ctx, informerFor[*gatewayv1.HTTPRouteList](c, c.GatewayV1.HTTPRoutes(ns), &gatewayv1.HTTPRoute{}, has(appv1.LabelAppService)),
		request{verbWatch, resourceRoutes, ns}, apierrors.IsNotFound)
	nw.grpcRoutes = w.add(ctx, informerFor[*gatewayv1.GRPCRouteList](c, c.GatewayV1.GRPCRoutes(ns), &gatewayv1.GRPCRoute{}, has(appv1.LabelAppService)),
		request{verbWatch, resourceGRPCRoutes, ns}, apierrors.IsNotFound)
	nw.acts = w.add(ctx, indexed(informerFor[*appv1.ActivityList](c, c.AppV1.Activities(ns), &appv1.Activity{}, has(appv1.LabelAppService)),
		labelIndex(appv1.LabelAppService)), request{verbWatch, resourceActivities, ns}, nil)
	nw.jobs = w.add(ctx, indexed(informerFor[*batchv1.JobList](c, c.BatchV1.Jobs(ns), &batchv1.Job{}, has(testsSelector)),
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}), request{verbWatch, resourceJobs, ns}, nil)
	nw.testPods = w.add(ctx, indexed(informerFor[*corev1.PodList](c, c.CoreV1.Pods(ns), &corev1.Pod{}, has(testsSelector)),
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}), request{verbWatch, resourcePods, ns}, nil)
	// The AppServices' Events: a user whose role predates the dashboard
	// may not read them; the page says so and shows the rest.
	byKind := func(opts *metav1.ListOptions) {
		opts.FieldSelector = fields.OneTermEqualSelector("involvedObject.kind", "AppService").String()
	}
	nw.events = w.add(ctx, indexed(informerFor[*corev1.EventList](c, c.CoreV1.Events(ns), &corev1.Event{}, byKind), eventIndex),
		request{verbWatch, resourceEvents, ns}, apierrors.IsForbidden)
	return nw
}

// indexed are the objects of type T the source's index has under key.
func indexed[T any](s *source, index, key string) []T {
	objs, _ := s.informer.GetIndexer().ByIndex(index, key)
	var out []T
	for _, obj := range objs {
		if t, ok := obj.(*T); ok {
			out = append(out, *t)
		}
	}
	return out
}

// snapshot is get's Snapshot of the AppService, from the caches (nil if
// they have none by that name).
func (nw *namespaceWatch) snapshot(ns, name string) *Snapshot {
	obj, ok, _ := nw.apps.informer.GetStore().GetByKey(ns + "/" + name)
	if !ok {
		return nil
	}
	as, ok := obj.(*appv1.AppService)
	if !ok {
		return nil
	}
	key := ns + "/" + name
	s := &Snapshot{AppService: as.DeepCopy()}
	s.Deployments = indexed[appsv1.Deployment](nw.deployments, byAppService, key)
	for i := range nw.sets {
		s.ReplicaSets = append(s.ReplicaSets, indexed[appsv1.ReplicaSet](nw.sets[i], byAppService, key)...)
		s.Pods = append(s.Pods, indexed[corev1.Pod](nw.pods[i], byAppService, key)...)
	}
	if obj, ok, _ := nw.routes.informer.GetStore().GetByKey(key); ok && !nw.routes.off.Load() {
		if r, ok := obj.(*gatewayv1.HTTPRoute); ok {
			s.Route = r.DeepCopy()
		}
	}
	if nw.routes.off.Load() {
		s.RouteProblem = routesNotServed
	}
	if obj, ok, _ := nw.grpcRoutes.informer.GetStore().GetByKey(key); ok && !nw.grpcRoutes.off.Load() {
		if r, ok := obj.(*gatewayv1.GRPCRoute); ok {
			s.GRPCRoute = r.DeepCopy()
		}
	}
	if nw.grpcRoutes.off.Load() && as.Spec.GRPCRoute != nil {
		s.GRPCRouteProblem = grpcRoutesNotServed
	}
	s.Activities = indexed[appv1.Activity](nw.acts, byAppService, key)
	s.Jobs = indexed[batchv1.Job](nw.jobs, cache.NamespaceIndex, ns)
	s.Pods = append(s.Pods, indexed[corev1.Pod](nw.testPods, cache.NamespaceIndex, ns)...)
	return s
}

// appServices are the AppServices of the caches.
func (nw *namespaceWatch) appServices() []appv1.AppService {
	return storeItems[appv1.AppService](nw.apps)
}

// eventsOf are the AppService's Events, and why none are shown if the
// user may not read them.
func (nw *namespaceWatch) eventsOf(ns, name string) ([]corev1.Event, string) {
	if nw.events.off.Load() {
		if err := nw.events.offBy.Load(); err != nil {
			return nil, (*err).Error()
		}
		return nil, "the Events cannot be read"
	}
	return indexed[corev1.Event](nw.events, byAppService, ns+"/"+name), ""
}
