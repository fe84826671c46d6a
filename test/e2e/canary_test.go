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
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestCanary: spec.canary, end to end, in three namespaces at once.
//   - promote: an image change goes out as a canary of three steps. The
//     route's weights go 10 → 50 → 100 and back to the one Service, each
//     step once its Pods are available; the canary's replicas follow its
//     weight of the autoscaled stable count; the stable Deployment, its
//     PodDisruptionBudget and its sidecar are untouched until the
//     promotion; kstatus reads InProgress, then Current; nothing is
//     written during a pause, nor once promoted.
//   - deadline: a canary whose Pods never become ready is aborted at the
//     progress deadline (Stalled, CanaryAborted, kstatus Failed, a Warning
//     Event), the stable Pods serving all along; a config change
//     (rolloutOnConfigChange) then goes out as a canary, and is promoted.
//   - abort: spec.canary.abort sends all the traffic back in one write,
//     and the canary's Pods go; false again starts a new canary.
func TestCanary(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	t.Run("promote", func(t *testing.T) { t.Parallel(); testCanaryPromote(t) })
	t.Run("deadline", func(t *testing.T) { t.Parallel(); testCanaryDeadline(t) })
	t.Run("abort", func(t *testing.T) { t.Parallel(); testCanaryAbort(t) })
}

