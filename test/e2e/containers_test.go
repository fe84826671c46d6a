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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestSidecarsAndInitContainers: an AppService with an init container and
// a log-shipping sidecar sharing an emptyDir with the app converges to
// Available; the template has the init container, then the sidecar
// (restartPolicy Always), the app container first among the containers,
// and kubectl's default-container annotation. A container someone else
// injects into the Deployment's template survives a spec change; a
// sidecar's image change rolls the Pods; removing the sidecar removes it
// and nothing else.
func TestSidecarsAndInitContainers(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	createAppService(t, ns, "shop", appv1.AppServiceSpec{
		Size: int32p(2), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}},
		Volumes:      []appv1.Volume{{Name: "logs", EmptyDir: &appv1.EmptyDirVolumeSource{}}},
		VolumeMounts: []appv1.VolumeMount{{Name: "logs", MountPath: "/var/log/nginx"}},
		InitContainers: []appv1.Container{{
			Name: "migrate", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo migrated"},
		}},
		Sidecars: []appv1.Container{{
			Name: "shipper", Image: "fluent/fluent-bit:3.1",
			Ports:          []appv1.ContainerPort{{Name: "metrics", ContainerPort: 2020}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/api/v1/health", Port: intstr.FromString("metrics")}}},
			VolumeMounts:   []appv1.VolumeMount{{Name: "logs", MountPath: "/var/log/nginx", ReadOnly: true}},
		}},
	})
	waitAvailable(t, ns, "shop", 2)
	d, err := getDeployment(ns, "shop")
	if err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if got := containerNames(pod.InitContainers); !slices.Equal(got, []string{"migrate", "shipper"}) {
		t.Fatalf("init containers %v, want migrate then the sidecar shipper", got)
	}
	if pod.InitContainers[0].RestartPolicy != nil || pod.InitContainers[1].RestartPolicy == nil || *pod.InitContainers[1].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("restart policies: migrate %v, shipper %v; want none, then Always", pod.InitContainers[0].RestartPolicy, pod.InitContainers[1].RestartPolicy)
	}
	if pod.Containers[0].Name != "shop" {
		t.Errorf("the first container is %s, want the app's", pod.Containers[0].Name)
	}
	if got := d.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"]; got != "shop" {
		t.Errorf("default-container annotation %q, want shop", got)
	}

	// Someone injects a container into the Deployment's template (as some
	// tools do, rather than into the Pods); a spec change keeps it.
	_, err = kube.AppsV1().Deployments(ns).Patch(ctx, "shop", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"injected","image":"busybox:1.36"}]}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	updateAppService(t, ns, "shop", func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	eventually(t, 30*time.Second, func() error {
		d, err := getDeployment(ns, "shop")
		if err != nil {
			return err
		}
		if c := containerNamed(d, "shop"); c == nil || c.Image != "nginx:1.28" {
			return fmt.Errorf("the app container is %+v", c)
		}
		if containerNamed(d, "injected") == nil {
			return fmt.Errorf("the injected container is gone: %v", containerNames(d.Spec.Template.Spec.Containers))
		}
		return nil
	})
	waitRolledOut(t, ns, "shop")

	// A sidecar's image change rolls the Pods: a new ReplicaSet, one
	// update, an Event naming the field.
	waitInLine(t, ns, "shop")
	before, since := replicaSets(t, ns), time.Now()
	updateAppService(t, ns, "shop", func(as *appv1.AppService) { as.Spec.Sidecars[0].Image = "fluent/fluent-bit:3.2" })
	eventually(t, 30*time.Second, func() error {
		if n := replicaSets(t, ns); n != before+1 {
			return fmt.Errorf("%d ReplicaSets, want %d", n, before+1)
		}
		return nil
	})
	waitRolledOut(t, ns, "shop")
	if n := deploymentUpdates(t, since, ns); n != 1 {
		t.Errorf("a sidecar's image changed: %d Deployment updates, want 1", n)
	}
	if n := countEvents(t, ns, "shop", "sidecar shipper image"); n != 1 {
		t.Errorf("a sidecar's image changed: %d Updated Events naming it, want 1", n)
	}

	// Removing the sidecar removes it, and only it: the init container,
	// the injected container and the default container stay.
	updateAppService(t, ns, "shop", func(as *appv1.AppService) { as.Spec.Sidecars = nil })
	eventually(t, 30*time.Second, func() error {
		d, err := getDeployment(ns, "shop")
		if err != nil {
			return err
		}
		if got := containerNames(d.Spec.Template.Spec.InitContainers); !slices.Equal(got, []string{"migrate"}) {
			return fmt.Errorf("init containers %v, want migrate alone", got)
		}
		if containerNamed(d, "injected") == nil {
			return fmt.Errorf("the injected container is gone")
		}
		if got := d.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"]; got != "shop" {
			return fmt.Errorf("default-container annotation %q, want shop", got)
		}
		return nil
	})
	waitAvailable(t, ns, "shop", 2)
}

func containerNames(cs []corev1.Container) []string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return names
}
