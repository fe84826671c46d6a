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
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// seedManifest is the manifest users start from. The copy in testdata keeps
// the suite runnable outside this workspace; where the original is beside
// the repository, the copy must not have drifted from it.
func seedManifest(t *testing.T) string {
	t.Helper()
	copyPath := filepath.Join(repoRoot, "test/e2e/testdata/seed-appservice.yaml")
	original := filepath.Join(repoRoot, "../shared/fixtures/seed-appservice.yaml")
	want, err := os.ReadFile(original)
	if err != nil {
		if os.IsNotExist(err) {
			return copyPath
		}
		t.Fatal(err)
	}
	got, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from %s: copy the original again", copyPath, original)
	}
	return original
}

// 1. The seed manifest, applied unchanged with kubectl, gives a 2-replica
// nginx:1.7.9 Deployment and a NodePort Service on 30002, both owned, and an
// AppService whose status says so. A second copy in another namespace cannot
// have node port 30002: it is Degraded with the API server's message, and
// an AppService beside it is not held up.
func TestSeedManifest(t *testing.T) {
	parallel(t)
	holdSeedPort(t)
	ns := newNamespace(t)
	seed := seedManifest(t)
	if out, err := kubectl("apply", "-n", ns, "-f", seed); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}

	as := waitAvailable(t, ns, "nginx-app", 2)
	d, err := getDeployment(ns, "nginx-app")
	if err != nil {
		t.Fatal(err)
	}
	if err := ownedBy(d, as); err != nil {
		t.Error(err)
	}
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.7.9" {
		t.Errorf("Deployment: replicas %d, image %s; want 2, nginx:1.7.9", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}
	svc, err := getService(ns, "nginx-app")
	if err != nil {
		t.Fatal(err)
	}
	if err := ownedBy(svc, as); err != nil {
		t.Error(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 ||
		svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort != intstr.FromInt32(80) || svc.Spec.Ports[0].NodePort != 30002 {
		t.Errorf("Service: type %s, ports %+v; want NodePort 80→80 on node port 30002", svc.Spec.Type, svc.Spec.Ports)
	}
	if out, err := kubectl("wait", "-n", ns, "--for=condition=Available", "appservice/nginx-app", "--timeout=30s"); err != nil {
		t.Errorf("kubectl wait --for=condition=Available: %v\n%s", err, out)
	}
	waitEvent(t, ns, "nginx-app", corev1.EventTypeNormal, appv1.ReasonCreated, "Created Deployment nginx-app, Service nginx-app")

	// The same manifest elsewhere: node port 30002 is taken cluster-wide.
	other := newNamespace(t)
	if out, err := kubectl("apply", "-n", other, "-f", seed); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	createAppService(t, other, "neighbour", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27",
		Ports: []corev1.ServicePort{{Port: 8080}}, ServiceType: corev1.ServiceTypeClusterIP})
	waitDegraded(t, other, "nginx-app", appv1.ReasonCreateFailed, "Service", "30002", "already allocated")
	waitEvent(t, other, "nginx-app", corev1.EventTypeWarning, appv1.ReasonCreateFailed, "already allocated")
	waitAvailable(t, other, "neighbour", 1)
	// Its Deployment was created all the same.
	if _, err := getDeployment(other, "nginx-app"); err != nil {
		t.Errorf("the Deployment of the Degraded AppService: %v", err)
	}
}