func testCanaryPromote(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "shop"
	spec := canarySpec(appv1.CanaryStep{Weight: 10, PauseSeconds: 2}, appv1.CanaryStep{Weight: 50, PauseSeconds: 30}, appv1.CanaryStep{Weight: 100, PauseSeconds: 5})
	spec.Autoscaling = &appv1.Autoscaling{MinReplicas: int32p(4), MaxReplicas: 8}
	spec.DisruptionBudget = &appv1.DisruptionBudget{MinAvailable: new(intstr.FromInt32(3))}
	spec.Sidecars = []appv1.Container{{Name: "proxy", Image: "envoyproxy/envoy:v1.31"}}
	createAppService(t, ns, name, spec)
	as := waitAvailable(t, ns, name, 4)
	if as.Status.Canary == nil || as.Status.Canary.StableTemplateHash == "" {
		t.Fatalf("status.canary of a new AppService with spec.canary: %+v, want the stable template's hash", as.Status.Canary)
	}
	oldHash := as.Status.Canary.StableTemplateHash
	stable, err := getDeployment(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	weights := watchRouteWeights(t, ns, name)
	edges := watchCanaryEdges(t, ns, name)
	since := time.Now()

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	for i, step := range []struct{ weight, replicas int32 }{{10, 1}, {50, 2}, {100, 4}} {
		waitCanaryWeight(t, ns, name, int32(i), step.weight)
		if kstatusOf(t, ns, name) != status.InProgressStatus {
			t.Errorf("step %d: kstatus says %s, want InProgress", i+1, kstatusOf(t, ns, name))
		}
		c := checkCanaryDeployment(t, ns, name, step.replicas, "nginx:1.28")
		if containerNamed(c, "proxy") == nil && !slices.ContainsFunc(c.Spec.Template.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "proxy" }) {
			t.Errorf("step %d: the canary's Pods lost the sidecar", i+1)
		}
		// The stable Deployment is as it was: not one write, and its
		// budget counts its own Pods only.
		d, err := getDeployment(ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if d.Generation != stable.Generation || appImage(d) != "nginx:1.27" {
			t.Errorf("step %d: the stable Deployment at generation %d, image %s; want %d and nginx:1.27", i+1, d.Generation, appImage(d), stable.Generation)
		}
		pdb, err := kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pdb.Status.ExpectedPods != 4 {
			t.Errorf("step %d: the PodDisruptionBudget expects %d Pods, want the 4 stable ones", i+1, pdb.Status.ExpectedPods)
		}
		if i == 1 {
			// Mid-pause (30 s): two syncs, a resync among them, and
			// not one write.
			pause := time.Now()
			waitSyncs(t, ns, name, 2)
			for _, w := range canaryWrites(t, pause, ns) {
				t.Errorf("write by the controller during a canary's pause: %s", w)
			}
			if as, err := getAppService(ns, name); err != nil {
				t.Fatal(err)
			} else if *as.Status.Canary.Step != 1 {
				t.Fatalf("the pause ended before the check did: status.canary %+v", as.Status.Canary)
			}
		}
	}

	// Promoted: every Pod runs the new template behind the one Service.
	as = waitCanaryDone(t, ns, name)
	if as.Status.Canary.StableTemplateHash == oldHash {
		t.Errorf("the stable template's hash is still %s after the promotion", oldHash)
	}
	if k := kstatusOf(t, ns, name); k != status.CurrentStatus {
		t.Errorf("kstatus says %s once promoted, want Current", k)
	}
	if d, err := getDeployment(ns, name); err != nil || appImage(d) != "nginx:1.28" {
		t.Errorf("the stable Deployment once promoted: %v, image %s, want nginx:1.28", err, appImage(d))
	}
	checkCanaryGone(t, ns, name)
	eventually(t, 30*time.Second, func() error {
		if got, want := weights(), []int32{0, 10, 50, 100, 0}; !slices.Equal(got, want) {
			return fmt.Errorf("the route's canary weights went %v, want %v", got, want)
		}
		return nil
	})
	if got, want := edges(), []string{"0@0%", "0@10%", "1@10%", "1@50%", "2@50%", "2@100%", "3@100%"}; !slices.Equal(got, want) {
		t.Errorf("the canary's edges went %v, want %v", got, want)
	}
	for _, reason := range []string{appv1.ReasonCanaryStep, appv1.ReasonCanaryPromoted} {
		n := 0
		for _, e := range events(t, ns, name, reason) {
			n += int(e.Count)
		}
		if want := map[string]int{appv1.ReasonCanaryStep: 3, appv1.ReasonCanaryPromoted: 1}[reason]; n != want {
			t.Errorf("%d %s Events, want %d", n, reason, want)
		}
	}
	t.Logf("writes of a canary of three steps: %s", summarize(canaryWrites(t, since, ns)))

	// In line again: not one write.
	waitSyncs(t, ns, name, 1)
	steady := time.Now()
	waitSyncs(t, ns, name, 2)
	for _, w := range canaryWrites(t, steady, ns) {
		t.Errorf("write by the controller once promoted and in line: %s", w)
	}
}

func testCanaryDeadline(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	const name = "risky"
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "a"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec := canarySpec(appv1.CanaryStep{Weight: 20, PauseSeconds: 5}, appv1.CanaryStep{Weight: 100})
	spec.Size, spec.ProgressDeadlineSeconds = int32p(2), int32p(10)
	spec.RolloutOnConfigChange = true
	spec.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 2)

	// Pods that start and never become ready.
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "example.com/never-ready:1" })
	eventually(t, time.Minute, func() error {
		_, err := getDeployment(ns, children.CanaryName(&appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		return err
	})
	as := waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "not available within the progress deadline")
	if k := kstatusOf(t, ns, name); k != status.FailedStatus {
		t.Errorf("kstatus says %s of an aborted canary, want Failed", k)
	}
	if as.Status.Canary.AbortedTemplateHash == "" {
		t.Errorf("status.canary of an aborted canary: %+v, want the aborted template", as.Status.Canary)
	}
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryAborted, "progress deadline")
	checkCanaryGone(t, ns, name)
	// The stable Pods never stopped serving.
	if d, err := getDeployment(ns, name); err != nil || d.Status.AvailableReplicas != 2 || appImage(d) != "nginx:1.27" {
		t.Errorf("the stable Deployment after the abort: %v, %d available, image %s; want 2 of nginx:1.27", err, d.Status.AvailableReplicas, appImage(d))
	}

	// The running image again: nothing to canary, nothing aborted.
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.27" })
	waitCanaryDone(t, ns, name)
	// A config change goes out as a canary.
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "b"},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCanaryWeight(t, ns, name, 0, 20)
	waitCanaryDone(t, ns, name)
	checkCanaryGone(t, ns, name)
}

func testCanaryAbort(t *testing.T) {
	ns := newNamespace(t)
	const name = "undo"
	createAppService(t, ns, name, canarySpec(appv1.CanaryStep{Weight: 50, PauseSeconds: 600}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	weights := watchRouteWeights(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	waitCanaryWeight(t, ns, name, 0, 50)
	checkCanaryDeployment(t, ns, name, 1, "nginx:1.28")

	since := time.Now()
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Canary.Abort = true })
	waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "spec.canary.abort is true")
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryAborted, "spec.canary.abort is true")
	checkCanaryGone(t, ns, name)
	if k := kstatusOf(t, ns, name); k != status.FailedStatus {
		t.Errorf("kstatus says %s of an aborted canary, want Failed", k)
	}
	routeWrites := 0
	for _, w := range canaryWrites(t, since, ns) {
		if w.ObjectRef.Resource == "httproutes" {
			routeWrites++
		}
	}
	if routeWrites != 1 {
		t.Errorf("%d writes of the HTTPRoute to abort, want one", routeWrites)
	}
	if got, want := weights(), []int32{0, 50, 0}; !slices.Equal(got, want) {
		t.Errorf("the route's canary weights went %v, want %v", got, want)
	}

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Canary.Abort = false })
	waitCanaryWeight(t, ns, name, 0, 50)
}

