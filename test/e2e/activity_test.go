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
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The Activity, the second kind: each runs its command once as a Job on
// the local cluster, whose kwok nodes end a Job's Pod with exit code 0, or
// 3 for the command `exit 3`, and keep one running `sleep 3600`
// (internal/localcluster/kwok-stages). The cases are independent and run
// side by side, each in its own namespace.
func TestActivity(t *testing.T) {
	parallel(t)
	t.Run("runs to Succeeded on the node it names", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		act := createActivity(t, ns, "hello", appv1.ActivitySpec{
			Command: "echo $GREETING from $(pwd) as $(id -u)", Host: "kwok-node-1",
			ExecUser: "1000:3000", ExecCwd: "/tmp", Envs: []string{"GREETING=hello", "EMPTY=", "EQUATION=a=b"},
		})
		done := waitActivity(t, ns, act.Name, appv1.ActivitySucceeded)
		if done.Status.ExitCode == nil || *done.Status.ExitCode != 0 || done.Status.StartTime == nil || done.Status.CompletionTime == nil {
			t.Errorf("status of a run that succeeded: %+v", done.Status)
		}
		checkCondition(t, done, appv1.ConditionComplete, metav1.ConditionTrue, "")
		checkCondition(t, done, appv1.ConditionReconciling, metav1.ConditionFalse, appv1.ReasonSucceeded)
		checkCondition(t, done, appv1.ConditionStalled, metav1.ConditionFalse, appv1.ReasonAsExpected)
		waitActivityEvent(t, ns, act.Name, corev1.EventTypeNormal, appv1.ReasonCreated, "Created Job hello")
		waitActivityEvent(t, ns, act.Name, corev1.EventTypeNormal, appv1.ReasonSucceeded, "The command exited 0")

		job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), act.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "Activity" || ref.UID != act.UID {
			t.Errorf("the Job's controller is %+v", ref)
		}
		// The finalizer goes in the write after the status's.
		eventually(t, 30*time.Second, func() error {
			j, err := kube.BatchV1().Jobs(ns).Get(context.Background(), act.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if slices.Contains(j.Finalizers, appv1.FinalizerActivityStatus) {
				return fmt.Errorf("the Job of a finished Activity is still held: %v", j.Finalizers)
			}
			return nil
		})
		if *job.Spec.BackoffLimit != 0 || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("the Job retries: backoffLimit %d, restartPolicy %s", *job.Spec.BackoffLimit, job.Spec.Template.Spec.RestartPolicy)
		}
		c := job.Spec.Template.Spec.Containers[0]
		wantEnv := []corev1.EnvVar{{Name: "GREETING", Value: "hello"}, {Name: "EMPTY"}, {Name: "EQUATION", Value: "a=b"}}
		if !slices.Equal(c.Command, []string{"/bin/sh", "-c", act.Spec.Command}) || c.Image != appv1.DefaultActivityImage ||
			c.WorkingDir != "/tmp" || !slices.Equal(c.Env, wantEnv) ||
			*c.SecurityContext.RunAsUser != 1000 || *c.SecurityContext.RunAsGroup != 3000 {
			t.Errorf("the Job's container: %+v", c)
		}
		pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: appv1.LabelActivity + "=" + act.Name})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("the Activity's Pods: %v, %v", pods, err)
		}
		if node := pods.Items[0].Spec.NodeName; node != "kwok-node-1" {
			t.Errorf("the Pod ran on %q, want the host kwok-node-1", node)
		}
	})

	t.Run("a failing command reaches Failed with its exit code", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		act := createActivity(t, ns, "fails", appv1.ActivitySpec{Command: "exit 3"})
		done := waitActivity(t, ns, act.Name, appv1.ActivityFailed)
		if done.Status.ExitCode == nil || *done.Status.ExitCode != 3 {
			t.Errorf("exit code %v, want 3", done.Status.ExitCode)
		}
		if !strings.Contains(done.Status.Message, "The command exited 3 (Error):\nsh: the command failed") {
			t.Errorf("message %q lacks the exit code and the command's last line", done.Status.Message)
		}
		checkCondition(t, done, appv1.ConditionFailed, metav1.ConditionTrue, "BackoffLimitExceeded")
		checkCondition(t, done, appv1.ConditionStalled, metav1.ConditionTrue, "BackoffLimitExceeded")
		checkCondition(t, done, appv1.ConditionReconciling, metav1.ConditionFalse, "")
		if meta.FindStatusCondition(done.Status.Conditions, appv1.ConditionComplete) != nil {
			t.Error("a failed run has a Complete condition")
		}
		waitActivityEvent(t, ns, act.Name, corev1.EventTypeWarning, "BackoffLimitExceeded", "The command exited 3")
	})

	t.Run("a run past its deadline fails", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		// Running lasts until the deadline: the status's phases are judged
		// from what a watch recorded, not read while it lasts.
		phases := record[*appv1.Activity](t, apps.AppV1().Activities(ns).Watch, "too-long")
		act := createActivity(t, ns, "too-long", appv1.ActivitySpec{Command: "sleep 3600", ActiveDeadlineSeconds: new(int64(20))})
		done := waitActivity(t, ns, act.Name, appv1.ActivityFailed)
		checkCondition(t, done, appv1.ConditionFailed, metav1.ConditionTrue, "DeadlineExceeded")
		// It ran until the deadline ended it.
		phases.wait(t, time.Minute, func(vs []version[*appv1.Activity]) error {
			var seen []appv1.ActivityPhase
			for _, v := range vs {
				if p := v.obj.Status.Prosta; p != "" && (len(seen) == 0 || seen[len(seen)-1] != p) {
					seen = append(seen, p)
				}
			}
			if i := slices.Index(seen, appv1.ActivityRunning); i < 0 || !slices.Contains(seen[i:], appv1.ActivityFailed) {
				return fmt.Errorf("the Activity's phases went %v, want Running, then Failed", seen)
			}
			return nil
		})
	})

	t.Run("the spec cannot be edited", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		act := createActivity(t, ns, "fixed", appv1.ActivitySpec{Command: "true"})
		out, err := kubectl("-n", ns, "patch", "activity", act.Name, "--type=merge", "-p", `{"spec":{"command":"false"}}`)
		if err == nil || !strings.Contains(out, "spec is immutable") {
			t.Errorf("kubectl patch of the spec: %v: %s", err, out)
		}
	})

	t.Run("deleting it deletes the Job and its Pod", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		act := createActivity(t, ns, "short-lived", appv1.ActivitySpec{Command: "true"})
		waitActivity(t, ns, act.Name, appv1.ActivitySucceeded)
		if err := apps.AppV1().Activities(ns).Delete(context.Background(), act.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, func() error {
			jobs, err := kube.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil || len(jobs.Items) > 0 {
				return fmt.Errorf("Jobs left: %v (%v)", jobs, err)
			}
			pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil || len(pods.Items) > 0 {
				return fmt.Errorf("Pods left: %d (%v)", len(pods.Items), err)
			}
			return nil
		})
	})

	t.Run("the TTL deletes the Job, then the Activity; nothing runs again", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		act := createActivity(t, ns, "cleaned-up", appv1.ActivitySpec{Command: "true", TTLSecondsAfterFinished: new(int32(2))})
		done := waitActivity(t, ns, act.Name, appv1.ActivitySucceeded)
		eventually(t, time.Minute, func() error {
			_, jobErr := kube.BatchV1().Jobs(ns).Get(context.Background(), act.Name, metav1.GetOptions{})
			_, actErr := apps.AppV1().Activities(ns).Get(context.Background(), act.Name, metav1.GetOptions{})
			if !apierrors.IsNotFound(jobErr) || !apierrors.IsNotFound(actErr) {
				return fmt.Errorf("the Job (%v) or the Activity (%v) is still there", jobErr, actErr)
			}
			return nil
		})
		if gone := time.Since(done.Status.CompletionTime.Time); gone < 2*time.Second {
			t.Errorf("the Activity went %s after its run ended, before its TTL of 2 s", gone)
		}
		since := time.Now()
		time.Sleep(3 * time.Second)
		if writes := controllerWrites(t, since, ns); len(writes) > 0 {
			t.Errorf("the controller wrote after the TTL removed the Activity: %v", writes)
		}
		if _, err := kube.BatchV1().Jobs(ns).Get(context.Background(), act.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a Job was created again: %v", err)
		}
	})

	t.Run("a Job deleted before the command finished fails the run", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		act := createActivity(t, ns, "interrupted", appv1.ActivitySpec{Command: "sleep 3600"})
		waitActivity(t, ns, act.Name, appv1.ActivityRunning)
		if err := kube.BatchV1().Jobs(ns).Delete(context.Background(), act.Name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		done := waitActivity(t, ns, act.Name, appv1.ActivityFailed)
		checkCondition(t, done, appv1.ConditionFailed, metav1.ConditionTrue, appv1.ReasonJobDeleted)
		time.Sleep(2 * time.Second)
		if _, err := kube.BatchV1().Jobs(ns).Get(context.Background(), act.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a Job was created again: %v", err)
		}
	})

	t.Run("someone's Job of its name is left alone", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		theirs := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "taken", Labels: map[string]string{"team": "them"}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "theirs", Image: "busybox:1.37", Command: []string{"sleep", "3600"}}},
			}}},
		}
		theirs, err := kube.BatchV1().Jobs(ns).Create(context.Background(), theirs, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		act := createActivity(t, ns, "taken", appv1.ActivitySpec{Command: "true"})
		eventually(t, 30*time.Second, func() error {
			got, err := apps.AppV1().Activities(ns).Get(context.Background(), act.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			c := meta.FindStatusCondition(got.Status.Conditions, appv1.ConditionStalled)
			if c == nil || c.Status != metav1.ConditionTrue || c.Reason != appv1.ReasonResourceExists || got.Status.Prosta != appv1.ActivityPending {
				return fmt.Errorf("status %+v", got.Status)
			}
			return nil
		})
		waitActivityEvent(t, ns, act.Name, corev1.EventTypeWarning, appv1.ReasonResourceExists, "not controlled by Activity taken")
		after, err := kube.BatchV1().Jobs(ns).Get(context.Background(), "taken", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(after.OwnerReferences) > 0 || !maps.Equal(after.Labels, theirs.Labels) {
			t.Errorf("someone's Job was changed: %+v", after.ObjectMeta)
		}
		for _, m := range after.ManagedFields {
			if m.Manager == "appservice-controller" {
				t.Errorf("the controller wrote to someone's Job: %+v", m)
			}
		}
	})

	t.Run("an orphan Job labelled for it is adopted", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		orphan := children.NewJob(&appv1.Activity{
			ObjectMeta: metav1.ObjectMeta{Name: "adopted", Namespace: ns},
			Spec:       appv1.ActivitySpec{Command: "true"},
		})
		orphan.OwnerReferences = nil
		if _, err := kube.BatchV1().Jobs(ns).Create(context.Background(), orphan, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		act := createActivity(t, ns, "adopted", appv1.ActivitySpec{Command: "true"})
		waitActivity(t, ns, act.Name, appv1.ActivitySucceeded)
		job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), act.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(job); ref == nil || ref.UID != act.UID {
			t.Errorf("the orphan's controller is %+v, want the Activity", ref)
		}
		waitActivityEvent(t, ns, act.Name, corev1.EventTypeNormal, appv1.ReasonAdopted, "Adopted Job adopted")
	})
}

