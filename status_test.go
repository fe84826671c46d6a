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
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"example.com/appservice-controller/internal/appstatus"
	"example.com/appservice-controller/internal/canary"
	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestSyncHandlerStatus: the status is written when, and only when, it
// changed, keeping the lastTransitionTime of conditions that did not.
func TestSyncHandlerStatus(t *testing.T) {
	tests := []struct {
		name       string
		as         func(*appv1.AppService)
		liveDeploy func(*appsv1.Deployment)
		liveSvc    func(*corev1.Service)
		want       func(*appv1.AppServiceStatus) // applied to currentStatus; nil: no write
		events     []string
		wantReason string // of the *syncerr.ChildError returned; "": no error
	}{
		{name: "current"},
		{
			name: "new generation",
			as:   func(as *appv1.AppService) { as.Generation = fixtures.Generation + 1 },
			want: func(st *appv1.AppServiceStatus) {
				st.ObservedGeneration = fixtures.Generation + 1
				for i := range st.Conditions {
					st.Conditions[i].ObservedGeneration = fixtures.Generation + 1 // lastTransitionTime kept
				}
			},
		},
		{
			name: "Deployment lost availability",
			liveDeploy: func(d *appsv1.Deployment) {
				d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1
				d.Status.Conditions[0].Status = corev1.ConditionFalse
				d.Status.Conditions[0].Reason = "MinimumReplicasUnavailable"
				d.Status.Conditions[0].Message = "Deployment does not have minimum availability."
			},
			want: func(st *appv1.AppServiceStatus) {
				st.ReadyReplicas, st.AvailableReplicas = 1, 1
				setCondition(st, condition(appv1.ConditionAvailable, metav1.ConditionFalse,
					"MinimumReplicasUnavailable", "Deployment does not have minimum availability."))
				for _, c := range reconcilingConditions(appv1.ReasonRollingOut, "1 of 2 replicas available") {
					setCondition(st, c)
				}
			},
		},
		{
			name: "Degraded and Stalled cleared once the object in the way is gone",
			as:   func(as *appv1.AppService) { setDegraded(&as.Status, serviceInTheWay(), true) },
			want: func(st *appv1.AppServiceStatus) {
				for _, c := range append(readyConditions(rolledOut), notDegraded()) {
					setCondition(st, c) // changed: now
				}
			},
		},
		{
			name:       "still Degraded for the same reason, replicas changed: no new Warning",
			as:         func(as *appv1.AppService) { setDegraded(&as.Status, serviceInTheWay(), true) },
			liveSvc:    func(s *corev1.Service) { notLabelledForUs(s) },
			liveDeploy: func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 1 },
			want: func(st *appv1.AppServiceStatus) {
				setDegraded(st, serviceInTheWay(), true)
				st.ReadyReplicas = 1
			},
			wantReason: appv1.ReasonResourceExists,
		},
		{
			name: "Degraded for another reason: a new Warning",
			as: func(as *appv1.AppService) {
				c := serviceInTheWay()
				c.Message = notOursMessage("Deployment")
				setDegraded(&as.Status, c, true)
			},
			liveSvc: func(s *corev1.Service) { notLabelledForUs(s) },
			want: func(st *appv1.AppServiceStatus) {
				setDegraded(st, serviceInTheWay(), true) // still True: lastTransitionTime kept
			},
			events:     []string{fixtures.Warning(appv1.ReasonResourceExists, notOursMessage("Service"))},
			wantReason: appv1.ReasonResourceExists,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			fixtures.Tweak(tc.as, as)
			d := fixtures.LiveDeployment()
			fixtures.Tweak(tc.liveDeploy, d)
			s := fixtures.LiveService()
			fixtures.Tweak(tc.liveSvc, s)
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{d}
			f.services = []*corev1.Service{s}
			if tc.want != nil {
				st := currentStatus()
				tc.want(&st)
				f.expectStatusUpdate(withStatus(as, st))
			}
			f.events = tc.events
			err := f.run(testKey)
			if tc.wantReason != "" {
				checkChildError(t, err, tc.wantReason)
			} else if err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
	}
}