// 2. Every owned field of the spec reaches the children; the Service keeps
// its clusterIP and server-assigned node ports through port changes.
func TestSpecChangesReachChildren(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	createAppService(t, ns, "web", appv1.AppServiceSpec{
		Size: int32p(1), Image: "nginx:1.25",
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
	})
	waitAvailable(t, ns, "web", 1)
	svc, err := getService(ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	clusterIP, nodePort := svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort
	// The scale subresource's size, which every later rollout keeps: two
	// Pods show a rollout as well as three, and each rollout replaces them
	// all (3 until 2026-12-03).
	const scaled = 2
	if nodePort == 0 {
		t.Fatal("the API server assigned no node port")
	}

	t.Run("scale subresource", func(t *testing.T) {
		scale, err := apps.AppV1().AppServices(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if scale.Status.Selector != appv1.LabelAppService+"=web" {
			t.Errorf("scale selector %q", scale.Status.Selector)
		}
		scale.Spec.Replicas = scaled
		if _, err := apps.AppV1().AppServices(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAvailable(t, ns, "web", scaled)
		waitEvent(t, ns, "web", corev1.EventTypeNormal, appv1.ReasonUpdated, "Updated Deployment web: replicas")
	})

	t.Run("image", func(t *testing.T) {
		updateAppService(t, ns, "web", func(as *appv1.AppService) { as.Spec.Image = "nginx:latest" })
		eventually(t, 30*time.Second, func() error {
			d, err := getDeployment(ns, "web")
			if err != nil {
				return err
			}
			c := d.Spec.Template.Spec.Containers[0]
			if c.Image != "nginx:latest" || c.ImagePullPolicy != corev1.PullAlways {
				return fmt.Errorf("image %s, pull policy %s", c.Image, c.ImagePullPolicy)
			}
			return nil
		})
		waitAvailable(t, ns, "web", scaled)
	})

	t.Run("env and resources", func(t *testing.T) {
		envs := []corev1.EnvVar{
			{Name: "GREETING", Value: "hello"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		}
		resources := corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		}
		updateAppService(t, ns, "web", func(as *appv1.AppService) { as.Spec.Envs, as.Spec.Resources = envs, resources })
		eventually(t, 30*time.Second, func() error {
			d, err := getDeployment(ns, "web")
			if err != nil {
				return err
			}
			c := d.Spec.Template.Spec.Containers[0]
			if len(c.Env) != 2 || c.Env[0] != envs[0] || c.Env[1].ValueFrom == nil || c.Env[1].ValueFrom.FieldRef.FieldPath != "metadata.name" {
				return fmt.Errorf("env %+v", c.Env)
			}
			if !equality.Semantic.DeepEqual(c.Resources, resources) {
				return fmt.Errorf("resources %+v", c.Resources)
			}
			return nil
		})
		waitAvailable(t, ns, "web", scaled)
	})

	t.Run("container, Pod and rollout fields, set and removed", func(t *testing.T) {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + ns}, Value: 1000}
		if _, err := kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
		})
		updateAppService(t, ns, "web", func(as *appv1.AppService) {
			as.Spec.ServiceAccountName, as.Spec.PriorityClassName = "default", pc.Name
			as.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			as.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
			as.Spec.Tolerations = []corev1.Toleration{{Key: "example.com/dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			as.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{appv1.LabelAppService: "web"}}},
			}}}}
			as.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway}}
			as.Spec.TerminationGracePeriodSeconds = new(int64(5))
			as.Spec.EnvFrom = []corev1.EnvFromSource{{Prefix: "APP_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
			as.Spec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
			as.Spec.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, PeriodSeconds: 20}
			as.Spec.Strategy = &appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			as.Spec.ImagePullPolicy = corev1.PullIfNotPresent
			as.Spec.Command, as.Spec.Args, as.Spec.WorkingDir = []string{"nginx"}, []string{"-g", "daemon off;"}, "/srv"
			as.Spec.MinReadySeconds, as.Spec.RevisionHistoryLimit, as.Spec.ProgressDeadlineSeconds = int32p(1), int32p(2), int32p(120)
			as.Spec.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: intstr.FromInt32(80)}}}
			as.Spec.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: new(true), AllowPrivilegeEscalation: new(false)}
			as.Spec.PodSecurityContext = &corev1.PodSecurityContext{FSGroup: new(int64(2000))}
		})
		eventually(t, 30*time.Second, func() error {
			d, err := getDeployment(ns, "web")
			if err != nil {
				return err
			}
			c := d.Spec.Template.Spec.Containers[0]
			if c.ImagePullPolicy != corev1.PullIfNotPresent || !slices.Equal(c.Command, []string{"nginx"}) ||
				!slices.Equal(c.Args, []string{"-g", "daemon off;"}) || c.WorkingDir != "/srv" {
				return fmt.Errorf("container: pull policy %s, command %q, args %q, workingDir %q", c.ImagePullPolicy, c.Command, c.Args, c.WorkingDir)
			}
			pod := d.Spec.Template.Spec
			if pod.ServiceAccountName != "default" || pod.PriorityClassName != pc.Name || len(pod.ImagePullSecrets) != 1 ||
				pod.NodeSelector["kubernetes.io/os"] != "linux" || len(pod.Tolerations) != 1 || *pod.TerminationGracePeriodSeconds != 5 {
				return fmt.Errorf("pod: serviceAccountName %q, priorityClassName %q, imagePullSecrets %v, nodeSelector %v, terminationGracePeriodSeconds %d",
					pod.ServiceAccountName, pod.PriorityClassName, pod.ImagePullSecrets, pod.NodeSelector, *pod.TerminationGracePeriodSeconds)
			}
			if len(c.EnvFrom) != 1 || c.EnvFrom[0].Prefix != "APP_" || c.EnvFrom[0].ConfigMapRef == nil {
				return fmt.Errorf("envFrom %+v", c.EnvFrom)
			}
			if rp := c.ReadinessProbe; rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/" || rp.PeriodSeconds != 10 {
				return fmt.Errorf("readiness probe %+v", rp)
			}
			if lp := c.LivenessProbe; lp == nil || lp.TCPSocket == nil || lp.PeriodSeconds != 20 {
				return fmt.Errorf("liveness probe %+v", lp)
			}
			if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate != nil {
				return fmt.Errorf("strategy %+v", d.Spec.Strategy)
			}
			if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil || len(pod.TopologySpreadConstraints) != 1 {
				return fmt.Errorf("affinity %+v, topology spread constraints %+v", pod.Affinity, pod.TopologySpreadConstraints)
			}
			if l := c.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.HTTPGet == nil || l.PreStop.HTTPGet.Scheme != corev1.URISchemeHTTP {
				return fmt.Errorf("lifecycle %+v", l)
			}
			if sc := c.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				return fmt.Errorf("security context %+v", sc)
			}
			if psc := pod.SecurityContext; psc == nil || psc.FSGroup == nil || *psc.FSGroup != 2000 {
				return fmt.Errorf("pod security context %+v", psc)
			}
			if d.Spec.MinReadySeconds != 1 || *d.Spec.RevisionHistoryLimit != 2 || *d.Spec.ProgressDeadlineSeconds != 120 {
				return fmt.Errorf("rollout: minReadySeconds %d, revisionHistoryLimit %d, progressDeadlineSeconds %d",
					d.Spec.MinReadySeconds, *d.Spec.RevisionHistoryLimit, *d.Spec.ProgressDeadlineSeconds)
			}
			return nil
		})
		waitAvailable(t, ns, "web", scaled)
		// The probes changed the Pod template: the Pods were rolled, and
		// the ones running now are those of a ReplicaSet with the probes.
		eventually(t, 30*time.Second, func() error {
			rss, err := kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: appv1.LabelAppService + "=web"})
			if err != nil {
				return err
			}
			for _, rs := range rss.Items {
				if rs.Spec.Template.Spec.Containers[0].ReadinessProbe != nil && rs.Status.ReadyReplicas == scaled {
					return nil
				}
			}
			return fmt.Errorf("no ReplicaSet with the readiness probe has %d ready Pods among %d", scaled, len(rss.Items))
		})

		updateAppService(t, ns, "web", func(as *appv1.AppService) {
			as.Spec.Strategy = nil
			as.Spec.ReadinessProbe, as.Spec.LivenessProbe, as.Spec.EnvFrom = nil, nil, nil
			as.Spec.ServiceAccountName, as.Spec.PriorityClassName, as.Spec.ImagePullSecrets, as.Spec.NodeSelector = "", "", nil, nil
			as.Spec.Tolerations, as.Spec.Affinity, as.Spec.TopologySpreadConstraints = nil, nil, nil
			as.Spec.TerminationGracePeriodSeconds = nil
			as.Spec.ImagePullPolicy, as.Spec.Command, as.Spec.Args, as.Spec.WorkingDir = "", nil, nil, ""
			as.Spec.MinReadySeconds, as.Spec.RevisionHistoryLimit, as.Spec.ProgressDeadlineSeconds = nil, nil, nil
			as.Spec.Lifecycle, as.Spec.SecurityContext, as.Spec.PodSecurityContext = nil, nil, nil
		})
		eventually(t, 30*time.Second, func() error {
			d, err := getDeployment(ns, "web")
			if err != nil {
				return err
			}
			c := d.Spec.Template.Spec.Containers[0]
			// nginx:latest: the pull policy follows the image again.
			if c.ReadinessProbe != nil || c.LivenessProbe != nil || c.EnvFrom != nil {
				return fmt.Errorf("probes not cleared: %+v, %+v", c.ReadinessProbe, c.LivenessProbe)
			}
			if c.ImagePullPolicy != corev1.PullAlways || c.Command != nil || c.Args != nil || c.WorkingDir != "" {
				return fmt.Errorf("container not cleared: pull policy %s, command %q, args %q, workingDir %q", c.ImagePullPolicy, c.Command, c.Args, c.WorkingDir)
			}
			pod := d.Spec.Template.Spec
			if pod.ServiceAccountName != "" || pod.DeprecatedServiceAccount != "" || pod.PriorityClassName != "" || //nolint:staticcheck // the alias must go too
				pod.ImagePullSecrets != nil || pod.NodeSelector != nil || pod.Tolerations != nil || *pod.TerminationGracePeriodSeconds != 30 {
				return fmt.Errorf("pod not cleared: serviceAccountName %q, priorityClassName %q, imagePullSecrets %v, nodeSelector %v, terminationGracePeriodSeconds %d",
					pod.ServiceAccountName, pod.PriorityClassName, pod.ImagePullSecrets, pod.NodeSelector, *pod.TerminationGracePeriodSeconds)
			}
			if pod.Affinity != nil || pod.TopologySpreadConstraints != nil {
				return fmt.Errorf("scheduling not cleared: affinity %+v, topology spread constraints %+v", pod.Affinity, pod.TopologySpreadConstraints)
			}
			if c.Lifecycle != nil || c.SecurityContext != nil || pod.SecurityContext == nil || pod.SecurityContext.FSGroup != nil {
				return fmt.Errorf("security not cleared: lifecycle %+v, security context %+v, pod security context %+v", c.Lifecycle, c.SecurityContext, pod.SecurityContext)
			}
			if ru := d.Spec.Strategy.RollingUpdate; d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
				ru == nil || ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" {
				return fmt.Errorf("strategy not back to the default: %+v", d.Spec.Strategy)
			}
			if d.Spec.MinReadySeconds != 0 || *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 {
				return fmt.Errorf("rollout not back to the defaults: minReadySeconds %d, revisionHistoryLimit %d, progressDeadlineSeconds %d",
					d.Spec.MinReadySeconds, *d.Spec.RevisionHistoryLimit, *d.Spec.ProgressDeadlineSeconds)
			}
			return nil
		})
		waitAvailable(t, ns, "web", scaled)
	})

	t.Run("volumes: ours set, changed and removed, a sidecar's kept", func(t *testing.T) {
		updateAppService(t, ns, "web", func(as *appv1.AppService) {
			as.Spec.Volumes = []appv1.Volume{{Name: "config", ConfigMap: &appv1.ConfigMapVolumeSource{Name: "web-config"}}}
			as.Spec.VolumeMounts = []appv1.VolumeMount{{Name: "config", MountPath: "/etc/web", ReadOnly: true}}
		})
		volumes := func(want map[string]string) func() error {
			return func() error {
				d, err := getDeployment(ns, "web")
				if err != nil {
					return err
				}
				got := map[string]string{}
				for _, v := range d.Spec.Template.Spec.Volumes {
					switch {
					case v.ConfigMap != nil:
						got[v.Name] = "configMap " + v.ConfigMap.Name
					case v.EmptyDir != nil:
						got[v.Name] = "emptyDir"
					default:
						got[v.Name] = "other"
					}
				}
				if !maps.Equal(got, want) {
					return fmt.Errorf("volumes %v, want %v", got, want)
				}
				return nil
			}
		}
		eventually(t, 30*time.Second, volumes(map[string]string{"config": "configMap web-config"}))
		d, err := getDeployment(ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		if m := d.Spec.Template.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != "/etc/web" || !m[0].ReadOnly {
			t.Fatalf("volume mounts %+v", m)
		}
		waitAvailable(t, ns, "web", scaled)

		// Someone adds a sidecar with its own volume to the Deployment, and
		// mounts that volume in the app's container too.
		patch := `{"spec":{"template":{"spec":{"volumes":[{"name":"scratch","emptyDir":{}}],` +
			`"containers":[{"name":"sidecar","image":"busybox:1.36","volumeMounts":[{"name":"scratch","mountPath":"/scratch"}]},` +
			`{"name":"web","volumeMounts":[{"name":"scratch","mountPath":"/scratch"}]}]}}}}`
		if _, err := kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		updateAppService(t, ns, "web", func(as *appv1.AppService) { as.Spec.Volumes[0].ConfigMap.Name = "web-config-2" })
		eventually(t, 30*time.Second, volumes(map[string]string{"config": "configMap web-config-2", "scratch": "emptyDir"}))
		if d, err := getDeployment(ns, "web"); err != nil {
			t.Fatal(err)
		} else if c := containerNamed(d, "web"); c == nil || len(c.VolumeMounts) != 2 {
			t.Errorf("the app's container: %+v, want its mount and the sidecar volume's", c)
		}

		updateAppService(t, ns, "web", func(as *appv1.AppService) { as.Spec.Volumes, as.Spec.VolumeMounts = nil, nil })
		eventually(t, 30*time.Second, volumes(map[string]string{"scratch": "emptyDir"}))
		d, err = getDeployment(ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		if c := containerNamed(d, "web"); c == nil || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != "scratch" {
			t.Errorf("the app's container: %+v, want only the sidecar volume's mount", c)
		}
		if _, ok := d.Annotations[appv1.AnnotationVolumes]; ok {
			t.Errorf("the record %s is left: %v", appv1.AnnotationVolumes, d.Annotations)
		}
		// The sidecar goes too, by hand: it is no business of ours.
		sidecarOut := `{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"},` +
			`{"name":"web","volumeMounts":[{"mountPath":"/scratch","$patch":"delete"}]}],"volumes":[{"name":"scratch","$patch":"delete"}]}}}}`
		if _, err := kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(sidecarOut), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitAvailable(t, ns, "web", scaled)
	})

	t.Run("pod labels and annotations: ours kept in line, rollout restart kept", func(t *testing.T) {
		const restartedAt = "kubectl.kubernetes.io/restartedAt"
		updateAppService(t, ns, "web", func(as *appv1.AppService) {
			as.Spec.PodLabels = map[string]string{"tier": "web"}
			as.Spec.PodAnnotations = map[string]string{"example.com/note": "one"}
		})
		templateHas := func(labels, annotations map[string]string, absent ...string) func() error {
			return func() error {
				d, err := getDeployment(ns, "web")
				if err != nil {
					return err
				}
				meta := d.Spec.Template.ObjectMeta
				for k, v := range labels {
					if meta.Labels[k] != v {
						return fmt.Errorf("pod labels %v, want %s=%s", meta.Labels, k, v)
					}
				}
				for k, v := range annotations {
					if got, ok := meta.Annotations[k]; !ok || (v != "" && got != v) {
						return fmt.Errorf("pod annotations %v, want %s=%s", meta.Annotations, k, v)
					}
				}
				for _, k := range absent {
					if _, ok := meta.Labels[k]; ok {
						return fmt.Errorf("pod label %s still set: %v", k, meta.Labels)
					}
					if _, ok := meta.Annotations[k]; ok {
						return fmt.Errorf("pod annotation %s still set: %v", k, meta.Annotations)
					}
				}
				return nil
			}
		}
		eventually(t, 30*time.Second, templateHas(map[string]string{"tier": "web"}, map[string]string{"example.com/note": "one"}))
		waitAvailable(t, ns, "web", scaled)

		if out, err := kubectl("rollout", "restart", "deployment/web", "-n", ns); err != nil {
			t.Fatalf("kubectl rollout restart: %v\n%s", err, out)
		}
		// A spec change and a resync (10 s) later, the restart is still
		// there: the controller owns only the keys it recorded.
		updateAppService(t, ns, "web", func(as *appv1.AppService) { as.Spec.PodAnnotations["example.com/note"] = "two" })
		eventually(t, 30*time.Second, templateHas(nil, map[string]string{"example.com/note": "two", restartedAt: ""}))
		waitSyncs(t, ns, "web")
		if err := templateHas(map[string]string{"tier": "web"}, map[string]string{restartedAt: ""})(); err != nil {
			t.Fatalf("after a resync: %v", err)
		}
		waitAvailable(t, ns, "web", scaled)

		updateAppService(t, ns, "web", func(as *appv1.AppService) { as.Spec.PodLabels, as.Spec.PodAnnotations = nil, nil })
		eventually(t, 30*time.Second, templateHas(map[string]string{appv1.LabelAppService: "web"}, map[string]string{restartedAt: ""}, "tier", "example.com/note"))
		waitAvailable(t, ns, "web", scaled)
	})

	t.Run("ports", func(t *testing.T) {
		updateAppService(t, ns, "web", func(as *appv1.AppService) {
			as.Spec.Ports = append(as.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9113)})
		})
		eventually(t, 30*time.Second, func() error {
			svc, err := getService(ns, "web")
			if err != nil {
				return err
			}
			if len(svc.Spec.Ports) != 2 {
				return fmt.Errorf("Service ports %+v", svc.Spec.Ports)
			}
			if svc.Spec.ClusterIP != clusterIP || svc.Spec.Ports[0].NodePort != nodePort {
				return fmt.Errorf("clusterIP %s (was %s), node port %d (was %d): the server-assigned values were not kept",
					svc.Spec.ClusterIP, clusterIP, svc.Spec.Ports[0].NodePort, nodePort)
			}
			d, err := getDeployment(ns, "web")
			if err != nil {
				return err
			}
			ports := d.Spec.Template.Spec.Containers[0].Ports
			if len(ports) != 2 || ports[0].ContainerPort != 80 || ports[1].ContainerPort != 9113 {
				return fmt.Errorf("container ports %+v", ports)
			}
			return nil
		})
	})

	t.Run("service type", func(t *testing.T) {
		updateAppService(t, ns, "web", func(as *appv1.AppService) { as.Spec.ServiceType = corev1.ServiceTypeClusterIP })
		eventually(t, 30*time.Second, func() error {
			svc, err := getService(ns, "web")
			if err != nil {
				return err
			}
			if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ClusterIP != clusterIP {
				return fmt.Errorf("type %s, clusterIP %s (was %s)", svc.Spec.Type, svc.Spec.ClusterIP, clusterIP)
			}
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					return fmt.Errorf("port %d still has node port %d", p.Port, p.NodePort)
				}
			}
			return nil
		})
		waitAvailable(t, ns, "web", scaled)
	})

	t.Run("ports removed", func(t *testing.T) {
		updateAppService(t, ns, "web", func(as *appv1.AppService) { as.Spec.Ports = nil })
		eventually(t, 30*time.Second, func() error {
			if _, err := getService(ns, "web"); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the Service is still there (%v)", err)
			}
			return nil
		})
		waitEvent(t, ns, "web", corev1.EventTypeNormal, appv1.ReasonDeleted, "Deleted Service web")
	})
}

