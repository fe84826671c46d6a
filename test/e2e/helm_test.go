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
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The Helm chart, rendered by helm built from its Go module
// (hack/ensure-helm.sh) and installed on a control plane of its own: scoped
// to one namespace, JSON logs, extra arguments, a NetworkPolicy. Its RBAC
// is the deploy manifests' (compared rule by rule). The controller, run
// with the chart's ServiceAccount and the arguments of the chart's
// Deployment, installs its CRD, becomes ready and makes an AppService in
// its namespace Available, and leaves one elsewhere alone.
func TestHelmChart(t *testing.T) {
	parallel(t)
	out, err := exec.Command(filepath.Join(repoRoot, "hack", "ensure-helm.sh")).Output()
	if err != nil {
		t.Fatalf("hack/ensure-helm.sh: %v", err)
	}
	helm := strings.TrimSpace(string(out))
	const release, namespace, watched = "shop", "appservice-helm", "shop-apps"
	const fullname = release + "-appservice-controller"
	render := exec.Command(helm, "template", release, filepath.Join(repoRoot, "charts", "appservice-controller"),
		"--namespace", namespace,
		"--set", "watchNamespace="+watched,
		"--set", "logging.format=json",
		"--set", "extraArgs={--workers=4}",
		"--set", "networkPolicy.enabled=true",
		"--set", "image.repository=registry.example.com/appservice-controller,image.tag=e2e")
	rendered, err := render.Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	manifests := filepath.Join(t.TempDir(), "chart.yaml")
	if err := os.WriteFile(manifests, rendered, 0o644); err != nil {
		t.Fatal(err)
	}
	objects := readManifests(t, manifests)

	// The same rights as the deploy manifests give, each role rule for
	// rule (the children's as a Role in the watched namespace).
	deploy := readManifests(t, filepath.Join(repoRoot, "artifacts", "deploy", "rbac.yaml"))
	for chartRole, deployRole := range map[string]string{
		"Role/" + fullname:                            "ClusterRole/appservice-controller",
		"ClusterRole/" + fullname + "-crd-install":    "ClusterRole/appservice-controller-crd-install",
		"ClusterRole/" + fullname + "-metrics-auth":   "ClusterRole/appservice-controller-metrics-auth",
		"ClusterRole/" + fullname + "-metrics-reader": "ClusterRole/appservice-controller-metrics-reader",
		"Role/" + fullname + "-leader-election":       "Role/appservice-controller-leader-election",
	} {
		got, want := rules(t, objects, chartRole), rules(t, deploy, deployRole)
		if chartRole == "Role/"+fullname+"-leader-election" {
			// The Lease is named after the release.
			want = strings.ReplaceAll(want, `"appservice-controller"`, `"`+fullname+`"`)
		}
		if got != want {
			t.Errorf("the chart's %s rules differ from the deploy manifests' %s:\n%s\n%s", chartRole, deployRole, got, want)
		}
	}

	fresh := startFreshCluster(t)
	fresh.mustKubectl("create", "namespace", namespace)
	fresh.mustKubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")
	fresh.mustKubectl("create", "namespace", watched)
	fresh.mustKubectl("create", "namespace", "elsewhere")
	fresh.mustKubectl("apply", "-f", manifests)
	// kwok runs the chart's Pods as fakes: they pass the restricted Pod
	// Security Standard and are scheduled.
	fresh.mustKubectl("-n", namespace, "wait", "--for=condition=Available", "--timeout=90s", "deployment/"+fullname)

	args, image := controllerArgs(t, objects)
	if image != "registry.example.com/appservice-controller:e2e" {
		t.Errorf("the chart's image is %q", image)
	}
	for _, want := range []string{"--namespace=" + watched, "--logging-format=json", "--workers=4", "--install-crd=true", "--leader-election-id=" + fullname} {
		if !slices.Contains(args, want) {
			t.Errorf("the chart's controller arguments %v lack %s", args, want)
		}
	}
	p := fresh.runAs("helm", controllerBinary, namespace, fullname, args)
	example := filepath.Join(repoRoot, "artifacts", "examples", "example-appservice.yaml")
	fresh.mustKubectl("-n", watched, "apply", "-f", example)
	fresh.mustKubectl("-n", "elsewhere", "apply", "-f", example)
	fresh.mustKubectl("-n", watched, "wait", "--for=condition=Available", "--timeout=90s", "appservice/example-app")
	if out := fresh.mustKubectl("-n", "elsewhere", "get", "deployments", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("the controller scoped to %s made a Deployment elsewhere: %s", watched, out)
	}
	if out := fresh.mustKubectl("-n", "elsewhere", "get", "appservice/example-app", "-o", "jsonpath={.status}"); strings.Contains(out, "conditions") {
		t.Errorf("the controller scoped to %s wrote an AppService's status elsewhere: %s", watched, out)
	}
	// The chart's Role lets it run an Activity in the watched namespace:
	// the Job, and the Pod listed for a failed run's exit code.
	failing := filepath.Join(t.TempDir(), "failing-activity.yaml")
	if err := os.WriteFile(failing, []byte("apiVersion: app.example.com/v1\nkind: Activity\nmetadata: {name: fails}\nspec: {command: exit 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh.mustKubectl("-n", watched, "apply", "-f", filepath.Join(repoRoot, "artifacts", "examples", "tutorial-activity.yaml"), "-f", failing)
	fresh.mustKubectl("-n", watched, "wait", "--for=jsonpath={.status.prosta}=Succeeded", "--timeout=60s", "activity/sleep-once")
	fresh.mustKubectl("-n", watched, "wait", "--for=jsonpath={.status.exitCode}=3", "--timeout=60s", "activity/fails")
	if !p.LogContains(`"msg":"Informer caches synced: ready"`) {
		t.Error("the chart's controller does not log JSON")
	}
}

// rules returns the rules of the role "Kind/name" in objects, as JSON.
func rules(t *testing.T, objects []*unstructured.Unstructured, role string) string {
	t.Helper()
	for _, o := range objects {
		if o.GetKind()+"/"+o.GetName() == role {
			b, err := json.Marshal(o.Object["rules"])
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Errorf("no %s", role)
	return ""
}
