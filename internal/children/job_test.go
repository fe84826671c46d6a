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

package children

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// desiredJob is the Job of the tutorial Activity (fixtures.Activity).
func desiredJob() *batchv1.Job {
	labels := map[string]string{appv1.LabelActivity: fixtures.ActivityName}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: fixtures.ActivityName, Namespace: fixtures.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "app.example.com/v1", Kind: "Activity", Name: fixtures.ActivityName, UID: fixtures.ActivityUID,
				Controller: new(true), BlockOwnerDeletion: new(true),
			}},
			Finalizers: []string{"app.example.com/activity-status"},
		},
		Spec: batchv1.JobSpec{
			Parallelism: new(int32(1)), Completions: new(int32(1)), BackoffLimit: new(int32(0)),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "activity", Image: "busybox:1.37", Command: []string{"/bin/sh", "-c", "sleep 5"},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			},
		},
	}
}

func TestNewJob(t *testing.T) {
	tests := []struct {
		name string
		spec func(*appv1.ActivitySpec)
		want func(*batchv1.Job) // applied to desiredJob
	}{
		{name: "the tutorial's: a shell runs the command once"},
		{
			name: "host: a node selector, so that the scheduler still checks the node",
			spec: func(s *appv1.ActivitySpec) { s.Host = "node-7" },
			want: func(j *batchv1.Job) {
				j.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "node-7"}
			},
		},
		{
			name: "execuser UID:GID, execcwd, envs",
			spec: func(s *appv1.ActivitySpec) {
				s.ExecUser, s.ExecCwd, s.Envs = "1000:3000", "/work", []string{"A=1", "B=", "C=x=y"}
			},
			want: func(j *batchv1.Job) {
				c := &j.Spec.Template.Spec.Containers[0]
				c.SecurityContext = &corev1.SecurityContext{RunAsUser: new(int64(1000)), RunAsGroup: new(int64(3000))}
				c.WorkingDir = "/work"
				c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B"}, {Name: "C", Value: "x=y"}}
			},
		},
		{
			name: "execuser UID alone: the image's group",
			spec: func(s *appv1.ActivitySpec) { s.ExecUser = "0" },
			want: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: new(int64(0))}
			},
		},
		{
			name: "image, deadline and TTL",
			spec: func(s *appv1.ActivitySpec) {
				s.Image, s.ActiveDeadlineSeconds, s.TTLSecondsAfterFinished = "ubuntu:24.04", new(int64(60)), new(int32(0))
			},
			want: func(j *batchv1.Job) {
				j.Spec.Template.Spec.Containers[0].Image = "ubuntu:24.04"
				j.Spec.ActiveDeadlineSeconds, j.Spec.TTLSecondsAfterFinished = new(int64(60)), new(int32(0))
			},
		},
		{
			name: "no image (not defaulted by an API server): busybox",
			spec: func(s *appv1.ActivitySpec) { s.Image = "" },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			act := fixtures.Activity()
			fixtures.Tweak(tc.spec, &act.Spec)
			want := desiredJob()
			fixtures.Tweak(tc.want, want)
			fixtures.CheckEqual(t, "Job", want, NewJob(act))
		})
	}
}

func TestParseExecUser(t *testing.T) {
	for _, tc := range []struct {
		in       string
		uid, gid *int64
		ok       bool
	}{
		{in: ""},
		{in: "1000", uid: new(int64(1000)), ok: true},
		{in: "1000:3000", uid: new(int64(1000)), gid: new(int64(3000)), ok: true},
		{in: "0:0", uid: new(int64(0)), gid: new(int64(0)), ok: true},
		{in: "2147483647", uid: new(int64(2147483647)), ok: true},
		// What admission refuses is not run as anything.
		{in: "2147483648"},
		{in: "root"},
		{in: "1000:"},
		{in: ":1000"},
		{in: "+5"},
		{in: "-1"},
		{in: "1:2:3"},
	} {
		uid, gid, ok := ParseExecUser(tc.in)
		if ok != tc.ok || !equalIDs(uid, tc.uid) || !equalIDs(gid, tc.gid) {
			t.Errorf("ParseExecUser(%q) = %v, %v, %v; want %v, %v, %v", tc.in, uid, gid, ok, tc.uid, tc.gid, tc.ok)
		}
	}
}

func equalIDs(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// TestUpdateJob: the pod template is immutable and never compared; our
// label and the two fields a Job lets change are brought back, others'
// labels kept.
func TestUpdateJob(t *testing.T) {
	live := func() *batchv1.Job {
		j := desiredJob()
		j.ResourceVersion = "7"
		j.UID = "job-uid"
		j.Labels["team"] = "data"
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "job-uid"}}
		j.Spec.Template.Labels[batchv1.JobNameLabel] = fixtures.ActivityName
		j.Spec.Template.Spec.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
		j.Status.Active = 1
		return j
	}
	tests := []struct {
		name        string
		live        func(*batchv1.Job)
		wantChanged []string
		want        func(*batchv1.Job)
	}{
		{name: "in line, with what the API server and the Job controller added"},
		{
			name:        "someone raised the deadline",
			live:        func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = new(int64(3600)) },
			wantChanged: []string{"activeDeadlineSeconds"},
			want:        func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = nil },
		},
		{
			name: "someone set a TTL and dropped our label",
			live: func(j *batchv1.Job) {
				j.Spec.TTLSecondsAfterFinished = new(int32(5))
				delete(j.Labels, appv1.LabelActivity)
			},
			wantChanged: []string{"labels", "ttlSecondsAfterFinished"},
			want: func(j *batchv1.Job) {
				j.Spec.TTLSecondsAfterFinished = nil
				j.Labels[appv1.LabelActivity] = fixtures.ActivityName
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := live()
			fixtures.Tweak(tc.live, l)
			before := l.DeepCopy()
			got, changed := UpdateJob(l, NewJob(fixtures.Activity()))
			fixtures.CheckEqual(t, "live Job after the update", before, l)
			fixtures.CheckEqual(t, "changed fields", tc.wantChanged, changed)
			if tc.want == nil {
				if got != nil {
					t.Errorf("an update of a Job in line: %v", changed)
				}
			} else {
				want := before.DeepCopy()
				tc.want(want)
				fixtures.CheckEqual(t, "updated Job", want, got)
			}
			checkPatchFromCache(t, l, NewJob(fixtures.Activity()), UpdateJob)
		})
	}
}

// TestJobFinished: the run has ended when the Job's Complete or Failed
// condition is True; FailureTarget and SuccessCriteriaMet come before them.
func TestJobFinished(t *testing.T) {
	for _, tc := range []struct {
		conditions []batchv1.JobCondition
		want       batchv1.JobConditionType
	}{
		{},
		{conditions: []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}}},
		{conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionFalse}}},
		{conditions: []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}, {Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}, want: batchv1.JobComplete},
		{conditions: []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}, {Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}, want: batchv1.JobFailed},
	} {
		j := &batchv1.Job{Status: batchv1.JobStatus{Conditions: tc.conditions}}
		c, ok := JobFinished(j)
		if ok != (tc.want != "") || (ok && c.Type != tc.want) {
			t.Errorf("JobFinished(%v) = %v, %v; want %q", tc.conditions, c, ok, tc.want)
		}
	}
}