// 3. Drift is repaired: deleted children come back, hand-edited owned fields
// are set back, and what others add (a label) is left alone.
func TestDriftIsRepaired(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	createAppService(t, ns, "drift", appv1.AppServiceSpec{
		Size: int32p(2), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}},
	})
	waitAvailable(t, ns, "drift", 2)

	t.Run("deleted Service", func(t *testing.T) {
		old, err := getService(ns, "drift")
		if err != nil {
			t.Fatal(err)
		}
		if err := kube.CoreV1().Services(ns).Delete(ctx, "drift", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			svc, err := getService(ns, "drift")
			if err != nil {
				return err
			}
			if svc.UID == old.UID {
				return fmt.Errorf("still the old Service")
			}
			return nil
		})
	})

	t.Run("deleted Deployment", func(t *testing.T) {
		old, err := getDeployment(ns, "drift")
		if err != nil {
			t.Fatal(err)
		}
		if err := kube.AppsV1().Deployments(ns).Delete(ctx, "drift", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			d, err := getDeployment(ns, "drift")
			if err != nil {
				return err
			}
			if d.UID == old.UID {
				return fmt.Errorf("still the old Deployment")
			}
			return nil
		})
		waitAvailable(t, ns, "drift", 2)
	})

	t.Run("hand-edited replicas and image", func(t *testing.T) {
		patch := `{"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"drift","image":"busybox:1.36"}]}}}}`
		if _, err := kube.AppsV1().Deployments(ns).Patch(ctx, "drift", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			d, err := getDeployment(ns, "drift")
			if err != nil {
				return err
			}
			if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
				return fmt.Errorf("replicas %d, image %s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
			}
			return nil
		})
		waitAvailable(t, ns, "drift", 2)
	})

	t.Run("foreign label kept", func(t *testing.T) {
		patch := `{"metadata":{"labels":{"team":"blue"}}}`
		if _, err := kube.AppsV1().Deployments(ns).Patch(ctx, "drift", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		since := time.Now()
		// Past a resync (10 s in these tests): nothing is written back.
		waitSyncs(t, ns, "drift")
		d, err := getDeployment(ns, "drift")
		if err != nil {
			t.Fatal(err)
		}
		if d.Labels["team"] != "blue" {
			t.Errorf("the label someone else added is gone: %v", d.Labels)
		}
		for _, w := range controllerWrites(t, since, ns) {
			if w.ObjectRef != nil && w.ObjectRef.Resource == "deployments" {
				t.Errorf("the controller wrote the Deployment back: %s", w)
			}
		}
	})
}

