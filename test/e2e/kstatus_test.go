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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"example.com/appservice-controller/internal/argocdhealth"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

var appServicesGVR = schema.GroupVersionResource{Group: "app.example.com", Version: "v1", Resource: "appservices"}

// appServiceUnstructured is an AppService as the API serves it to a
// generic client such as kstatus or Argo CD: unstructured, with its kind.
func appServiceUnstructured(t *testing.T, as *appv1.AppService) *unstructured.Unstructured {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(as)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: u}
	obj.SetAPIVersion(appv1.SchemeGroupVersion.String())
	obj.SetKind("AppService")
	return obj
}

// TestKstatus asks kstatus itself (sigs.k8s.io/cli-utils, what Flux's
// health checks and kpt use), and Argo CD's health check
// (artifacts/argocd/health.lua, run as Argo CD runs it), what they make of
// a live AppService, read as those tools read it (unstructured, through the
// dynamic client), at each phase of its life: InProgress while its Pods start, Current once they are
// available, InProgress again mid-rollout, Failed while an unowned
// Deployment holds its name and Current once that is gone, Failed when a
// rollout cannot finish before its progress deadline, Current (and to Argo
// CD Suspended) once suspended. kubectl wait --for=condition=Ready returns
// once it is Current.
func TestKstatus(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	cfg, err := localcluster.RESTConfig(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	script, err := os.ReadFile(filepath.Join(repoRoot, "artifacts/argocd/health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	// argo checks what Argo CD says of the object kstatus judged.
	argo := func(phase string, u *unstructured.Unstructured, want string) {
		t.Helper()
		got, err := argocdhealth.Evaluate(string(script), u.Object)
		if err != nil {
			t.Fatalf("%s: Argo CD's health check: %v", phase, err)
		}
		if got.Status != want {
			t.Fatalf("%s: Argo CD's health check says %s (%s), want %s", phase, got.Status, got.Message, want)
		}
	}
	compute := func(name string) (*status.Result, *unstructured.Unstructured, error) {
		u, err := dyn.Resource(appServicesGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		res, err := status.Compute(u)
		return res, u, err
	}
	// observed waits until the controller has written the status of the
	// AppService's generation gen; then kstatus must say want of the first
	// status written for it, and Argo CD wantArgo. That status lasts only
	// as long as the rollout: it is judged from what a watch recorded, not
	// read when the test gets to it.
	recorded := map[string]*recording[version[*appv1.AppService]]{}
	for _, name := range []string{"app", "blocked"} {
		recorded[name] = record[*appv1.AppService](t, apps.AppV1().AppServices(ns).Watch, name)
	}
	observed := func(phase, name string, gen int64, want status.Status, wantArgo string) {
		t.Helper()
		var first *appv1.AppService
		recorded[name].wait(t, time.Minute, func(vs []version[*appv1.AppService]) error {
			for _, v := range vs {
				if v.obj.Generation == gen && v.obj.Status.ObservedGeneration == gen {
					first = v.obj
					return nil
				}
			}
			return fmt.Errorf("no status of generation %d of %s recorded", gen, name)
		})
		u := appServiceUnstructured(t, first)
		res, err := status.Compute(u)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != want {
			t.Fatalf("%s: kstatus says %s (%s), want %s", phase, res.Status, res.Message, want)
		}
		argo(phase, u, wantArgo)
		t.Logf("%s: %s (%s)", phase, res.Status, res.Message)
	}
	// becomes waits until kstatus says want; then Argo CD must say wantArgo
	// of the same object, which it returns.
	becomes := func(phase, name string, want status.Status, wantArgo string, timeout time.Duration) *unstructured.Unstructured {
		t.Helper()
		var obj *unstructured.Unstructured
		eventually(t, timeout, func() error {
			r, u, err := compute(name)
			if err != nil {
				return err
			}
			if r.Status != want {
				return fmt.Errorf("kstatus: %s (%s), want %s", r.Status, r.Message, want)
			}
			t.Logf("%s: %s became %s (%s)", phase, name, r.Status, r.Message)
			obj = u
			return nil
		})
		argo(phase, obj, wantArgo)
		return obj
	}

	// Pods that count as available only after 15 s ready: the rollout
	// takes long enough to be seen in progress.
	spec := appv1.AppServiceSpec{Size: int32p(2), Image: "nginx:1.27", MinReadySeconds: int32p(15)}
	as := createAppService(t, ns, "app", spec)
	observed("just created", "app", as.Generation, status.InProgressStatus, "Progressing")
	becomes("all Pods available", "app", status.CurrentStatus, "Healthy", 2*time.Minute)
	as, err = getAppService(ns, "app")
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(as, appv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != as.Generation {
		t.Fatalf("Current, but Ready is %+v", c)
	}
	if out, err := kubectl("wait", "--for=condition=Ready", "appsvc/app", "-n", ns, "--timeout=10s"); err != nil {
		t.Fatalf("kubectl wait --for=condition=Ready: %v: %s", err, out)
	}
	statusColumn(t, ns, "app", appv1.ReasonRolloutComplete)

	as = updateAppService(t, ns, "app", func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	observed("mid-rollout after an image change", "app", as.Generation, status.InProgressStatus, "Progressing")
	becomes("rolled out", "app", status.CurrentStatus, "Healthy", 2*time.Minute)

	// Suspended is what was asked: Current once at 0 replicas, and
	// Suspended to Argo CD; resumed, Healthy again.
	updateAppService(t, ns, "app", func(as *appv1.AppService) { as.Spec.Suspend = new(true) })
	becomes("suspended", "app", status.CurrentStatus, "Suspended", 2*time.Minute)
	statusColumn(t, ns, "app", appv1.ReasonSuspended)
	if out, err := kubectl("wait", "--for=condition=Suspended", "appsvc/app", "-n", ns, "--timeout=10s"); err != nil {
		t.Fatalf("kubectl wait --for=condition=Suspended: %v: %s", err, out)
	}
	as = updateAppService(t, ns, "app", func(as *appv1.AppService) { as.Spec.Suspend = new(false) })
	observed("resuming", "app", as.Generation, status.InProgressStatus, "Progressing")
	becomes("resumed", "app", status.CurrentStatus, "Healthy", 2*time.Minute)

	// An unowned Deployment of the AppService's name: only the user can
	// resolve that.
	theirs := createTheirDeployment(t, ns, "blocked")
	as = createAppService(t, ns, "blocked", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27"})
	observed("an unowned Deployment of its name", "blocked", as.Generation, status.FailedStatus, "Degraded")
	as, err = getAppService(ns, "blocked")
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(as, appv1.ConditionStalled); c == nil || c.Reason != appv1.ReasonResourceExists {
		t.Errorf("Stalled is %+v, want True with reason ResourceExists", c)
	}
	statusColumn(t, ns, "blocked", appv1.ReasonResourceExists)
	uid := theirs.UID
	if err := kube.AppsV1().Deployments(ns).Delete(ctx, "blocked", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		t.Fatal(err)
	}
	becomes("that Deployment removed", "blocked", status.CurrentStatus, "Healthy", 2*time.Minute)

	// Pods no node can take, and a short progress deadline: the rollout
	// cannot finish, and the Deployment controller says so.
	createAppService(t, ns, "stuck", appv1.AppServiceSpec{
		Size: int32p(1), Image: "nginx:1.27", ProgressDeadlineSeconds: int32p(5),
		NodeSelector: map[string]string{"kstatus.example.com/no-such-node": "true"},
	})
	// Its conditions are read from the version kstatus judged: on a loaded
	// control plane, the Deployment controller may see progress after the
	// deadline (a Pod created late) and say Progressing again until the
	// next one passes, and the AppService follows it.
	u := becomes("a rollout past its progress deadline", "stuck", status.FailedStatus, "Degraded", 2*time.Minute)
	as = &appv1.AppService{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, as); err != nil {
		t.Fatal(err)
	}
	if c := condition(as, appv1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue || c.Reason != appv1.ReasonProgressDeadlineExceeded {
		t.Errorf("Stalled is %+v, want True with reason ProgressDeadlineExceeded", c)
	}
}

// statusColumn checks the STATUS column of kubectl get: the reason of the
// Ready condition.
func statusColumn(t *testing.T, ns, name, want string) {
	t.Helper()
	out, err := kubectl("get", "appsvc", name, "-n", ns)
	if err != nil {
		t.Fatalf("kubectl get appsvc: %v: %s", err, out)
	}
	// Columns line up under their header; empty cells leave no field.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header, row := lines[0], lines[len(lines)-1]
	if i := strings.Index(header, "STATUS"); i < 0 || i >= len(row) || !strings.HasPrefix(row[i:], want+" ") {
		t.Errorf("kubectl get appsvc %s: want STATUS %s:\n%s", name, want, out)
	}
}

// TestArgoCDHealthCheckInstall runs the production guide's command that adds the
// health checks (the AppService's and the Activity's) to Argo CD's
// argocd-cm, as a user would paste it, on an argocd-cm that already holds
// settings: each script lands under its key, byte for byte, and every other
// key is kept.
func TestArgoCDHealthCheckInstall(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	const key = "resource.customizations.health.app.example.com_AppService"
	var line string
	for _, d := range readDocs(t) {
		if d.Path != "docs/production.md" {
			continue
		}
		for _, b := range d.Blocks {
			for _, l := range b.Lines {
				if strings.Contains(l, "argocd-cm") && strings.Contains(l, key) {
					line = l
				}
			}
		}
	}
	if line == "" {
		t.Fatal("docs/production.md shows no command adding the health check to argocd-cm")
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(ctx, "argocd", metav1.DeleteOptions{}) })
	settings := map[string]string{"url": "https://argocd.example.com", "timeout.reconciliation": "180s"}
	if _, err := kube.CoreV1().ConfigMaps("argocd").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm"}, Data: settings,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("bash", "-o", "pipefail", "-c", line)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	cm, err := kube.CoreV1().ConfigMaps("argocd").Get(ctx, "argocd-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, file := range map[string]string{key: "artifacts/argocd/health.lua",
		"resource.customizations.health.app.example.com_Activity": "artifacts/argocd/activity/health.lua"} {
		script, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data[k] != string(script) {
			t.Errorf("argocd-cm's %s is not %s:\n%s", k, file, cm.Data[k])
		}
	}
	for k, v := range settings {
		if cm.Data[k] != v {
			t.Errorf("argocd-cm's %s = %q after the install, want %q kept", k, cm.Data[k], v)
		}
	}
}

// TestActivityKstatus: what kstatus makes of an Activity, read as Flux and
// kpt read it, and Argo CD's health check for Activities
// (artifacts/argocd/activity/health.lua, run as Argo CD runs it):
// InProgress and Progressing while its command runs, Current and Healthy
// once it Succeeded, Failed and Degraded once it failed; kubectl wait
// --for=condition=Complete returns once it Succeeded.
func TestActivityKstatus(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	cfg, err := localcluster.RESTConfig(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	activities := appv1.SchemeGroupVersion.WithResource("activities")
	script, err := os.ReadFile(filepath.Join(repoRoot, "artifacts/argocd/activity/health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, command string
		phase         appv1.ActivityPhase
		want          status.Status
		argo          string
	}{
		{"running", "sleep 3600", appv1.ActivityRunning, status.InProgressStatus, "Progressing"},
		{"succeeded", "true", appv1.ActivitySucceeded, status.CurrentStatus, "Healthy"},
		{"failed", "exit 3", appv1.ActivityFailed, status.FailedStatus, "Degraded"},
	} {
		createActivity(t, ns, tc.name, appv1.ActivitySpec{Command: tc.command})
		waitActivity(t, ns, tc.name, tc.phase)
		u, err := dyn.Resource(activities).Namespace(ns).Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := status.Compute(u)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != tc.want {
			t.Errorf("%s: kstatus says %s (%s), want %s", tc.name, res.Status, res.Message, tc.want)
		}
		if got, err := argocdhealth.Evaluate(string(script), u.Object); err != nil || got.Status != tc.argo {
			t.Errorf("%s: Argo CD's health check says %+v (%v), want %s", tc.name, got, err, tc.argo)
		}
	}
	if out, err := kubectl("-n", ns, "wait", "--for=condition=Complete", "--timeout=10s", "activity/succeeded"); err != nil {
		t.Errorf("kubectl wait --for=condition=Complete: %v: %s", err, out)
	}
}
