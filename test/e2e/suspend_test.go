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
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestSuspend: spec.suspend true scales an autoscaled AppService's
// Deployment to 0 and removes its autoscaler, and keeps its Service (the
// same cluster IP and node port) and its PodDisruptionBudget; the
// AppService says Suspended. A Deployment scaled up by hand goes back to 0;
// while suspended and in line, its syncs write nothing. False brings the
// autoscaler back and the Deployment to the autoscaler's minimum.
func TestSuspend(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "pausable"
	createAppService(t, ns, name, appv1.AppServiceSpec{
		Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}},
		Autoscaling:      &appv1.Autoscaling{MinReplicas: int32p(2), MaxReplicas: 4},
		DisruptionBudget: &appv1.DisruptionBudget{MinAvailable: new(intstr.FromInt32(1))},
	})
	waitAvailable(t, ns, name, 2)
	before, err := getService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the autoscaler before the suspension: %v", err)
	}

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Suspend = new(true) })
	waitSuspended(t, ns, name)
	eventually(t, time.Minute, func() error {
		_, err := kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the autoscaler of a suspended AppService: %v, want it gone", err)
		}
		return nil
	})
	checkServiceKept(t, ns, name, before)
	if _, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("the PodDisruptionBudget of a suspended AppService: %v, want it kept", err)
	}
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonDeleted, "HorizontalPodAutoscaler "+name+": the AppService is suspended")

	// Scaled up by hand, as someone would during an incident: back to 0.
	if _, err := kube.AppsV1().Deployments(ns).UpdateScale(ctx, name, &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 2},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSuspended(t, ns, name)

	// In line and suspended: after two syncs more (which may still write
	// what the Deployment's last status update says), two more syncs, a
	// resync among them (-resync-period=10s), and not one write. A window
	// in which someone else changed the Deployment is not in line (under
	// the suite's load, kube-controller-manager's last status update of a
	// scale-down can come seconds late, and the AppService mirrors it):
	// it is tried again, up to five times.
	for attempt := 1; ; attempt++ {
		before := deploymentVersion(t, ns, name)
		waitSyncs(t, ns, name)
		since := time.Now()
		waitSyncs(t, ns, name)
		writes := controllerWrites(t, since, ns)
		if len(writes) > 0 && deploymentVersion(t, ns, name) != before && attempt < 5 {
			t.Logf("the Deployment changed during window %d: another window", attempt)
			continue
		}
		for _, w := range writes {
			t.Errorf("write by the controller while suspended and in line: %s", w)
		}
		break
	}

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Suspend = new(false) })
	as := waitAvailable(t, ns, name, 2)
	if c := condition(as, appv1.ConditionSuspended); c == nil || c.Status != metav1.ConditionFalse || c.Reason != appv1.ReasonResumed {
		t.Errorf("Suspended after resuming: %+v, want False, Resumed", c)
	}
	if _, err := kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("the autoscaler after resuming: %v", err)
	}
	checkServiceKept(t, ns, name, before)
}

// deploymentVersion is the resourceVersion of the AppService's Deployment.
func deploymentVersion(t *testing.T, ns, name string) string {
	t.Helper()
	d, err := getDeployment(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return d.ResourceVersion
}

// waitSuspended waits until the AppService's Deployment is at 0 replicas
// and its status says so: Suspended, Ready as asked, and in line with the
// Deployment's last state (inLine).
func waitSuspended(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, time.Minute, func() error {
		d, err := getDeployment(ns, name)
		if err != nil {
			return err
		}
		if *d.Spec.Replicas != 0 || d.Status.Replicas != 0 || d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("Deployment at %d replicas (%d running, generation %d observed of %d), want 0",
				*d.Spec.Replicas, d.Status.Replicas, d.Status.ObservedGeneration, d.Generation)
		}
		as, err := getAppService(ns, name)
		if err != nil {
			return err
		}
		suspended, ready := condition(as, appv1.ConditionSuspended), condition(as, appv1.ConditionReady)
		switch {
		case as.Status.ObservedGeneration != as.Generation:
			return fmt.Errorf("observedGeneration %d, generation %d", as.Status.ObservedGeneration, as.Generation)
		case suspended == nil || suspended.Status != metav1.ConditionTrue:
			return fmt.Errorf("Suspended is %+v", suspended)
		case ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != appv1.ReasonSuspended:
			return fmt.Errorf("Ready is %+v, want True, Suspended", ready)
		}
		return inLine(as, d)
	})
}

// checkServiceKept fails unless the AppService's Service is the one it had
// before, with the same cluster IP and node ports.
func checkServiceKept(t *testing.T, ns, name string, before *corev1.Service) {
	t.Helper()
	svc, err := getService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if svc.UID != before.UID || svc.Spec.ClusterIP != before.Spec.ClusterIP || svc.Spec.Ports[0].NodePort != before.Spec.Ports[0].NodePort {
		t.Errorf("Service %s, cluster IP %s, node port %d; want %s, %s, %d, as before the suspension",
			svc.UID, svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort, before.UID, before.Spec.ClusterIP, before.Spec.Ports[0].NodePort)
	}
}

// waitSyncs waits until the suite's controller has synced the AppService
// twice more: the second sync began after the first ended, whatever queued
// them, and with -resync-period=10s a resync comes within 10 s.
func waitSyncs(t *testing.T, ns, name string) {
	t.Helper()
	synced := syncsOf(t, ns, name)
	eventually(t, time.Minute, func() error {
		if got := syncsOf(t, ns, name); got < synced+2 {
			return fmt.Errorf("%d syncs since, want 2", got-synced)
		}
		return nil
	})
}

// syncsOf counts the syncs of an AppService the suite's controller has
// logged ("Synced", at -v=2).
func syncsOf(t *testing.T, ns, name string) int {
	t.Helper()
	return len(loggedSyncs(t, ns, name))
}