func createActivity(t *testing.T, ns, name string, spec appv1.ActivitySpec) *appv1.Activity {
	t.Helper()
	act, err := apps.AppV1().Activities(ns).Create(context.Background(), &appv1.Activity{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return act
}

// waitActivity waits for an Activity's status.prosta, with its
// observedGeneration current, and returns it then.
func waitActivity(t *testing.T, ns, name string, phase appv1.ActivityPhase) *appv1.Activity {
	t.Helper()
	var act *appv1.Activity
	eventually(t, time.Minute, func() error {
		var err error
		act, err = apps.AppV1().Activities(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if act.Status.Prosta != phase || act.Status.ObservedGeneration != act.Generation {
			return fmt.Errorf("Activity %s/%s is %q, want %q: %+v", ns, name, act.Status.Prosta, phase, act.Status)
		}
		return nil
	})
	return act
}

// checkCondition checks one of an Activity's conditions, and its reason
// unless reason is "".
func checkCondition(t *testing.T, act *appv1.Activity, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(act.Status.Conditions, typ)
	if c == nil || c.Status != status || (reason != "" && c.Reason != reason) || c.ObservedGeneration != act.Generation {
		t.Errorf("condition %s is %+v, want %s with reason %q", typ, c, status, reason)
	}
}

// waitActivityEvent waits for an Event about an Activity with the reason,
// whose message contains msg.
func waitActivityEvent(t *testing.T, ns, name, eventType, reason, msg string) {
	t.Helper()
	// The deadline is for an Event never sent: the broadcaster writes its
	// Events one at a time, and on a loaded machine one came 50 s after
	// the Job it reported.
	eventually(t, 2*time.Minute, func() error {
		list, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Activity", "involvedObject.name": name, "reason": reason}.String(),
		})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Type == eventType && strings.Contains(e.Message, msg) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event %s %q for Activity %s/%s in %d", eventType, reason, msg, ns, name, len(list.Items))
	})
}

// TestActivityResourcesAndServiceAccount: in a namespace whose
// ResourceQuota requires limits, an Activity with resources runs, its Pod
// with them; an Activity naming a ServiceAccount that does not exist says
// so (Stalled, ServiceAccountNotFound) instead of hanging Pending, and runs
// as it once it exists.
func TestActivityResourcesAndServiceAccount(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := newNamespace(t)
	if _, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "limits-required"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceLimitsCPU: resource.MustParse("4"), corev1.ResourceLimitsMemory: resource.MustParse("4Gi"),
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	limits := corev1.ResourceRequirements{Limits: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi"),
	}}
	createActivity(t, ns, "bounded", appv1.ActivitySpec{Command: "true", Resources: limits})
	waitActivity(t, ns, "bounded", appv1.ActivitySucceeded)
	job, err := kube.BatchV1().Jobs(ns).Get(ctx, "bounded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := job.Spec.Template.Spec.Containers[0].Resources.Limits; !got.Cpu().Equal(resource.MustParse("500m")) || !got.Memory().Equal(resource.MustParse("256Mi")) {
		t.Errorf("the Job's container limits %v, want the spec's", got)
	}

	createActivity(t, ns, "as-runner", appv1.ActivitySpec{Command: "true", ServiceAccountName: "runner", Resources: limits})
	eventually(t, time.Minute, func() error {
		act, err := apps.AppV1().Activities(ns).Get(ctx, "as-runner", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(act.Status.Conditions, appv1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != appv1.ReasonServiceAccountNotFound || act.Status.Prosta != appv1.ActivityPending {
			return fmt.Errorf("Activity %s, Stalled %+v; want Pending, Stalled for ServiceAccountNotFound", act.Status.Prosta, c)
		}
		return nil
	})
	waitActivityEvent(t, ns, "as-runner", corev1.EventTypeWarning, appv1.ReasonServiceAccountNotFound, "runner, which spec.serviceAccountName names, does not exist")
	if _, err := kube.BatchV1().Jobs(ns).Get(ctx, "as-runner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Job before its ServiceAccount exists: %v", err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "runner"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Retried with backoff: within a minute or so.
	eventually(t, 3*time.Minute, func() error {
		act, err := apps.AppV1().Activities(ns).Get(ctx, "as-runner", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if act.Status.Prosta != appv1.ActivitySucceeded {
			return fmt.Errorf("Activity %s, want Succeeded once its ServiceAccount exists", act.Status.Prosta)
		}
		return nil
	})
	if job, err := kube.BatchV1().Jobs(ns).Get(ctx, "as-runner", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if sa := job.Spec.Template.Spec.ServiceAccountName; sa != "runner" {
		t.Errorf("the Job's Pods run as %q, want runner", sa)
	}
}
