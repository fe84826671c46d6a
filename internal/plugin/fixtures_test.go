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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The tests' objects: the AppService web in the namespace shop, two
// stable replicas of nginx:1.27 and a canary of nginx:1.28 at its first
// step (10%, gated), as the API server would hold them at now.

var now = time.Date(2026, 11, 26, 9, 20, 0, 0, time.UTC)

const (
	ns         = "shop"
	name       = "web"
	stableHash = "6f5748c9db"
	canaryHash = "58db947f6c"
)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func owner(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: name, UID: uid, Controller: new(true)}}
}

func condition(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: 3, LastTransitionTime: ago(5 * time.Minute)}
}

const gatedMessage = "Canary " + canaryHash + " at step 1 of 3, 10% of the traffic by route: waits at its gate for kubectl appservice promote"

// gatedApp is web with its canary at its first step, gated.
func gatedApp() *appv1.AppService {
	return &appv1.AppService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "as-uid", Generation: 3, ResourceVersion: "123", CreationTimestamp: ago(48 * time.Hour)},
		Spec: appv1.AppServiceSpec{
			Size: new(int32(2)), Image: "nginx:1.28",
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80}},
			HTTPRoute: &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "public"}}},
			Canary: &appv1.Canary{Steps: []appv1.CanaryStep{
				{Weight: 10, PauseSeconds: 60, Gate: true}, {Weight: 50, PauseSeconds: 300}, {Weight: 100},
			}},
		},
		Status: appv1.AppServiceStatus{
			ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
			Canary: &appv1.CanaryStatus{
				StableTemplateHash: stableHash, CanaryTemplateHash: canaryHash,
				Step: new(int32(0)), Weight: 10, StepStartTime: new(ago(5 * time.Minute)),
			},
			Conditions: []metav1.Condition{
				condition(appv1.ConditionAvailable, metav1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."),
				condition(appv1.ConditionProgressing, metav1.ConditionTrue, "NewReplicaSetAvailable", `ReplicaSet "web-7c9d8b6f4" has successfully progressed.`),
				condition(appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "Every child matches the spec"),
				condition(appv1.ConditionReady, metav1.ConditionFalse, appv1.ReasonCanaryGated, gatedMessage),
				condition(appv1.ConditionReconciling, metav1.ConditionTrue, appv1.ReasonCanaryGated, gatedMessage),
				condition(appv1.ConditionStalled, metav1.ConditionFalse, appv1.ReasonAsExpected, "Nothing needs the user"),
			},
		},
	}
}

func deployment(name, uid, image string, replicas int32, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(uid), Generation: 1, Labels: labels,
			CreationTimestamp: ago(10 * time.Minute), OwnerReferences: owner("AppService", "web", "as-uid")},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas},
	}
}

func replicaSet(name, uid, deployment, deploymentUID, revision string, replicas int32, labels map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(uid), Labels: labels,
			Annotations:       map[string]string{"deployment.kubernetes.io/revision": revision},
			CreationTimestamp: ago(10 * time.Minute), OwnerReferences: owner("Deployment", deployment, types.UID(deploymentUID))},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas},
	}
}

func runningPod(name, rs, rsUID string, labels map[string]string, restarts int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels, CreationTimestamp: ago(9 * time.Minute),
			OwnerReferences: owner("ReplicaSet", rs, types.UID(rsUID))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Ready: true, RestartCount: restarts, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}
}

func route(canaryWeight int32) *gatewayv1.HTTPRoute {
	refs := []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web"}, Weight: new(100 - canaryWeight)}}}
	if canaryWeight == 0 {
		refs[0].Weight = new(int32(1))
	} else {
		refs = append(refs, gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: "web-canary"}, Weight: new(canaryWeight)}})
	}
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: ago(48 * time.Hour), Labels: stableLabels},
		Spec:       gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{BackendRefs: refs}}},
	}
}

// mirrorSnapshot is gatedSnapshot's app with a mirror beside its first
// step's weight and sticky users, on a route whose controller's rules are
// named, with a rule someone else added first.
func mirrorSnapshot() *Snapshot {
	s := gatedSnapshot()
	c := s.AppService.Spec.Canary
	c.Steps[0].Mirror, c.Sticky = 25, &appv1.CanarySticky{CookieName: "canary"}
	s.AppService.Status.Canary.Mirror = 25
	r := route(10)
	ours := r.Spec.Rules[0]
	ours.Name = new(gatewayv1.SectionName("appservice-0"))
	ours.Filters = []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestMirror, RequestMirror: &gatewayv1.HTTPRequestMirrorFilter{
		BackendRef: gatewayv1.BackendObjectReference{Name: "web-canary"}, Percent: new(int32(25))}}}
	sticky := *ours.DeepCopy()
	sticky.Name, sticky.Filters = new(gatewayv1.SectionName("appservice-0-sticky")), nil
	sticky.BackendRefs = sticky.BackendRefs[1:]
	theirs := gatewayv1.HTTPRouteRule{Name: new(gatewayv1.SectionName("maintenance")), BackendRefs: route(0).Spec.Rules[0].BackendRefs}
	r.Spec.Rules = []gatewayv1.HTTPRouteRule{theirs, ours, sticky}
	s.Route = r
	return s
}

