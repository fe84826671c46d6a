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
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"example.com/appservice-controller/internal/harness"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestConfigRolloutThrottle: 50 AppServices read one ConfigMap, under a
// cap of 5 config rollouts (ten waves). One edit of it: at every change the
// watch of the Deployments brings, never more than 5 are mid-way through
// rolling out the new digest; the others say ConfigRolloutQueued; all 50
// end with the new digest, and the controller writes each
// Deployment once. A control plane and a controller of its own: the cap is
// the whole controller's.
func TestConfigRolloutThrottle(t *testing.T) {
	parallel(t)
	// Ten waves, as the flag's default cap makes of a config 100 apps
	// share; half of each, which proves the same for half the cluster's
	// work (it was 100 under 10 until 2026-12-03).
	const n, maxRollouts = 50, 5
	ctx := context.Background()
	fresh := startFreshCluster(t)
	const user = "throttled-controller"
	p, kube, apps := ownController(t, fresh.Cluster, user, fmt.Sprintf("-max-config-rollouts=%d", maxRollouts))

	const ns = "shared-config"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ca-bundle"}, Data: map[string]string{"ca.crt": "v1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := createManyWith(apps, ns, n, func(int) appv1.AppServiceSpec {
		return appv1.AppServiceSpec{
			Size: int32p(1), Image: "nginx:1.27", RolloutOnConfigChange: true,
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ca-bundle"}}}},
		}
	}); err != nil {
		t.Fatal(err)
	}
	// All running on the first digest, and the Deployment controller done
	// with each (its last status write of a rollout says
	// NewReplicaSetAvailable): a patch of the controller's that met that
	// write would conflict, and be written twice.
	var first string
	waitDeployments(t, p, kube, ns, func(list []appsv1.Deployment) error {
		if len(list) == 0 {
			return errors.New("no Deployment yet")
		}
		first = list[0].Spec.Template.Annotations[appv1.AnnotationConfigDigest]
		if err := allOn(list, n, first); err != nil {
			return err
		}
		for _, d := range list {
			if c := deploymentCondition(&d, appsv1.DeploymentProgressing); c == nil || c.Reason != "NewReplicaSetAvailable" {
				return fmt.Errorf("Deployment %s: the Deployment controller not done with its rollout (Progressing %+v)", d.Name, c)
			}
		}
		return nil
	})

	since := time.Now()
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ca-bundle"}, Data: map[string]string{"ca.crt": "v2"},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	peak, queuedSeen := 0, false
	waitDeployments(t, p, kube, ns, func(list []appsv1.Deployment) error {
		var rolling []string
		for _, d := range list {
			if d.Spec.Template.Annotations[appv1.AnnotationConfigDigest] != first && midRollout(&d) {
				rolling = append(rolling, fmt.Sprintf("%s (generation %d, observed %d, %d updated, %d replicas)",
					d.Name, d.Generation, d.Status.ObservedGeneration, d.Status.UpdatedReplicas, d.Status.Replicas))
			}
		}
		peak = max(peak, len(rolling))
		if len(rolling) > maxRollouts {
			t.Errorf("%d Deployments rolling at once for a config change, over the cap of %d: %s",
				len(rolling), maxRollouts, strings.Join(rolling, "; "))
		}
		if !queuedSeen {
			list, err := apps.AppV1().AppServices(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, as := range list.Items {
				if c := condition(&as, appv1.ConditionReconciling); c != nil && c.Reason == appv1.ReasonConfigRolloutQueued {
					queuedSeen = true
					break
				}
			}
		}
		if len(list) > 0 && list[0].Spec.Template.Annotations[appv1.AnnotationConfigDigest] == first {
			return errors.New("the first Deployment still runs the old digest")
		}
		return allOn(list, n, list[0].Spec.Template.Annotations[appv1.AnnotationConfigDigest])
	})
	t.Logf("%d config rollouts under a cap of %d took %s; at most %d at once", n, maxRollouts, time.Since(since).Round(time.Second), peak)
	if !queuedSeen {
		t.Error("no AppService was seen waiting its turn (ConfigRolloutQueued)")
	}

	writes, err := fresh.Writes(user, since)
	if err != nil {
		t.Fatal(err)
	}
	perDeployment := map[string][]string{}
	for _, w := range writes {
		if w.ObjectRef != nil && w.ObjectRef.Resource == "deployments" && w.ObjectRef.Namespace == ns {
			perDeployment[w.ObjectRef.Name] = append(perDeployment[w.ObjectRef.Name],
				w.RequestReceivedTimestamp.Sub(since).Round(time.Millisecond).String()+" "+w.String())
		}
	}
	if len(perDeployment) != n {
		t.Errorf("the controller wrote %d Deployments, want %d", len(perDeployment), n)
	}
	for name, ws := range perDeployment {
		if len(ws) != 1 {
			t.Errorf("Deployment %s written %d times, want once: %s; the AppService's Events: %s",
				name, len(ws), strings.Join(ws, "; "), updateEvents(kube, ns, name))
		}
	}
}

// updateEvents tells what the controller said it changed in an
// AppService's children, for a failure's message.
func updateEvents(kube kubernetes.Interface, ns, name string) string {
	list, err := listEvents(kube, ns, name, appv1.ReasonUpdated)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list {
		out = append(out, fmt.Sprintf("%q ×%d", e.Message, e.Count))
	}
	return strings.Join(out, "; ")
}

// waitDeployments watches the namespace's Deployments (as the controller's
// caches cannot be) and calls check with all of them, sorted by name, after
// each change the watch brings, until check passes; it fails if the
// controller dies. So check sees every state the Deployments pass
// through, not samples of them, and the API server sends each change once
// instead of every Deployment ten times a second. client-go's
// watchtools.UntilWithSync lists, watches and lists again when a watch
// ends.
// The deadline is for a controller that stopped rolling out: 200
// AppServices on a control plane of their own (this test's count until
// 2026-12-02) took over 4 minutes to roll out on a machine the other
// groups load.
func waitDeployments(t *testing.T, p *harness.Controller, kube kubernetes.Interface, ns string, check func([]appsv1.Deployment) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	go func() { // the controller's death ends the wait
		alive := time.NewTicker(time.Second)
		defer alive.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-alive.C:
				if p.Exited() != nil {
					cancel()
					return
				}
			}
		}
	}()
	var store cache.Store
	var err error
	passes := func() bool {
		list := make([]appsv1.Deployment, 0, len(store.List()))
		for _, obj := range store.List() {
			list = append(list, *obj.(*appsv1.Deployment))
		}
		slices.SortFunc(list, func(a, b appsv1.Deployment) int { return strings.Compare(a.Name, b.Name) })
		err = check(list)
		return err == nil
	}
	lw := cache.NewListWatchFromClient(kube.AppsV1().RESTClient(), "deployments", ns, fields.Everything())
	_, untilErr := watchtools.UntilWithSync(ctx, lw, &appsv1.Deployment{},
		func(s cache.Store) (bool, error) { store = s; return passes(), nil },
		func(watch.Event) (bool, error) { return passes(), nil })
	if exitErr := p.Exited(); exitErr != nil {
		t.Fatal(exitErr)
	}
	if untilErr != nil {
		t.Fatalf("%v: %v", untilErr, err)
	}
}

