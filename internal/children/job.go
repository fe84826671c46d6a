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
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The Job's pure part: the one child of an Activity. The Job runs the
// command once: one Pod (completions and parallelism 1), not retried when
// the command fails (backoffLimit 0), not restarted (restartPolicy Never).
// A Pod disrupted before the command could finish (its node lost or
// drained, the Pod evicted or preempted: the DisruptionTarget condition)
// is not counted as a failure (podFailurePolicy): the Job controller runs
// the command in a new Pod. Its pod template is immutable, as is the
// Activity's spec, so the controller owns only our label and the two fields
// a Job lets change, activeDeadlineSeconds and ttlSecondsAfterFinished:
// someone changing those is undone. The Job carries
// appv1.FinalizerActivityStatus from its creation (see internal/activity).

// ActivityKind is the group, version and kind of the Activities that own
// Jobs.
var ActivityKind = appv1.SchemeGroupVersion.WithKind("Activity")

// ActivityContainer is the name of the container that runs an Activity's
// command.
const ActivityContainer = "activity"

// ActivityLabels are the labels of an Activity's Job and Pod.
func ActivityLabels(act *appv1.Activity) map[string]string {
	return map[string]string{appv1.LabelActivity: act.Name}
}

// NewJob returns the Job that runs an Activity's command.
func NewJob(act *appv1.Activity) *batchv1.Job {
	spec := &act.Spec
	container := corev1.Container{
		Name:    ActivityContainer,
		Image:   ActivityImage(act),
		Command: []string{"/bin/sh", "-c", spec.Command},
		// The last lines of the log become the termination message when
		// the command fails without writing one: the status's message.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		WorkingDir:               spec.ExecCwd,
		Env:                      ActivityEnv(spec.Envs),
		Resources:                *spec.Resources.DeepCopy(),
	}
	if uid, gid, ok := ParseExecUser(spec.ExecUser); ok {
		container.SecurityContext = &corev1.SecurityContext{RunAsUser: uid, RunAsGroup: gid}
	}
	pod := corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		Containers:         []corev1.Container{container},
		ServiceAccountName: spec.ServiceAccountName,
	}
	if spec.Host != "" {
		pod.NodeSelector = map[string]string{corev1.LabelHostname: spec.Host}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            act.Name,
			Namespace:       act.Namespace,
			Labels:          ActivityLabels(act),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(act, ActivityKind)},
			Finalizers:      []string{appv1.FinalizerActivityStatus},
		},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To[int32](1),
			Completions:  ptr.To[int32](1),
			BackoffLimit: ptr.To[int32](0),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
			ActiveDeadlineSeconds:   spec.ActiveDeadlineSeconds,
			TTLSecondsAfterFinished: spec.TTLSecondsAfterFinished,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: ActivityLabels(act)},
				Spec:       pod,
			},
		},
	}
}

// ActivityImage is spec.image, or DefaultActivityImage for an Activity the
// API server has not defaulted (one built in a test).
func ActivityImage(act *appv1.Activity) string {
	if act.Spec.Image == "" {
		return appv1.DefaultActivityImage
	}
	return act.Spec.Image
}

// ActivityEnv turns the tutorial's NAME=value strings into env vars, in
// their order. The name ends at the first '=': the value may hold more.
// Admission refuses an entry without '=' and a name given twice; here one
// without '=' is a name with an empty value, as env(1) would not have it
// but a shell's `export NAME` would.
func ActivityEnv(envs []string) []corev1.EnvVar {
	if len(envs) == 0 {
		return nil
	}
	out := make([]corev1.EnvVar, 0, len(envs))
	for _, e := range envs {
		name, value, _ := strings.Cut(e, "=")
		out = append(out, corev1.EnvVar{Name: name, Value: value})
	}
	return out
}

// ParseExecUser reads execuser, "UID" or "UID:GID", as the container's
// runAsUser and runAsGroup (nil GID for "UID"). ok is false for "" and for
// anything else admission refuses.
func ParseExecUser(user string) (uid, gid *int64, ok bool) {
	if user == "" {
		return nil, nil, false
	}
	u, g, hasGroup := strings.Cut(user, ":")
	parse := func(s string) (*int64, bool) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > 2147483647 || strings.TrimLeft(s, "0123456789") != "" {
			return nil, false
		}
		return &n, true
	}
	if uid, ok = parse(u); !ok {
		return nil, nil, false
	}
	if hasGroup {
		if gid, ok = parse(g); !ok {
			return nil, nil, false
		}
	}
	return uid, gid, true
}

// UpdateJob returns a copy of live with the fields the controller owns set
// as in desired, and the names of those that changed; nil when none did.
func UpdateJob(live, desired *batchv1.Job) (*batchv1.Job, []string) {
	out := live.DeepCopy()
	changed := ownedLabels(&out.ObjectMeta, desired.Labels)
	setOwned(&changed, "activeDeadlineSeconds", &out.Spec.ActiveDeadlineSeconds, desired.Spec.ActiveDeadlineSeconds)
	setOwned(&changed, "ttlSecondsAfterFinished", &out.Spec.TTLSecondsAfterFinished, desired.Spec.TTLSecondsAfterFinished)
	return updated(out, changed)
}

// trimJob keeps what UpdateJob owns and the status the Activity's status
// is made from. The pod template, most of a Job, is immutable and never
// read back: it stays out of the cache.
func trimJob(j *batchv1.Job) *batchv1.Job {
	out := &batchv1.Job{ObjectMeta: trimMetaFor(&j.ObjectMeta, appv1.LabelActivity)}
	if slices.Contains(j.Finalizers, appv1.FinalizerActivityStatus) {
		out.Finalizers = []string{appv1.FinalizerActivityStatus}
	}
	out.Spec.ActiveDeadlineSeconds = j.Spec.ActiveDeadlineSeconds
	out.Spec.TTLSecondsAfterFinished = j.Spec.TTLSecondsAfterFinished
	out.Status = batchv1.JobStatus{
		StartTime: j.Status.StartTime, CompletionTime: j.Status.CompletionTime,
		Active: j.Status.Active, Ready: j.Status.Ready, Succeeded: j.Status.Succeeded, Failed: j.Status.Failed,
	}
	for _, c := range j.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, batchv1.JobCondition{
			Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime,
		})
	}
	return out
}

// JobFinished returns the Job's Complete or Failed condition when it is
// True: the run has ended.
func JobFinished(j *batchv1.Job) (*batchv1.JobCondition, bool) {
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c, true
		}
	}
	return nil, false
}

// LastLines is the end of s, at most limit bytes of it, cut at a line:
// the last lines of a log, for a status message.
func LastLines(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	s = s[len(s)-limit:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:] // not half a character
	}
	return s
}