// TestSyncHandlerAppServiceGoneBeforeStatus: an AppService deleted between
// the cache read and the status write ends the sync without an error, so
// that its deletion is not retried and reported as a failure.
func TestSyncHandlerAppServiceGoneBeforeStatus(t *testing.T) {
	as := fixtures.AppService()
	f := newFixture(t, as)
	f.deployments = []*appsv1.Deployment{fixtures.LiveDeployment()}
	f.services = []*corev1.Service{fixtures.LiveService()}
	f.appReactors = []reactor{errorReactor("update", "appservices", apierrors.NewNotFound(appServicesResource.GroupResource(), fixtures.Name))}
	st := currentStatus()
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = metav1.Time{} // first seen: any time
	}
	f.expectStatusUpdate(withStatus(as, st))
	if err := f.run(testKey); err != nil {
		t.Errorf("syncHandler: %v, want nil", err)
	}
}

// TestSyncHandlerNoWarningWithoutStatus: a sync that finds the AppService
// newly Degraded announces it with a Warning only once its status write
// succeeds. One that ran on a cached AppService older than the last status
// write meets a conflict, and must not announce the transition again (the
// e2e test of unowned objects counted two Warnings when it did).
func TestSyncHandlerNoWarningWithoutStatus(t *testing.T) {
	as := withStatus(fixtures.AppService(), currentStatus())
	f := newFixture(t, as)
	s := fixtures.LiveService()
	notLabelledForUs(s)
	f.deployments = []*appsv1.Deployment{fixtures.LiveDeployment()}
	f.services = []*corev1.Service{s}
	f.appReactors = []reactor{errorReactor("update", "appservices", apierrors.NewConflict(appServicesResource.GroupResource(), fixtures.Name, errors.New("the object has been modified")))}
	st := currentStatus()
	c := serviceInTheWay()
	c.LastTransitionTime = metav1.Time{} // a transition now: any time
	setDegraded(&st, c, true)
	f.expectStatusUpdate(withStatus(as, st))
	f.events = nil // no Warning: the status that would say Degraded was not written
	if err := f.run(testKey); !apierrors.IsConflict(err) {
		t.Errorf("syncHandler: %v, want the conflict, to be retried", err)
	}
}

