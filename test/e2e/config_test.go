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
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestConfigChangeRollsPods: with rolloutOnConfigChange, a change of the
// data of a ConfigMap mounted as a volume, of a Secret in envFrom, or the
// creation of a missing optional ConfigMap, rolls the Pods: a new
// ReplicaSet, one Deployment update and one Event naming the object. A
// label-only edit, and a change of a ConfigMap nobody reads, write nothing.
// Turned off, the annotation goes and the rest of the template stays.
func TestConfigChangeRollsPods(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	ctx := context.Background()
	for _, obj := range []struct {
		name string
		data map[string]string
		kind string
	}{
		{"nginx-conf", map[string]string{"nginx.conf": "worker_processes 1;"}, "ConfigMap"},
		{"unrelated", map[string]string{"x": "1"}, "ConfigMap"},
		{"db", map[string]string{"PASSWORD": "hunter2"}, "Secret"},
	} {
		var err error
		meta := metav1.ObjectMeta{Name: obj.name}
		if obj.kind == "ConfigMap" {
			_, err = kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: obj.data}, metav1.CreateOptions{})
		} else {
			_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: obj.data}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	createAppService(t, ns, "web", appv1.AppServiceSpec{
		Size: int32p(2), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}},
		RolloutOnConfigChange: true,
		PodAnnotations:        map[string]string{"example.com/team": "web"},
		Volumes:               []appv1.Volume{{Name: "conf", ConfigMap: &appv1.ConfigMapVolumeSource{Name: "nginx-conf"}}},
		VolumeMounts:          []appv1.VolumeMount{{Name: "conf", MountPath: "/etc/nginx/conf.d"}},
		EnvFrom:               []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}},
		Envs: []corev1.EnvVar{{Name: "FEATURE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "maybe"}, Key: "feature", Optional: new(true)}}}},
	})
	waitAvailable(t, ns, "web", 2)
	d, err := getDeployment(ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	digest := d.Spec.Template.Annotations[appv1.AnnotationConfigDigest]
	if !regexp.MustCompile(`^configmap/maybe=missing,configmap/nginx-conf=[0-9a-f]{16},secret/db=[0-9a-f]{16}$`).MatchString(digest) {
		t.Fatalf("config digest on the template: %q", digest)
	}
	if strings.Contains(digest, "hunter2") {
		t.Fatal("the Secret's data is on the template")
	}

	// Each change rolls the Pods once, with one update and one Event.
	rolls := []struct {
		what   string
		change func() error
	}{
		{"ConfigMap nginx-conf", func() error {
			_, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "nginx-conf", types.MergePatchType, []byte(`{"data":{"nginx.conf":"worker_processes 2;"}}`), metav1.PatchOptions{})
			return err
		}},
		{"Secret db", func() error {
			_, err := kube.CoreV1().Secrets(ns).Patch(ctx, "db", types.MergePatchType, []byte(`{"stringData":{"PASSWORD":"correct horse"}}`), metav1.PatchOptions{})
			return err
		}},
		{"ConfigMap maybe", func() error {
			_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "maybe"}, Data: map[string]string{"feature": "on"}}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, r := range rolls {
		before := replicaSets(t, ns)
		since := time.Now()
		if err := r.change(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, func() error {
			if n := replicaSets(t, ns); n != before+1 {
				return fmt.Errorf("%s changed: %d ReplicaSets, want %d", r.what, n, before+1)
			}
			return nil
		})
		waitRolledOut(t, ns, "web")
		if n := deploymentUpdates(t, since, ns); n != 1 {
			t.Errorf("%s changed: %d Deployment updates, want 1", r.what, n)
		}
		if n := countEvents(t, ns, "web", "config of "+r.what); n != 1 {
			t.Errorf("%s changed: %d Updated Events naming it, want 1", r.what, n)
		}
	}

	// A label-only edit of a ConfigMap the Pods read, and a data change of
	// one nobody reads: nothing written.
	quiet := func(what string, changes ...func() error) {
		t.Helper()
		waitInLine(t, ns, "web")
		before := replicaSets(t, ns)
		since := time.Now()
		for _, change := range changes {
			if err := change(); err != nil {
				t.Fatal(err)
			}
		}
		// The syncs those events queue, and a resync.
		waitSyncs(t, ns, "web")
		for _, w := range controllerWrites(t, since, ns) {
			t.Errorf("%s: write by the controller: %s", what, w)
		}
		if n := replicaSets(t, ns); n != before {
			t.Errorf("%s: %d ReplicaSets, want %d", what, n, before)
		}
	}
	quiet("a label-only edit and an unrelated ConfigMap",
		func() error {
			_, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "nginx-conf", types.MergePatchType, []byte(`{"metadata":{"labels":{"edited":"by-hand"}}}`), metav1.PatchOptions{})
			return err
		},
		func() error {
			_, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "unrelated", types.MergePatchType, []byte(`{"data":{"x":"2"}}`), metav1.PatchOptions{})
			return err
		})

	// Turned off: our annotation goes (one rollout), the others' and the
	// rest of the template stay; config changes no longer roll.
	live, err := getDeployment(ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	updateAppService(t, ns, "web", func(as *appv1.AppService) { as.Spec.RolloutOnConfigChange = false })
	var off *appsv1.Deployment
	eventually(t, 30*time.Second, func() error {
		if off, err = getDeployment(ns, "web"); err != nil {
			return err
		}
		if v, ok := off.Spec.Template.Annotations[appv1.AnnotationConfigDigest]; ok {
			return fmt.Errorf("config digest still on the template: %q", v)
		}
		return nil
	})
	want := live.Spec.Template.DeepCopy()
	delete(want.Annotations, appv1.AnnotationConfigDigest)
	if diff := templateDiff(want, &off.Spec.Template); diff != "" {
		t.Errorf("turning rolloutOnConfigChange off changed more than its annotation: %s", diff)
	}
	waitRolledOut(t, ns, "web")
	quiet("a data change with rolloutOnConfigChange off", func() error {
		_, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "nginx-conf", types.MergePatchType, []byte(`{"data":{"nginx.conf":"worker_processes 3;"}}`), metav1.PatchOptions{})
		return err
	})
}

