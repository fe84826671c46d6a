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
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	"example.com/appservice-controller/pkg/generated/clientset/versioned/scheme"
)

func newGetCommand(o *Options) *cobra.Command {
	var watch bool
	var output string
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show an AppService as a tree of its children, with its canary",
		Long: `Show an AppService: its state, its canary's step, weight, pause or gate, its
route's weights, its analysis, its conditions, and the tree of its Deployments
(stable and canary), their ReplicaSets and Pods, and its HTTPRoute and GRPCRoute.

--watch redraws it on every change the API server reports through watches
(never polling), at most every 200 ms; on a terminal it clears the screen
between frames, elsewhere frames are separated by a blank line.

-o json|yaml prints the AppService object instead.`,
		Example: `  kubectl appservice get web
  kubectl appservice get web --watch
  kubectl appservice get web -o yaml`,
		Args:              oneName,
		ValidArgsFunction: completeNames(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := objectPrinter(output)
			if err != nil {
				return err
			}
			return withClients(o, func(c *Clients) error {
				if watch {
					return watchAppService(cmd.Context(), o, c, args[0], p)
				}
				if p != nil {
					as, err := c.getAppService(cmd.Context(), args[0])
					if err != nil {
						return err
					}
					return printObject(p, as, o.Out)
				}
				s, err := readSnapshot(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				return Render(o.Out, s, o.Now())
			})
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "After the first view, redraw it on every change (watches, no polling), until interrupted.")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Print the AppService object instead: json or yaml.")
	return cmd
}

// objectPrinter is kubectl's printer for -o (nil: none asked).
func objectPrinter(output string) (printers.ResourcePrinter, error) {
	var p printers.ResourcePrinter
	switch output {
	case "":
		return nil, nil
	case "json":
		p = &printers.JSONPrinter{}
	case "yaml":
		p = &printers.YAMLPrinter{}
	default:
		return nil, usageErrorf("unknown output format %q: json or yaml", output)
	}
	// The typed clients' objects come without apiVersion and kind: the
	// scheme knows them.
	return printers.NewTypeSetter(scheme.Scheme).ToPrinter(p), nil
}

// printObject prints obj as kubectl get -o does: without managedFields.
func printObject(p printers.ResourcePrinter, obj runtime.Object, w io.Writer) error {
	obj = obj.DeepCopyObject()
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	if l, ok := obj.(*appv1.AppServiceList); ok {
		// As kubectl prints a list's items: each with its kind.
		for i := range l.Items {
			l.Items[i].SetManagedFields(nil)
			l.Items[i].SetGroupVersionKind(appv1.SchemeGroupVersion.WithKind("AppService"))
		}
	}
	return p.PrintObj(obj, w)
}

// Selectors of the AppService's children: the stable Deployment, its
// ReplicaSets and Pods carry LabelAppService; the canary's ReplicaSets and
// Pods LabelCanary instead (the canary's Deployment carries both).
func stableSelector(name string) string {
	return labels.Set{appv1.LabelAppService: name}.String()
}

func canarySelector(name string) string {
	return labels.Set{appv1.LabelCanary: name}.String()
}

// testsSelector selects the Jobs and Pods of Activities, among them those
// of the AppService's tests (the tree keeps its Activities' own).
var testsSelector = appv1.LabelActivity

// readSnapshot reads the AppService and its children once.
func readSnapshot(ctx context.Context, c *Clients, name string) (*Snapshot, error) {
	as, err := c.getAppService(ctx, name)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{AppService: as}
	ns := c.Namespace
	deployments, err := c.AppsV1.Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: stableSelector(name)})
	if err != nil {
		return nil, apiError(err, request{verbList, resourceDeployments, ns})
	}
	s.Deployments = deployments.Items
	for _, sel := range []string{stableSelector(name), canarySelector(name)} {
		sets, err := c.AppsV1.ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, apiError(err, request{verbList, resourceReplicaSets, ns})
		}
		s.ReplicaSets = append(s.ReplicaSets, sets.Items...)
		pods, err := c.CoreV1.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, apiError(err, request{verbList, resourcePods, ns})
		}
		s.Pods = append(s.Pods, pods.Items...)
	}
	if err := readTests(ctx, c, s); err != nil {
		return nil, err
	}
	if as.Spec.HTTPRoute != nil {
		route, err := c.GatewayV1.HTTPRoutes(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			s.Route = route
		case objectNotFound(err):
		case apierrors.IsNotFound(err):
			s.RouteProblem = routesNotServed
		default:
			return nil, apiError(err, request{verbGet, resourceRoutes, ns})
		}
	}
	if as.Spec.GRPCRoute != nil {
		route, err := c.GatewayV1.GRPCRoutes(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			s.GRPCRoute = route
		case objectNotFound(err):
		case apierrors.IsNotFound(err):
			s.GRPCRouteProblem = grpcRoutesNotServed
		default:
			return nil, apiError(err, request{verbGet, resourceGRPCRoutes, ns})
		}
	}
	return s, nil
}

// routesNotServed and grpcRoutesNotServed: the cluster has no Gateway
// API, or one without GRPCRoutes.
const (
	routesNotServed     = "the cluster does not serve HTTPRoutes (gateway.networking.k8s.io/v1)"
	grpcRoutesNotServed = "the cluster does not serve GRPCRoutes (gateway.networking.k8s.io/v1)"
)

// readTests reads the Activities of the AppService's canary's tests, and
// their Jobs and Pods, when its status records tests.
func readTests(ctx context.Context, c *Clients, s *Snapshot) error {
	if st := s.AppService.Status.Canary; st == nil || len(st.Tests) == 0 {
		return nil
	}
	ns := c.Namespace
	acts, err := c.AppV1.Activities(ns).List(ctx, metav1.ListOptions{LabelSelector: stableSelector(s.AppService.Name)})
	if err != nil {
		return apiError(err, request{verbList, resourceActivities, ns})
	}
	s.Activities = acts.Items
	jobs, err := c.BatchV1.Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: testsSelector})
	if err != nil {
		return apiError(err, request{verbList, resourceJobs, ns})
	}
	s.Jobs = jobs.Items
	pods, err := c.CoreV1.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: testsSelector})
	if err != nil {
		return apiError(err, request{verbList, resourcePods, ns})
	}
	s.Pods = append(s.Pods, pods.Items...)
	return nil
}
