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
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	"example.com/appservice-controller/pkg/generated/clientset/versioned/fake"
	appinformers "example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// The seed AppService and what the API server holds for its children once
// they have been created (and defaulted) from it.

const (
	testNamespace  = "default"
	testName       = "nginx-app"
	testUID        = types.UID("6b1a5c3e-0000-4000-8000-000000000001")
	testGeneration = int64(4)
	testSelector   = appv1.LabelAppService + "=" + testName
	testClusterIP  = "10.96.0.10"
)

var (
	testKey = cache.ObjectName{Namespace: testNamespace, Name: testName}
	// lastTransition is when the conditions of currentStatus last changed.
	lastTransition = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

	deploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")
	servicesResource    = corev1.SchemeGroupVersion.WithResource("services")
	appServicesResource = appv1.SchemeGroupVersion.WithResource("appservices")
)

func int32Ptr(i int32) *int32 { return &i }
func int64Ptr(i int64) *int64 { return &i }

// apply calls fn on v unless fn is nil.
func apply[T any](fn func(T), v T) {
	if fn != nil {
		fn(v)
	}
}

func testLabels() map[string]string { return map[string]string{appv1.LabelAppService: testName} }

// seedAppService is nginx-app, size 2, nginx:1.7.9, port 80 on nodePort 30002.
func seedAppService() *appv1.AppService {
	return &appv1.AppService{
		ObjectMeta: metav1.ObjectMeta{
			Name:            testName,
			Namespace:       testNamespace,
			UID:             testUID,
			Generation:      testGeneration,
			ResourceVersion: "10",
		},
		Spec: appv1.AppServiceSpec{
			Size:  int32Ptr(2),
			Image: "nginx:1.7.9",
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80), NodePort: 30002}},
		},
	}
}

// notLabelledForUs makes a cached child look like an object that is not the
// seed's: no controller, and our label naming another AppService (the child
// informers list only objects carrying our label).
func notLabelledForUs(o metav1.Object) {
	o.SetOwnerReferences(nil)
	labels := o.GetLabels()
	labels[appv1.LabelAppService] = "another-app"
	o.SetLabels(labels)
}

// ownerRef is the controller reference of the seed's children, spelled out.
func ownerRef() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         "app.example.com/v1",
		Kind:               "AppService",
		Name:               testName,
		UID:                testUID,
		Controller:         new(true),
		BlockOwnerDeletion: new(true),
	}
}

// desiredDeployment is the Deployment the controller creates for the seed.
func desiredDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            testName,
			Namespace:       testNamespace,
			Labels:          testLabels(),
			OwnerReferences: []metav1.OwnerReference{ownerRef()},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: int32Ptr(2),
			Selector: &metav1.LabelSelector{MatchLabels: testLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: testLabels()},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:            testName,
					Image:           "nginx:1.7.9",
					ImagePullPolicy: corev1.PullIfNotPresent,
					Ports:           []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				}}},
			},
		},
	}
}

