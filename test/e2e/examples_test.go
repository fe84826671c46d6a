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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The examples, as the README says to use them: `kubectl apply -f
// artifacts/examples` (the CRD with them, which also proves kubectl can
// store it in its last-applied annotation), and the AppServices become
// Available, webapp with its ConfigMap mounted, its Secret in the env, and
// its ServiceAccount, PodDisruptionBudget and Ingress; nginx-logs with its
// log-shipping sidecar.
func TestExamples(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	if out, err := kubectl("apply", "-n", ns, "-f", filepath.Join(repoRoot, "artifacts", "examples")); err != nil {
		t.Fatalf("kubectl apply -f artifacts/examples: %v\n%s", err, out)
	}
	waitAvailable(t, ns, "example-app", 3)
	waitAvailable(t, ns, "webapp", 2)
	d, err := getDeployment(ns, "webapp")
	if err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if len(pod.Volumes) != 2 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != "webapp-nginx" {
		t.Errorf("volumes %+v", pod.Volumes)
	}
	if len(c.VolumeMounts) != 2 || c.ReadinessProbe == nil || c.Lifecycle == nil || c.SecurityContext == nil ||
		len(c.Env) != 1 || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.SecretKeyRef == nil {
		t.Errorf("container %+v", c)
	}
	if pod.ServiceAccountName != "webapp" || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("the Pods run as %q, automount %v; want webapp, false", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	for kind, get := range map[string]func() error{
		"ServiceAccount": func() error {
			_, err := kube.CoreV1().ServiceAccounts(ns).Get(context.Background(), "webapp", metav1.GetOptions{})
			return err
		},
		"PodDisruptionBudget": func() error {
			_, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), "webapp", metav1.GetOptions{})
			return err
		},
		"Ingress": func() error {
			_, err := kube.NetworkingV1().Ingresses(ns).Get(context.Background(), "webapp", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Errorf("webapp's %s: %v", kind, err)
		}
	}
	// The tutorial's Activity ran its command once.
	waitActivity(t, ns, "sleep-once", appv1.ActivitySucceeded)
	if out, err := kubectl("get", "-n", ns, "activity", "sleep-once"); err != nil || !strings.Contains(out, "Succeeded") {
		t.Errorf("kubectl get activity: %v\n%s", err, out)
	}
	if out, err := kubectl("get", "-n", ns, "appsvc", "-o", "wide"); err != nil || !strings.Contains(out, "webapp") || !strings.Contains(out, "http://webapp.example.com/") {
		t.Errorf("kubectl get appsvc -o wide: %v\n%s", err, out)
	}

	// The log-shipping sidecar: a native sidecar sharing the logs' emptyDir
	// with nginx, read-only, and nginx the Pods' default container.
	waitAvailable(t, ns, "nginx-logs", 1)
	d, err = getDeployment(ns, "nginx-logs")
	if err != nil {
		t.Fatal(err)
	}
	pod = d.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "log-shipper" || pod.InitContainers[0].RestartPolicy == nil ||
		*pod.InitContainers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways || pod.InitContainers[0].ReadinessProbe == nil {
		t.Errorf("init containers %+v, want the sidecar log-shipper", pod.InitContainers)
	}
	if m := pod.InitContainers[0].VolumeMounts; len(m) != 2 || m[0].Name != "logs" || !m[0].ReadOnly || containerNamed(d, "nginx-logs").VolumeMounts[0].Name != "logs" {
		t.Errorf("the logs volume is not shared: sidecar %+v, app %+v", m, containerNamed(d, "nginx-logs").VolumeMounts)
	}
	if got := d.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"]; got != "nginx-logs" {
		t.Errorf("default container %q, want nginx-logs", got)
	}

	// The canary's example, in a folder of its own (it needs the Gateway
	// API): one route to the one Service, the stable template recorded.
	installGatewayAPI(t)
	if out, err := kubectl("apply", "-n", ns, "-f", filepath.Join(repoRoot, "artifacts", "examples", "canary")); err != nil {
		t.Fatalf("kubectl apply -f artifacts/examples/canary: %v\n%s", err, out)
	}
	as := waitAvailable(t, ns, "shop", 2)
	if as.Status.Canary == nil || as.Status.Canary.StableTemplateHash == "" || len(as.Spec.Canary.Steps) != 3 {
		t.Errorf("shop's canary: spec %+v, status %+v", as.Spec.Canary, as.Status.Canary)
	}
	checkCanaryGone(t, ns, "shop")
	// The blue-green example: no preview until its template changes.
	if as := waitAvailable(t, ns, "ledger", 3); as.Spec.Canary.BlueGreen == nil || as.Status.Canary == nil || as.Status.Canary.StableTemplateHash == "" {
		t.Errorf("ledger's blue-green release: spec %+v, status %+v", as.Spec.Canary, as.Status.Canary)
	}
	if _, err := getDeployment(ns, "ledger-preview"); !apierrors.IsNotFound(err) {
		t.Errorf("ledger's preview before any release: %v, want none", err)
	}
	// The fleet's judges, cluster-wide: admitted as shipped.
	templates := filepath.Join(repoRoot, "artifacts", "examples", "analysis-templates")
	out, err := kubectl("apply", "-f", templates)
	if err != nil {
		t.Fatalf("kubectl apply -f artifacts/examples/analysis-templates: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl("delete", "--ignore-not-found", "-f", templates) })
	for _, name := range []string{"success-rate", "p99-latency", "success-rate-by-pods"} {
		if !strings.Contains(out, "clusteranalysistemplate.app.example.com/"+name+" created") {
			t.Errorf("kubectl apply -f artifacts/examples/analysis-templates did not create %s:\n%s", name, out)
		}
	}
	// Where releases are heard of: admitted as shipped.
	out, err = kubectl("apply", "-n", ns, "-f", filepath.Join(repoRoot, "artifacts", "examples", "notifications"))
	if err != nil {
		t.Fatalf("kubectl apply -f artifacts/examples/notifications: %v\n%s", err, out)
	}
	for _, name := range []string{"releases-slack", "releases-webhook"} {
		if !strings.Contains(out, "notificationdestination.app.example.com/"+name+" created") {
			t.Errorf("kubectl apply -f artifacts/examples/notifications did not create %s:\n%s", name, out)
		}
	}
	if as := waitAvailable(t, ns, "storefront", 2); as.Status.Canary == nil || as.Status.Canary.StableTemplateHash == "" ||
		!as.Spec.Canary.Steps[0].Gate || as.Spec.Canary.RollbackWindow != 2 || len(as.Spec.Canary.TesterHeaders) != 1 {
		t.Errorf("storefront's canary: spec %+v, status %+v", as.Spec.Canary, as.Status.Canary)
	}
}

// On a cluster where no controller ever ran, the CRD applies with kubectl on
// its own: client-side apply keeps the whole object in its last-applied
// annotation, which may hold 256 KiB. Then the examples apply in one go. (In
// one go with the CRD they cannot: kubectl maps every object to its resource
// before it creates any, and the AppService kind does not exist yet. The
// README says to apply the CRDs first, or to let the controller install them.)
// A fresh control plane of its own, so that the CRD is truly new.
func TestExamplesOnAFreshCluster(t *testing.T) {
	parallel(t)
	fresh := startBareCluster(t)
	run := func(want []string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+fresh.Kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("kubectl %s did not say %q:\n%s", strings.Join(args, " "), w, out)
			}
		}
	}
	examples := filepath.Join(repoRoot, "artifacts", "examples")
	run([]string{"customresourcedefinition.apiextensions.k8s.io/appservices.app.example.com created"},
		"apply", "-f", filepath.Join(examples, "crd.yaml"))
	run([]string{"customresourcedefinition.apiextensions.k8s.io/activities.app.example.com created"},
		"apply", "-f", filepath.Join(examples, "crd-activity.yaml"))
	run(nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/appservices.app.example.com", "crd/activities.app.example.com")
	run([]string{"customresourcedefinition.apiextensions.k8s.io/appservices.app.example.com unchanged",
		"customresourcedefinition.apiextensions.k8s.io/activities.app.example.com unchanged",
		"appservice.app.example.com/example-app created", "appservice.app.example.com/webapp created", "appservice.app.example.com/nginx-logs created", "configmap/webapp-nginx created",
		"activity.app.example.com/sleep-once created"},
		"apply", "-f", examples)
}
