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
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
)

// The deploy manifests are what an operator applies: the Deployment's Pods
// are admitted in a namespace that enforces the restricted Pod Security
// Standard, and both replicas become available (kwok runs them as fakes).
func TestDeployManifests(t *testing.T) {
	parallel(t)
	ns, err := kube.CoreV1().Namespaces().Get(context.Background(), controllerNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace %s does not enforce the restricted Pod Security Standard: %v", controllerNamespace, ns.Labels)
	}
	eventually(t, 90*time.Second, func() error {
		d, err := getDeployment(controllerNamespace, "appservice-controller")
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 2 {
			return fmt.Errorf("%d of 2 replicas available (conditions %+v)", d.Status.AvailableReplicas, d.Status.Conditions)
		}
		return nil
	})
	svc, err := getService(controllerNamespace, "appservice-controller-metrics")
	if err != nil {
		t.Fatal(err)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8443 {
		t.Errorf("metrics Service ports %+v", svc.Spec.Ports)
	}
}

// The controller's rights are exactly what it uses: the whole suite runs
// with them, and what it does not need is refused.
func TestRBACIsLeastPrivilege(t *testing.T) {
	parallel(t)
	cfg, err := localcluster.RESTConfig(controllerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	asController := kubernetes.NewForConfigOrDie(cfg)
	appsAsController := clientset.NewForConfigOrDie(cfg)
	ctx := context.Background()
	ns := newNamespace(t)
	createAppService(t, ns, "rbac", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}}})
	waitAvailable(t, ns, "rbac", 1)

	forbidden := map[string]func() error{
		// rolloutOnConfigChange reads Secrets; it never writes one.
		"update a Secret": func() error {
			_, err := asController.CoreV1().Secrets(ns).Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.UpdateOptions{})
			return err
		},
		"create a ConfigMap": func() error {
			_, err := asController.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, metav1.CreateOptions{})
			return err
		},
		// An Activity's Pod is listed once, for its exit code; Pods are
		// never watched, read one by one, or written.
		"watch pods": func() error {
			w, err := asController.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		},
		"get a Pod": func() error {
			_, err := asController.CoreV1().Pods(ns).Get(ctx, "any", metav1.GetOptions{})
			return err
		},
		"delete a Pod": func() error {
			return asController.CoreV1().Pods(ns).Delete(ctx, "any", metav1.DeleteOptions{})
		},
		// Jobs are created and patched; the garbage collector deletes them.
		"delete a Job": func() error {
			return asController.BatchV1().Jobs(ns).Delete(ctx, "any", metav1.DeleteOptions{})
		},
		"write a Job's status": func() error {
			_, err := asController.BatchV1().Jobs(ns).Patch(ctx, "any", types.MergePatchType, []byte(`{"status":{"active":1}}`), metav1.PatchOptions{}, "status")
			return err
		},
		// A canary's tests are Activities it creates, claims (a patch of
		// their owners) and deletes, one by one; it never updates one
		// whole, nor deletes a collection.
		"update an Activity": func() error {
			_, err := appsAsController.AppV1().Activities(ns).Update(ctx, &appv1.Activity{
				ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: appv1.ActivitySpec{Command: "true"},
			}, metav1.UpdateOptions{})
			return err
		},
		"delete Activities by the collection": func() error {
			return appsAsController.AppV1().Activities(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
		// It deletes a canary's Deployment, one by one (its UID as a
		// precondition), never a collection.
		"delete Deployments by the collection": func() error {
			return asController.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
		// Children are changed by patches of the owned fields, never
		// written whole.
		"update a Deployment": func() error {
			d, err := asController.AppsV1().Deployments(ns).Get(ctx, "rbac", metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get: %w", err)
			}
			_, err = asController.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
			return err
		},
		"patch a ConfigMap": func() error {
			_, err := asController.CoreV1().ConfigMaps(ns).Patch(ctx, "kube-root-ca.crt", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		},
		"create an AppService": func() error {
			_, err := appsAsController.AppV1().AppServices(ns).Create(ctx, &appv1.AppService{
				ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: appv1.AppServiceSpec{Image: "nginx"},
			}, metav1.CreateOptions{})
			return err
		},
		"delete an AppService": func() error {
			return appsAsController.AppV1().AppServices(ns).Delete(ctx, "rbac", metav1.DeleteOptions{})
		},
		"read another CRD": func() error {
			_, err := asController.RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/other.example.com").DoRaw(ctx)
			return err
		},
		"read a Lease of another name": func() error {
			_, err := asController.CoordinationV1().Leases(controllerNamespace).Get(ctx, "someone-else", metav1.GetOptions{})
			return err
		},
		// What the new children do not need: minting tokens for the
		// ServiceAccounts it creates, binding roles to them, writing the
		// status the disruption and autoscaling controllers own.
		"mint a ServiceAccount token": func() error {
			_, err := asController.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		},
		"bind a role": func() error {
			_, err := asController.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "mine"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}},
			}, metav1.CreateOptions{})
			return err
		},
		"write a PodDisruptionBudget's status": func() error {
			_, err := asController.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, "rbac", types.MergePatchType, []byte(`{"status":{"disruptionsAllowed":5}}`), metav1.PatchOptions{}, "status")
			return err
		},
		"write a HorizontalPodAutoscaler's status": func() error {
			_, err := asController.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(ctx, "rbac", types.MergePatchType, []byte(`{"status":{"desiredReplicas":5}}`), metav1.PatchOptions{}, "status")
			return err
		},
		"write an HTTPRoute's status": func() error {
			_, err := asController.RESTClient().Patch(types.MergePatchType).AbsPath("/apis/gateway.networking.k8s.io/v1/namespaces", ns, "httproutes", "rbac", "status").
				Body([]byte(`{"status":{"parents":[]}}`)).DoRaw(ctx)
			return err
		},
		"list Gateways": func() error {
			_, err := asController.RESTClient().Get().AbsPath("/apis/gateway.networking.k8s.io/v1/namespaces", ns, "gateways").DoRaw(ctx)
			return err
		},
		"read a Lease in another namespace": func() error {
			_, err := asController.CoordinationV1().Leases(ns).Get(ctx, "appservice-controller", metav1.GetOptions{})
			return err
		},
	}
	for what, call := range forbidden {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: got %v, want Forbidden", what, err)
		}
	}
	// And what it needs is allowed (the rest of the suite depends on it).
	if _, err := appsAsController.AppV1().AppServices(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list AppServices: %v", err)
	}
	if _, err := appsAsController.AppV1().Activities(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list Activities: %v", err)
	}
	if _, err := asController.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: appv1.LabelActivity}); err != nil {
		t.Errorf("list an Activity's Pods: %v", err)
	}
}

