//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The children besides the Deployment and the Service, each created,
// changed, repaired and removed with its block, as the Deployment and the
// Service are.
func TestMoreChildren(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "more"
	createAppService(t, ns, name, appv1.AppServiceSpec{
		Size: int32p(1), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		ServiceAccount: &appv1.ServiceAccount{
			Create: true, AutomountToken: new(false),
			Annotations: map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/more"},
		},
		DisruptionBudget: &appv1.DisruptionBudget{MinAvailable: new(intstr.FromInt32(1))},
		Autoscaling:      &appv1.Autoscaling{MinReplicas: int32p(2), MaxReplicas: 4},
		Ingress: &appv1.Ingress{
			Annotations: map[string]string{"nginx.ingress.kubernetes.io/proxy-body-size": "8m"},
			Hosts:       []appv1.IngressHost{{Host: "more.example.com", Paths: []appv1.IngressPath{{Path: "/", PathType: networkingv1.PathTypePrefix}}}},
			TLS:         []networkingv1.IngressTLS{{Hosts: []string{"more.example.com"}, SecretName: "more-tls"}},
		},
	})
	// Created: the Deployment at minReplicas, whatever the size, its Pods
	// running as the new ServiceAccount.
	as := waitAvailable(t, ns, name, 2)
	waitChild(t, func() (*corev1.ServiceAccount, error) {
		return kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	}, as,
		func(sa *corev1.ServiceAccount) error {
			if sa.Annotations["eks.amazonaws.com/role-arn"] == "" || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
				return fmt.Errorf("ServiceAccount %+v", sa.ObjectMeta)
			}
			return nil
		})
	d, err := getDeployment(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if pod := d.Spec.Template.Spec; pod.ServiceAccountName != name || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("the Pods run as %q, automount %v; want %q, false", pod.ServiceAccountName, pod.AutomountServiceAccountToken, name)
	}
	getBudget := func() (*policyv1.PodDisruptionBudget, error) {
		return kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	getAutoscaler := func() (*autoscalingv2.HorizontalPodAutoscaler, error) {
		return kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
	}
	waitChild(t, getBudget, as, func(b *policyv1.PodDisruptionBudget) error {
		if b.Spec.MinAvailable == nil || *b.Spec.MinAvailable != intstr.FromInt32(1) || b.Spec.Selector.MatchLabels[appv1.LabelAppService] != name {
			return fmt.Errorf("PodDisruptionBudget spec %+v", b.Spec)
		}
		// The disruption controller counts our Pods.
		if b.Status.ExpectedPods != 2 {
			return fmt.Errorf("PodDisruptionBudget expects %d Pods, want 2", b.Status.ExpectedPods)
		}
		return nil
	})
	waitChild(t, getAutoscaler, as, func(h *autoscalingv2.HorizontalPodAutoscaler) error {
		if h.Spec.ScaleTargetRef.Name != name || *h.Spec.MinReplicas != 2 || h.Spec.MaxReplicas != 4 {
			return fmt.Errorf("HorizontalPodAutoscaler spec %+v", h.Spec)
		}
		return nil
	})
	getIngress := func() (*networkingv1.Ingress, error) {
		return kube.NetworkingV1().Ingresses(ns).Get(ctx, name, metav1.GetOptions{})
	}
	waitChild(t, getIngress, as, func(in *networkingv1.Ingress) error {
		if len(in.Spec.Rules) != 1 || in.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != name || in.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number != 80 {
			return fmt.Errorf("Ingress spec %+v", in.Spec)
		}
		return nil
	})
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonCreated, "ServiceAccount more, Deployment more, Service more, Ingress more, PodDisruptionBudget more, HorizontalPodAutoscaler more")
	// The url, also in kubectl's wide output.
	eventually(t, 30*time.Second, func() error {
		out, err := kubectl("get", "appservice", name, "-n", ns, "-o", "wide")
		if err != nil || !strings.Contains(out, "URL") || !strings.Contains(out, "https://more.example.com/") {
			return fmt.Errorf("kubectl get -o wide: %v\n%s", err, out)
		}
		return nil
	})

	// The autoscaler owns the replica count: a count it sets (here through
	// the scale subresource, as it does) survives a spec change.
	if _, err := kube.AppsV1().Deployments(ns).UpdateScale(ctx, name, &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 3},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, ns, name, 3)

	// Changed: every block at once.
	updateAppService(t, ns, name, func(as *appv1.AppService) {
		as.Spec.Size = int32p(5) // ignored while autoscaling
		as.Spec.ServiceAccount.Annotations = map[string]string{"iam.gke.io/gcp-service-account": "more@example.iam.gserviceaccount.com"}
		as.Spec.DisruptionBudget = &appv1.DisruptionBudget{MaxUnavailable: new(intstr.FromString("50%"))}
		as.Spec.Autoscaling.MaxReplicas = 6
		as.Spec.Ingress.Hosts[0].Host = "www.example.com"
		as.Spec.Ingress.TLS = nil
	})
	as = waitAvailable(t, ns, name, 3)
	waitChild(t, func() (*corev1.ServiceAccount, error) {
		return kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	}, as,
		func(sa *corev1.ServiceAccount) error {
			if _, old := sa.Annotations["eks.amazonaws.com/role-arn"]; old || sa.Annotations["iam.gke.io/gcp-service-account"] == "" {
				return fmt.Errorf("ServiceAccount annotations %v", sa.Annotations)
			}
			return nil
		})
	waitChild(t, getBudget, as, func(b *policyv1.PodDisruptionBudget) error {
		if b.Spec.MinAvailable != nil || b.Spec.MaxUnavailable == nil || *b.Spec.MaxUnavailable != intstr.FromString("50%") {
			return fmt.Errorf("PodDisruptionBudget spec %+v", b.Spec)
		}
		return nil
	})
	waitChild(t, getAutoscaler, as, func(h *autoscalingv2.HorizontalPodAutoscaler) error {
		if h.Spec.MaxReplicas != 6 {
			return fmt.Errorf("maxReplicas %d, want 6", h.Spec.MaxReplicas)
		}
		return nil
	})
	waitChild(t, getIngress, as, func(in *networkingv1.Ingress) error {
		if in.Spec.Rules[0].Host != "www.example.com" || len(in.Spec.TLS) != 0 {
			return fmt.Errorf("Ingress spec %+v", in.Spec)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		as, err := getAppService(ns, name)
		if err != nil || as.Status.URL != "http://www.example.com/" {
			return fmt.Errorf("status url %q (%v), want http://www.example.com/", as.Status.URL, err)
		}
		return nil
	})
	if d, err := getDeployment(ns, name); err != nil || *d.Spec.Replicas != 3 {
		t.Errorf("the Deployment's replicas after a spec change: %v (%v), want the autoscaler's 3", d.Spec.Replicas, err)
	}

	// Repaired: drift in each child, and one deleted.
	if _, err := kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"maxReplicas":9}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"iam.gke.io/gcp-service-account":"stolen"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.NetworkingV1().Ingresses(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"rules":[{"host":"evil.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"more","port":{"number":80}}}}]}}]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChild(t, getAutoscaler, as, func(h *autoscalingv2.HorizontalPodAutoscaler) error {
		if h.Spec.MaxReplicas != 6 {
			return fmt.Errorf("maxReplicas %d, want 6", h.Spec.MaxReplicas)
		}
		return nil
	})
	waitChild(t, func() (*corev1.ServiceAccount, error) {
		return kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	}, as,
		func(sa *corev1.ServiceAccount) error {
			if sa.Annotations["iam.gke.io/gcp-service-account"] == "stolen" {
				return fmt.Errorf("ServiceAccount annotations %v", sa.Annotations)
			}
			return nil
		})
	waitChild(t, getBudget, as, func(*policyv1.PodDisruptionBudget) error { return nil })
	waitChild(t, getIngress, as, func(in *networkingv1.Ingress) error {
		if in.Spec.Rules[0].Host != "www.example.com" {
			return fmt.Errorf("Ingress host %q", in.Spec.Rules[0].Host)
		}
		return nil
	})
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonUpdated, "HorizontalPodAutoscaler more: maxReplicas")

	// Removed: each block takes its child; without the autoscaler, size
	// is the replica count again, and the Pods use the default
	// ServiceAccount.
	updateAppService(t, ns, name, func(as *appv1.AppService) {
		as.Spec.ServiceAccount, as.Spec.DisruptionBudget, as.Spec.Autoscaling, as.Spec.Ingress = nil, nil, nil, nil
		as.Spec.Size = int32p(1)
	})
	waitAvailable(t, ns, name, 1)
	eventually(t, 30*time.Second, func() error {
		for kind, get := range map[string]func() error{
			"ServiceAccount": func() error {
				_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
				return err
			},
			"PodDisruptionBudget":     func() error { _, err := getBudget(); return err },
			"HorizontalPodAutoscaler": func() error { _, err := getAutoscaler(); return err },
			"Ingress":                 func() error { _, err := getIngress(); return err },
		} {
			if err := get(); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s: %v, want it deleted", kind, err)
			}
		}
		return nil
	})
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonDeleted, "the spec has no autoscaling")
	if as, err := getAppService(ns, name); err != nil || as.Status.URL != "" {
		t.Errorf("status url %q without an Ingress (%v)", as.Status.URL, err)
	}
	if d, err := getDeployment(ns, name); err != nil || d.Spec.Template.Spec.ServiceAccountName != "" {
		t.Errorf("the Pods still run as a ServiceAccount of their own: %v", err)
	}
}