// TestCanaryRestart: the controller killed (SIGKILL) at each edge of a
// canary, right after it recorded the edge, and restarted: no step is
// skipped nor taken twice, no pause starts over, and the route never sends
// traffic to a canary without available Pods. Serial: it restarts the
// suite's controller.
func TestCanaryRestart(t *testing.T) {
	serial(t)
	installGatewayAPI(t)
	// A short lease, so that each restarted process takes over from the
	// killed one in seconds rather than the default 15.
	swapController(t, "canary-restarts", "-leader-elect-lease-duration=4s", "-leader-elect-renew-deadline=3s", "-leader-elect-retry-period=1s")
	ns := newNamespace(t)
	const name = "sturdy"
	createAppService(t, ns, name, canarySpec(
		appv1.CanaryStep{Weight: 10, PauseSeconds: 8}, appv1.CanaryStep{Weight: 50, PauseSeconds: 8}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	weights := watchRouteWeights(t, ns, name)
	edges := watchCanaryEdges(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	// Killed as soon as each of the first six edges is recorded: step i's
	// Pods asked for, then its weight routed (its pause begun).
	for k := 1; k <= 6; k++ {
		eventually(t, 2*time.Minute, func() error {
			if got := edges(); len(got) < k {
				return fmt.Errorf("edges so far %v, waiting for edge %d", got, k)
			}
			return nil
		})
		restartController(t)
	}
	waitCanaryDone(t, ns, name)
	checkCanaryGone(t, ns, name)
	// Each edge once (a pause begun again would show a second start), in
	// order, none skipped. The last step has no pause: its promotion
	// follows its weight at once, so the kill after 2@100% may fall
	// between the promotion's Deployment write and its status write; the
	// next process then finds the stable Pods on the canary's template and,
	// once they have rolled out, ends the canary without ever recording
	// 3@100% (the route kept 100% until then: the weights below).
	want := []string{"0@0%", "0@10%", "1@10%", "1@50%", "2@50%", "2@100%", "3@100%"}
	if got := edges(); !slices.Equal(got, want) && !slices.Equal(got, want[:6]) {
		t.Errorf("the canary's edges went %v, want %v", got, want)
	}
	eventually(t, 30*time.Second, func() error {
		if got, want := weights(), []int32{0, 10, 50, 100, 0}; !slices.Equal(got, want) {
			return fmt.Errorf("the route's canary weights went %v, want %v", got, want)
		}
		return nil
	})
}

// watchCanaryEdges watches the AppService until the test ends and returns
// the canary's edges it recorded so far, each as "STEP@WEIGHT%" once for
// each time the step's stage began (status.canary's stepStartTime).
func watchCanaryEdges(t *testing.T, ns, name string) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := apps.AppV1().AppServices(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	var edges sequence[string]
	seen := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			as, ok := ev.Object.(*appv1.AppService)
			if !ok || as.Status.Canary == nil || as.Status.Canary.Step == nil || as.Status.Canary.StepStartTime == nil {
				continue
			}
			c := as.Status.Canary
			edge := fmt.Sprintf("%d@%d%%", *c.Step, c.Weight)
			if key := edge + " " + c.StepStartTime.String(); !seen[key] {
				seen[key] = true
				edges.update(func(e []string) []string { return append(e, edge) })
			}
		}
	}()
	return edges.snapshot
}

// sequence is what a watch saw so far, for the test to read while the
// watch goes on.
type sequence[T any] struct {
	mu    sync.Mutex
	items []T
}

// update replaces the items with what f makes of them.
func (s *sequence[T]) update(f func([]T) []T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = f(s.items)
}

// snapshot is a copy of the items.
func (s *sequence[T]) snapshot() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.items)
}

