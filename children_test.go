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
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/canary"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/syncerr"
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
	f.events = []string{fixtures.Normal(appv1.ReasonCreated, "Created ServiceAccount nginx-app, Deployment nginx-app, Service nginx-app, Ingress nginx-app, PodDisruptionBudget nginx-app, HorizontalPodAutoscaler nginx-app")}
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
				f.events = []string{fixtures.Normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: replicas")}
			}
			if err := f.run(testKey); err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
	}
}

// TestSyncHandlerSuspends: suspended, an autoscaled AppService's
// Deployment goes from the autoscaler's count to 0 and its autoscaler is
// deleted; every other child stays as it is. Resumed, the Deployment starts
// again from minReplicas, and the autoscaler comes back.
func TestSyncHandlerSuspends(t *testing.T) {
	for _, suspend := range []bool{true, false} {
		t.Run(map[bool]string{true: "suspended", false: "resumed"}[suspend], func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			withEveryChild(&as.Spec)
			as.Spec.Suspend = new(suspend)
			as.Status.URL = "http://app.example.com/"
			d := fixtures.LiveDeployment()
			d.Spec.Template.Spec.ServiceAccountName = fixtures.Name
			d.Spec.Template.Spec.DeprecatedServiceAccount = fixtures.Name //nolint:staticcheck // kept in sync
			replicas := map[bool]int32{true: 7, false: 0}[suspend]        // the autoscaler's, or where a suspension left it
			d.Spec.Replicas = new(replicas)
			d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas = replicas, replicas, replicas, replicas
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{d}
			f.services = []*corev1.Service{fixtures.LiveService()}
			f.others = []runtime.Object{live(children.NewServiceAccount(as)), live(children.NewDisruptionBudget(as)), live(children.NewIngress(as))}
			want := d.DeepCopy()
			st := as.Status.DeepCopy()
			st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas = replicas, replicas, replicas, replicas
			if suspend {
				hpa := as.DeepCopy()
				hpa.Spec.Suspend = nil
				autoscaler := live(children.NewAutoscaler(hpa))
				f.others = append(f.others, autoscaler)
				want.Spec.Replicas = new(int32(0))
				uid := autoscaler.GetUID()
				f.expectUpdate(want)
				f.expectDelete(autoscalersResource, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
				for _, c := range reconcilingConditions(appv1.ReasonSuspending, "Suspending: 7 replicas still running") {
					setCondition(st, c)
				}
				setCondition(st, condition(appv1.ConditionSuspended, metav1.ConditionTrue, appv1.ReasonSuspended,
					"spec.suspend is true: the Deployment is held at 0 replicas, without an autoscaler; the Service and the other children stay"))
				f.events = []string{
					fixtures.Normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: replicas"),
					fixtures.Normal(appv1.ReasonDeleted, "Deleted HorizontalPodAutoscaler nginx-app: the AppService is suspended"),
				}
			} else {
				setCondition(&as.Status, condition(appv1.ConditionSuspended, metav1.ConditionTrue, appv1.ReasonSuspended, "was suspended"))
				want.Spec.Replicas = new(int32(2))
				f.expectUpdate(want)
				f.expectCreate(children.NewAutoscaler(as))
				for _, c := range reconcilingConditions(appv1.ReasonRollingOut, "0 of 2 replicas updated") {
					setCondition(st, c)
				}
				setCondition(st, condition(appv1.ConditionSuspended, metav1.ConditionFalse, appv1.ReasonResumed, "spec.suspend is false: the Pods are back"))
				f.events = []string{
					fixtures.Normal(appv1.ReasonCreated, "Created HorizontalPodAutoscaler nginx-app"),
					fixtures.Normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: replicas"),
				}
			}
			f.expectStatusUpdate(withStatus(as, *st))
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
	f.expectDelete(serviceAccountsResource, precondition(sa))
	f.expectDelete(autoscalersResource, precondition(autoscaler))
	f.events = []string{
		fixtures.Normal(appv1.ReasonCreated, "Created ServiceAccount renamed"),
		fixtures.Normal(appv1.ReasonDeleted, "Deleted ServiceAccount nginx-app: replaced by ServiceAccount renamed; HorizontalPodAutoscaler nginx-app: the spec has no autoscaling"),
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
	f.events = []string{fixtures.Warning(appv1.ReasonRouteAPIMissing, msg)}
	if err := f.run(testKey); err == nil {
		t.Error("syncHandler: nil, want the error (retried with backoff)")
	}
}

// TestSyncHandlerNotOurs: an object of a child's name in the cache that this
// AppService does not control is never written; the AppService is Degraded
// with a Warning, once.
func TestSyncHandlerNotOurs(t *testing.T) {
	withOwner := func(ref *metav1.OwnerReference) func(metav1.Object) {
		return func(o metav1.Object) {
			o.SetOwnerReferences(nil)
			if ref != nil {
				o.SetOwnerReferences([]metav1.OwnerReference{*ref})
			}
		}
	}
	// Without a controller, labelled for another AppService: not ours to
	// adopt (labelled for this one, it would be: TestSyncHandlerAdopts).
	orphanOf := func(ref *metav1.OwnerReference) func(metav1.Object) {
		return func(o metav1.Object) {
			notLabelledForUs(o)
			withOwner(ref)(o)
		}
	}
	earlier := fixtures.OwnerRef()
	earlier.UID = "an-earlier-appservice-of-that-name"
	otherGroup := fixtures.OwnerRef()
	otherGroup.APIVersion = "other.example.com/v1"
	notController := fixtures.OwnerRef()
	notController.Controller = nil

	deploymentInTheWay := missingDeploymentStatus(degraded(appv1.ReasonResourceExists, notOursMessage("Deployment")))
	serviceInTheWay := currentStatus()
	setDegraded(&serviceInTheWay, degraded(appv1.ReasonResourceExists, notOursMessage("Service")), true)
	for i := range serviceInTheWay.Conditions {
		serviceInTheWay.Conditions[i].LastTransitionTime = metav1.Time{}
	}

	tests := []struct {
		name       string
		deployment func(metav1.Object)
		service    func(metav1.Object)
		want       appv1.AppServiceStatus
		kind       string
	}{
		{name: "Deployment without owner, labelled for another", deployment: orphanOf(nil), want: deploymentInTheWay, kind: "Deployment"},
		{name: "Deployment owned but not controlled, labelled for another", deployment: orphanOf(&notController), want: deploymentInTheWay, kind: "Deployment"},
		{name: "Deployment of an earlier AppService", deployment: withOwner(&earlier), want: deploymentInTheWay, kind: "Deployment"},
		{name: "Deployment of another group's AppService", deployment: withOwner(&otherGroup), want: deploymentInTheWay, kind: "Deployment"},
		{name: "Service without owner, labelled for another", service: orphanOf(nil), want: serviceInTheWay, kind: "Service"},
		{name: "Service of an earlier AppService", service: withOwner(&earlier), want: serviceInTheWay, kind: "Service"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, s := fixtures.LiveDeployment(), fixtures.LiveService()
			fixtures.Tweak(tc.deployment, metav1.Object(d))
			fixtures.Tweak(tc.service, metav1.Object(s))
			as := fixtures.AppService() // first seen: no status yet

			first := newFixture(t, as)
			first.deployments = []*appsv1.Deployment{d}
			first.services = []*corev1.Service{s}
			first.expectStatusUpdate(withStatus(as, tc.want))
			first.events = []string{fixtures.Warning(appv1.ReasonResourceExists, notOursMessage(tc.kind))}
			err := first.run(testKey)
			checkChildError(t, err, appv1.ReasonResourceExists)

			// The next sync, with that status in place: nothing to write,
			// nothing new to say.
			st, ok := first.writtenStatus()
			if !ok {
				t.Fatal("no status written by the first sync")
			}
			second := newFixture(t, withStatus(as, st))
			second.deployments = []*appsv1.Deployment{d}
			second.services = []*corev1.Service{s}
			err = second.run(testKey)
			checkChildError(t, err, appv1.ReasonResourceExists)
		})
	}
}

// alreadyExistsFixture: a child missing from the cache (the other one cached
// and current) whose create meets existing, an object in the API server only;
// the create and the read-back that follows are expected.
func alreadyExistsFixture(t *testing.T, as *appv1.AppService, existing runtime.Object) *fixture {
	resource := resourceOf(t, existing)
	f := newFixture(t, as)
	f.apiOnly = []runtime.Object{existing}
	f.kubeReactors = []reactor{errorReactor("create", resource.Resource,
		apierrors.NewAlreadyExists(resource.GroupResource(), fixtures.Name))}
	var desired runtime.Object = fixtures.DesiredService()
	if resource == deploymentsResource {
		desired = fixtures.DesiredDeployment()
		f.services = []*corev1.Service{fixtures.LiveService()}
	} else {
		f.deployments = []*appsv1.Deployment{fixtures.LiveDeployment()}
	}
	f.expectCreate(desired)
	f.expectGet(resource)
	return f
}

// TestSyncHandlerAlreadyExists: a child missing from the cache whose create
// meets an existing object.
func TestSyncHandlerAlreadyExists(t *testing.T) {
	unownedDeployment := fixtures.LiveDeployment()
	unownedDeployment.OwnerReferences = nil
	unownedDeployment.Labels = nil
	unownedService := fixtures.LiveService()
	unownedService.OwnerReferences = nil
	unownedService.Labels = nil
	// Ours and labelled, but too new for the watch: not cached yet.
	ownDeployment := fixtures.LiveDeployment()
	ownService := fixtures.LiveService()

	deploymentInTheWay := missingDeploymentStatus(degraded(appv1.ReasonResourceExists, notOursMessage("Deployment")))
	serviceInTheWay := currentStatus()
	setDegraded(&serviceInTheWay, degraded(appv1.ReasonResourceExists, notOursMessage("Service")), true)

	tests := []struct {
		name     string
		existing runtime.Object // in the API server only
		want     *appv1.AppServiceStatus
	}{
		{name: "Deployment not ours", existing: unownedDeployment, want: &deploymentInTheWay},
		{name: "Deployment ours", existing: ownDeployment},
		{name: "Service not ours", existing: unownedService, want: &serviceInTheWay},
		{name: "Service ours", existing: ownService},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			f := alreadyExistsFixture(t, as, tc.existing)
			if tc.want != nil {
				f.expectStatusUpdate(withStatus(as, *tc.want))
				f.events = []string{fixtures.Warning(appv1.ReasonResourceExists, tc.want.Conditions[2].Message)}
			}

			err := f.run(testKey)
			if tc.want != nil {
				checkChildError(t, err, appv1.ReasonResourceExists)
				return
			}
			if err == nil || !syncerr.IsStale(err) {
				t.Errorf("got error %v, want a stale-view one", err)
			}
			var ce *syncerr.ChildError
			if errors.As(err, &ce) {
				t.Errorf("got a *syncerr.ChildError (%v), want none", err)
			}
		})
	}
}

// TestSyncHandlerReleases: a child this AppService controls whose label no
// longer names it is released (our owner reference removed), as
// ControllerRefManager does, and is from then on an object in the way. With
// the label gone altogether it has dropped out of the cache, and the create
// meets it; with the label naming another AppService it is still cached.
func TestSyncHandlerReleases(t *testing.T) {
	unlabelledDeployment := fixtures.LiveDeployment()
	delete(unlabelledDeployment.Labels, appv1.LabelAppService)
	unlabelledService := fixtures.LiveService()
	delete(unlabelledService.Labels, appv1.LabelAppService)
	relabelledDeployment := fixtures.LiveDeployment()
	relabelledDeployment.Labels[appv1.LabelAppService] = "another-app"
	releasePatch := func(uid types.UID) string {
		return `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"` + string(fixtures.UID) + `"}],"uid":"` + string(uid) + `"}}`
	}
	deploymentInTheWay := missingDeploymentStatus(degraded(appv1.ReasonResourceExists, notOursMessage("Deployment")))
	serviceInTheWay := currentStatus()
	setDegraded(&serviceInTheWay, degraded(appv1.ReasonResourceExists, notOursMessage("Service")), true)

	tests := []struct {
		name   string
		child  runtime.Object
		cached bool
		want   appv1.AppServiceStatus
	}{
		{"Deployment without our label", unlabelledDeployment, false, deploymentInTheWay},
		{"Service without our label", unlabelledService, false, serviceInTheWay},
		{"Deployment labelled for another AppService", relabelledDeployment, true, deploymentInTheWay},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			resource := resourceOf(t, tc.child)
			kind := kindOf(resource)
			var f *fixture
			if tc.cached {
				f = newFixture(t, as)
				f.deployments = []*appsv1.Deployment{tc.child.(*appsv1.Deployment)}
				f.services = []*corev1.Service{fixtures.LiveService()}
			} else {
				f = alreadyExistsFixture(t, as, tc.child)
			}
			f.expectPatch(resource, releasePatch(tc.child.(metav1.Object).GetUID()))
			f.expectStatusUpdate(withStatus(as, tc.want))
			f.events = []string{
				fixtures.Normal(appv1.ReasonReleased, "Released "+kind+" nginx-app: its label "+appv1.LabelAppService+" no longer names this AppService"),
				fixtures.Warning(appv1.ReasonResourceExists, notOursMessage(kind)),
			}
			checkChildError(t, f.run(testKey), appv1.ReasonResourceExists)
		})
	}
}