// TestUnownedChildIsLeftAlone: an object of a new child's name that the
// AppService does not control is never touched; the AppService is Degraded
// with one Warning, and its other children are made all the same.
func TestUnownedChildIsLeftAlone(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "blocked"
	theirs, err := kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: new(intstr.FromInt32(3)), Selector: &metav1.LabelSelector{}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createAppService(t, ns, name, appv1.AppServiceSpec{
		Size: int32p(1), Image: "nginx:1.27",
		DisruptionBudget: &appv1.DisruptionBudget{MinAvailable: new(intstr.FromInt32(1))},
		ServiceAccount:   &appv1.ServiceAccount{Create: true},
	})
	waitDegraded(t, ns, name, appv1.ReasonResourceExists, "PodDisruptionBudget "+ns+"/"+name, "left untouched")
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonResourceExists, "PodDisruptionBudget")
	eventually(t, 60*time.Second, func() error {
		if _, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		d, err := getDeployment(ns, name)
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 1 {
			return fmt.Errorf("%d available", d.Status.AvailableReplicas)
		}
		return nil
	})
	now, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.UID != theirs.UID || len(now.OwnerReferences) > 0 || now.Labels[appv1.LabelAppService] != "" || *now.Spec.MaxUnavailable != intstr.FromInt32(3) {
		t.Errorf("the unowned PodDisruptionBudget was written to: %+v", now)
	}
	if n := len(events(t, ns, name, appv1.ReasonResourceExists)); n != 1 {
		t.Errorf("%d ResourceExists Events, want 1", n)
	}
	// Removing the block clears the condition and leaves their object.
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.DisruptionBudget = nil })
	waitAvailable(t, ns, name, 1)
	if _, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("their PodDisruptionBudget: %v", err)
	}
}

