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
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"example.com/appservice-controller/internal/analysis"
	"example.com/appservice-controller/internal/appcache"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/notify"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	"example.com/appservice-controller/pkg/generated/clientset/versioned/fake"
	appinformers "example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// The fixtures of the controller's unit tests: the seed's status in its
// usual states, and the fake clients and informers a sync runs against (after
// kubernetes/sample-controller). The seed AppService and its children are in
// internal/fixtures.

var (
	testKey = cache.ObjectName{Namespace: fixtures.Namespace, Name: fixtures.Name}
	// lastTransition is when the conditions of currentStatus last changed.
	lastTransition = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

	deploymentsResource       = appsv1.SchemeGroupVersion.WithResource("deployments")
	servicesResource          = corev1.SchemeGroupVersion.WithResource("services")
	serviceAccountsResource   = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	disruptionBudgetsResource = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
	autoscalersResource       = autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers")
	ingressesResource         = networkingv1.SchemeGroupVersion.WithResource("ingresses")
	appServicesResource       = appv1.SchemeGroupVersion.WithResource("appservices")
)

// notLabelledForUs makes a cached child look like an object that is not the
// seed's: no controller, and our label naming another AppService (the child
// informers list only objects carrying our label).
func notLabelledForUs(o metav1.Object) {
	o.SetOwnerReferences(nil)
	labels := o.GetLabels()
	labels[appv1.LabelAppService] = "another-app"
	o.SetLabels(labels)
}

// condition returns a condition observed at fixtures.Generation. A zero
// lastTransitionTime in an expected status means "set, to any time".
func condition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, ObservedGeneration: fixtures.Generation, Reason: reason, Message: message}
}

func notDegraded() metav1.Condition {
	return condition(appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "Every child matches the spec")
}

// rolledOut is the message of Ready when the seed's two replicas run the
// current template.
const rolledOut = "2 of 2 replicas run the current template and are available"

// readyConditions are Ready, Reconciling and Stalled when everything is in
// line.
func readyConditions(message string) []metav1.Condition {
	return []metav1.Condition{
		condition(appv1.ConditionReady, metav1.ConditionTrue, appv1.ReasonRolloutComplete, message),
		condition(appv1.ConditionReconciling, metav1.ConditionFalse, appv1.ReasonRolloutComplete, message),
		notStalled(),
	}
}

// reconcilingConditions are Ready, Reconciling and Stalled while something
// is under way (or being retried).
func reconcilingConditions(reason, message string) []metav1.Condition {
	return []metav1.Condition{
		condition(appv1.ConditionReady, metav1.ConditionFalse, reason, message),
		condition(appv1.ConditionReconciling, metav1.ConditionTrue, reason, message),
		notStalled(),
	}
}

// stalledConditions are Ready, Reconciling and Stalled when progress needs
// the user.
func stalledConditions(reason, message string) []metav1.Condition {
	return []metav1.Condition{
		condition(appv1.ConditionReady, metav1.ConditionFalse, reason, message),
		condition(appv1.ConditionReconciling, metav1.ConditionFalse, reason, "Stalled: "+message),
		condition(appv1.ConditionStalled, metav1.ConditionTrue, reason, message),
	}
}

func notStalled() metav1.Condition {
	return condition(appv1.ConditionStalled, metav1.ConditionFalse, appv1.ReasonAsExpected, "Nothing needs the user")
}

// setDegraded sets c, a Degraded=True condition, in st, and what kstatus
// reads of the same failure: Stalled when only the user can fix it,
// Reconciling (retrying) otherwise. The three take c's lastTransitionTime.
func setDegraded(st *appv1.AppServiceStatus, c metav1.Condition, stalled bool) {
	setCondition(st, c)
	cs := reconcilingConditions(appv1.ReasonRetrying, "Retrying: "+c.Message)
	if stalled {
		cs = stalledConditions(c.Reason, c.Message)
	}
	for _, k := range cs {
		k.LastTransitionTime = c.LastTransitionTime
		setCondition(st, k)
	}
}