// liveDeployment is desiredDeployment as the API server returns it: with
// every default filled in, and rolled out.
func liveDeployment() *appsv1.Deployment {
	d := desiredDeployment()
	d.UID = "d-uid"
	d.ResourceVersion = "100"
	d.Generation = 1
	maxUnavailable, maxSurge := intstr.FromString("25%"), intstr.FromString("25%")
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge},
	}
	d.Spec.RevisionHistoryLimit = int32Ptr(10)
	d.Spec.ProgressDeadlineSeconds = int32Ptr(600)
	pod := &d.Spec.Template.Spec
	pod.RestartPolicy = corev1.RestartPolicyAlways
	pod.DNSPolicy = corev1.DNSClusterFirst
	pod.SchedulerName = corev1.DefaultSchedulerName
	pod.TerminationGracePeriodSeconds = int64Ptr(30)
	pod.SecurityContext = &corev1.PodSecurityContext{}
	pod.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
	pod.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageReadFile
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "nginx-app-5d59d67564" has successfully progressed.`},
		},
	}
	return d
}

// desiredService is the Service the controller creates for the seed.
func desiredService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            testName,
			Namespace:       testNamespace,
			Labels:          testLabels(),
			OwnerReferences: []metav1.OwnerReference{ownerRef()},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: testLabels(),
			Ports: []corev1.ServicePort{{
				Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(80), NodePort: 30002,
			}},
		},
	}
}

// liveService is desiredService as the API server returns it.
func liveService() *corev1.Service {
	s := desiredService()
	s.UID = "s-uid"
	s.ResourceVersion = "200"
	singleStack := corev1.IPFamilyPolicySingleStack
	cluster := corev1.ServiceInternalTrafficPolicyCluster
	s.Spec.ClusterIP = testClusterIP
	s.Spec.ClusterIPs = []string{testClusterIP}
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	s.Spec.IPFamilyPolicy = &singleStack
	s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	s.Spec.InternalTrafficPolicy = &cluster
	return s
}

// condition returns a condition observed at testGeneration. A zero
// lastTransitionTime in an expected status means "set, to any time".
func condition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, ObservedGeneration: testGeneration, Reason: reason, Message: message}
}

func notDegraded() metav1.Condition {
	return condition(appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "The Deployment and Service match the spec")
}

// currentStatus is the status the seed has when liveDeployment is rolled
// out and nothing is wrong.
func currentStatus() appv1.AppServiceStatus {
	conds := []metav1.Condition{
		condition(appv1.ConditionAvailable, metav1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."),
		condition(appv1.ConditionProgressing, metav1.ConditionTrue, "NewReplicaSetAvailable", `ReplicaSet "nginx-app-5d59d67564" has successfully progressed.`),
		notDegraded(),
	}
	for i := range conds {
		conds[i].LastTransitionTime = lastTransition
	}
	return appv1.AppServiceStatus{
		ObservedGeneration: testGeneration,
		Replicas:           2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2,
		Selector:   testSelector,
		Conditions: conds,
	}
}

// missingDeploymentStatus is the status when the AppService has no
// Deployment, with the given Degraded condition.
func missingDeploymentStatus(degraded metav1.Condition) appv1.AppServiceStatus {
	const msg = "The Deployment does not exist yet"
	return appv1.AppServiceStatus{
		ObservedGeneration: testGeneration,
		Selector:           testSelector,
		Conditions: []metav1.Condition{
			condition(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonDeploymentMissing, msg),
			condition(appv1.ConditionProgressing, metav1.ConditionFalse, appv1.ReasonDeploymentMissing, msg),
			degraded,
		},
	}
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
	t *testing.T

	kubeClient *k8sfake.Clientset
	appClient  *fake.Clientset
	recorder   *record.FakeRecorder

	// Objects in the informers' caches and in the fake API servers.
	appServices []*appv1.AppService
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	// Objects in the fake API server only, not (yet) in the caches.
	apiOnly []runtime.Object
	// Reactors prepended to the clients, e.g. to make a write fail.
	kubeReactors []reactor
	appReactors  []reactor

	// What the sync is expected to do.
	kubeActions []core.Action
	appActions  []core.Action
	events      []string
}

func newFixture(t *testing.T, as ...*appv1.AppService) *fixture {
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
	kubeObjects = append(kubeObjects, f.apiOnly...)
	for _, as := range f.appServices {
		appObjects = append(appObjects, as)
	}
	f.kubeClient = k8sfake.NewClientset(kubeObjects...)
	f.appClient = fake.NewClientset(appObjects...)
	for _, r := range f.kubeReactors {
		f.kubeClient.PrependReactor(r.verb, r.resource, r.fn)
	}
	for _, r := range f.appReactors {
		f.appClient.PrependReactor(r.verb, r.resource, r.fn)
	}
	f.recorder = record.NewFakeRecorder(100)

	kubeInformers := kubeinformers.NewSharedInformerFactory(f.kubeClient, 0)
	appInformers := appinformers.NewSharedInformerFactory(f.appClient, 0)
	deployments := kubeInformers.Apps().V1().Deployments()
	services := kubeInformers.Core().V1().Services()
	appServices := appInformers.App().V1().AppServices()
	c, err := NewController(ctx, f.kubeClient, f.appClient, deployments, services, appServices, f.recorder)
	if err != nil {
		f.t.Fatalf("NewController: %v", err)
	}
	f.t.Cleanup(c.queue.ShutDown)

	for _, d := range f.deployments {
		mustAdd(f.t, deployments.Informer().GetIndexer(), d)
	}
	for _, s := range f.services {
		mustAdd(f.t, services.Informer().GetIndexer(), s)
	}
	for _, as := range f.appServices {
		mustAdd(f.t, appServices.Informer().GetIndexer(), as)
	}
	return c
}

func mustAdd(t *testing.T, indexer cache.Indexer, obj interface{}) {
	t.Helper()
	if err := indexer.Add(obj); err != nil {
		t.Fatalf("adding %T to the indexer: %v", obj, err)
	}
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
	checkEvents(f.t, f.events, drainEvents(f.recorder))
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
	return out
}

func (f *fixture) expectCreate(obj runtime.Object) {
	f.kubeActions = append(f.kubeActions, core.NewCreateAction(resourceOf(f.t, obj), testNamespace, obj))
}

func (f *fixture) expectUpdate(obj runtime.Object) {
	f.kubeActions = append(f.kubeActions, core.NewUpdateAction(resourceOf(f.t, obj), testNamespace, obj))
}

func (f *fixture) expectGet(resource schema.GroupVersionResource) {
	f.kubeActions = append(f.kubeActions, core.NewGetAction(resource, testNamespace, testName))
}

func (f *fixture) expectDelete(resource schema.GroupVersionResource, opts metav1.DeleteOptions) {
	f.kubeActions = append(f.kubeActions, core.NewDeleteActionWithOptions(resource, testNamespace, testName, opts))
}

// expectPatch expects a strategic merge patch of the seed's child.
func (f *fixture) expectPatch(resource schema.GroupVersionResource, patch string) {
	f.kubeActions = append(f.kubeActions, core.NewPatchAction(resource, testNamespace, testName, types.StrategicMergePatchType, []byte(patch)))
}

// expectAppServiceGet expects the uncached read of the seed.
func (f *fixture) expectAppServiceGet() {
	f.appActions = append(f.appActions, core.NewGetAction(appServicesResource, testNamespace, testName))
}

func (f *fixture) expectStatusUpdate(as *appv1.AppService) {
	f.appActions = append(f.appActions, core.NewUpdateSubresourceAction(appServicesResource, "status", testNamespace, as))
}

func resourceOf(t *testing.T, obj runtime.Object) schema.GroupVersionResource {
	switch obj.(type) {
	case *appsv1.Deployment:
		return deploymentsResource
	case *corev1.Service:
		return servicesResource
	case *appv1.AppService:
		return appServicesResource
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

func describe(a core.Action) string {
	s := a.GetVerb() + " " + a.GetResource().Resource
	if a.GetSubresource() != "" {
		s += "/" + a.GetSubresource()
	}
	return s
}

func (f *fixture) checkActions(client string, want, got []core.Action) {
	f.t.Helper()
	if len(want) != len(got) {
		var w, g []string
		for _, a := range want {
			w = append(w, describe(a))
		}
		for _, a := range got {
			g = append(g, describe(a))
		}
		f.t.Errorf("%s client: got %d actions %q, want %d %q", client, len(got), g, len(want), w)
		return
	}
	for i := range want {
		checkAction(f.t, want[i], got[i])
	}
}

// checkAction compares an action by verb, resource, subresource, namespace
// and, depending on the verb, its object, name or delete options.
func checkAction(t *testing.T, want, got core.Action) {
	t.Helper()
	if want.GetVerb() != got.GetVerb() || want.GetResource() != got.GetResource() ||
		want.GetSubresource() != got.GetSubresource() || want.GetNamespace() != got.GetNamespace() {
		t.Errorf("got action %s in %q, want %s in %q", describe(got), got.GetNamespace(), describe(want), want.GetNamespace())
		return
	}
	switch w := want.(type) {
	case core.CreateActionImpl:
		checkObject(t, describe(want), w.GetObject(), got.(core.CreateActionImpl).GetObject())
	case core.UpdateActionImpl:
		checkObject(t, describe(want), w.GetObject(), got.(core.UpdateActionImpl).GetObject())
	case core.GetActionImpl:
		if g := got.(core.GetActionImpl); g.GetName() != w.GetName() {
			t.Errorf("%s: got name %q, want %q", describe(want), g.GetName(), w.GetName())
		}
	case core.PatchActionImpl:
		g := got.(core.PatchActionImpl)
		if g.GetName() != w.GetName() || g.GetPatchType() != w.GetPatchType() {
			t.Errorf("%s: got %s patch of %q, want %s patch of %q", describe(want), g.GetPatchType(), g.GetName(), w.GetPatchType(), w.GetName())
		}
		var wantPatch, gotPatch any
		if err := json.Unmarshal(w.GetPatch(), &wantPatch); err != nil {
			t.Fatalf("expected patch: %v", err)
		}
		if err := json.Unmarshal(g.GetPatch(), &gotPatch); err != nil {
			t.Errorf("%s: patch is not JSON: %v", describe(want), err)
		}
		if !equality.Semantic.DeepEqual(wantPatch, gotPatch) {
			t.Errorf("%s: patch differs (-want +got):\n%s", describe(want), cmp.Diff(wantPatch, gotPatch))
		}
	case core.DeleteActionImpl:
		g := got.(core.DeleteActionImpl)
		if g.GetName() != w.GetName() {
			t.Errorf("%s: got name %q, want %q", describe(want), g.GetName(), w.GetName())
		}
		if !equality.Semantic.DeepEqual(w.DeleteOptions, g.DeleteOptions) {
			t.Errorf("%s: delete options differ (-want +got):\n%s", describe(want), cmp.Diff(w.DeleteOptions, g.DeleteOptions))
		}
	default:
		t.Errorf("unexpected action type %T", want)
	}
}

func checkObject(t *testing.T, what string, want, got runtime.Object) {
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
func matchTransitionTimes(t *testing.T, want, got *appv1.AppService) *appv1.AppService {
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

func drainEvents(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func checkEvents(t *testing.T, want, got []string) {
	t.Helper()
	if !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("Events differ (-want +got):\n%s", cmp.Diff(want, got))
	}
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

func TestSyncHandlerCreatesChildren(t *testing.T) {
	as := seedAppService()
	f := newFixture(t, as)
	f.expectCreate(desiredDeployment())
	f.expectCreate(desiredService())
	f.expectStatusUpdate(withStatus(as, appv1.AppServiceStatus{
		ObservedGeneration: testGeneration,
		Selector:           testSelector,
		Conditions: []metav1.Condition{
			condition(appv1.ConditionAvailable, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, "The Deployment has not reported this condition yet"),
			condition(appv1.ConditionProgressing, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, "The Deployment has not reported this condition yet"),
			notDegraded(),
		},
	}))
	// One Event for both children.
	f.events = []string{
		"Normal Created Created Deployment nginx-app, Service nginx-app",
	}
	if err := f.run(testKey); err != nil {
		t.Fatalf("syncHandler: %v", err)
	}
}

func TestSyncHandlerNoop(t *testing.T) {
	deleting := seedAppService()
	deleting.DeletionTimestamp = &lastTransition
	deleting.Finalizers = []string{"foregroundDeletion"}
	tests := []struct {
		name string
		as   []*appv1.AppService
	}{
		{"AppService being deleted", []*appv1.AppService{deleting}},
		{"AppService gone", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := newFixture(t, tc.as...).run(testKey); err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
	}
}

// childCase is a sync of the seed (with currentStatus) against its live
// children: the spec and the live children may be changed first; the
// expected updates are changes to copies of the live children.
type childCase struct {
	name       string
	spec       func(*appv1.AppServiceSpec)
	liveDeploy func(*appsv1.Deployment)
	liveSvc    func(*corev1.Service)
	wantDeploy func(*appsv1.Deployment) // nil: no update
	wantSvc    func(*corev1.Service)    // nil: no update
	events     []string
}

func (tc childCase) run(t *testing.T) {
	as := withStatus(seedAppService(), currentStatus())
	apply(tc.spec, &as.Spec)
	d := liveDeployment()
	apply(tc.liveDeploy, d)
	s := liveService()
	apply(tc.liveSvc, s)

	f := newFixture(t, as)
	f.deployments = []*appsv1.Deployment{d}
	f.services = []*corev1.Service{s}
	if tc.wantDeploy != nil {
		want := d.DeepCopy()
		tc.wantDeploy(want)
		f.expectUpdate(want)
	}
	if tc.wantSvc != nil {
		want := s.DeepCopy()
		tc.wantSvc(want)
		f.expectUpdate(want)
	}
	f.events = tc.events
	if err := f.run(testKey); err != nil {
		t.Errorf("syncHandler: %v", err)
	}
}

func container(d *appsv1.Deployment) *corev1.Container { return &d.Spec.Template.Spec.Containers[0] }

func TestSyncHandlerSteadyState(t *testing.T) {
	tests := []childCase{
		{name: "children as defaulted by the API server"},
		{
			name: "equal quantities in another form, defaulted fieldRef apiVersion",
			spec: func(s *appv1.AppServiceSpec) {
				s.Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1.5")},
				}
				s.Envs = []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				}
			},
			liveDeploy: func(d *appsv1.Deployment) {
				container(d).Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m"), corev1.ResourceMemory: resource.MustParse("134217728")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
				}
				container(d).Env = []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				}
			},
		},
		{
			name:       "a label someone else added to the Deployment",
			liveDeploy: func(d *appsv1.Deployment) { d.Labels["team"] = "web" },
		},
		{
			name:    "spec nodePort 0: the server-assigned nodePort is kept",
			spec:    func(s *appv1.AppServiceSpec) { s.Ports[0].NodePort = 0 },
			liveSvc: func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 31234 },
		},
		{
			// The API server rounds every quantity of a Pod template's
			// resources up to milli precision (SetDefaults_ResourceList).
			name: "sub-milli CPU request, rounded up by the API server",
			spec: func(s *appv1.AppServiceSpec) {
				s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100u")}
			},
			liveDeploy: func(d *appsv1.Deployment) {
				container(d).Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func TestSyncHandlerUpdates(t *testing.T) {
	const (
		deploymentUpdated = "Normal Updated Updated Deployment nginx-app: "
		serviceUpdated    = "Normal Updated Updated Service nginx-app: "
	)
	tests := []childCase{
		{
			name:       "size",
			spec:       func(s *appv1.AppServiceSpec) { s.Size = int32Ptr(3) },
			wantDeploy: func(d *appsv1.Deployment) { d.Spec.Replicas = int32Ptr(3) },
			events:     []string{deploymentUpdated + "replicas"},
		},
		{
			name:       "image, same pull policy",
			spec:       func(s *appv1.AppServiceSpec) { s.Image = "nginx:1.9.1" },
			wantDeploy: func(d *appsv1.Deployment) { container(d).Image = "nginx:1.9.1" },
			events:     []string{deploymentUpdated + "image"},
		},
		{
			name: "image to :latest flips the pull policy to Always",
			spec: func(s *appv1.AppServiceSpec) { s.Image = "nginx:latest" },
			wantDeploy: func(d *appsv1.Deployment) {
				container(d).Image = "nginx:latest"
				container(d).ImagePullPolicy = corev1.PullAlways
			},
			events: []string{deploymentUpdated + "image, imagePullPolicy"},
		},
		{
			name: "env",
			spec: func(s *appv1.AppServiceSpec) {
				s.Envs = []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				}
			},
			wantDeploy: func(d *appsv1.Deployment) {
				container(d).Env = []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
				}
			},
			events: []string{deploymentUpdated + "env"},
		},
		{
			name: "resources",
			spec: func(s *appv1.AppServiceSpec) {
				s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
				s.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}
			},
			wantDeploy: func(d *appsv1.Deployment) {
				container(d).Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				}
			},
			events: []string{deploymentUpdated + "resources"},
		},
		{
			name:       "target port: container port and Service port",
			spec:       func(s *appv1.AppServiceSpec) { s.Ports[0].TargetPort = intstr.FromInt32(8080) },
			wantDeploy: func(d *appsv1.Deployment) { container(d).Ports[0].ContainerPort = 8080 },
			wantSvc:    func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(8080) },
			events:     []string{deploymentUpdated + "ports; Service nginx-app: ports"},
		},
		{
			name: "a second, named port",
			spec: func(s *appv1.AppServiceSpec) {
				s.Ports[0].Name = "http"
				s.Ports = append(s.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, TargetPort: intstr.FromString("metrics")})
			},
			wantDeploy: func(d *appsv1.Deployment) {
				container(d).Ports = []corev1.ContainerPort{
					{ContainerPort: 80, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
				}
			},
			wantSvc: func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(80), NodePort: 30002},
					{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromString("metrics")},
				}
			},
			events: []string{deploymentUpdated + "ports; Service nginx-app: ports"},
		},
		{
			name: "serviceType ClusterIP drops the nodePort",
			spec: func(s *appv1.AppServiceSpec) {
				s.ServiceType = corev1.ServiceTypeClusterIP
				s.Ports[0].NodePort = 0
			},
			wantSvc: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeClusterIP
				s.Spec.Ports[0].NodePort = 0
			},
			events: []string{serviceUpdated + "type, ports"},
		},
		{
			name:    "serviceType LoadBalancer keeps clusterIP and the server-assigned nodePort",
			spec:    func(s *appv1.AppServiceSpec) { s.ServiceType = corev1.ServiceTypeLoadBalancer; s.Ports[0].NodePort = 0 },
			liveSvc: func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 31234 },
			wantSvc: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				// Spelled out, though s is a copy of the live Service.
				s.Spec.ClusterIP = testClusterIP
				s.Spec.Ports[0].NodePort = 31234
			},
			events: []string{serviceUpdated + "type"},
		},
		{
			name:       "drift: replicas changed by someone else",
			liveDeploy: func(d *appsv1.Deployment) { d.Spec.Replicas = int32Ptr(5) },
			wantDeploy: func(d *appsv1.Deployment) { d.Spec.Replicas = int32Ptr(2) },
			events:     []string{deploymentUpdated + "replicas"},
		},
		{
			name: "drift: image changed by someone else",
			liveDeploy: func(d *appsv1.Deployment) {
				container(d).Image = "nginx:latest"
				container(d).ImagePullPolicy = corev1.PullAlways
			},
			wantDeploy: func(d *appsv1.Deployment) {
				container(d).Image = "nginx:1.7.9"
				container(d).ImagePullPolicy = corev1.PullIfNotPresent
			},
			events: []string{deploymentUpdated + "image, imagePullPolicy"},
		},
		{
			name: "drift: a foreign label is kept when replicas are set back",
			liveDeploy: func(d *appsv1.Deployment) {
				d.Labels["team"] = "web"
				d.Spec.Replicas = int32Ptr(0)
			},
			wantDeploy: func(d *appsv1.Deployment) {
				d.Labels = map[string]string{appv1.LabelAppService: testName, "team": "web"}
				d.Spec.Replicas = int32Ptr(2)
			},
			events: []string{deploymentUpdated + "replicas"},
		},
		{
			name: "drift: Service type and selector changed by someone else",
			liveSvc: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeClusterIP
				s.Spec.Selector = map[string]string{"app": "other"}
			},
			wantSvc: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.Selector = testLabels() },
			events:  []string{serviceUpdated + "type, selector"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// TestSyncHandlerStatus: the status is written when, and only when, it
// changed, keeping the lastTransitionTime of conditions that did not.
func TestSyncHandlerStatus(t *testing.T) {
	tests := []struct {
		name       string
		as         func(*appv1.AppService)
		liveDeploy func(*appsv1.Deployment)
		liveSvc    func(*corev1.Service)
		want       func(*appv1.AppServiceStatus) // applied to currentStatus; nil: no write
		events     []string
		wantReason string // of the *childError returned; "": no error
	}{
		{name: "current"},
		{
			name: "new generation",
			as:   func(as *appv1.AppService) { as.Generation = testGeneration + 1 },
			want: func(st *appv1.AppServiceStatus) {
				st.ObservedGeneration = testGeneration + 1
				for i := range st.Conditions {
					st.Conditions[i].ObservedGeneration = testGeneration + 1 // lastTransitionTime kept
				}
			},
		},
		{
			name: "Deployment lost availability",
			liveDeploy: func(d *appsv1.Deployment) {
				d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1
				d.Status.Conditions[0].Status = corev1.ConditionFalse
				d.Status.Conditions[0].Reason = "MinimumReplicasUnavailable"
				d.Status.Conditions[0].Message = "Deployment does not have minimum availability."
			},
			want: func(st *appv1.AppServiceStatus) {
				st.ReadyReplicas, st.AvailableReplicas = 1, 1
				setCondition(st, condition(appv1.ConditionAvailable, metav1.ConditionFalse,
					"MinimumReplicasUnavailable", "Deployment does not have minimum availability."))
			},
		},
		{
			name: "Degraded cleared once the object in the way is gone",
			as:   func(as *appv1.AppService) { setCondition(&as.Status, serviceInTheWay()) },
			want: func(st *appv1.AppServiceStatus) { setCondition(st, notDegraded()) },
		},
		{
			name:       "still Degraded for the same reason, replicas changed: no new Warning",
			as:         func(as *appv1.AppService) { setCondition(&as.Status, serviceInTheWay()) },
			liveSvc:    func(s *corev1.Service) { notLabelledForUs(s) },
			liveDeploy: func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 1 },
			want: func(st *appv1.AppServiceStatus) {
				setCondition(st, serviceInTheWay())
				st.ReadyReplicas = 1
			},
			wantReason: appv1.ReasonResourceExists,
		},
		{
			name: "Degraded for another reason: a new Warning",
			as: func(as *appv1.AppService) {
				c := serviceInTheWay()
				c.Message = notOursMessage("Deployment")
				setCondition(&as.Status, c)
			},
			liveSvc: func(s *corev1.Service) { notLabelledForUs(s) },
			want: func(st *appv1.AppServiceStatus) {
				c := serviceInTheWay()
				c.LastTransitionTime = lastTransition // still True: kept
				setCondition(st, c)
			},
			events:     []string{"Warning ResourceExists " + notOursMessage("Service")},
			wantReason: appv1.ReasonResourceExists,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(seedAppService(), currentStatus())
			apply(tc.as, as)
			d := liveDeployment()
			apply(tc.liveDeploy, d)
			s := liveService()
			apply(tc.liveSvc, s)
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{d}
			f.services = []*corev1.Service{s}
			if tc.want != nil {
				st := currentStatus()
				tc.want(&st)
				f.expectStatusUpdate(withStatus(as, st))
			}
			f.events = tc.events
			err := f.run(testKey)
			if tc.wantReason != "" {
				checkChildError(t, err, tc.wantReason)
			} else if err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
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
	earlier := ownerRef()
	earlier.UID = "an-earlier-appservice-of-that-name"
	otherGroup := ownerRef()
	otherGroup.APIVersion = "other.example.com/v1"
	notController := ownerRef()
	notController.Controller = nil

	deploymentInTheWay := missingDeploymentStatus(degraded(appv1.ReasonResourceExists, notOursMessage("Deployment")))
	serviceInTheWay := currentStatus()
	setCondition(&serviceInTheWay, degraded(appv1.ReasonResourceExists, notOursMessage("Service")))
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
			d, s := liveDeployment(), liveService()
			apply(tc.deployment, metav1.Object(d))
			apply(tc.service, metav1.Object(s))
			as := seedAppService() // first seen: no status yet

			first := newFixture(t, as)
			first.deployments = []*appsv1.Deployment{d}
			first.services = []*corev1.Service{s}
			first.expectStatusUpdate(withStatus(as, tc.want))
			first.events = []string{"Warning ResourceExists " + notOursMessage(tc.kind)}
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

func checkChildError(t *testing.T, err error, reason string) {
	t.Helper()
	var ce *childError
	if !errors.As(err, &ce) {
		t.Errorf("got error %v, want a *childError", err)
		return
	}
	if ce.reason != reason {
		t.Errorf("got error reason %q, want %q", ce.reason, reason)
	}
	if isQuiet(err) {
		t.Errorf("isQuiet(%v) = true, want false", err)
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
		apierrors.NewAlreadyExists(resource.GroupResource(), testName))}
	var desired runtime.Object = desiredService()
	if resource == deploymentsResource {
		desired = desiredDeployment()
		f.services = []*corev1.Service{liveService()}
	} else {
		f.deployments = []*appsv1.Deployment{liveDeployment()}
	}
	f.expectCreate(desired)
	f.expectGet(resource)
	return f
}

// TestSyncHandlerAlreadyExists: a child missing from the cache whose create
// meets an existing object.
func TestSyncHandlerAlreadyExists(t *testing.T) {
	unownedDeployment := liveDeployment()
	unownedDeployment.OwnerReferences = nil
	unownedDeployment.Labels = nil
	unownedService := liveService()
	unownedService.OwnerReferences = nil
	unownedService.Labels = nil
	// Ours and labelled, but too new for the watch: not cached yet.
	ownDeployment := liveDeployment()
	ownService := liveService()

	deploymentInTheWay := missingDeploymentStatus(degraded(appv1.ReasonResourceExists, notOursMessage("Deployment")))
	serviceInTheWay := currentStatus()
	setCondition(&serviceInTheWay, degraded(appv1.ReasonResourceExists, notOursMessage("Service")))

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
			as := withStatus(seedAppService(), currentStatus())
			f := alreadyExistsFixture(t, as, tc.existing)
			if tc.want != nil {
				f.expectStatusUpdate(withStatus(as, *tc.want))
				f.events = []string{"Warning ResourceExists " + tc.want.Conditions[2].Message}
			}

			err := f.run(testKey)
			if tc.want != nil {
				checkChildError(t, err, appv1.ReasonResourceExists)
				return
			}
			if err == nil || !isQuiet(err) {
				t.Errorf("got error %v, want a quiet one", err)
			}
			var ce *childError
			if errors.As(err, &ce) {
				t.Errorf("got a *childError (%v), want none", err)
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
	unlabelledDeployment := liveDeployment()
	delete(unlabelledDeployment.Labels, appv1.LabelAppService)
	unlabelledService := liveService()
	delete(unlabelledService.Labels, appv1.LabelAppService)
	relabelledDeployment := liveDeployment()
	relabelledDeployment.Labels[appv1.LabelAppService] = "another-app"
	releasePatch := func(uid types.UID) string {
		return `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"` + string(testUID) + `"}],"uid":"` + string(uid) + `"}}`
	}
	deploymentInTheWay := missingDeploymentStatus(degraded(appv1.ReasonResourceExists, notOursMessage("Deployment")))
	serviceInTheWay := currentStatus()
	setCondition(&serviceInTheWay, degraded(appv1.ReasonResourceExists, notOursMessage("Service")))

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
			as := withStatus(seedAppService(), currentStatus())
			resource := resourceOf(t, tc.child)
			kind := kindOf(resource)
			var f *fixture
			if tc.cached {
				f = newFixture(t, as)
				f.deployments = []*appsv1.Deployment{tc.child.(*appsv1.Deployment)}
				f.services = []*corev1.Service{liveService()}
			} else {
				f = alreadyExistsFixture(t, as, tc.child)
			}
			f.expectPatch(resource, releasePatch(tc.child.(metav1.Object).GetUID()))
			f.expectStatusUpdate(withStatus(as, tc.want))
			f.events = []string{
				"Normal Released Released " + kind + " nginx-app: its label app.example.com/appservice no longer names this AppService",
				"Warning ResourceExists " + notOursMessage(kind),
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
	orphanDeployment := liveDeployment()
	orphanDeployment.OwnerReferences = nil
	orphanService := liveService()
	orphanService.OwnerReferences = nil
	adoptPatch := func(uid types.UID) string {
		return `{"metadata":{"ownerReferences":[{"apiVersion":"app.example.com/v1","kind":"AppService","name":"nginx-app","uid":"` +
			string(testUID) + `","controller":true,"blockOwnerDeletion":true}],"uid":"` + string(uid) + `"}}`
	}
	replaced := seedAppService()
	replaced.UID = "a-newer-appservice-of-that-name"
	uidImmutable := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, testName,
		field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "another-uid", "field is immutable")})
	deleting := seedAppService()
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
		{name: "Deployment gone since cached", child: orphanDeployment, cached: true, patchErr: apierrors.NewNotFound(deploymentsResource.GroupResource(), testName)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(seedAppService(), currentStatus())
			child := tc.child.DeepCopyObject()
			if tc.drift {
				child.(*appsv1.Deployment).Spec.Replicas = int32Ptr(5)
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
				f.services = []*corev1.Service{liveService()}
			default:
				f = newFixture(t, as)
				f.deployments = []*appsv1.Deployment{liveDeployment()}
				f.services = []*corev1.Service{child.(*corev1.Service)}
			}
			if tc.apiAS != nil || tc.apiASGone {
				// The cache still has the seed; the API server has moved on.
				f.appReactors = []reactor{{"get", "appservices", func(core.Action) (bool, runtime.Object, error) {
					if tc.apiASGone {
						return true, nil, apierrors.NewNotFound(appServicesResource.GroupResource(), testName)
					}
					return true, tc.apiAS, nil
				}}}
			}
			f.expectAppServiceGet()
			if tc.apiAS != nil || tc.apiASGone {
				err := f.run(testKey)
				if err == nil || !isQuiet(err) {
					t.Errorf("got error %v, want a quiet one: no adoption", err)
				}
				return
			}
			f.expectPatch(resource, adoptPatch(child.(metav1.Object).GetUID()))
			if tc.patchErr != nil {
				f.kubeReactors = append(f.kubeReactors, errorReactor("patch", resource.Resource, tc.patchErr))
				err := f.run(testKey)
				if err == nil || !isQuiet(err) {
					t.Errorf("got error %v, want a quiet one: retried, not Degraded", err)
				}
				return
			}
			f.events = []string{"Normal Adopted Adopted " + kind + " nginx-app"}
			if tc.drift {
				adopted := liveDeployment()
				f.expectUpdate(adopted)
				f.events = append(f.events, "Normal Updated Updated Deployment nginx-app: replicas")
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
		{"ours, drifted", func(d *appsv1.Deployment) { deleting(d); d.Spec.Replicas = int32Ptr(5) }},
		{"an orphan labelled for us", func(d *appsv1.Deployment) { deleting(d); d.OwnerReferences = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(seedAppService(), currentStatus())
			d := liveDeployment()
			tc.child(d)
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{d}
			f.services = []*corev1.Service{liveService()}
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
	unowned := liveDeployment()
	unowned.OwnerReferences = nil
	unowned.Labels = nil
	st := missingDeploymentStatus(degraded(appv1.ReasonResourceExists, notOursMessage("Deployment")))
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = lastTransition
	}
	f := newFixture(t, withStatus(seedAppService(), st))
	f.services = []*corev1.Service{liveService()}
	f.apiOnly = []runtime.Object{unowned}
	f.expectGet(deploymentsResource)
	checkChildError(t, f.run(testKey), appv1.ReasonResourceExists)
}

// TestSyncHandlerServiceWithoutPorts: with no ports there is no Service; an
// owned one is deleted, one in the way is left alone without complaint.
func TestSyncHandlerServiceWithoutPorts(t *testing.T) {
	tests := []struct {
		name  string
		owned bool
	}{
		{"owned Service deleted", true},
		{"unowned Service left alone", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(seedAppService(), currentStatus())
			as.Spec.Ports = nil
			d := liveDeployment()
			container(d).Ports = nil
			s := liveService()
			if !tc.owned {
				s.OwnerReferences = nil
			}
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{d}
			f.services = []*corev1.Service{s}
			if tc.owned {
				uid := s.UID
				f.expectDelete(servicesResource, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
				f.events = []string{"Normal Deleted Deleted Service nginx-app: the spec has no ports"}
			}
			if err := f.run(testKey); err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
	}
}

// TestSyncHandlerWriteErrors: a failed write makes the AppService Degraded
// with the API's message; a conflict is retried quietly.
func TestSyncHandlerWriteErrors(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, testName,
		field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), 3, "exceeds quota")})
	internal := apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, testName,
		errors.New("the object has been modified"))

	tests := []struct {
		name         string
		reactor      reactor
		wantDegraded string // message of Degraded=True, UpdateFailed; "" for no status write
	}{
		{
			name:         "Deployment update invalid (422)",
			reactor:      errorReactor("update", "deployments", invalid),
			wantDegraded: "failed to update Deployment default/nginx-app: " + invalid.Error(),
		},
		{
			name:         "Service update internal error (500)",
			reactor:      errorReactor("update", "services", internal),
			wantDegraded: "failed to update Service default/nginx-app: " + internal.Error(),
		},
		{name: "Deployment update conflict (409)", reactor: errorReactor("update", "deployments", conflict)},
		{name: "Service update conflict (409)", reactor: errorReactor("update", "services", conflict)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A change of both children: size and serviceType.
			as := withStatus(seedAppService(), currentStatus())
			as.Spec.Size = int32Ptr(3)
			as.Spec.ServiceType = corev1.ServiceTypeLoadBalancer
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{liveDeployment()}
			f.services = []*corev1.Service{liveService()}
			f.kubeReactors = []reactor{tc.reactor}
			wantDeploy := liveDeployment()
			wantDeploy.Spec.Replicas = int32Ptr(3)
			wantSvc := liveService()
			wantSvc.Spec.Type = corev1.ServiceTypeLoadBalancer
			f.expectUpdate(wantDeploy)
			f.expectUpdate(wantSvc)
			// The write that does not fail is reported as usual.
			if tc.reactor.resource == "deployments" {
				f.events = []string{"Normal Updated Updated Service nginx-app: type"}
			} else {
				f.events = []string{"Normal Updated Updated Deployment nginx-app: replicas"}
			}
			if tc.wantDegraded != "" {
				st := currentStatus()
				setCondition(&st, degraded(appv1.ReasonUpdateFailed, tc.wantDegraded))
				f.expectStatusUpdate(withStatus(as, st))
				f.events = append(f.events, "Warning UpdateFailed "+tc.wantDegraded)
			}

			err := f.run(testKey)
			if tc.wantDegraded != "" {
				checkChildError(t, err, appv1.ReasonUpdateFailed)
				return
			}
			if !apierrors.IsConflict(err) || !isQuiet(err) {
				t.Errorf("got error %v, want a quiet conflict", err)
			}
		})
	}
}