// waitChild waits until get returns a child controlled by as that check
// accepts, and returns it.
func waitChild[T metav1.Object](t *testing.T, get func() (T, error), as *appv1.AppService, check func(T) error) T {
	t.Helper()
	var obj T
	eventually(t, 60*time.Second, func() error {
		var err error
		if obj, err = get(); err != nil {
			return err
		}
		if err := ownedBy(obj, as); err != nil {
			return err
		}
		if obj.GetLabels()[appv1.LabelAppService] != as.Name {
			return fmt.Errorf("%s is not labelled for %s: %v", obj.GetName(), as.Name, obj.GetLabels())
		}
		return check(obj)
	})
	return obj
}

// TestHTTPRoute: on a cluster without the Gateway API, an AppService that
// asks for a route is Degraded, says why, and has every other child; once
// the Gateway API's CRDs are installed (from the pinned module), the
// controller notices without a restart and creates the route, which is then
// changed, repaired and removed like the other children.
func TestHTTPRoute(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "routed"
	cfg, err := localcluster.RESTConfig(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	_, servedErr := kube.Discovery().ServerResourcesForGroupVersion("gateway.networking.k8s.io/v1")
	createAppService(t, ns, name, appv1.AppServiceSpec{
		Size: int32p(1), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		HTTPRoute: &appv1.HTTPRoute{
			ParentRefs: []gatewayv1.ParentReference{{Name: "public", Namespace: new(gatewayv1.Namespace("infra"))}},
			Hostnames:  []gatewayv1.Hostname{"routed.example.com"},
		},
	})
	if apierrors.IsNotFound(servedErr) {
		// No Gateway API (the suite installs it here first).
		waitDegraded(t, ns, name, appv1.ReasonRouteAPIMissing, "Gateway API is not installed")
		waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonRouteAPIMissing, "HTTPRoute")
		if _, err := getService(ns, name); err != nil {
			t.Errorf("the Service of an AppService whose route cannot be made: %v", err)
		}
		if err := localcluster.InstallGatewayAPI(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	routes := gatewayclient.NewForConfigOrDie(cfg).GatewayV1().HTTPRoutes(ns)
	getRoute := func() (*gatewayv1.HTTPRoute, error) { return routes.Get(ctx, name, metav1.GetOptions{}) }
	// Noticed without a restart, within the controller's 30 s recheck
	// whatever the AppService's retries' backoff has grown to (it once
	// took a backoff: 77 s); 30 s more for a loaded machine.
	eventually(t, time.Minute, func() error {
		_, err := getRoute()
		return err
	})
	as := waitAvailable(t, ns, name, 1)
	waitChild(t, getRoute, as, func(r *gatewayv1.HTTPRoute) error {
		if len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].BackendRefs) != 1 || r.Spec.Rules[0].BackendRefs[0].Name != name || *r.Spec.Rules[0].BackendRefs[0].Port != 80 {
			return fmt.Errorf("HTTPRoute rules %+v", r.Spec.Rules)
		}
		return nil
	})
	if as.Status.URL != "http://routed.example.com/" {
		t.Errorf("status url %q, want http://routed.example.com/", as.Status.URL)
	}

	// Changed: a rule of its own, with a header filter.
	updateAppService(t, ns, name, func(as *appv1.AppService) {
		as.Spec.HTTPRoute.Rules = []appv1.HTTPRouteRule{{
			Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchPathPrefix), Value: new("/shop")}}},
			Filters: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier,
				RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-shop", Value: "1"}}}}},
		}}
	})
	waitChild(t, getRoute, as, func(r *gatewayv1.HTTPRoute) error {
		if len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].Filters) != 1 || *r.Spec.Rules[0].Matches[0].Path.Value != "/shop" {
			return fmt.Errorf("HTTPRoute rules %+v", r.Spec.Rules)
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		as, err := getAppService(ns, name)
		if err != nil || as.Status.URL != "http://routed.example.com/shop" {
			return fmt.Errorf("status url %q (%v)", as.Status.URL, err)
		}
		return nil
	})

	// Repaired: a hostname changed by hand.
	if _, err := routes.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"hostnames":["stolen.example.com"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitChild(t, getRoute, as, func(r *gatewayv1.HTTPRoute) error {
		if len(r.Spec.Hostnames) != 1 || r.Spec.Hostnames[0] != "routed.example.com" {
			return fmt.Errorf("hostnames %v", r.Spec.Hostnames)
		}
		return nil
	})

	// Removed with its block.
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.HTTPRoute = nil })
	eventually(t, 30*time.Second, func() error {
		if _, err := getRoute(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("HTTPRoute: %v, want it deleted", err)
		}
		return nil
	})
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonDeleted, "HTTPRoute routed: the spec has no httpRoute")
}