// grpcSnapshot is gatedSnapshot's app on a GRPCRoute alone, accepted by
// its Gateway, its controller's rule at the step's weight with a mirror.
func grpcSnapshot() *Snapshot {
	s := gatedSnapshot()
	as := s.AppService
	as.Spec.Canary.Steps[0].Mirror, as.Status.Canary.Mirror = 25, 25
	as.Spec.GRPCRoute = &appv1.GRPCRoute{ParentRefs: as.Spec.HTTPRoute.ParentRefs}
	as.Spec.HTTPRoute, s.Route = nil, nil
	backend := func(name string, weight int32) gatewayv1.GRPCBackendRef {
		return gatewayv1.GRPCBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name)}, Weight: new(weight)}}
	}
	r := &gatewayv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: ago(48 * time.Hour), Labels: stableLabels},
		Spec: gatewayv1.GRPCRouteSpec{Rules: []gatewayv1.GRPCRouteRule{{
			Name:        new(gatewayv1.SectionName("appservice-0")),
			BackendRefs: []gatewayv1.GRPCBackendRef{backend("web", 90), backend("web-canary", 10)},
			Filters: []gatewayv1.GRPCRouteFilter{{Type: gatewayv1.GRPCRouteFilterRequestMirror, RequestMirror: &gatewayv1.HTTPRequestMirrorFilter{
				BackendRef: gatewayv1.BackendObjectReference{Name: "web-canary"}, Percent: new(int32(25))}}},
		}}},
	}
	r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "public"}, ControllerName: "example.com/gateway",
		Conditions: []metav1.Condition{{Type: string(gatewayv1.RouteConditionAccepted), Status: metav1.ConditionTrue}}}}
	s.GRPCRoute = r
	return s
}

var (
	stableLabels = map[string]string{appv1.LabelAppService: name}
	canaryLabels = map[string]string{appv1.LabelCanary: name}
	bothLabels   = map[string]string{appv1.LabelAppService: name, appv1.LabelCanary: name}
)

// gatedSnapshot is what get reads of gatedApp: its two Deployments, the
// stable one's ReplicaSets (an old one scaled down, not shown), the Pods
// (one of them restarted twice) and the route at 90/10.
func gatedSnapshot() *Snapshot {
	stablePodLabels := map[string]string{appv1.LabelAppService: name, "pod-template-hash": "7c9d8b6f4"}
	canaryPodLabels := map[string]string{appv1.LabelCanary: name, "pod-template-hash": "5b6c7d8e9"}
	return &Snapshot{
		AppService: gatedApp(),
		Deployments: []appsv1.Deployment{
			*deployment("web-canary", "d-canary", "nginx:1.28", 1, bothLabels),
			*deployment("web", "d-stable", "nginx:1.27", 2, stableLabels),
		},
		ReplicaSets: []appsv1.ReplicaSet{
			*replicaSet("web-5d4c3b2a1", "rs-old", "web", "d-stable", "1", 0, stableLabels),
			*replicaSet("web-7c9d8b6f4", "rs-stable", "web", "d-stable", "2", 2, stableLabels),
			*replicaSet("web-canary-5b6c7d8e9", "rs-canary", "web-canary", "d-canary", "1", 1, canaryLabels),
		},
		Pods: []corev1.Pod{
			*runningPod("web-7c9d8b6f4-x2k9p", "web-7c9d8b6f4", "rs-stable", stablePodLabels, 2),
			*runningPod("web-7c9d8b6f4-a7m4q", "web-7c9d8b6f4", "rs-stable", stablePodLabels, 0),
			*runningPod("web-canary-5b6c7d8e9-q8w3e", "web-canary-5b6c7d8e9", "rs-canary", canaryPodLabels, 0),
		},
		Route: route(10),
	}
}

// objects are the snapshot's objects, for the fake clientsets.
func (s *Snapshot) objects() (apps, kube, gateway []runtime.Object) {
	apps = []runtime.Object{s.AppService}
	for i := range s.Deployments {
		kube = append(kube, &s.Deployments[i])
	}
	for i := range s.ReplicaSets {
		kube = append(kube, &s.ReplicaSets[i])
	}
	for i := range s.Pods {
		kube = append(kube, &s.Pods[i])
	}
	kube = append(kube, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if s.Route != nil {
		gateway = append(gateway, s.Route)
	}
	return apps, kube, gateway
}
