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
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// newNamespace creates a namespace for one test and deletes it, waiting
// until it is gone, when the test ends: what a test leaves behind must not
// make the next one's write counts wrong.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim(name, "-") + "-" + rand.String(5)
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
			return
		}
		// The namespace controller deletes the contents kind by kind, and a
		// loaded API server can time one of those calls out (60 s), after
		// which it backs off and starts again: 2 minutes were passed once
		// that way (make test-e2e-loaded).
		waitNamespaceGone(t, name, 5*time.Minute)
	})
	return name
}

// waitNamespaceGone waits on a watch of the namespace until it is deleted.
// A finalizer nobody removes fails it at the timeout, with the namespace's
// own account of what is left. (Polled, the namespaces' deletions were a
// tenth of the parallel group's requests.)
func waitNamespaceGone(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last *corev1.Namespace
	lw := cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "namespaces", "", fields.OneTermEqualSelector("metadata.name", name))
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Namespace{},
		func(s cache.Store) (bool, error) { return len(s.List()) == 0, nil },
		func(e watch.Event) (bool, error) {
			if ns, ok := e.Object.(*corev1.Namespace); ok {
				last = ns
			}
			return e.Type == watch.Deleted, nil
		})
	if err == nil {
		return
	}
	var left []string
	if last != nil {
		for _, c := range last.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				left = append(left, fmt.Sprintf("%s: %s", c.Type, c.Message))
			}
		}
	}
	t.Errorf("namespace %s still exists after %s (%v) %v", name, timeout, err, left)
}

// seedPort guards node port 30002, which the seed manifest's Service takes
// cluster-wide. The tests that apply the seed run in parallel with the
// others but take turns among themselves.
var seedPort sync.Mutex

// holdSeedPort takes node port 30002 for the test until its namespaces,
// and the seed's Services in them, are gone: call it before newNamespace,
// whose cleanup then runs first.
func holdSeedPort(t *testing.T) {
	t.Helper()
	seedPort.Lock()
	t.Cleanup(seedPort.Unlock)
}

// eventually polls f until it returns nil, failing the test with f's last
// error after timeout. It also fails at once if the controller died.
//
// Between two calls it waits 200 ms, or four times as long as the call
// took: a check that lists a thousand objects every 200 ms keeps the API
// server serializing them, and costs the machine, and the tests beside
// it, more than the work it waits for. So a poll spends at most a fifth of
// its wait reading.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		start := time.Now()
		err := f()
		if err == nil {
			return
		}
		if exitErr := ctrl.Exited(); exitErr != nil {
			t.Fatal(exitErr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(pollInterval(time.Since(start)))
	}
}

// pollInterval is the wait after a check that took took: 200 ms, or four
// times took.
func pollInterval(took time.Duration) time.Duration {
	return max(200*time.Millisecond, 4*took)
}