func kindOf(resource schema.GroupVersionResource) string {
	if resource == servicesResource {
		return "Service"
	}
	return "Deployment"
}

// TestSyncHandlerAdopts: a child of the AppService's name with no controller
// and labelled for it is adopted once an uncached read confirms the
// AppService, then brought in line like any child; no adoption for an
// AppService that is gone, replaced or being deleted.
func TestSyncHandlerAdopts(t *testing.T) {
	orphanDeployment := fixtures.LiveDeployment()
	orphanDeployment.OwnerReferences = nil
	orphanService := fixtures.LiveService()
	orphanService.OwnerReferences = nil
	adoptPatch := func(uid types.UID) string {
		return `{"metadata":{"ownerReferences":[{"apiVersion":"app.example.com/v1","kind":"AppService","name":"nginx-app","uid":"` +
			string(fixtures.UID) + `","controller":true,"blockOwnerDeletion":true}],"uid":"` + string(uid) + `"}}`
	}
	replaced := fixtures.AppService()
	replaced.UID = "a-newer-appservice-of-that-name"
	uidImmutable := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, fixtures.Name,
		field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "another-uid", "field is immutable")})
	deleting := fixtures.AppService()
	deleting.DeletionTimestamp = &metav1.Time{Time: lastTransition.Time}
	deleting.Finalizers = []string{"example.com/hold"}

	tests := []struct {
		name      string
		child     runtime.Object
		cached    bool
		apiAS     *appv1.AppService // what the uncached read finds; nil: the seed
		apiASGone bool              // the uncached read finds nothing
		drift     bool              // the orphan's replicas differ from the spec
		patchErr  error             // the adoption patch fails with it
	}{
		{name: "cached Deployment", child: orphanDeployment, cached: true},
		{name: "cached Service", child: orphanService, cached: true},
		{name: "Deployment not cached yet", child: orphanDeployment},
		{name: "drifted Deployment: adopted, then updated", child: orphanDeployment, cached: true, drift: true},
		{name: "AppService replaced", child: orphanDeployment, cached: true, apiAS: replaced},
		{name: "AppService being deleted", child: orphanDeployment, cached: true, apiAS: deleting},
		{name: "AppService gone", child: orphanDeployment, cached: true, apiASGone: true},
		{name: "Deployment deleted and created anew since cached", child: orphanDeployment, cached: true, patchErr: uidImmutable},
		{name: "Deployment gone since cached", child: orphanDeployment, cached: true, patchErr: apierrors.NewNotFound(deploymentsResource.GroupResource(), fixtures.Name)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			child := tc.child.DeepCopyObject()
			if tc.drift {
				child.(*appsv1.Deployment).Spec.Replicas = new(int32(5))
			}
			resource := resourceOf(t, child)
			kind := kindOf(resource)
			var f *fixture
			switch {
			case !tc.cached:
				f = alreadyExistsFixture(t, as, child)
			case kind == "Deployment":
				f = newFixture(t, as)
				f.deployments = []*appsv1.Deployment{child.(*appsv1.Deployment)}
				f.services = []*corev1.Service{fixtures.LiveService()}
			default:
				f = newFixture(t, as)
				f.deployments = []*appsv1.Deployment{fixtures.LiveDeployment()}
				f.services = []*corev1.Service{child.(*corev1.Service)}
			}
			if tc.apiAS != nil || tc.apiASGone {
				// The cache still has the seed; the API server has moved on.
				f.appReactors = []reactor{{"get", "appservices", func(core.Action) (bool, runtime.Object, error) {
					if tc.apiASGone {
						return true, nil, apierrors.NewNotFound(appServicesResource.GroupResource(), fixtures.Name)
					}
					return true, tc.apiAS, nil
				}}}
			}
			f.expectAppServiceGet()
			if tc.apiAS != nil || tc.apiASGone {
				err := f.run(testKey)
				if err == nil || !syncerr.IsStale(err) {
					t.Errorf("got error %v, want a stale-view one: no adoption", err)
				}
				return
			}
			f.expectPatch(resource, adoptPatch(child.(metav1.Object).GetUID()))
			if tc.patchErr != nil {
				f.kubeReactors = append(f.kubeReactors, errorReactor("patch", resource.Resource, tc.patchErr))
				err := f.run(testKey)
				if err == nil || !syncerr.IsStale(err) {
					t.Errorf("got error %v, want a stale-view one: retried, not Degraded", err)
				}
				return
			}
			f.events = []string{fixtures.Normal(appv1.ReasonAdopted, "Adopted "+kind+" nginx-app")}
			if tc.drift {
				adopted := fixtures.LiveDeployment()
				f.expectUpdate(adopted)
				f.events = append(f.events, fixtures.Normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: replicas"))
			}
			if err := f.run(testKey); err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
	}
}

// TestSyncHandlerChildBeingDeleted: a child on its way out (ours, or an
// orphan labelled for us) is neither written nor adopted; the sync waits for
// its deletion, which queues the AppService again.
func TestSyncHandlerChildBeingDeleted(t *testing.T) {
	deleting := func(o metav1.Object) {
		o.SetDeletionTimestamp(&metav1.Time{Time: lastTransition.Time})
		o.SetFinalizers([]string{"example.com/hold"})
	}
	tests := []struct {
		name  string
		child func(*appsv1.Deployment)
	}{
		{"ours, drifted", func(d *appsv1.Deployment) { deleting(d); fixtures.Container(d).Image = "drifted" }},
		{"an orphan labelled for us", func(d *appsv1.Deployment) { deleting(d); d.OwnerReferences = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			d := fixtures.LiveDeployment()
			tc.child(d)
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{d}
			f.services = []*corev1.Service{fixtures.LiveService()}
			if d.OwnerReferences == nil {
				// Not ours: the status says the Deployment is missing.
				f.expectStatusUpdate(withStatus(as, missingDeploymentStatus(notDegraded())))
			}
			if err := f.run(testKey); err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
	}
}

// TestSyncHandlerBlockedDoesNotCreate: while Degraded by an object in the way
// that is not in the cache, the sync reads it instead of failing a create.
func TestSyncHandlerBlockedDoesNotCreate(t *testing.T) {
	unowned := fixtures.LiveDeployment()
	unowned.OwnerReferences = nil
	unowned.Labels = nil
	st := missingDeploymentStatus(degraded(appv1.ReasonResourceExists, notOursMessage("Deployment")))
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = lastTransition
	}
	f := newFixture(t, withStatus(fixtures.AppService(), st))
	f.services = []*corev1.Service{fixtures.LiveService()}
	f.apiOnly = []runtime.Object{unowned}
	f.expectGet(deploymentsResource)
	checkChildError(t, f.run(testKey), appv1.ReasonResourceExists)
}

func checkChildError(t *testing.T, err error, reason string) {
	t.Helper()
	var ce *syncerr.ChildError
	if !errors.As(err, &ce) {
		t.Errorf("got error %v, want a *syncerr.ChildError", err)
		return
	}
	if ce.Reason != reason {
		t.Errorf("got error reason %q, want %q", ce.Reason, reason)
	}
	if syncerr.IsStale(err) {
		t.Errorf("syncerr.IsStale(%v) = true, want false", err)
	}
}

// TestSyncHandlerWriteErrors: a failed write makes the AppService Degraded
// with the API's message; a conflict is retried as stale, unreported.
func TestSyncHandlerWriteErrors(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, fixtures.Name,
		field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), 3, "exceeds quota")})
	internal := apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, fixtures.Name,
		errors.New("the object has been modified"))

	tests := []struct {
		name         string
		reactor      reactor
		wantDegraded string // message of Degraded=True, UpdateFailed; "" for no status write
		stalled      bool   // the failure needs the user (Stalled), else it is retried (Reconciling)
	}{
		{
			name:         "Deployment update invalid (422)",
			reactor:      errorReactor("patch", "deployments", invalid),
			wantDegraded: "failed to update Deployment default/nginx-app: " + invalid.Error(),
			stalled:      true,
		},
		{
			name:         "Service update internal error (500)",
			reactor:      errorReactor("patch", "services", internal),
			wantDegraded: "failed to update Service default/nginx-app: " + internal.Error(),
		},
		{name: "Deployment update conflict (409)", reactor: errorReactor("patch", "deployments", conflict)},
		{name: "Service update conflict (409)", reactor: errorReactor("patch", "services", conflict)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A change of both children: size and serviceType.
			as := withStatus(fixtures.AppService(), currentStatus())
			as.Spec.Size = new(int32(3))
			as.Spec.ServiceType = corev1.ServiceTypeLoadBalancer
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{fixtures.LiveDeployment()}
			f.services = []*corev1.Service{fixtures.LiveService()}
			f.kubeReactors = []reactor{tc.reactor}
			wantDeploy := fixtures.LiveDeployment()
			wantDeploy.Spec.Replicas = new(int32(3))
			wantSvc := fixtures.LiveService()
			wantSvc.Spec.Type = corev1.ServiceTypeLoadBalancer
			f.expectUpdate(wantDeploy)
			f.expectUpdate(wantSvc)
			// The write that does not fail is reported as usual.
			if tc.reactor.resource == "deployments" {
				f.events = []string{fixtures.Normal(appv1.ReasonUpdated, "Updated Service nginx-app: type")}
			} else {
				f.events = []string{fixtures.Normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: replicas")}
			}
			if tc.wantDegraded != "" {
				st := currentStatus()
				setDegraded(&st, degraded(appv1.ReasonUpdateFailed, tc.wantDegraded), tc.stalled)
				f.expectStatusUpdate(withStatus(as, st))
				f.events = append(f.events, fixtures.Warning(appv1.ReasonUpdateFailed, tc.wantDegraded))
			}

			err := f.run(testKey)
			if tc.wantDegraded != "" {
				checkChildError(t, err, appv1.ReasonUpdateFailed)
				return
			}
			if !apierrors.IsConflict(err) || !syncerr.IsStale(err) {
				t.Errorf("got error %v, want a conflict reported as stale", err)
			}
		})
	}
}

