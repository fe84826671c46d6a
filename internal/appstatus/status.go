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

// Package appstatus computes an AppService's status from what a sync saw
// of its children: the Deployment's replicas and conditions mirrored, and
// Degraded, Ready, Reconciling, Stalled and Suspended as kstatus and Argo
// CD read them. It is a pure function of its inputs; the controller writes
// the result (status.go, updateStatus).
//
// Of this repository it may import only internal/canary, internal/children,
// internal/plural, internal/syncerr and the API's types (pkg/apis/app/v1),
// and it imports no client: fuzzing instruments every package the test
// binary links, and FuzzStatus should cost little more to build than
// FuzzBuilders.
package appstatus

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"example.com/appservice-controller/internal/canary"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/plural"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Observed is what a sync saw of the children that the status reports.
type Observed struct {
	// Deployment is the Deployment the AppService controls (nil: none).
	Deployment *appsv1.Deployment
	// URL is where its Ingress or route takes a browser ("": nowhere).
	URL string
	// ConfigQueued: a config change calls for a rollout that waits its
	// turn under the cap of MaxConfigRollouts.
	ConfigQueued      bool
	MaxConfigRollouts int
	// Canary is the sync's canary decision (internal/canary).
	Canary canary.Decision
	// Notifications are the edges and deliveries to record (nil: as they
	// are).
	Notifications *appv1.NotificationsStatus
}

// New computes an AppService's status from the children the sync saw
// and the error of this sync, if any. It starts from a
// copy of the current status so that conditions that did not change keep
// their lastTransitionTime; the caller writes it only when it differs.
func New(as *appv1.AppService, seen Observed, syncErr error) appv1.AppServiceStatus {
	d := seen.Deployment
	st := *as.Status.DeepCopy()
	st.ObservedGeneration = as.Generation
	st.Selector = labels.SelectorFromSet(children.SelectorLabels(as)).String()
	st.URL = seen.URL
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas = 0, 0, 0, 0
	if d != nil {
		st.Replicas = d.Status.Replicas
		st.ReadyReplicas = d.Status.ReadyReplicas
		st.AvailableReplicas = d.Status.AvailableReplicas
		st.UpdatedReplicas = d.Status.UpdatedReplicas
	}

	meta.SetStatusCondition(&st.Conditions, mirrorCondition(as, d, appv1.ConditionAvailable, appsv1.DeploymentAvailable))
	meta.SetStatusCondition(&st.Conditions, mirrorCondition(as, d, appv1.ConditionProgressing, appsv1.DeploymentProgressing))
	meta.SetStatusCondition(&st.Conditions, degradedCondition(as, syncErr))
	for _, c := range kstatusConditions(as, d, syncErr, seen) {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	setSuspendedCondition(&st, as)
	st.Canary = seen.Canary.Status.DeepCopy()
	if seen.Notifications != nil {
		st.Notifications = seen.Notifications.DeepCopy()
	}
	return st
}

// kstatusConditions are Ready, Reconciling and Stalled, the conditions
// kstatus reads: Stalled when progress needs the user, else Reconciling
// while anything is still under way, else Ready. Ready False gives the
// reason and message of whichever of the other two is True.
func kstatusConditions(as *appv1.AppService, d *appsv1.Deployment, syncErr error, seen Observed) []metav1.Condition {
	cond := func(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, ObservedGeneration: as.Generation, Reason: reason, Message: message}
	}
	f, t := metav1.ConditionFalse, metav1.ConditionTrue
	notStalled := cond(appv1.ConditionStalled, f, appv1.ReasonAsExpected, "Nothing needs the user")

	p := Progress(as, d)
	if seen.ConfigQueued && !p.Stalled {
		p = Rollout{Reason: appv1.ReasonConfigRolloutQueued, Message: fmt.Sprintf(
			"A ConfigMap or Secret the Pods read changed: their rollout waits its turn (at most %s %s for a config change at once)",
			plural.Count(seen.MaxConfigRollouts, "AppService"), plural.Agree(seen.MaxConfigRollouts, "rolls", "roll"))}
	}
	switch ph := seen.Canary.Phase; {
	case ph == canary.Aborted || seen.Canary.Stalled:
		p = Rollout{Stalled: true, Reason: seen.Canary.Reason, Message: seen.Canary.Message}
	case (ph == canary.Running || ph == canary.Promoting || ph == canary.RollingBack) && !p.Stalled:
		p = Rollout{Reason: seen.Canary.Reason, Message: seen.Canary.Message}
	}
	switch ce := syncerr.NeedsUser(syncErr); {
	case ce != nil && seen.Canary.Phase == canary.AwaitingRoute:
		p = Rollout{Stalled: true, Reason: ce.Reason, Message: ce.Error() + ". " + seen.Canary.Message}
	case ce != nil:
		p = Rollout{Stalled: true, Reason: ce.Reason, Message: ce.Error()}
	case syncErr != nil:
		p = Rollout{Reason: appv1.ReasonRetrying, Message: "Retrying: " + syncErr.Error()}
	}
	switch {
	case p.Stalled:
		return []metav1.Condition{
			cond(appv1.ConditionReady, f, p.Reason, p.Message),
			cond(appv1.ConditionReconciling, f, p.Reason, "Stalled: "+p.Message),
			cond(appv1.ConditionStalled, t, p.Reason, p.Message),
		}
	case !p.Done:
		return []metav1.Condition{
			cond(appv1.ConditionReady, f, p.Reason, p.Message),
			cond(appv1.ConditionReconciling, t, p.Reason, p.Message),
			notStalled,
		}
	default:
		reason := appv1.ReasonRolloutComplete
		if children.Suspended(as) {
			// What was asked: kstatus reads it as Current.
			reason = appv1.ReasonSuspended
		}
		return []metav1.Condition{
			cond(appv1.ConditionReady, t, reason, p.Message),
			cond(appv1.ConditionReconciling, f, reason, p.Message),
			notStalled,
		}
	}
}

