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
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestActivityStatusOfErrors: a sync that failed leaves the phase as it was;
// what retrying may fix keeps the Activity Reconciling, what needs the user
// Stalls it, with the error's reason.
func TestActivityStatusOfErrors(t *testing.T) {
	act := fixtures.Activity()
	gr := schema.GroupResource{Group: "batch", Resource: "jobs"}
	for _, tc := range []struct {
		name                   string
		err                    error
		reconciling, stalled   metav1.ConditionStatus
		reconcilingR, stalledR string
	}{
		{"the API server unavailable", syncerr.WriteFailed(act, appv1.ReasonCreateFailed, "create", "Job", apierrors.NewServiceUnavailable("etcd is down")),
			metav1.ConditionTrue, metav1.ConditionFalse, appv1.ReasonRetrying, appv1.ReasonAsExpected},
		{"a quota refuses the Job", syncerr.WriteFailed(act, appv1.ReasonCreateFailed, "create", "Job", apierrors.NewForbidden(gr, act.Name, errors.New("exceeded quota"))),
			metav1.ConditionFalse, metav1.ConditionTrue, appv1.ReasonCreateFailed, appv1.ReasonCreateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newActivityStatus(act, jobRun{}, tc.err)
			if st.Prosta != appv1.ActivityPending {
				t.Errorf("prosta %q, want Pending", st.Prosta)
			}
			r := meta.FindStatusCondition(st.Conditions, appv1.ConditionReconciling)
			s := meta.FindStatusCondition(st.Conditions, appv1.ConditionStalled)
			if r.Status != tc.reconciling || r.Reason != tc.reconcilingR || s.Status != tc.stalled || s.Reason != tc.stalledR {
				t.Errorf("Reconciling %s %s, Stalled %s %s; want %s %s, %s %s", r.Status, r.Reason, s.Status, s.Reason,
					tc.reconciling, tc.reconcilingR, tc.stalled, tc.stalledR)
			}
		})
	}
}

// TestActivityStatusKeepsTransitions: a status computed again from the same
// run is the same status, lastTransitionTime and all, so nothing is written.
func TestActivityStatusKeepsTransitions(t *testing.T) {
	act := fixtures.Activity()
	run := jobRun{job: liveJob(batchv1.JobStatus{StartTime: &started, Active: 1})}
	act.Status = newActivityStatus(act, run, nil)
	fixtures.CheckEqual(t, "the status again", act.Status, newActivityStatus(act, run, nil))
}

// TestExitMessage: the exit code, the reason, and the end of what the
// command wrote, cut at a line and never past the CRD's bound.
func TestExitMessage(t *testing.T) {
	fixtures.CheckEqual(t, "a short message", "The command exited 2 (Error):\nls: /nope: No such file or directory",
		exitMessage(&corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "ls: /nope: No such file or directory\n"}))
	fixtures.CheckEqual(t, "no message, no reason", "The command exited 137", exitMessage(&corev1.ContainerStateTerminated{ExitCode: 137}))

	var long strings.Builder
	for i := range 1000 {
		long.WriteString(strings.Repeat("x", i%70) + "\n")
	}
	long.WriteString("the last line")
	got := exitMessage(&corev1.ContainerStateTerminated{ExitCode: 1, Message: long.String()})
	head, tail, _ := strings.Cut(got, ":\n")
	if len(got) > 4096 || head != "The command exited 1" || len(tail) > maxMessage {
		t.Errorf("a long message: %d bytes, starting %q", len(got), head)
	}
	if !strings.HasSuffix(long.String(), "\n"+tail) || !strings.HasSuffix(tail, "\nthe last line") {
		t.Errorf("the tail is not the message's last lines, from the start of one: %q...", tail[:20])
	}
	fixtures.CheckEqual(t, "no line to cut at, and no half a character", "é", children.LastLines("aé", 2))
}