// Two replicas with leader election: exactly one writes; killed, the other
// takes over within the lease duration and applies what changed meanwhile;
// stopped with SIGTERM, the leader hands over at once.
func TestLeaderElection(t *testing.T) {
	serial(t, 1)
	ns := newNamespace(t)
	a := ctrl
	idA, err := a.Identity()
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, idA, 20*time.Second)

	b, err := newControllerProcess("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, later tests get A back as the running controller.
	t.Cleanup(func() {
		_, _ = b.Stop(syscall.SIGTERM)
		ctrl = a
		if a.Exited() != nil {
			if err := a.Start(); err != nil {
				t.Error(err)
			}
		}
	})
	if err := b.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	idB, err := b.Identity()
	if err != nil {
		t.Fatal(err)
	}

	// Only the leader writes; the standby is ready, with warm caches.
	since := time.Now()
	createAppService(t, ns, "ha", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.25", Ports: []corev1.ServicePort{{Port: 80}}})
	waitAvailable(t, ns, "ha", 1)
	checkWriters(t, since, ns, idA, idB)

	// SIGKILL the leader: no release, the standby waits out the lease.
	// B is the controller the helpers watch while A is down.
	ctrl = b
	if _, err := a.Stop(syscall.SIGKILL); err == nil {
		t.Fatal("the killed controller exited cleanly?")
	}
	killed := time.Now()
	updateAppService(t, ns, "ha", func(as *appv1.AppService) { as.Spec.Image = "nginx:1.26" })
	waitImage(t, ns, "ha", "nginx:1.26", 30*time.Second)
	// The standby takes over once the lease it last saw renewed has run
	// out. client-go waits between RetryPeriod and RetryPeriod×(1+
	// JitterFactor) between tries, so the standby may see the last renewal
	// up to one such wait late, and try again up to one such wait after the
	// expiry: with the default 15 s lease and 2 s retry period, up to 23.8 s
	// after the kill, plus a second for the sync itself.
	const leaseDuration, retryPeriod = 15 * time.Second, 2 * time.Second
	maxWait := time.Duration(float64(retryPeriod) * (1 + leaderelection.JitterFactor))
	if took, bound := time.Since(killed), leaseDuration+2*maxWait+time.Second; took > bound {
		t.Errorf("the standby took %s to apply a change after the leader died; lease duration %s, bound %s", took, leaseDuration, bound)
	} else {
		t.Logf("failover after SIGKILL: change applied %s after the kill", took.Round(time.Millisecond))
	}
	waitLeader(t, idB, time.Second)
	checkWriters(t, killed, ns, idB, idA)

	// SIGTERM the leader: it releases the lease and the standby (A again)
	// takes over at once, not after the lease duration.
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if idA, err = a.Identity(); err != nil {
		t.Fatal(err)
	}
	ctrl = a
	took, err := b.Stop(syscall.SIGTERM)
	if err != nil {
		t.Errorf("the leader exited with %v after SIGTERM, want 0", err)
	}
	if took > 5*time.Second {
		t.Errorf("the leader took %s to stop", took)
	}
	stopped := time.Now()
	updateAppService(t, ns, "ha", func(as *appv1.AppService) { as.Spec.Image = "nginx:1.27" })
	waitImage(t, ns, "ha", "nginx:1.27", 30*time.Second)
	if took := time.Since(stopped); took > 8*time.Second {
		t.Errorf("hand-over after SIGTERM took %s: the lease was not released", took)
	} else {
		t.Logf("hand-over after SIGTERM: change applied %s after the stop", took.Round(time.Millisecond))
	}
	waitLeader(t, idA, time.Second)
}

// waitLeader waits until the Lease names identity as its holder.
func waitLeader(t *testing.T, identity string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() error {
		lease, err := kube.CoordinationV1().Leases(controllerNamespace).Get(context.Background(), "appservice-controller", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != identity {
			return fmt.Errorf("lease held by %v, want %s", lease.Spec.HolderIdentity, identity)
		}
		return nil
	})
}

func waitImage(t *testing.T, ns, name, image string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() error {
		d, err := getDeployment(ns, name)
		if err != nil {
			return err
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
			return fmt.Errorf("image %s, want %s", got, image)
		}
		return nil
	})
}