// newDeploymentConditions are the conditions right after the seed's
// Deployment is created: nothing reported yet, its rollout under way.
func newDeploymentConditions() []metav1.Condition {
	const msg = "The Deployment has not reported this condition yet"
	return append([]metav1.Condition{
		condition(appv1.ConditionAvailable, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, msg),
		condition(appv1.ConditionProgressing, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, msg),
		notDegraded(),
	}, reconcilingConditions(appv1.ReasonRollingOut, "0 of 2 replicas updated")...)
}

// currentStatus is the status the seed has when liveDeployment is rolled
// out and nothing is wrong.
func currentStatus() appv1.AppServiceStatus {
	conds := []metav1.Condition{
		condition(appv1.ConditionAvailable, metav1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."),
		condition(appv1.ConditionProgressing, metav1.ConditionTrue, "NewReplicaSetAvailable", `ReplicaSet "nginx-app-5d59d67564" has successfully progressed.`),
		notDegraded(),
	}
	conds = append(conds, readyConditions(rolledOut)...)
	for i := range conds {
		conds[i].LastTransitionTime = lastTransition
	}
	return appv1.AppServiceStatus{
		ObservedGeneration: fixtures.Generation,
		Replicas:           2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2,
		Selector:   fixtures.Selector,
		Conditions: conds,
	}
}

// missingDeploymentStatus is the status when the AppService has no
// Deployment, with the given Degraded condition: a True one with a reason
// only the user can fix (an object in the way, the Gateway API missing)
// makes it Stalled; any other Reconciling.
func missingDeploymentStatus(degraded metav1.Condition) appv1.AppServiceStatus {
	const msg = "The Deployment does not exist yet"
	st := appv1.AppServiceStatus{
		ObservedGeneration: fixtures.Generation,
		Selector:           fixtures.Selector,
		Conditions: []metav1.Condition{
			condition(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonDeploymentMissing, msg),
			condition(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonDeploymentMissing, msg),
		},
	}
	if degraded.Status != metav1.ConditionTrue {
		st.Conditions = append(st.Conditions, degraded)
		st.Conditions = append(st.Conditions, reconcilingConditions(appv1.ReasonRollingOut, msg)...)
		return st
	}
	setDegraded(&st, degraded, degraded.Reason == appv1.ReasonResourceExists || degraded.Reason == appv1.ReasonRouteAPIMissing)
	return st
}

// degraded is a Degraded=True condition (new, so any lastTransitionTime).
func degraded(reason, message string) metav1.Condition {
	return condition(appv1.ConditionDegraded, metav1.ConditionTrue, reason, message)
}

// withStatus returns a copy of as with the given status.
func withStatus(as *appv1.AppService, st appv1.AppServiceStatus) *appv1.AppService {
	out := as.DeepCopy()
	out.Status = st
	return out
}

// setCondition replaces the condition of the same type in st.
func setCondition(st *appv1.AppServiceStatus, c metav1.Condition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// serviceInTheWay is the Degraded condition for an unowned Service, since
// lastTransition.
func serviceInTheWay() metav1.Condition {
	c := degraded(appv1.ReasonResourceExists, notOursMessage("Service"))
	c.LastTransitionTime = lastTransition
	return c
}

func notOursMessage(kind string) string {
	return kind + " default/nginx-app already exists and is not controlled by AppService nginx-app; it is left untouched"
}

// The fixture, after kubernetes/sample-controller.

type reactor struct {
	verb, resource string
	fn             core.ReactionFunc
}

type fixture struct {
	t testing.TB

	kubeClient *k8sfake.Clientset
	appClient  *fake.Clientset
	recorder   *record.FakeRecorder
	// kubeInformers are the controller's (not started): a test may change
	// what their caches hold mid-sync.
	kubeInformers kubeinformers.SharedInformerFactory
	// appInformers are the AppServices' and Activities' (not started).
	appInformers appinformers.SharedInformerFactory

	// Objects in the informers' caches and in the fake API servers.
	appServices []*appv1.AppService
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	// activities are a canary's tests, cached whole.
	activities []*appv1.Activity
	// The other children: ServiceAccounts, Ingresses,
	// PodDisruptionBudgets and HorizontalPodAutoscalers.
	others []runtime.Object
	// Objects in the fake API server only, not (yet) in the caches.
	apiOnly []runtime.Object
	// Reactors prepended to the clients, e.g. to make a write fail.
	kubeReactors []reactor
	appReactors  []reactor
	// maxConfigRollouts is the controller's cap on config rollouts (0:
	// none).
	maxConfigRollouts int
	// analysis is where the canary analyses' Prometheus is (none: not
	// configured).
	analysis analysis.Config

	// The objects the kube client's patches were applied to, in order (nil
	// for one that was not there).
	patchBases []runtime.Object

	// What the sync is expected to do.
	kubeActions []core.Action
	appActions  []core.Action
	events      []string
}

func newFixture(t testing.TB, as ...*appv1.AppService) *fixture {
	return &fixture{t: t, appServices: as}
}

// newController builds the clients, informers and the controller, with the
// fixture's objects in the informers' indexers (the informers are not
// started).
func (f *fixture) newController(ctx context.Context) *Controller {
	f.t.Helper()
	var kubeObjects, appObjects []runtime.Object
	for _, d := range f.deployments {
		kubeObjects = append(kubeObjects, d)
	}
	for _, s := range f.services {
		kubeObjects = append(kubeObjects, s)
	}
	kubeObjects = append(kubeObjects, f.others...)
	kubeObjects = append(kubeObjects, f.apiOnly...)
	for _, as := range f.appServices {
		appObjects = append(appObjects, as)
	}
	for _, a := range f.activities {
		appObjects = append(appObjects, a)
	}
	f.kubeClient = k8sfake.NewClientset(kubeObjects...)
	f.appClient = fake.NewClientset(appObjects...)
	for _, r := range f.kubeReactors {
		f.kubeClient.PrependReactor(r.verb, r.resource, r.fn)
	}
	// Before the reactors above: the object each patch is applied to.
	f.patchBases = nil
	f.kubeClient.PrependReactor("patch", "*", func(a core.Action) (bool, runtime.Object, error) {
		p := a.(core.PatchActionImpl)
		obj, err := f.kubeClient.Tracker().Get(p.GetResource(), p.GetNamespace(), p.GetName())
		if err == nil {
			obj = obj.DeepCopyObject()
		}
		f.patchBases = append(f.patchBases, obj)
		return false, nil, nil
	})
	for _, r := range f.appReactors {
		f.appClient.PrependReactor(r.verb, r.resource, r.fn)
	}
	f.recorder = record.NewFakeRecorder(100)

	kubeInformers := kubeinformers.NewSharedInformerFactory(f.kubeClient, 0)
	f.kubeInformers = kubeInformers
	appInformers := appinformers.NewSharedInformerFactory(f.appClient, 0)
	f.appInformers = appInformers
	deployments := kubeInformers.Apps().V1().Deployments()
	services := kubeInformers.Core().V1().Services()
	appServices := appInformers.App().V1().AppServices()
	c, err := NewController(ctx, f.kubeClient, metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()),
		f.appClient, kubeInformers, appInformers.App().V1(), nil, f.recorder, f.maxConfigRollouts, f.analysis, notify.DefaultConfig)
	if err != nil {
		f.t.Fatalf("NewController: %v", err)
	}
	f.t.Cleanup(c.queue.ShutDown)

	// The children as the informers' transform caches them.
	for _, d := range f.deployments {
		fixtures.MustAdd(f.t, deployments.Informer().GetIndexer(), trimmed(f.t, d))
	}
	for _, s := range f.services {
		fixtures.MustAdd(f.t, services.Informer().GetIndexer(), trimmed(f.t, s))
	}
	for _, o := range f.others {
		informer, err := kubeInformers.ForResource(resourceOf(f.t, o))
		if err != nil {
			f.t.Fatal(err)
		}
		fixtures.MustAdd(f.t, informer.Informer().GetIndexer(), trimmed(f.t, o))
	}
	for _, a := range f.activities {
		fixtures.MustAdd(f.t, appInformers.App().V1().Activities().Informer().GetIndexer(), a)
	}
	// The AppServices as the informer's transform caches them: encoded.
	for _, as := range f.appServices {
		cached, err := appcache.Transform(as.DeepCopy())
		if err != nil {
			f.t.Fatal(err)
		}
		fixtures.MustAdd(f.t, appServices.Informer().GetIndexer(), cached)
	}
	return c
}

// trimmed is obj as the children's informers cache it (children.Trim).
func trimmed(t testing.TB, obj any) any {
	t.Helper()
	out, err := children.Trim(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run syncs key and checks the actions on both clients and the Events
// against the expected ones, and that the cached objects were not modified.
// It returns the sync's error.
func (f *fixture) run(key cache.ObjectName) error {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	c := f.newController(ctx)
	cached := f.cachedCopies()

	err := c.syncHandler(ctx, key)

	f.checkActions("kube", f.kubeActions, filterInformerActions(f.kubeClient.Actions()))
	f.checkActions("app", f.appActions, filterInformerActions(f.appClient.Actions()))
	fixtures.CheckEvents(f.t, f.events, fixtures.DrainEvents(f.recorder))
	if now := f.cachedCopies(); !equality.Semantic.DeepEqual(cached, now) {
		f.t.Errorf("the sync modified objects in the informers' caches:\n%s", cmp.Diff(cached, now))
	}
	return err
}

func (f *fixture) cachedCopies() []runtime.Object {
	var out []runtime.Object
	for _, as := range f.appServices {
		out = append(out, as.DeepCopy())
	}
	for _, d := range f.deployments {
		out = append(out, d.DeepCopy())
	}
	for _, s := range f.services {
		out = append(out, s.DeepCopy())
	}
	for _, o := range f.others {
		out = append(out, o.DeepCopyObject())
	}
	return out
}

func (f *fixture) expectCreate(obj runtime.Object) {
	f.kubeActions = append(f.kubeActions, core.NewCreateAction(resourceOf(f.t, obj), fixtures.Namespace, obj))
}

// expectUpdate expects a patch of a child that makes it obj: the patch
// the sync sends is applied to the object the fake API server held before it
// (see patchBases), and the result compared with obj.
func (f *fixture) expectUpdate(obj runtime.Object) {
	name := obj.(metav1.Object).GetName()
	f.kubeActions = append(f.kubeActions, patchedTo{
		PatchActionImpl: core.NewPatchAction(resourceOf(f.t, obj), fixtures.Namespace, name, types.StrategicMergePatchType, nil),
		want:            obj,
	})
}

// patchedTo is an expected patch, by what it makes of the object.
type patchedTo struct {
	core.PatchActionImpl
	want runtime.Object
}

func (f *fixture) expectGet(resource schema.GroupVersionResource) {
	f.kubeActions = append(f.kubeActions, core.NewGetAction(resource, fixtures.Namespace, fixtures.Name))
}

func (f *fixture) expectDelete(resource schema.GroupVersionResource, opts metav1.DeleteOptions) {
	f.kubeActions = append(f.kubeActions, core.NewDeleteActionWithOptions(resource, fixtures.Namespace, fixtures.Name, opts))
}

// expectPatch expects a strategic merge patch of the seed's child.
func (f *fixture) expectPatch(resource schema.GroupVersionResource, patch string) {
	f.kubeActions = append(f.kubeActions, core.NewPatchAction(resource, fixtures.Namespace, fixtures.Name, types.StrategicMergePatchType, []byte(patch)))
}

// expectAppServiceGet expects the uncached read of the seed.
func (f *fixture) expectAppServiceGet() {
	f.appActions = append(f.appActions, core.NewGetAction(appServicesResource, fixtures.Namespace, fixtures.Name))
}

func (f *fixture) expectStatusUpdate(as *appv1.AppService) {
	f.appActions = append(f.appActions, core.NewUpdateSubresourceAction(appServicesResource, "status", fixtures.Namespace, as))
}

func resourceOf(t testing.TB, obj runtime.Object) schema.GroupVersionResource {
	switch obj.(type) {
	case *appsv1.Deployment:
		return deploymentsResource
	case *corev1.Service:
		return servicesResource
	case *appv1.AppService:
		return appServicesResource
	case *corev1.ServiceAccount:
		return serviceAccountsResource
	case *policyv1.PodDisruptionBudget:
		return disruptionBudgetsResource
	case *autoscalingv2.HorizontalPodAutoscaler:
		return autoscalersResource
	case *networkingv1.Ingress:
		return ingressesResource
	}
	t.Fatalf("no resource for %T", obj)
	return schema.GroupVersionResource{}
}

// filterInformerActions drops the list and watch actions of informers.
func filterInformerActions(actions []core.Action) []core.Action {
	var out []core.Action
	for _, a := range actions {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, a)
	}
	return out
}

func (f *fixture) checkActions(client string, want, got []core.Action) {
	f.t.Helper()
	if len(want) != len(got) {
		var w, g []string
		for _, a := range want {
			w = append(w, fixtures.Describe(a))
		}
		for _, a := range got {
			g = append(g, fixtures.Describe(a))
		}
		f.t.Errorf("%s client: got %d actions %q, want %d %q", client, len(got), g, len(want), w)
		return
	}
	patches := 0
	for i := range want {
		if w, ok := want[i].(patchedTo); ok && client == "kube" {
			f.checkPatchedTo(w, got[i], f.patchBases[patches])
		} else {
			checkAction(f.t, want[i], got[i])
		}
		if got[i].GetVerb() == "patch" && client == "kube" {
			patches++
		}
	}
}

// checkPatchedTo checks that got is a strategic merge patch with base's
// resourceVersion as a precondition, which makes base what want says.
func (f *fixture) checkPatchedTo(want patchedTo, got core.Action, base runtime.Object) {
	f.t.Helper()
	g, ok := got.(core.PatchActionImpl)
	if !ok || g.GetResource() != want.GetResource() || g.GetName() != want.GetName() || g.GetPatchType() != types.StrategicMergePatchType {
		f.t.Errorf("got action %s, want a strategic merge patch of %s %s", fixtures.Describe(got), want.GetResource().Resource, want.GetName())
		return
	}
	checkFieldManager(f.t, got)
	if base == nil {
		f.t.Errorf("%s: a patch of an object the API server does not hold", fixtures.Describe(got))
		return
	}
	var precondition struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(g.GetPatch(), &precondition); err != nil {
		f.t.Fatalf("%s: patch is not JSON: %v", fixtures.Describe(got), err)
	}
	if rv := base.(metav1.Object).GetResourceVersion(); precondition.Metadata.ResourceVersion != rv {
		f.t.Errorf("%s: resourceVersion precondition %q, want %q", fixtures.Describe(got), precondition.Metadata.ResourceVersion, rv)
	}
	original, err := json.Marshal(base)
	if err != nil {
		f.t.Fatal(err)
	}
	patched, err := strategicpatch.StrategicMergePatch(original, g.GetPatch(), base)
	if err != nil {
		f.t.Errorf("%s: applying %s: %v", fixtures.Describe(got), g.GetPatch(), err)
		return
	}
	result := reflect.New(reflect.TypeOf(base).Elem()).Interface().(runtime.Object)
	if err := json.Unmarshal(patched, result); err != nil {
		f.t.Fatal(err)
	}
	checkObject(f.t, fixtures.Describe(got)+" "+string(g.GetPatch()), want.want, result)
}

// checkAction compares an action by verb, resource, subresource, namespace
// and, depending on the verb, its object, name or delete options.
func checkAction(t testing.TB, want, got core.Action) {
	t.Helper()
	if want.GetVerb() != got.GetVerb() || want.GetResource() != got.GetResource() ||
		want.GetSubresource() != got.GetSubresource() || want.GetNamespace() != got.GetNamespace() {
		t.Errorf("got action %s in %q, want %s in %q", fixtures.Describe(got), got.GetNamespace(), fixtures.Describe(want), want.GetNamespace())
		return
	}
	checkFieldManager(t, got)
	switch w := want.(type) {
	case core.CreateActionImpl:
		checkObject(t, fixtures.Describe(want), w.GetObject(), got.(core.CreateActionImpl).GetObject())
	case core.UpdateActionImpl:
		checkObject(t, fixtures.Describe(want), w.GetObject(), got.(core.UpdateActionImpl).GetObject())
	case core.GetActionImpl:
		if g := got.(core.GetActionImpl); g.GetName() != w.GetName() {
			t.Errorf("%s: got name %q, want %q", fixtures.Describe(want), g.GetName(), w.GetName())
		}
	case core.PatchActionImpl:
		g := got.(core.PatchActionImpl)
		if g.GetName() != w.GetName() || g.GetPatchType() != w.GetPatchType() {
			t.Errorf("%s: got %s patch of %q, want %s patch of %q", fixtures.Describe(want), g.GetPatchType(), g.GetName(), w.GetPatchType(), w.GetName())
		}
		var wantPatch, gotPatch any
		if err := json.Unmarshal(w.GetPatch(), &wantPatch); err != nil {
			t.Fatalf("expected patch: %v", err)
		}
		if err := json.Unmarshal(g.GetPatch(), &gotPatch); err != nil {
			t.Errorf("%s: patch is not JSON: %v", fixtures.Describe(want), err)
		}
		if !equality.Semantic.DeepEqual(wantPatch, gotPatch) {
			t.Errorf("%s: patch differs (-want +got):\n%s", fixtures.Describe(want), cmp.Diff(wantPatch, gotPatch))
		}
	case core.DeleteActionImpl:
		g := got.(core.DeleteActionImpl)
		if g.GetName() != w.GetName() {
			t.Errorf("%s: got name %q, want %q", fixtures.Describe(want), g.GetName(), w.GetName())
		}
		if !equality.Semantic.DeepEqual(w.DeleteOptions, g.DeleteOptions) {
			t.Errorf("%s: delete options differ (-want +got):\n%s", fixtures.Describe(want), cmp.Diff(w.DeleteOptions, g.DeleteOptions))
		}
	default:
		t.Errorf("unexpected action type %T", want)
	}
}

// checkFieldManager fails unless a create, update or patch names the
// controller as its field manager, so that managedFields tell who wrote what.
func checkFieldManager(t testing.TB, a core.Action) {
	t.Helper()
	var manager string
	switch a := a.(type) {
	case core.CreateActionImpl:
		manager = a.CreateOptions.FieldManager
	case core.UpdateActionImpl:
		manager = a.UpdateOptions.FieldManager
	case core.PatchActionImpl:
		manager = a.PatchOptions.FieldManager
	default:
		return
	}
	if manager != "appservice-controller" {
		t.Errorf("%s: field manager %q, want %q", fixtures.Describe(a), manager, "appservice-controller")
	}
}

func checkObject(t testing.TB, what string, want, got runtime.Object) {
	t.Helper()
	if w, ok := want.(*appv1.AppService); ok {
		if g, ok := got.(*appv1.AppService); ok {
			got = matchTransitionTimes(t, w, g)
		}
	}
	if !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("%s: object differs (-want +got):\n%s", what, cmp.Diff(want, got))
	}
}

// matchTransitionTimes returns a copy of got in which every condition whose
// expected lastTransitionTime is zero ("any time") carries the zero time
// too, after checking that got's is set.
func matchTransitionTimes(t testing.TB, want, got *appv1.AppService) *appv1.AppService {
	t.Helper()
	out := got.DeepCopy()
	for _, w := range want.Status.Conditions {
		if !w.LastTransitionTime.IsZero() {
			continue
		}
		for i := range out.Status.Conditions {
			if c := &out.Status.Conditions[i]; c.Type == w.Type {
				if c.LastTransitionTime.IsZero() {
					t.Errorf("condition %s has no lastTransitionTime", c.Type)
				}
				c.LastTransitionTime = metav1.Time{}
			}
		}
	}
	return out
}

// writtenStatus returns the status written by the fixture's last run.
func (f *fixture) writtenStatus() (appv1.AppServiceStatus, bool) {
	for _, a := range filterInformerActions(f.appClient.Actions()) {
		if u, ok := a.(core.UpdateActionImpl); ok && u.GetSubresource() == "status" {
			return u.GetObject().(*appv1.AppService).Status, true
		}
	}
	return appv1.AppServiceStatus{}, false
}

// errorReactor makes every verb on resource fail with err.
func errorReactor(verb, resource string, err error) reactor {
	return reactor{verb, resource, func(core.Action) (bool, runtime.Object, error) { return true, nil, err }}
}

// The syncHandler tests.