// waitRolledOut waits until the AppService is Ready for its generation:
// every replica runs the Deployment's current template, the old ones gone.
func waitRolledOut(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, 90*time.Second, func() error {
		as, err := getAppService(ns, name)
		if err != nil {
			return err
		}
		if c := condition(as, appv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != as.Generation {
			return fmt.Errorf("Ready is %+v", c)
		}
		return nil
	})
}

// replicaSets counts the namespace's ReplicaSets.
func replicaSets(t *testing.T, ns string) int {
	t.Helper()
	list, err := kube.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// deploymentUpdates counts the controller's updates (patches) of
// Deployments in ns since a time that the API server took: one refused with
// a conflict (the Deployment controller wrote the status in between) is
// retried, and is not a second change.
func deploymentUpdates(t *testing.T, since time.Time, ns string) int {
	t.Helper()
	n := 0
	for _, w := range controllerWrites(t, since, ns) {
		if w.Verb == "patch" && w.ObjectRef.Resource == "deployments" && w.ResponseStatus != nil && w.ResponseStatus.Code < 300 {
			n++
		}
	}
	return n
}

// countEvents counts the Updated Events of an AppService whose message
// contains msg; an Event repeated counts as many times as it happened.
func countEvents(t *testing.T, ns, name, msg string) int {
	t.Helper()
	n := 0
	eventually(t, 30*time.Second, func() error {
		n = 0
		for _, e := range events(t, ns, name, appv1.ReasonUpdated) {
			if strings.Contains(e.Message, msg) {
				n += int(max(e.Count, 1))
			}
		}
		if n == 0 {
			return fmt.Errorf("no Updated Event with %q", msg)
		}
		return nil
	})
	return n
}

// templateDiff tells where two pod templates differ, after the API server's
// defaulting of both ("" when they do not).
func templateDiff(want, got *corev1.PodTemplateSpec) string {
	if !equality.Semantic.DeepEqual(want, got) {
		return fmt.Sprintf("want %+v, got %+v", want, got)
	}
	return ""
}