// The event handlers.

// queued drains the controller's queue.
func queued(c *Controller) []cache.ObjectName {
	var out []cache.ObjectName
	for c.queue.Len() > 0 {
		key, _ := c.queue.Get()
		c.queue.Done(key)
		out = append(out, key)
	}
	return out
}

func newTestController(t *testing.T) *Controller {
	_, ctx := ktesting.NewTestContext(t)
	return newFixture(t).newController(ctx)
}

func TestHandleChild(t *testing.T) {
	controlledBy := func(apiVersion, kind string, controller bool) *appsv1.Deployment {
		d := liveDeployment()
		d.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: apiVersion, Kind: kind, Name: testName, UID: testUID, Controller: &controller,
		}}
		return d
	}
	renamedService := liveService()
	renamedService.Name = "renamed"
	unowned := liveService()
	unowned.OwnerReferences = nil
	relabelled := liveService()
	notLabelledForUs(relabelled)
	unlabelled := liveService()
	unlabelled.OwnerReferences = nil
	unlabelled.Labels = nil

	tests := []struct {
		name string
		obj  interface{}
		want []cache.ObjectName
	}{
		{"Deployment", liveDeployment(), []cache.ObjectName{testKey}},
		{"Service", liveService(), []cache.ObjectName{testKey}},
		{"the owner's name, not the child's", renamedService, []cache.ObjectName{testKey}},
		{"another version of the AppService API", controlledBy("app.example.com/v2", "AppService", true), []cache.ObjectName{testKey}},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "default/nginx-app", Obj: liveDeployment()}, []cache.ObjectName{testKey}},
		{"no owner, labelled: the AppService that may adopt it", unowned, []cache.ObjectName{testKey}},
		{"no owner, labelled for another AppService", relabelled, []cache.ObjectName{{Namespace: testNamespace, Name: "another-app"}}},
		{"owner but not controller, labelled", controlledBy("app.example.com/v1", "AppService", false), []cache.ObjectName{testKey}},
		{"controlled by a ReplicaSet", controlledBy("apps/v1", "ReplicaSet", true), nil},
		{"controlled by another group's AppService", controlledBy("other.example.com/v1", "AppService", true), nil},
		{"tombstone without owner", cache.DeletedFinalStateUnknown{Key: "default/nginx-app", Obj: unowned}, []cache.ObjectName{testKey}},
		{"no owner, no label", unlabelled, nil},
		{"not an object", "default/nginx-app", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestController(t)
			c.handleChild(tc.obj)
			if got := queued(c); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHandleChildUpdate(t *testing.T) {
	newer := liveDeployment()
	newer.ResourceVersion = "101"
	released := newer.DeepCopy()
	notLabelledForUs(released)
	tests := []struct {
		name     string
		old, new *appsv1.Deployment
		want     []cache.ObjectName
	}{
		{"resync, same resourceVersion", liveDeployment(), liveDeployment(), nil},
		{"changed", liveDeployment(), newer, []cache.ObjectName{testKey}},
		{"relabelled for another AppService and released: both queued", liveDeployment(), released, []cache.ObjectName{{Namespace: testNamespace, Name: "another-app"}, testKey}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestController(t)
			c.handleChildUpdate(tc.old, tc.new)
			if got := queued(c); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEnqueueAppService(t *testing.T) {
	tests := []struct {
		name string
		obj  interface{}
		want []cache.ObjectName
	}{
		{"AppService", seedAppService(), []cache.ObjectName{testKey}},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "default/nginx-app", Obj: seedAppService()}, []cache.ObjectName{testKey}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestController(t)
			c.enqueueAppService(tc.obj)
			c.enqueueAppService(tc.obj) // de-duplicated by the queue
			if got := queued(c); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSyncHandlerAppServiceGoneBeforeStatus: an AppService deleted between
// the cache read and the status write ends the sync without an error, so
// that its deletion is not retried and reported as a failure.
func TestSyncHandlerAppServiceGoneBeforeStatus(t *testing.T) {
	as := seedAppService()
	f := newFixture(t, as)
	f.deployments = []*appsv1.Deployment{liveDeployment()}
	f.services = []*corev1.Service{liveService()}
	f.appReactors = []reactor{errorReactor("update", "appservices", apierrors.NewNotFound(appServicesResource.GroupResource(), testName))}
	st := currentStatus()
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = metav1.Time{} // first seen: any time
	}
	f.expectStatusUpdate(withStatus(as, st))
	if err := f.run(testKey); err != nil {
		t.Errorf("syncHandler: %v, want nil", err)
	}
}

// TestRunStoppedBeforeCachesSync: a shutdown that comes while the caches are
// still syncing is a clean stop, not a failure (the process exits 0).
func TestRunStoppedBeforeCachesSync(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	c := newFixture(t).newController(ctx) // informers never started: never synced
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Run(ctx, 1); err != nil {
		t.Errorf("Run: %v, want nil", err)
	}
}

// TestSyncHandlerNamespaceTerminating: a create refused because the
// namespace is being deleted ends the sync quietly: no error to retry, no
// Degraded status, no Warning (the AppService is about to go too).
func TestSyncHandlerNamespaceTerminating(t *testing.T) {
	terminating := apierrors.NewForbidden(deploymentsResource.GroupResource(), testName,
		errors.New("unable to create new content in namespace default because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace default is being terminated", Field: "metadata.namespace",
	}}
	as := withStatus(seedAppService(), currentStatus())
	f := newFixture(t, as)
	f.services = []*corev1.Service{liveService()}
	f.kubeReactors = []reactor{errorReactor("create", "deployments", terminating)}
	f.expectCreate(desiredDeployment())
	if err := f.run(testKey); err != nil {
		t.Errorf("syncHandler: %v, want nil", err)
	}
}

func TestAllQuiet(t *testing.T) {
	conflict := apierrors.NewConflict(deploymentsResource.GroupResource(), testName, errors.New("modified"))
	lag := errors.Join(errors.New("Service"), errCacheLag)
	real := &childError{reason: appv1.ReasonCreateFailed, err: errors.New("quota exceeded")}
	tests := []struct {
		name string
		errs []error
		want bool
	}{
		{"no error", []error{nil, nil}, false},
		{"a conflict", []error{conflict, nil}, true},
		{"cache lag and a conflict", []error{lag, conflict}, true},
		{"cache lag beside a real error: reported", []error{lag, real}, false},
		{"a real error", []error{nil, real}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := allQuiet(tc.errs...); got != tc.want {
				t.Errorf("allQuiet = %v, want %v", got, tc.want)
			}
		})
	}
}
