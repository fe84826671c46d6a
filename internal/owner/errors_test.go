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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func checkChildError(t *testing.T, err error, reason string) {
	t.Helper()
	var ce *childError
	if !errors.As(err, &ce) {
		t.Errorf("got error %v, want a *childError", err)
		return
	}
	if ce.reason != reason {
		t.Errorf("got error reason %q, want %q", ce.reason, reason)
	}
	if isStale(err) {
		t.Errorf("isStale(%v) = true, want false", err)
	}
}

// TestSyncHandlerWriteErrors: a failed write makes the AppService Degraded
// with the API's message; a conflict is retried as stale, unreported.
func TestSyncHandlerWriteErrors(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, fixtures.Name,
		field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), 3, "exceeds quota")})
	internal := apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, fixtures.Name,
		errors.New("the object has been modified"))

	tests := []struct {
		name         string
		reactor      reactor
		wantDegraded string // message of Degraded=True, UpdateFailed; "" for no status write
		stalled      bool   // the failure needs the user (Stalled), else it is retried (Reconciling)
	}{
		{
			name:         "Deployment update invalid (422)",
			reactor:      errorReactor("patch", "deployments", invalid),
			wantDegraded: "failed to update Deployment default/nginx-app: " + invalid.Error(),
			stalled:      true,
		},
		{
			name:         "Service update internal error (500)",
			reactor:      errorReactor("patch", "services", internal),
			wantDegraded: "failed to update Service default/nginx-app: " + internal.Error(),
		},
		{name: "Deployment update conflict (409)", reactor: errorReactor("patch", "deployments", conflict)},
		{name: "Service update conflict (409)", reactor: errorReactor("patch", "services", conflict)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A change of both children: size and serviceType.
			as := withStatus(fixtures.AppService(), currentStatus())
			as.Spec.Size = new(int32(3))
			as.Spec.ServiceType = corev1.ServiceTypeLoadBalancer
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{fixtures.LiveDeployment()}
			f.services = []*corev1.Service{fixtures.LiveService()}
			f.kubeReactors = []reactor{tc.reactor}
			wantDeploy := fixtures.LiveDeployment()
			wantDeploy.Spec.Replicas = new(int32(3))
			wantSvc := fixtures.LiveService()
			wantSvc.Spec.Type = corev1.ServiceTypeLoadBalancer
			f.expectUpdate(wantDeploy)
			f.expectUpdate(wantSvc)
			// The write that does not fail is reported as usual.
			if tc.reactor.resource == "deployments" {
				f.events = []string{normal(appv1.ReasonUpdated, "Updated Service nginx-app: type")}
			} else {
				f.events = []string{normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: replicas")}
			}
			if tc.wantDegraded != "" {
				st := currentStatus()
				setDegraded(&st, degraded(appv1.ReasonUpdateFailed, tc.wantDegraded), tc.stalled)
				f.expectStatusUpdate(withStatus(as, st))
				f.events = append(f.events, warning(appv1.ReasonUpdateFailed, tc.wantDegraded))
			}

			err := f.run(testKey)
			if tc.wantDegraded != "" {
				checkChildError(t, err, appv1.ReasonUpdateFailed)
				return
			}
			if !apierrors.IsConflict(err) || !isStale(err) {
				t.Errorf("got error %v, want a conflict reported as stale", err)
			}
		})
	}
}

// The event handlers.

// TestSyncHandlerNamespaceTerminating: a create refused because the
// namespace is being deleted ends the sync quietly: no error to retry, no
// Degraded status, no Warning (the AppService is about to go too).
func TestSyncHandlerNamespaceTerminating(t *testing.T) {
	terminating := apierrors.NewForbidden(deploymentsResource.GroupResource(), fixtures.Name,
		errors.New("unable to create new content in namespace default because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace default is being terminated", Field: "metadata.namespace",
	}}
	as := withStatus(fixtures.AppService(), currentStatus())
	f := newFixture(t, as)
	f.services = []*corev1.Service{fixtures.LiveService()}
	f.kubeReactors = []reactor{errorReactor("create", "deployments", terminating)}
	f.expectCreate(fixtures.DesiredDeployment())
	if err := f.run(testKey); err != nil {
		t.Errorf("syncHandler: %v, want nil", err)
	}
}

func TestOnlyStale(t *testing.T) {
	conflict := apierrors.NewConflict(deploymentsResource.GroupResource(), fixtures.Name, errors.New("modified"))
	lag := fmt.Errorf("Service: %w", errCacheLag)
	real := &childError{reason: appv1.ReasonCreateFailed, err: errors.New("quota exceeded")}
	tests := []struct {
		name string
		errs []error
		want bool
	}{
		{"no error", []error{nil, nil}, false},
		{"a conflict", []error{conflict, nil}, true},
		{"cache lag and a conflict", []error{lag, conflict}, true},
		{"cache lag beside a real error: reported", []error{lag, real}, false},
		{"a real error", []error{nil, real}, false},
		// One child's sync joins the errors of its writes.
		{"joined: cache lag and a conflict", []error{errors.Join(lag, conflict), nil}, true},
		{"joined: a conflict beside a real error: reported", []error{errors.Join(conflict, real), nil}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlyStale(tc.errs...); got != tc.want {
				t.Errorf("onlyStale = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNeedsUser: what only the user can fix makes the AppService Stalled;
// what a retry may fix does not.
func TestNeedsUser(t *testing.T) {
	as := fixtures.AppService()
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	invalid := writeFailed(as, appv1.ReasonCreateFailed, "create", "Deployment",
		apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, fixtures.Name, nil))
	quota := writeFailed(as, appv1.ReasonUpdateFailed, "update", "Deployment", apierrors.NewForbidden(gr, fixtures.Name, errors.New("exceeded quota")))
	unavailable := writeFailed(as, appv1.ReasonUpdateFailed, "update", "Service", apierrors.NewServiceUnavailable("etcd is down"))
	tests := []struct {
		name string
		err  error
		want error // the error reported as needing the user; nil: none
	}{
		{"none", nil, nil},
		{"an object in the way", notOurs(appServiceKind, as, fixtures.LiveService(), "Service"), nil /* itself, below */},
		{"the Gateway API missing", errRouteAPIMissing, errRouteAPIMissing},
		{"refused as invalid", invalid, invalid},
		{"forbidden by a quota", quota, quota},
		{"the API server unavailable", unavailable, nil},
		{"not a child's failure", errors.New("connection refused"), nil},
		{"the first that needs the user, among others", errors.Join(unavailable, fmt.Errorf("sync: %w", quota), invalid), quota},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if tc.name == "an object in the way" {
				want = tc.err
			}
			got := needsUser(tc.err)
			if want == nil && got != nil || want != nil && (got == nil || error(got) != want) {
				t.Errorf("needsUser = %v, want %v", got, want)
			}
		})
	}
}