// allOn checks that n Deployments all run the template with the config
// digest, rolled out.
func allOn(list []appsv1.Deployment, n int, digest string) error {
	if len(list) != n {
		return fmt.Errorf("%d Deployments, want %d", len(list), n)
	}
	for _, d := range list {
		if d.Spec.Template.Annotations[appv1.AnnotationConfigDigest] != digest || digest == "" || !rolledOut(&d) {
			return fmt.Errorf("Deployment %s: digest %q, want %q, rolled out %v", d.Name,
				d.Spec.Template.Annotations[appv1.AnnotationConfigDigest], digest, rolledOut(&d))
		}
	}
	return nil
}

// midRollout reports whether a Deployment is replacing its Pods with its
// template's: the generation not observed yet, fewer replicas updated than
// it wants, or old ones still running. One rolled out whose Pods are not
// all available later (a loaded node late with its heartbeat) is not
// rolling.
func midRollout(d *appsv1.Deployment) bool {
	want := *d.Spec.Replicas
	st := d.Status
	return st.ObservedGeneration < d.Generation || st.UpdatedReplicas < want || st.Replicas > want
}

// rolledOut reports whether a Deployment runs its template on every
// replica it wants, and nothing else, as kstatus judges one.
func rolledOut(d *appsv1.Deployment) bool {
	want := *d.Spec.Replicas
	st := d.Status
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want
}