// kubectl runs the cluster's kubectl as the admin.
func kubectl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func createAppService(t *testing.T, ns, name string, spec appv1.AppServiceSpec) *appv1.AppService {
	t.Helper()
	as, err := apps.AppV1().AppServices(ns).Create(context.Background(), &appv1.AppService{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// updateAppService applies mutate to the latest AppService, retrying on
// conflicts with the controller's status writes, and returns what the API
// server stored.
func updateAppService(t *testing.T, ns, name string, mutate func(*appv1.AppService)) *appv1.AppService {
	t.Helper()
	var updated *appv1.AppService
	eventually(t, 30*time.Second, func() error {
		as, err := apps.AppV1().AppServices(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(as)
		updated, err = apps.AppV1().AppServices(ns).Update(context.Background(), as, metav1.UpdateOptions{})
		return err
	})
	return updated
}

// createTheirDeployment creates a Deployment that someone else made: not
// labelled for any AppService, without an owner.
func createTheirDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": "theirs"}
	d, err := kube.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: int32p(1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func getAppService(ns, name string) (*appv1.AppService, error) {
	return apps.AppV1().AppServices(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func getDeployment(ns, name string) (*appsv1.Deployment, error) {
	return kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func getService(ns, name string) (*corev1.Service, error) {
	return kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// ownedBy checks that obj's controller is the AppService.
func ownedBy(obj metav1.Object, as *appv1.AppService) error {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "AppService" || ref.APIVersion != appv1.SchemeGroupVersion.String() || ref.Name != as.Name || ref.UID != as.UID {
		return fmt.Errorf("%s is not controlled by AppService %s (%s): controller %+v", obj.GetName(), as.Name, as.UID, ref)
	}
	return nil
}

// condition returns the AppService's condition of type t.
func condition(as *appv1.AppService, t string) *metav1.Condition {
	return meta.FindStatusCondition(as.Status.Conditions, t)
}

// waitAvailable waits until the AppService's status describes its current
// generation with the given available replicas and Available=True.
func waitAvailable(t *testing.T, ns, name string, replicas int32) *appv1.AppService {
	t.Helper()
	var as *appv1.AppService
	eventually(t, 90*time.Second, func() error {
		var err error
		if as, err = getAppService(ns, name); err != nil {
			return err
		}
		st := as.Status
		avail := condition(as, appv1.ConditionAvailable)
		degraded := condition(as, appv1.ConditionDegraded)
		switch {
		case st.ObservedGeneration != as.Generation:
			return fmt.Errorf("observedGeneration %d, generation %d", st.ObservedGeneration, as.Generation)
		case st.Replicas != replicas || st.UpdatedReplicas != replicas || st.ReadyReplicas != replicas || st.AvailableReplicas != replicas:
			return fmt.Errorf("replicas %d, updated %d, ready %d, available %d; want %d", st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, replicas)
		case avail == nil || avail.Status != metav1.ConditionTrue:
			return fmt.Errorf("Available condition is %+v", avail)
		case degraded == nil || degraded.Status != metav1.ConditionFalse:
			return fmt.Errorf("Degraded condition is %+v", degraded)
		}
		return nil
	})
	return as
}

// inLine is nil when the Deployment's rollout is over, as its controller
// said last (its generation observed, Progressing: NewReplicaSetAvailable),
// and the AppService's status mirrors that last word: the replica counts
// and the Available and Progressing conditions. Until then either may still
// write: kube-controller-manager its last status update of the Deployment,
// which can come seconds late on a loaded machine, and the controller the
// AppService's mirror of it.
func inLine(as *appv1.AppService, d *appsv1.Deployment) error {
	progressing := deploymentCondition(d, appsv1.DeploymentProgressing)
	switch {
	case d.Status.ObservedGeneration != d.Generation:
		return fmt.Errorf("Deployment %s: generation %d observed of %d", d.Name, d.Status.ObservedGeneration, d.Generation)
	case progressing == nil || progressing.Reason != "NewReplicaSetAvailable":
		return fmt.Errorf("Deployment %s: still rolling out: Progressing is %+v", d.Name, progressing)
	case as.Status.ObservedGeneration != as.Generation:
		return fmt.Errorf("AppService %s: observedGeneration %d, generation %d", as.Name, as.Status.ObservedGeneration, as.Generation)
	case as.Status.Replicas != d.Status.Replicas || as.Status.UpdatedReplicas != d.Status.UpdatedReplicas ||
		as.Status.ReadyReplicas != d.Status.ReadyReplicas || as.Status.AvailableReplicas != d.Status.AvailableReplicas:
		return fmt.Errorf("AppService %s: status %+v, not the Deployment's %+v", as.Name, as.Status, d.Status)
	}
	for typ, from := range map[string]appsv1.DeploymentConditionType{
		appv1.ConditionAvailable: appsv1.DeploymentAvailable, appv1.ConditionProgressing: appsv1.DeploymentProgressing,
	} {
		c, dc := condition(as, typ), deploymentCondition(d, from)
		if dc != nil && (c == nil || c.Reason != dc.Reason || c.Message != dc.Message) {
			return fmt.Errorf("AppService %s: %s is %+v, the Deployment's %+v", as.Name, typ, c, *dc)
		}
	}
	return nil
}

// waitInLine waits until the AppService and its Deployment are in line
// (inLine): neither is written again until something changes.
func waitInLine(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, 90*time.Second, func() error {
		d, err := getDeployment(ns, name)
		if err != nil {
			return err
		}
		as, err := getAppService(ns, name)
		if err != nil {
			return err
		}
		return inLine(as, d)
	})
}

func deploymentCondition(d *appsv1.Deployment, typ appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == typ {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// waitDegraded waits until the AppService is Degraded with the reason and a
// message containing each of parts.
func waitDegraded(t *testing.T, ns, name, reason string, parts ...string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		as, err := getAppService(ns, name)
		if err != nil {
			return err
		}
		c := condition(as, appv1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason || c.ObservedGeneration != as.Generation {
			return fmt.Errorf("Degraded condition is %+v, want True/%s", c, reason)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("Degraded message %q does not contain %q", c.Message, p)
			}
		}
		return nil
	})
}

// events returns the Events recorded for an AppService with a reason.
func events(t *testing.T, ns, name, reason string) []corev1.Event {
	t.Helper()
	list, err := listEvents(kube, ns, name, reason)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// listEvents lists, through client, the Events recorded for an AppService
// with a reason.
func listEvents(client kubernetes.Interface, ns, name, reason string) ([]corev1.Event, error) {
	list, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.kind": "AppService", "involvedObject.name": name, "reason": reason}.String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitEvent waits for an Event with the reason whose message contains msg.
func waitEvent(t *testing.T, ns, name, eventType, reason, msg string) {
	t.Helper()
	waitEventWithin(t, 30*time.Second, ns, name, eventType, reason, msg)
}

// waitEventWithin is waitEvent for an Event that may trail its cause longer
// under load (client-go's broadcaster sends Events one at a time).
func waitEventWithin(t *testing.T, timeout time.Duration, ns, name, eventType, reason, msg string) {
	t.Helper()
	eventually(t, timeout, func() error {
		for _, e := range events(t, ns, name, reason) {
			if e.Type == eventType && strings.Contains(e.Message, msg) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event %s %q for AppService %s/%s", eventType, reason, msg, ns, name)
	})
}

// controllerWrites returns the writes the controller made since t0,
// optionally only in one namespace.
func controllerWrites(t *testing.T, since time.Time, ns string) []localcluster.AuditEvent {
	t.Helper()
	all, err := cluster.Writes(controllerUser, since)
	if err != nil {
		t.Fatal(err)
	}
	var out []localcluster.AuditEvent
	for _, e := range all {
		if ns == "" || (e.ObjectRef != nil && e.ObjectRef.Namespace == ns) {
			out = append(out, e)
		}
	}
	return out
}

func int32p(i int32) *int32 { return &i }

// createBoundClaim creates a PersistentVolumeClaim and a PersistentVolume
// bound to it ahead (a claimRef and a volumeName), which the control plane's
// binder then marks Bound: Pods mounting the claim can be scheduled.
func createBoundClaim(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	pvName := ns + "-" + name
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	modes := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: size, AccessModes: modes, StorageClassName: "",
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + pvName}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: modes, StorageClassName: new(""), VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: size},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		got, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("claim %s is %s", name, got.Status.Phase)
		}
		return nil
	})
}

// containerNamed is the Deployment's container of that name, or nil.
func containerNamed(d *appsv1.Deployment, name string) *corev1.Container {
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == name {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}
