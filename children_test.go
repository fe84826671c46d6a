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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// withEveryChild asks for a ServiceAccount, a PodDisruptionBudget and a
// HorizontalPodAutoscaler besides the seed's Deployment and Service.
func withEveryChild(s *appv1.AppServiceSpec) {
	s.ServiceAccount = &appv1.ServiceAccount{Create: true}
	s.DisruptionBudget = &appv1.DisruptionBudget{MaxUnavailable: new(intstr.FromInt32(1))}
	s.Autoscaling = &appv1.Autoscaling{MinReplicas: new(int32(2)), MaxReplicas: 10}
	s.Ingress = &appv1.Ingress{Hosts: []appv1.IngressHost{{Host: "app.example.com", Paths: []appv1.IngressPath{{Path: "/", PathType: networkingv1.PathTypePrefix}}}}}
}

// live is what the API server returns for a child just created from
// desired: the same, with a UID.
func live[T interface {
	metav1.Object
	runtime.Object
}](desired T) T {
	out := desired.DeepCopyObject().(T)
	out.SetUID("child-" + fixtures.UID)
	return out
}

func TestSyncHandlerCreatesEveryChild(t *testing.T) {
	as := fixtures.AppService()
	withEveryChild(&as.Spec)
	f := newFixture(t, as)
	// The ServiceAccount first: the Pods need it.
	f.expectCreate(children.NewServiceAccount(as))
	f.expectCreate(children.NewDeployment(as))
	f.expectCreate(children.NewService(as))
	f.expectCreate(children.NewIngress(as))
	f.expectCreate(children.NewDisruptionBudget(as))
	f.expectCreate(children.NewAutoscaler(as))
	f.expectStatusUpdate(withStatus(as, appv1.AppServiceStatus{
		ObservedGeneration: fixtures.Generation,
		Selector:           fixtures.Selector,
		URL:                "http://app.example.com/",
		Conditions:         newDeploymentConditions(),
	}))
	f.events = []string{normal(appv1.ReasonCreated, "Created ServiceAccount nginx-app, Deployment nginx-app, Service nginx-app, Ingress nginx-app, PodDisruptionBudget nginx-app, HorizontalPodAutoscaler nginx-app")}
	if err := f.run(testKey); err != nil {
		t.Fatalf("syncHandler: %v", err)
	}
	if got := *children.NewDeployment(as).Spec.Replicas; got != 2 {
		t.Errorf("the Deployment is created with %d replicas, want minReplicas (2)", got)
	}
}