// TestMoreChildrenAdopted: the new children go through the one claiming
// path too. An AppService deleted with --cascade=orphan and created again
// adopts its ServiceAccount, Ingress, PodDisruptionBudget and
// HorizontalPodAutoscaler in place (same UIDs), writing nothing to them but
// the owner reference.
func TestMoreChildrenAdopted(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "adopt-more"
	spec := appv1.AppServiceSpec{
		Size: int32p(1), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}},
		ServiceAccount:   &appv1.ServiceAccount{Create: true},
		DisruptionBudget: &appv1.DisruptionBudget{MaxUnavailable: new(intstr.FromInt32(1))},
		Autoscaling:      &appv1.Autoscaling{MaxReplicas: 2},
		Ingress:          &appv1.Ingress{Hosts: []appv1.IngressHost{{Host: "adopt.example.com", Paths: []appv1.IngressPath{{Path: "/", PathType: networkingv1.PathTypePrefix}}}}},
	}
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	gets := map[string]func() (metav1.Object, error){
		"serviceaccounts": func() (metav1.Object, error) {
			return kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		},
		"ingresses": func() (metav1.Object, error) {
			return kube.NetworkingV1().Ingresses(ns).Get(ctx, name, metav1.GetOptions{})
		},
		"poddisruptionbudgets": func() (metav1.Object, error) {
			return kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		"horizontalpodautoscalers": func() (metav1.Object, error) {
			return kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		},
	}
	uids := map[string]types.UID{}
	eventually(t, time.Minute, func() error {
		for kind, get := range gets {
			obj, err := get()
			if err != nil {
				return fmt.Errorf("%s: %v", kind, err)
			}
			uids[kind] = obj.GetUID()
		}
		return nil
	})

	if out, err := kubectl("delete", "appservice", name, "-n", ns, "--cascade=orphan", "--wait=true"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	eventually(t, time.Minute, func() error {
		for kind, get := range gets {
			obj, err := get()
			if err != nil {
				return fmt.Errorf("%s: %v", kind, err)
			}
			if len(obj.GetOwnerReferences()) > 0 {
				return fmt.Errorf("%s still has owner references %v", kind, obj.GetOwnerReferences())
			}
		}
		return nil
	})

	since := time.Now()
	as := createAppService(t, ns, name, spec)
	eventually(t, time.Minute, func() error {
		for kind, get := range gets {
			obj, err := get()
			if err != nil {
				return fmt.Errorf("%s: %v", kind, err)
			}
			if err := ownedBy(obj, as); err != nil {
				return fmt.Errorf("%s: %v", kind, err)
			}
			if obj.GetUID() != uids[kind] {
				return fmt.Errorf("%s recreated: UID %s, was %s", kind, obj.GetUID(), uids[kind])
			}
		}
		return nil
	})
	waitAvailable(t, ns, name, 1)
	for _, w := range controllerWrites(t, since, ns) {
		if w.ObjectRef == nil || gets[w.ObjectRef.Resource] == nil {
			continue
		}
		if w.Verb != "patch" || w.ResponseStatus == nil || w.ResponseStatus.Code != 200 {
			t.Errorf("adoption wrote more than an owner reference: %s", w)
		}
	}
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonAdopted, "HorizontalPodAutoscaler "+name)
}