// TestSyncHandlerNamespaceTerminating: a create refused because the
// namespace is being deleted ends the sync quietly: no error to retry, no
// Degraded status, no Warning (the AppService is about to go too).
func TestSyncHandlerNamespaceTerminating(t *testing.T) {
	terminating := apierrors.NewForbidden(deploymentsResource.GroupResource(), fixtures.Name,
		errors.New("unable to create new content in namespace default because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace default is being terminated", Field: "metadata.namespace",
	}}
	as := withStatus(fixtures.AppService(), currentStatus())
	f := newFixture(t, as)
	f.services = []*corev1.Service{fixtures.LiveService()}
	f.kubeReactors = []reactor{errorReactor("create", "deployments", terminating)}
	f.expectCreate(fixtures.DesiredDeployment())
	if err := f.run(testKey); err != nil {
		t.Errorf("syncHandler: %v, want nil", err)
	}
}

// TestCanaryHeld: the canary's Deployment that the decision no longer asks
// for stays while its Pods serve behind the Service (by Pods) and the
// stable Deployment is not rolled out at the spec's count (an abort, a
// rollback, spec.canary removed); it may go once it is, by route at once,
// and suspended at once. An AppService whose canary status is gone but
// whose canary Deployment is there still has canary children to prune.
func TestCanaryHeld(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		byPods, suspended     bool
		stableReplicas, avail int32
		want                  bool
	}{
		{name: "by Pods, the stable back at 2 of 2 available: it may go", byPods: true, stableReplicas: 2, avail: 2},
		{name: "by Pods, the stable at 2 of 2, 1 available: held", byPods: true, stableReplicas: 2, avail: 1, want: true},
		{name: "by Pods, the stable still at 1 (shrunk): held", byPods: true, stableReplicas: 1, avail: 1, want: true},
		{name: "by route: it may go", stableReplicas: 2, avail: 1},
		{name: "by Pods, suspended: it may go", byPods: true, suspended: true, stableReplicas: 2, avail: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService() // size 2, no spec.canary, no canary status: removed
			as.Spec.Suspend = &tc.suspended
			stable := fixtures.LiveDeployment()
			stable.Spec.Replicas = &tc.stableReplicas
			stable.Status.Replicas, stable.Status.UpdatedReplicas, stable.Status.ReadyReplicas, stable.Status.AvailableReplicas =
				tc.stableReplicas, tc.stableReplicas, tc.avail, tc.avail
			c := children.NewCanaryDeployment(as, children.NewDeployment(as), 1, tc.byPods)
			c.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(as, appv1.SchemeGroupVersion.WithKind("AppService"))}
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{stable, c}
			_, ctx := ktesting.NewTestContext(t)
			s := newAppSync(f.newController(ctx), as)
			if !s.canaryChildren() {
				t.Errorf("canaryChildren() is false with a canary Deployment there")
			}
			if got := s.canaryHeld(children.NewDeployment(as)) != nil; got != tc.want {
				t.Errorf("canaryHeld = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSyncCanaryTests: a test's Activity is made only once the status
// recorded its record running, and deleted only once it recorded it
// stopped (or no record names it): a status write that fails never leaves
// a test made that no record names, nor deletes one a record waits for.
func TestSyncCanaryTests(t *testing.T) {
	rec := func(name string, phase appv1.CanaryTestPhase) appv1.CanaryTestStatus {
		return appv1.CanaryTestStatus{Name: "smoke", Activity: name, Phase: phase}
	}
	const x = "test-app-x7k2mq"
	for _, tc := range []struct {
		name             string
		recorded, decide []appv1.CanaryTestStatus
		live             []string
		created, deleted []string
		nocanary         bool
	}{
		{name: "begun by this decision: not made yet", decide: []appv1.CanaryTestStatus{rec(x, appv1.TestRunning)}},
		{name: "recorded running: made", recorded: []appv1.CanaryTestStatus{rec(x, appv1.TestRunning)},
			decide: []appv1.CanaryTestStatus{rec(x, appv1.TestRunning)}, created: []string{x}},
		{name: "recorded running, made: nothing", recorded: []appv1.CanaryTestStatus{rec(x, appv1.TestRunning)},
			decide: []appv1.CanaryTestStatus{rec(x, appv1.TestRunning)}, live: []string{x}},
		{name: "stopped by this decision: kept until recorded", recorded: []appv1.CanaryTestStatus{rec(x, appv1.TestRunning)},
			decide: []appv1.CanaryTestStatus{rec(x, appv1.TestStopped)}, live: []string{x}},
		{name: "recorded stopped: deleted", recorded: []appv1.CanaryTestStatus{rec(x, appv1.TestStopped)},
			decide: []appv1.CanaryTestStatus{rec(x, appv1.TestStopped)}, live: []string{x}, deleted: []string{x}},
		{name: "a new canary, the old one's running test recorded: kept until the new canary is",
			recorded: []appv1.CanaryTestStatus{rec(x, appv1.TestRunning)}, live: []string{x}},
		{name: "spec.canary removed, the status without a canary: the last canary's go", live: []string{x}, deleted: []string{x}, nocanary: true},
		{name: "finished: kept for inspection; another, named by no record: deleted",
			recorded: []appv1.CanaryTestStatus{rec(x, appv1.TestSucceeded)}, decide: []appv1.CanaryTestStatus{rec(x, appv1.TestSucceeded)},
			live: []string{x, "test-app-old000"}, deleted: []string{"test-app-old000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService()
			as.Spec.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, Tests: []appv1.CanaryTest{
				{Name: "smoke", When: appv1.CanaryTestBefore, Command: "true"}}}}}
			as.Status.Canary = &appv1.CanaryStatus{Tests: tc.recorded}
			if tc.nocanary {
				as.Spec.Canary, as.Status.Canary = nil, nil
			}
			f := newFixture(t, as)
			// The fake's field manager has no schema of the Activity: a
			// create just succeeds.
			f.appReactors = append(f.appReactors, reactor{"create", "activities", func(a core.Action) (bool, runtime.Object, error) {
				return true, a.(core.CreateAction).GetObject(), nil
			}})
			for _, name := range tc.live {
				f.activities = append(f.activities, &appv1.Activity{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: as.Namespace,
					OwnerReferences: []metav1.OwnerReference{*children.NewControllerRef(as)}, Labels: children.CanaryTestLabels(as, "smoke")}})
			}
			_, ctx := ktesting.NewTestContext(t)
			s := newAppSync(f.newController(ctx), as)
			s.canary = canary.Decision{Status: &appv1.CanaryStatus{Tests: tc.decide}}
			if tc.nocanary {
				s.canary = canary.Decision{}
			}
			if err := s.syncCanaryTests(ctx); err != nil {
				t.Fatal(err)
			}
			var created, deleted []string
			for _, a := range f.appClient.Actions() {
				switch a := a.(type) {
				case core.CreateActionImpl:
					if a.GetResource().Resource == "activities" {
						created = append(created, a.GetObject().(*appv1.Activity).Name)
					}
				case core.DeleteActionImpl:
					if a.GetResource().Resource == "activities" {
						deleted = append(deleted, a.GetName())
					}
				}
			}
			if !slices.Equal(created, tc.created) || !slices.Equal(deleted, tc.deleted) {
				t.Errorf("created %v, deleted %v; want %v, %v", created, deleted, tc.created, tc.deleted)
			}
		})
	}
}
