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

package activity

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// jobRun is what a sync of an Activity saw of its run.
type jobRun struct {
	// job is the Job the Activity controls (nil: none, yet).
	job *batchv1.Job
	// gone: the run had started and its Job no longer exists.
	gone bool
	// terminated is how the command's container ended, for a run that
	// failed (nil when its Pod was gone).
	terminated *corev1.ContainerStateTerminated
}

// maxMessage bounds status.message (the CRD's maxLength, 4096, with room
// for what precedes the command's output).
const maxMessage = 3072

// newActivityStatus computes an Activity's status from its run and the
// error of this sync, if any. It starts from a copy of the current status,
// so that conditions that did not change keep their lastTransitionTime;
// the caller writes it only when it differs.
func newActivityStatus(act *appv1.Activity, run jobRun, syncErr error) appv1.ActivityStatus {
	st := *act.Status.DeepCopy()
	st.ObservedGeneration = act.Generation
	cond := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, ObservedGeneration: act.Generation, Reason: reason, Message: message,
		})
	}
	f, t := metav1.ConditionFalse, metav1.ConditionTrue
	failed := func(reason, message string) {
		st.Prosta, st.Message = appv1.ActivityFailed, message
		cond(appv1.ConditionFailed, t, reason, message)
		cond(appv1.ConditionReconciling, f, reason, "The run has ended")
		cond(appv1.ConditionStalled, t, reason, message)
	}
	inProgress := func(reason, message string) {
		cond(appv1.ConditionReconciling, t, reason, message)
		cond(appv1.ConditionStalled, f, appv1.ReasonAsExpected, "Nothing needs the user")
	}

	j := run.job
	if j != nil && j.Status.StartTime != nil {
		st.StartTime = j.Status.StartTime
	}
	if st.Prosta == "" {
		st.Prosta = appv1.ActivityPending
	}
	finished, ended := (*batchv1.JobCondition)(nil), false
	if j != nil {
		finished, ended = children.JobFinished(j)
	}
	switch ce := syncerr.NeedsUser(syncErr); {
	case run.gone:
		failed(appv1.ReasonJobDeleted, "The Job was deleted before the command finished; it is not run again (create a new Activity to run it again)")
	case ended && finished.Type == batchv1.JobComplete:
		st.Prosta, st.ExitCode, st.Message = appv1.ActivitySucceeded, new(int32(0)), ""
		st.CompletionTime = endTime(j, finished)
		message := "The command exited 0"
		if st.StartTime != nil && st.CompletionTime != nil {
			message += fmt.Sprintf(" after %s", st.CompletionTime.Sub(st.StartTime.Time).Round(1e9))
		}
		cond(appv1.ConditionComplete, t, orDefault(finished.Reason, appv1.ReasonSucceeded), message)
		cond(appv1.ConditionReconciling, f, appv1.ReasonSucceeded, "The run has ended")
		cond(appv1.ConditionStalled, f, appv1.ReasonAsExpected, "Nothing needs the user")
	case ended:
		st.CompletionTime = endTime(j, finished)
		message := finished.Message
		if term := run.terminated; term != nil {
			st.ExitCode = new(term.ExitCode)
			message = exitMessage(term)
		}
		failed(orDefault(finished.Reason, appv1.ReasonJobFailed), message)
	case ce != nil:
		// The Job cannot be created, or one of its name is in the way:
		// the user must act.
		cond(appv1.ConditionReconciling, f, ce.Reason, "Stalled: "+ce.Error())
		cond(appv1.ConditionStalled, t, ce.Reason, ce.Error())
	case syncErr != nil:
		inProgress(appv1.ReasonRetrying, "Retrying: "+syncErr.Error())
	case j != nil && j.Status.Ready != nil && *j.Status.Ready > 0:
		st.Prosta = appv1.ActivityRunning
		inProgress(appv1.ReasonRunning, "The command is running")
	default:
		st.Prosta = appv1.ActivityPending
		inProgress(appv1.ReasonPending, "Waiting for the Job's Pod to run")
	}
	return st
}

// endTime is when the run ended: the Job's completionTime (set only for a
// Job that Completed), else when its condition turned True.
func endTime(j *batchv1.Job, c *batchv1.JobCondition) *metav1.Time {
	if j.Status.CompletionTime != nil {
		return j.Status.CompletionTime
	}
	if c.LastTransitionTime.IsZero() {
		return nil
	}
	return &c.LastTransitionTime
}

// exitMessage says how the command ended: its exit code, the container's
// reason, and the last lines it wrote (the termination message: with
// FallbackToLogsOnError, the tail of its log when it wrote none).
func exitMessage(term *corev1.ContainerStateTerminated) string {
	msg := fmt.Sprintf("The command exited %d", term.ExitCode)
	if term.Reason != "" {
		msg += " (" + term.Reason + ")"
	}
	if tail := children.LastLines(strings.TrimRight(term.Message, "\n"), maxMessage); tail != "" {
		msg += ":\n" + tail
	}
	return msg
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