// setSuspendedCondition sets Suspended True while spec.suspend is true, and
// False once it no longer is; an AppService never suspended gets none (so
// that the condition's arrival writes no status to every AppService there
// is).
func setSuspendedCondition(st *appv1.AppServiceStatus, as *appv1.AppService) {
	c := metav1.Condition{Type: appv1.ConditionSuspended, ObservedGeneration: as.Generation}
	switch {
	case children.Suspended(as):
		c.Status, c.Reason = metav1.ConditionTrue, appv1.ReasonSuspended
		c.Message = "spec.suspend is true: the Deployment is held at 0 replicas, without an autoscaler; the Service and the other children stay"
	case meta.FindStatusCondition(st.Conditions, appv1.ConditionSuspended) != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, appv1.ReasonResumed, "spec.suspend is false: the Pods are back"
	default:
		return
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// Rollout is how far the Deployment is from running the current template
// on every replica it should have.
type Rollout struct {
	// Done: every replica wanted runs the current template, available.
	// Stalled: it cannot get there without the user.
	Done, Stalled   bool
	Reason, Message string
}

// Progress judges the Deployment's rollout as kstatus judges a
// Deployment: the current generation observed, as many replicas as the
// spec asks for updated, none beyond them left (old ones, or the surplus
// of a scale-down), and as many available; past the progress deadline, it
// is stalled. With autoscaling, the autoscaler must also have reached
// the AppService's minimum.
func Progress(as *appv1.AppService, d *appsv1.Deployment) Rollout {
	inProgress := func(format string, args ...any) Rollout {
		return Rollout{Reason: appv1.ReasonRollingOut, Message: fmt.Sprintf(format, args...)}
	}
	if d == nil {
		return inProgress("The Deployment does not exist yet")
	}
	if d.Status.ObservedGeneration < d.Generation {
		return inProgress("Waiting for the Deployment's controller to observe generation %d", d.Generation)
	}
	if c := DeploymentCondition(d, appsv1.DeploymentProgressing); c != nil && c.Reason == appv1.ReasonProgressDeadlineExceeded {
		return Rollout{Stalled: true, Reason: appv1.ReasonProgressDeadlineExceeded,
			Message: fmt.Sprintf("The Deployment's rollout made no progress within its deadline: %s", c.Message)}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	if children.Suspended(as) {
		if st.Replicas > 0 || want > 0 {
			return Rollout{Reason: appv1.ReasonSuspending, Message: fmt.Sprintf("Suspending: %s still running", plural.Count(max(st.Replicas, want), "replica"))}
		}
		return Rollout{Done: true, Message: "Suspended: the Deployment is at 0 replicas"}
	}
	switch {
	case st.UpdatedReplicas < want:
		return inProgress("%d of %s updated", st.UpdatedReplicas, plural.Count(want, "replica"))
	case st.Replicas > want:
		return inProgress("%s for %d wanted: the others are terminating", plural.Count(st.Replicas, "replica"), want)
	case st.AvailableReplicas < want:
		return inProgress("%d of %s available", st.AvailableReplicas, plural.Count(want, "replica"))
	}
	if a := as.Spec.Autoscaling; a != nil && children.Autoscaled(as) {
		least := int32(1)
		if a.MinReplicas != nil {
			least = *a.MinReplicas
		}
		if want < least {
			return Rollout{Reason: appv1.ReasonScalingToMinimum,
				Message: fmt.Sprintf("The autoscaler has %s, below the minimum of %d", plural.Count(want, "replica"), least)}
		}
	}
	n := st.AvailableReplicas
	return Rollout{Done: true, Message: fmt.Sprintf("%d of %s %s the current template and %s available",
		n, plural.Count(want, "replica"), plural.Agree(n, "runs", "run"), plural.Agree(n, "is", "are"))}
}

// mirrorCondition copies a condition of the Deployment onto the AppService.
func mirrorCondition(as *appv1.AppService, d *appsv1.Deployment, to string, from appsv1.DeploymentConditionType) metav1.Condition {
	c := metav1.Condition{Type: to, ObservedGeneration: as.Generation}
	switch d {
	case nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, appv1.ReasonDeploymentMissing, "The Deployment does not exist yet"
	default:
		dc := DeploymentCondition(d, from)
		if dc == nil {
			c.Status, c.Reason, c.Message = metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, "The Deployment has not reported this condition yet"
			break
		}
		c.Status = metav1.ConditionStatus(dc.Status)
		c.Reason, c.Message = dc.Reason, dc.Message
		if c.Reason == "" {
			c.Reason = reasonForStatus(dc.Status)
		}
	}
	return c
}

// reasonForStatus is a mirrored condition's reason when the Deployment's
// condition has none.
func reasonForStatus(s corev1.ConditionStatus) string {
	switch s {
	case corev1.ConditionTrue:
		return appv1.ReasonDeploymentTrue
	case corev1.ConditionFalse:
		return appv1.ReasonDeploymentFalse
	default:
		return appv1.ReasonDeploymentUnknown
	}
}

// DeploymentCondition is the Deployment's condition of type t (nil: none).
func DeploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// degradedCondition is True with the reason and message of the sync's error
// when the children could not be brought in line, False otherwise. (Stale
// errors, conflicts and cache lag, never get here: see syncHandler.)
func degradedCondition(as *appv1.AppService, syncErr error) metav1.Condition {
	c := metav1.Condition{
		Type:               appv1.ConditionDegraded,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: as.Generation,
		Reason:             appv1.ReasonAsExpected,
		Message:            "Every child matches the spec",
	}
	var ce *syncerr.ChildError
	switch {
	case errors.As(syncErr, &ce):
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ce.Reason, ce.Error()
	case syncErr != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, appv1.ReasonSyncFailed, syncErr.Error()
	}
	return c
}