// checkWriters checks that the controller's writes in ns since t0 all came
// from the replica with identity writer, and at least one did.
func checkWriters(t *testing.T, since time.Time, ns, writer, other string) {
	t.Helper()
	writes := controllerWrites(t, since, ns)
	if len(writes) == 0 {
		t.Errorf("no writes by the controller in %s", ns)
	}
	for _, w := range writes {
		if strings.Contains(w.UserAgent, other) || !strings.Contains(w.UserAgent, writer) {
			t.Errorf("write by a replica that does not lead (user agent %q): %s", w.UserAgent, w)
		}
	}
}

// /readyz answers 500 (a failed check) until the informer caches have
// synced and 200 after; /healthz 200; ?verbose names the checks; /metrics
// answers only an authorized token, with the workqueue, reconcile, REST
// client, leader election, build info, Go and process series.
func TestProbesAndMetrics(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)

	t.Run("readyz waits for the caches", func(t *testing.T) {
		// A replica whose identity may not list AppServices yet: its caches
		// cannot sync until it may.
		const user = "appservice-controller-late"
		kubeconfig, err := cluster.MintUser(user)
		if err != nil {
			t.Fatal(err)
		}
		// The last -kubeconfig wins over the ServiceAccount's. This one
		// logs JSON.
		late, err := newControllerProcess("late", "-kubeconfig="+kubeconfig, "-install-crd=false", "-leader-elect=false", "-namespace="+ns,
			"-logging-format=json")
		if err != nil {
			t.Fatal(err)
		}
		if err := late.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = late.Stop(syscall.SIGTERM) })

		// Its caches cannot sync before the binding below exists, however
		// long the process takes to start under load: every answer until
		// then must be a failed check. Counted in answers, not seconds.
		const answers = 20
		deadline := time.Now().Add(90 * time.Second)
		for n := 0; n < answers; {
			code, _, err := late.Get(late.ProbeAddr, "/readyz")
			switch {
			case err == nil && code != http.StatusInternalServerError:
				t.Fatalf("/readyz answered %d before the caches could sync, want 500 (a failed check)", code)
			case err == nil:
				n++
			case late.Exited() != nil:
				t.Fatal(late.Exited())
			case time.Now().After(deadline):
				t.Fatalf("/readyz answered %d times in 90 s, want %d: %v", n, answers, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if code, _, err := late.Get(late.ProbeAddr, "/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("/healthz: %d %v, want 200", code, err)
		}
		if _, body, err := late.Get(late.ProbeAddr, "/readyz?verbose"); err != nil || !strings.Contains(body, "[-]informer-sync failed") {
			t.Errorf("/readyz?verbose before the caches synced: %q %v, want the failed informer-sync check named", body, err)
		}

		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "appservice-controller"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{}) })
		if err := late.WaitReady(90 * time.Second); err != nil {
			t.Fatal(err)
		}
		if _, body, err := late.Get(late.ProbeAddr, "/readyz?verbose"); err != nil || !strings.Contains(body, "[+]informer-sync ok") {
			t.Errorf("/readyz?verbose once ready: %q %v", body, err)
		}
		logged, err := os.ReadFile(late.Log)
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, line := range strings.Split(string(logged), "\n") {
			if line == "" || strings.HasPrefix(line, "===== starting") {
				continue
			}
			var entry struct{ Msg string }
			if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Msg == "" {
				t.Errorf("-logging-format=json wrote a line that is not a JSON log entry: %q", line)
			}
			lines++
		}
		if lines == 0 || !strings.Contains(string(logged), `"msg":"Informer caches synced: ready"`) {
			t.Errorf("-logging-format=json: %d lines, none saying the caches synced", lines)
		}
		// With leader election, liveness also checks the Lease's renewal.
		if _, body, err := ctrl.Get(ctrl.ProbeAddr, "/healthz?verbose"); err != nil || !strings.Contains(body, "[+]leaderElection ok") {
			t.Errorf("/healthz?verbose of a replica with leader election: %q %v", body, err)
		}
	})

	// /metrics is HTTPS and asks the real API server about each caller:
	// the controller, running with the deploy manifests' RBAC, reviews the
	// token (TokenReview) and the caller's right to get /metrics
	// (SubjectAccessReview).
	t.Run("metrics need a token with the metrics-reader role", func(t *testing.T) {
		if code, body, err := ctrl.Metrics(""); err != nil || code != http.StatusUnauthorized {
			t.Errorf("/metrics without a token: %d %v %.200s, want 401", code, err, body)
		}
		if code, body, err := ctrl.Metrics("not-a-token"); err != nil || code != http.StatusUnauthorized {
			t.Errorf("/metrics with a bad token: %d %v %.200s, want 401", code, err, body)
		}
		if code, body, err := ctrl.Metrics(serviceAccountToken(t, ns, "no-metrics")); err != nil || code != http.StatusForbidden {
			t.Errorf("/metrics with a token without the role: %d %v %.200s, want 403", code, err, body)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		createAppService(t, ns, "metrics", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27"})
		waitAvailable(t, ns, "metrics", 1)
		body := scrape(t, ns)
		// The build's version, as -version prints it, labels the build info.
		out, err := exec.Command(controllerBinary, "-version").Output()
		if err != nil {
			t.Fatal(err)
		}
		version := strings.Fields(string(out))[1]
		if !strings.HasPrefix(version, "v") || !strings.Contains(body, `appservice_controller_build_info{build_date="`) ||
			!strings.Contains(body, `git_version="`+version+`"`) {
			t.Errorf("-version says %q; build info series: %q", out, regexp.MustCompile(`appservice_controller_build_info\{.*`).FindString(body))
		}
		positive := []string{
			`workqueue_adds_total{name="appservices"}`,
			`workqueue_work_duration_seconds_count{name="appservices"}`,
			`controller_runtime_reconcile_total{controller="appservice",result="success"}`,
			`controller_runtime_reconcile_time_seconds_count{controller="appservice"}`,
			`leader_election_master_status{name="appservice-controller"}`,
			`process_resident_memory_bytes`,
			`go_goroutines`,
		}
		for _, series := range positive {
			if v, ok := metricValue(body, series); !ok || v <= 0 {
				t.Errorf("%s = %v (present: %v), want > 0", series, v, ok)
			}
		}
		present := []string{"workqueue_depth", "workqueue_retries_total", "workqueue_unfinished_work_seconds",
			"workqueue_longest_running_processor_seconds", "workqueue_queue_duration_seconds_bucket",
			"controller_runtime_reconcile_errors_total", "rest_client_requests_total"}
		for _, name := range present {
			if !strings.Contains(body, "\n"+name) {
				t.Errorf("no %s series", name)
			}
		}
		if !regexp.MustCompile(`rest_client_requests_total\{code="20[01]",host="[^"]+",method="(GET|PUT|POST)"\} [1-9]`).MatchString(body) {
			t.Error("rest_client_requests_total has no successful request counted")
		}
	})
}

// scrape reads the controller's /metrics as a scraper would: with the
// token of a ServiceAccount in ns bound to the metrics-reader ClusterRole.
func scrape(t *testing.T, ns string) string {
	t.Helper()
	token := metricsToken(t, ns)
	var body string
	eventually(t, 30*time.Second, func() error { // the API server's RBAC cache sees the binding
		code, b, err := ctrl.Metrics(token)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/metrics with the metrics-reader role: %d %v %.200s", code, err, b)
		}
		body = b
		return nil
	})
	return body
}

// metricsToken returns the token of a ServiceAccount in ns bound to the
// metrics-reader ClusterRole, a scraper's.
func metricsToken(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	token := serviceAccountToken(t, ns, "scraper")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "appservice-controller-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })
	return token
}

// serviceAccountToken creates a ServiceAccount in ns and returns a token
// of it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// metricValue finds a series (name and labels exactly as exposed) in a
// Prometheus text exposition.
func metricValue(body, series string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, series+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil
	}
	return 0, false
}