// 4. A Deployment and a Service of the AppService's name that it does not
// control are never touched; the AppService says why it is stuck, once, and
// the AppServices around it keep working.
func TestUnownedObjectsAreLeftAlone(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	d := createTheirDeployment(t, ns, "taken")
	labels := d.Spec.Selector.MatchLabels
	svc, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "taken"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 8080}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	createAppService(t, ns, "taken", appv1.AppServiceSpec{Size: int32p(2), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}}})
	createAppService(t, ns, "fine", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}}})
	waitDegraded(t, ns, "taken", appv1.ReasonResourceExists, "Deployment "+ns+"/taken", "not controlled by AppService taken")
	waitEvent(t, ns, "taken", corev1.EventTypeWarning, appv1.ReasonResourceExists, "Deployment "+ns+"/taken")
	waitAvailable(t, ns, "fine", 1)

	// Past a resync: still untouched, and still one Warning. The first
	// sync's create met the object (409 AlreadyExists, nothing written);
	// once Degraded, the controller looks before it tries again.
	degradedAt := time.Now()
	waitSyncs(t, ns, "taken")
	d2, err := getDeployment(ns, "taken")
	if err != nil {
		t.Fatal(err)
	}
	svc2, err := getService(ns, "taken")
	if err != nil {
		t.Fatal(err)
	}
	if d2.ResourceVersion != d.ResourceVersion && d2.Generation != d.Generation {
		t.Errorf("the unowned Deployment was modified")
	}
	if svc2.ResourceVersion != svc.ResourceVersion {
		t.Errorf("the unowned Service was modified")
	}
	for _, w := range controllerWrites(t, time.Time{}, ns) {
		if w.ObjectRef == nil || w.ObjectRef.Name != "taken" || (w.ObjectRef.Resource != "deployments" && w.ObjectRef.Resource != "services") {
			continue
		}
		if w.ResponseStatus == nil || w.ResponseStatus.Code < 300 {
			t.Errorf("the controller wrote to an object it does not control: %s", w)
		}
		if w.RequestReceivedTimestamp.After(degradedAt) {
			t.Errorf("the controller retried a create it knew would fail: %s", w)
		}
	}
	var count int32
	for _, e := range events(t, ns, "taken", appv1.ReasonResourceExists) {
		count += e.Count
	}
	if count != 1 {
		t.Errorf("%d ResourceExists Warnings, want 1: Events mark transitions, not retries", count)
	}

	// Once the object in the way is gone, the AppService recovers.
	if err := kube.AppsV1().Deployments(ns).Delete(ctx, "taken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Services(ns).Delete(ctx, "taken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, ns, "taken", 2)
}

