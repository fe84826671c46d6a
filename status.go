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

package main

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/appstatus"
	"example.com/appservice-controller/internal/owner"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// updateStatus writes the AppService's status through the status
// subresource when, and only when, it changed. A Warning Event announces the
// Degraded condition when it becomes True or its message changes, not on
// every failed retry, and only once the status that says so is written: a
// sync that ran on a cached AppService older than the last status write
// sees the condition as new again, but its write fails with a conflict,
// and it must not announce the transition a second time.
func (c *Controller) updateStatus(ctx context.Context, as *appv1.AppService, seen appstatus.Observed, syncErr error) error {
	status := appstatus.New(as, seen, syncErr)
	if equality.Semantic.DeepEqual(as.Status, status) {
		return nil
	}
	oldDegraded := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionDegraded)
	newDegraded := meta.FindStatusCondition(status.Conditions, appv1.ConditionDegraded)
	becameDegraded := newDegraded.Status == metav1.ConditionTrue &&
		(oldDegraded == nil || oldDegraded.Status != metav1.ConditionTrue || oldDegraded.Message != newDegraded.Message)
	// A canary whose analysis has no Prometheus, or templates that do not
	// resolve, or whose route needs a feature a Gateway lacks: announced
	// once, as Degraded is (the second again when why changes: another
	// template missing).
	oldStalled := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionStalled)
	newStalled := meta.FindStatusCondition(status.Conditions, appv1.ConditionStalled)
	analysisStalled := newStalled != nil && newStalled.Status == metav1.ConditionTrue &&
		(newStalled.Reason == appv1.ReasonCanaryAnalysisNotConfigured || newStalled.Reason == appv1.ReasonCanaryAnalysisUnresolved ||
			newStalled.Reason == appv1.ReasonRouteFeatureUnsupported) &&
		(oldStalled == nil || oldStalled.Status != metav1.ConditionTrue || oldStalled.Reason != newStalled.Reason ||
			(newStalled.Reason == appv1.ReasonCanaryAnalysisUnresolved && unresolvedWhy(oldStalled.Message) != unresolvedWhy(newStalled.Message)))

	// Never modify the cache's object: write a copy.
	updated := as.DeepCopy()
	updated.Status = status
	written, err := c.appClient.AppV1().AppServices(as.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: owner.FieldManager})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: there is no status left to report in
	}
	if err == nil {
		c.statusWrites.Wrote(as, written)
	}
	if err == nil && becameDegraded {
		c.recorder.Event(as, corev1.EventTypeWarning, newDegraded.Reason, newDegraded.Message)
	}
	if err == nil && analysisStalled {
		c.recorder.Event(as, corev1.EventTypeWarning, newStalled.Reason, newStalled.Message)
	}
	if err == nil {
		// The measurements the status records just now, then the canary's
		// edge: once each.
		for _, e := range seen.Canary.Events {
			c.recorder.Event(as, e.Type, e.Reason, e.Message)
		}
		if e := seen.Canary.Event; e != nil {
			c.recorder.Event(as, e.Type, e.Reason, e.Message)
		}
	}
	return err
}

// unresolvedWhy is what a CanaryAnalysisUnresolved condition's message
// says of the templates, without the step it holds at.
func unresolvedWhy(message string) string {
	_, why, _ := strings.Cut(message, "cannot be resolved: ")
	return why
}