// TestSyncHandlerAutoscaledReplicas: while autoscaling, the replica count
// the autoscaler set is the Deployment's, whatever the size and
// minReplicas: nothing is written. Without autoscaling, size wins again.
func TestSyncHandlerAutoscaledReplicas(t *testing.T) {
	for _, autoscaled := range []bool{true, false} {
		t.Run(map[bool]string{true: "autoscaled: kept", false: "not autoscaled: size"}[autoscaled], func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			withEveryChild(&as.Spec)
			if !autoscaled {
				as.Spec.Autoscaling = nil
			}
			d := fixtures.LiveDeployment()
			d.Spec.Template.Spec.ServiceAccountName = fixtures.Name
			d.Spec.Template.Spec.DeprecatedServiceAccount = fixtures.Name //nolint:staticcheck // kept in sync
			d.Spec.Replicas = new(int32(7))                               // the autoscaler's
			d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas = 7, 7, 7, 7
			as.Status.Replicas, as.Status.ReadyReplicas, as.Status.AvailableReplicas, as.Status.UpdatedReplicas = 7, 7, 7, 7
			for _, c := range readyConditions("7 of 7 replicas run the current template and are available") {
				c.LastTransitionTime = lastTransition
				setCondition(&as.Status, c)
			}
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{d}
			f.services = []*corev1.Service{fixtures.LiveService()}
			f.others = []runtime.Object{live(children.NewServiceAccount(as)), live(children.NewDisruptionBudget(as)), live(children.NewIngress(as))}
			as.Status.URL = "http://app.example.com/"
			if autoscaled {
				f.others = append(f.others, live(children.NewAutoscaler(as)))
			} else {
				want := d.DeepCopy()
				want.Spec.Replicas = new(int32(2))
				f.expectUpdate(want)
				// Scaling down from the autoscaler's count: under way.
				st := as.Status.DeepCopy()
				for _, c := range reconcilingConditions(appv1.ReasonRollingOut, "7 replicas for 2 wanted: the others are terminating") {
					setCondition(st, c)
				}
				f.expectStatusUpdate(withStatus(as, *st))
				f.events = []string{normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: replicas")}
			}
			if err := f.run(testKey); err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
	}
}

// TestSyncHandlerDeletesUnwantedChildren: a block removed from the spec
// takes its child with it; a renamed ServiceAccount replaces the old one;
// an object of the same name the AppService does not control stays.
func TestSyncHandlerDeletesUnwantedChildren(t *testing.T) {
	as := withStatus(fixtures.AppService(), currentStatus())
	withEveryChild(&as.Spec)
	as.Spec.Ingress = nil
	sa, budget, autoscaler := live(children.NewServiceAccount(as)), live(children.NewDisruptionBudget(as)), live(children.NewAutoscaler(as))
	budget.OwnerReferences = nil // an orphan: not ours to delete
	as.Spec.ServiceAccount.Name = "renamed"
	as.Spec.DisruptionBudget, as.Spec.Autoscaling = nil, nil

	d := fixtures.LiveDeployment()
	d.Spec.Template.Spec.ServiceAccountName = "renamed"
	d.Spec.Template.Spec.DeprecatedServiceAccount = "renamed" //nolint:staticcheck // kept in sync
	f := newFixture(t, as)
	f.deployments = []*appsv1.Deployment{d}
	f.services = []*corev1.Service{fixtures.LiveService()}
	f.others = []runtime.Object{sa, budget, autoscaler}
	f.expectCreate(children.NewServiceAccount(as))
	precondition := func(obj metav1.Object) metav1.DeleteOptions {
		uid := obj.GetUID()
		return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	}
	f.expectDeleteOf(serviceAccountsResource, fixtures.Name, precondition(sa))
	f.expectDeleteOf(autoscalersResource, fixtures.Name, precondition(autoscaler))
	f.events = []string{
		normal(appv1.ReasonCreated, "Created ServiceAccount renamed"),
		normal(appv1.ReasonDeleted, "Deleted ServiceAccount nginx-app: replaced by ServiceAccount renamed; HorizontalPodAutoscaler nginx-app: the spec has no autoscaling"),
	}
	if err := f.run(testKey); err != nil {
		t.Errorf("syncHandler: %v", err)
	}
}

// TestSyncHandlerRouteAPIMissing: without the Gateway API, an AppService
// asking for a route is Degraded, with one Warning, and its other children
// are synced all the same (here: in line, so nothing else is written).
func TestSyncHandlerRouteAPIMissing(t *testing.T) {
	as := withStatus(fixtures.AppService(), currentStatus())
	as.Spec.HTTPRoute = &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}
	f := newFixture(t, as)
	f.deployments = []*appsv1.Deployment{fixtures.LiveDeployment()}
	f.services = []*corev1.Service{fixtures.LiveService()}
	st := currentStatus()
	msg := "HTTPRoute: the cluster does not serve gateway.networking.k8s.io/v1 HTTPRoutes (the Gateway API is not installed); the route is created once it is"
	setDegraded(&st, degraded(appv1.ReasonRouteAPIMissing, msg), true)
	f.expectStatusUpdate(withStatus(as, st))
	f.events = []string{warning(appv1.ReasonRouteAPIMissing, msg)}
	if err := f.run(testKey); err == nil {
		t.Error("syncHandler: nil, want the error (retried with backoff)")
	}
}