// 7. Deleting an AppService deletes its children (garbage collector, through
// the owner references).
func TestDeletionRemovesChildren(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	createAppService(t, ns, "gone", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}}})
	waitAvailable(t, ns, "gone", 1)
	if err := apps.AppV1().AppServices(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		_, derr := getDeployment(ns, "gone")
		_, serr := getService(ns, "gone")
		if !apierrors.IsNotFound(derr) || !apierrors.IsNotFound(serr) {
			return fmt.Errorf("children still there: deployment %v, service %v", derr, serr)
		}
		return nil
	})
}

func TestSIGTERMStopsPromptly(t *testing.T) {
	serial(t, 1)
	// Run first (go test -run), the suite's controller may still be
	// starting: stop it once its workers run.
	eventually(t, time.Minute, func() error {
		if !ctrl.LogContains("Started workers") {
			return errors.New("the controller has not started its workers")
		}
		return nil
	})
	took, err := ctrl.Stop(syscall.SIGTERM)
	t.Cleanup(func() {
		if err := ctrl.Start(); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Errorf("the controller exited with %v, want 0", err)
	}
	if took > 5*time.Second {
		t.Errorf("the controller took %s to stop, want under 5s", took)
	}
	if !ctrl.LogContains("Workers stopped") {
		t.Error("the controller's log does not say its workers stopped")
	}
}