func TestNewStatus(t *testing.T) {
	earlier := metav1.NewTime(lastTransition.Add(-time.Hour))
	inTheWay := &syncerr.ChildError{Reason: appv1.ReasonResourceExists, Err: errors.New("Service default/nginx-app is in the way")}
	unknown := func(typ string) metav1.Condition {
		return condition(typ, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, "The Deployment has not reported this condition yet")
	}
	tests := []struct {
		name    string
		prior   *appv1.AppServiceStatus
		deploy  func(*appsv1.Deployment) // applied to liveDeployment
		noDepl  bool
		syncErr error
		suspend *bool
		want    appv1.AppServiceStatus
	}{
		{
			name: "mirrors the Deployment, from scratch",
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				for i := range st.Conditions {
					st.Conditions[i].LastTransitionTime = metav1.Time{}
				}
				return st
			}(),
		},
		{
			name:  "unchanged conditions keep their lastTransitionTime",
			prior: func() *appv1.AppServiceStatus { st := currentStatus(); return &st }(),
			want:  currentStatus(),
		},
		{
			name:   "no Deployment",
			noDepl: true,
			want:   missingDeploymentStatus(notDegraded()),
		},
		{
			name:   "Deployment without conditions",
			deploy: func(d *appsv1.Deployment) { d.Status = appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1} },
			want: appv1.AppServiceStatus{
				ObservedGeneration: fixtures.Generation, Replicas: 1, UpdatedReplicas: 1, Selector: fixtures.Selector,
				Conditions: append([]metav1.Condition{unknown(appv1.ConditionAvailable), unknown(appv1.ConditionProgressing), notDegraded()},
					reconcilingConditions(appv1.ReasonRollingOut, "Waiting for the Deployment's controller to observe generation 1")...),
			},
		},
		{
			name: "Deployment condition without a reason",
			deploy: func(d *appsv1.Deployment) {
				d.Status.Conditions[0] = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse}
			},
			prior: func() *appv1.AppServiceStatus { st := currentStatus(); return &st }(),
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				st.Conditions[0] = condition(appv1.ConditionAvailable, metav1.ConditionFalse, appv1.ReasonDeploymentFalse, "")
				return st
			}(),
		},
		{
			name:    "Degraded from a wrapped *syncerr.ChildError",
			prior:   func() *appv1.AppServiceStatus { st := currentStatus(); return &st }(),
			syncErr: errors.Join(nil, fmt.Errorf("sync: %w", inTheWay)),
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				setDegraded(&st, degraded(appv1.ReasonResourceExists, "Service default/nginx-app is in the way"), true)
				return st
			}(),
		},
		{
			name:    "any other error makes it Degraded too, as SyncFailed",
			prior:   func() *appv1.AppServiceStatus { st := currentStatus(); return &st }(),
			syncErr: errors.New("connection refused"),
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				setDegraded(&st, degraded(appv1.ReasonSyncFailed, "connection refused"), false)
				return st
			}(),
		},
		{
			name:    "suspended at 0: Ready, as asked, and Suspended",
			suspend: new(true),
			deploy: func(d *appsv1.Deployment) {
				d.Spec.Replicas = new(int32(0))
				d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas = 0, 0, 0, 0
			},
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas = 0, 0, 0, 0
				const msg = "Suspended: the Deployment is at 0 replicas"
				setCondition(&st, condition(appv1.ConditionReady, metav1.ConditionTrue, appv1.ReasonSuspended, msg))
				setCondition(&st, condition(appv1.ConditionReconciling, metav1.ConditionFalse, appv1.ReasonSuspended, msg))
				setCondition(&st, condition(appv1.ConditionSuspended, metav1.ConditionTrue, appv1.ReasonSuspended,
					"spec.suspend is true: the Deployment is held at 0 replicas, without an autoscaler; the Service and the other children stay"))
				for i := range st.Conditions {
					st.Conditions[i].LastTransitionTime = metav1.Time{}
				}
				return st
			}(),
		},
		{
			name:    "resumed: Suspended False, kept as a record",
			suspend: new(false),
			prior: func() *appv1.AppServiceStatus {
				st := currentStatus()
				c := condition(appv1.ConditionSuspended, metav1.ConditionTrue, appv1.ReasonSuspended, "earlier")
				c.LastTransitionTime = earlier
				setCondition(&st, c)
				return &st
			}(),
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				setCondition(&st, condition(appv1.ConditionSuspended, metav1.ConditionFalse, appv1.ReasonResumed, "spec.suspend is false: the Pods are back"))
				return st
			}(),
		},
		{
			name:    "never suspended: no Suspended condition",
			suspend: new(false),
			prior:   func() *appv1.AppServiceStatus { st := currentStatus(); return &st }(),
			want:    currentStatus(),
		},
		{
			name: "old observedGeneration, replicas and an old Degraded replaced",
			prior: func() *appv1.AppServiceStatus {
				st := currentStatus()
				st.ObservedGeneration, st.Replicas, st.ReadyReplicas = 1, 9, 9
				for i := range st.Conditions {
					st.Conditions[i].ObservedGeneration = 1
					st.Conditions[i].LastTransitionTime = earlier
				}
				c := degraded(appv1.ReasonUpdateFailed, "failed")
				c.LastTransitionTime, c.ObservedGeneration = earlier, 1
				setCondition(&st, c)
				return &st
			}(),
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				for i := range st.Conditions {
					st.Conditions[i].LastTransitionTime = earlier
				}
				st.Conditions[2].LastTransitionTime = metav1.Time{} // Degraded changed: now
				return st
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService()
			as.Spec.Suspend = tc.suspend
			if tc.prior != nil {
				as.Status = *tc.prior
			}
			before := as.DeepCopy()
			var d *appsv1.Deployment
			if !tc.noDepl {
				d = fixtures.LiveDeployment()
				fixtures.Tweak(tc.deploy, d)
			}
			got := appstatus.New(as, appstatus.Observed{Deployment: d}, tc.syncErr)
			fixtures.CheckEqual(t, "AppService after appstatus.New", before, as)
			gotAS := matchTransitionTimes(t, withStatus(as, tc.want), withStatus(as, got))
			fixtures.CheckEqual(t, "status", tc.want, gotAS.Status)
		})
	}
}