// restartController kills the suite's controller and starts it again.
func restartController(t *testing.T) {
	t.Helper()
	if _, err := ctrl.Stop(syscall.SIGKILL); err == nil {
		t.Fatal("the killed controller exited cleanly?")
	}
	if err := ctrl.Start(); err != nil {
		t.Fatal(err)
	}
}

// canarySpec is an AppService of one replica behind an HTTPRoute, with a
// canary of these steps.
func canarySpec(steps ...appv1.CanaryStep) appv1.AppServiceSpec {
	return appv1.AppServiceSpec{
		Size: int32p(1), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		HTTPRoute: &appv1.HTTPRoute{
			ParentRefs: []gatewayv1.ParentReference{{Name: "public", Namespace: new(gatewayv1.Namespace("infra"))}},
			Hostnames:  []gatewayv1.Hostname{"canary.example.com"},
		},
		Canary: &appv1.Canary{Steps: steps},
	}
}

// installGatewayAPI installs the Gateway API's CRDs (TestHTTPRoute may
// have already).
func installGatewayAPI(t *testing.T) {
	t.Helper()
	if err := localcluster.InstallGatewayAPI(context.Background(), adminConfig(t)); err != nil {
		t.Fatal(err)
	}
}

// adminConfig is the cluster's admin rest.Config.
func adminConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := localcluster.RESTConfig(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// gatewayAPI is the Gateway API's client, as the admin.
func gatewayAPI(t *testing.T) gatewayclient.Interface {
	t.Helper()
	return gatewayclient.NewForConfigOrDie(adminConfig(t))
}

// watchRouteWeights watches the AppService's HTTPRoute until the test ends
// and returns what it saw so far: the canary's weight in each version of
// the route (0 with one backend), consecutive repeats once. A version that
// sends the canary traffic while its Deployment has no available Pod fails
// the test.
func watchRouteWeights(t *testing.T, ns, name string) func() []int32 {
	t.Helper()
	var seen sequence[int32]
	var lost []string
	done := make(chan struct{})
	// Last (cleanups run in reverse): once the watch below has stopped.
	t.Cleanup(func() {
		<-done
		for _, l := range lost {
			t.Error(l)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := gatewayAPI(t).GatewayV1().HTTPRoutes(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		close(done)
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			r, ok := ev.Object.(*gatewayv1.HTTPRoute)
			if !ok {
				continue
			}
			weight := int32(0)
			if len(r.Spec.Rules) > 0 && len(r.Spec.Rules[0].BackendRefs) == 2 {
				weight = *r.Spec.Rules[0].BackendRefs[1].Weight
			}
			if weight > 0 {
				// No traffic lost: a weighted canary has a Pod to serve it.
				if d, err := getDeployment(ns, name+"-canary"); err != nil || d.Status.AvailableReplicas == 0 {
					lost = append(lost, fmt.Sprintf("the route sends the canary %d%% (resourceVersion %s) while its Deployment has no available Pod: %v",
						weight, r.ResourceVersion, err))
				}
			}
			seen.update(func(w []int32) []int32 {
				if len(w) > 0 && w[len(w)-1] == weight {
					return w
				}
				return append(w, weight)
			})
		}
	}()
	return seen.snapshot
}

// waitCanaryWeight waits until the AppService's canary is at step (its
// index) with weight routed, and the HTTPRoute says so: the canary's
// Service gets weight while its Pods are available.
func waitCanaryWeight(t *testing.T, ns, name string, step, weight int32) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error {
		as, err := getAppService(ns, name)
		if err != nil {
			return err
		}
		c := as.Status.Canary
		if c == nil || c.Step == nil || *c.Step != step || c.Weight != weight || as.Status.ObservedGeneration != as.Generation {
			return fmt.Errorf("status.canary %s, want step %d at %d%%", canaryString(c), step, weight)
		}
		return nil
	})
}

// waitCanaryDone waits until no canary is under way: the stable
// Deployment runs the spec's template on every replica, the AppService is
// Ready.
func waitCanaryDone(t *testing.T, ns, name string) *appv1.AppService {
	t.Helper()
	var as *appv1.AppService
	eventually(t, 2*time.Minute, func() error {
		var err error
		if as, err = getAppService(ns, name); err != nil {
			return err
		}
		c, ready := as.Status.Canary, condition(as, appv1.ConditionReady)
		switch {
		case as.Status.ObservedGeneration != as.Generation:
			return fmt.Errorf("observedGeneration %d, generation %d", as.Status.ObservedGeneration, as.Generation)
		case c == nil || c.CanaryTemplateHash != "" || c.StableTemplateHash == "":
			return fmt.Errorf("status.canary %s, want the stable template only", canaryString(c))
		case ready == nil || ready.Status != metav1.ConditionTrue:
			return fmt.Errorf("Ready is %+v", ready)
		}
		return nil
	})
	return as
}

// waitStalled waits until the AppService is Stalled for reason, its
// message containing msg.
func waitStalled(t *testing.T, ns, name, reason, msg string) *appv1.AppService {
	t.Helper()
	var as *appv1.AppService
	eventually(t, 2*time.Minute, func() error {
		var err error
		if as, err = getAppService(ns, name); err != nil {
			return err
		}
		c := condition(as, appv1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason || !strings.Contains(c.Message, msg) ||
			as.Status.ObservedGeneration != as.Generation {
			return fmt.Errorf("Stalled is %+v, want True, %s, %q", c, reason, msg)
		}
		return nil
	})
	return as
}

// checkCanaryDeployment waits until the canary's Deployment runs image
// at replicas, every one available, and checks its Pods' labels.
func checkCanaryDeployment(t *testing.T, ns, name string, replicas int32, image string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	eventually(t, time.Minute, func() error {
		var err error
		if d, err = getDeployment(ns, name+"-canary"); err != nil {
			return err
		}
		if *d.Spec.Replicas != replicas || appImage(d) != image || d.Status.AvailableReplicas != replicas {
			return fmt.Errorf("the canary's Deployment at %d replicas (%d available) of %s, want %d of %s",
				*d.Spec.Replicas, d.Status.AvailableReplicas, appImage(d), replicas, image)
		}
		return nil
	})
	l := d.Spec.Template.Labels
	if l[appv1.LabelCanary] != name || l[appv1.LabelAppService] != "" {
		t.Errorf("the canary's Pod labels %v: want %s and not %s", l, appv1.LabelCanary, appv1.LabelAppService)
	}
	return d
}

// checkCanaryGone waits until the canary's Deployment and Service are
// gone and the route has one backend, the Service.
func checkCanaryGone(t *testing.T, ns, name string) {
	t.Helper()
	routes := gatewayAPI(t).GatewayV1().HTTPRoutes(ns)
	eventually(t, time.Minute, func() error {
		if _, err := getDeployment(ns, name+"-canary"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the canary's Deployment: %v, want it gone", err)
		}
		if _, err := getService(ns, name+"-canary"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the canary's Service: %v, want it gone", err)
		}
		r, err := routes.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, rule := range r.Spec.Rules {
			if len(rule.BackendRefs) != 1 || string(rule.BackendRefs[0].Name) != name {
				return fmt.Errorf("the route's backends %+v, want the Service %s alone", rule.BackendRefs, name)
			}
		}
		return nil
	})
}

// kstatusOf is what kstatus concludes of the live AppService.
func kstatusOf(t *testing.T, ns, name string) status.Status {
	t.Helper()
	u, err := dynamic.NewForConfigOrDie(adminConfig(t)).Resource(appServicesGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

// canaryWrites are the controller's writes in ns since then, but for
// Events.
func canaryWrites(t *testing.T, since time.Time, ns string) []localcluster.AuditEvent {
	t.Helper()
	var out []localcluster.AuditEvent
	for _, w := range controllerWrites(t, since, ns) {
		if w.ObjectRef != nil && w.ObjectRef.Resource != "events" {
			out = append(out, w)
		}
	}
	return out
}

// summarize counts writes by verb and resource.
func summarize(writes []localcluster.AuditEvent) string {
	counts := map[string]int{}
	for _, w := range writes {
		res := w.ObjectRef.Resource
		if w.ObjectRef.Subresource != "" {
			res += "/" + w.ObjectRef.Subresource
		}
		counts[w.Verb+" "+res]++
	}
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d (%s)", len(writes), strings.Join(parts, ", "))
}

func canaryString(c *appv1.CanaryStatus) string {
	if c == nil {
		return "<none>"
	}
	step := "-"
	if c.Step != nil {
		step = fmt.Sprint(*c.Step)
	}
	return fmt.Sprintf("{stable %s, canary %s, step %s, weight %d, aborted %s}", c.StableTemplateHash, c.CanaryTemplateHash, step, c.Weight, c.AbortedTemplateHash)
}

// appImage is the image of a Deployment's app container ("" for none).
func appImage(d *appsv1.Deployment) string {
	if d == nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}