// TestCanaryStatus: a canary's phase in the conditions, as kstatus (the
// library) reads them: InProgress during the steps and the promotion,
// Current once promoted, Failed once aborted or stalled (an analysis
// without a Prometheus); the canary's status recorded
// as the decision says.
func TestCanaryStatus(t *testing.T) {
	recorded := &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(int32(1)), Weight: 10}
	for _, tc := range []struct {
		decision canary.Decision
		want     kstatus.Status
		reason   string
		syncErr  error
	}{
		{canary.Decision{Phase: canary.Running, Status: recorded, Reason: appv1.ReasonCanaryProgressing, Message: "at step 2"},
			kstatus.InProgressStatus, appv1.ReasonCanaryProgressing, nil},
		{canary.Decision{Phase: canary.Promoting, Status: recorded, Reason: appv1.ReasonCanaryPromoting, Message: "promoted"},
			kstatus.InProgressStatus, appv1.ReasonCanaryPromoting, nil},
		{canary.Decision{Phase: canary.None, Status: &appv1.CanaryStatus{StableTemplateHash: "new"}},
			kstatus.CurrentStatus, appv1.ReasonRolloutComplete, nil},
		{canary.Decision{Phase: canary.Aborted, Status: &appv1.CanaryStatus{StableTemplateHash: "old", AbortedTemplateHash: "new"},
			Reason: appv1.ReasonCanaryAborted, Message: "aborted"},
			kstatus.FailedStatus, appv1.ReasonCanaryAborted, nil},
		{canary.Decision{Phase: canary.Running, Status: recorded, Stalled: true, Reason: appv1.ReasonCanaryAnalysisNotConfigured, Message: "no Prometheus"},
			kstatus.FailedStatus, appv1.ReasonCanaryAnalysisNotConfigured, nil},
		// Held at its start while its analysis's templates do not resolve.
		{canary.Decision{Phase: canary.AwaitingAnalysis, Status: &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new"},
			Stalled: true, Reason: appv1.ReasonCanaryAnalysisUnresolved, Message: "Canary new holds at its start"},
			kstatus.FailedStatus, appv1.ReasonCanaryAnalysisUnresolved, nil},
		// Held at its start while the cluster serves no HTTPRoutes: the
		// route's failure, and what it does to the canary.
		{canary.Decision{Phase: canary.AwaitingRoute, Status: &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new"},
			Reason: appv1.ReasonRouteAPIMissing, Message: "Canary new holds at its start"},
			kstatus.FailedStatus, appv1.ReasonRouteAPIMissing, errRouteAPIMissing},
	} {
		t.Run(tc.decision.Phase.String(), func(t *testing.T) {
			as := fixtures.AppService()
			as.Status = appstatus.New(as, appstatus.Observed{Deployment: fixtures.LiveDeployment(), Canary: tc.decision}, tc.syncErr)
			fixtures.CheckEqual(t, "status.canary", tc.decision.Status, as.Status.Canary)
			if c := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionReady); c == nil || c.Reason != tc.reason ||
				!strings.Contains(c.Message, tc.decision.Message) {
				t.Errorf("Ready is %+v, want reason %s and the canary's message", c, tc.reason)
			}
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(as)
			if err != nil {
				t.Fatal(err)
			}
			res, err := kstatus.Compute(&unstructured.Unstructured{Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want {
				t.Errorf("kstatus says %s (%s), want %s", res.Status, res.Message, tc.want)
			}
		})
	}
}
