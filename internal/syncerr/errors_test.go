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

package syncerr

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestOnlyStale(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, fixtures.Name, errors.New("modified"))
	lag := fmt.Errorf("Service: %w", ErrCacheLag)
	real := &ChildError{Reason: appv1.ReasonCreateFailed, Err: errors.New("quota exceeded")}
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
			if got := OnlyStale(tc.errs...); got != tc.want {
				t.Errorf("OnlyStale = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNeedsUser: what only the user can fix makes the AppService Stalled;
// what a retry may fix does not.
func TestNeedsUser(t *testing.T) {
	as := fixtures.AppService()
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	invalid := WriteFailed(as, appv1.ReasonCreateFailed, "create", "Deployment",
		apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, fixtures.Name, nil))
	quota := WriteFailed(as, appv1.ReasonUpdateFailed, "update", "Deployment", apierrors.NewForbidden(gr, fixtures.Name, errors.New("exceeded quota")))
	inTheWay := &ChildError{Reason: appv1.ReasonResourceExists, Err: errors.New("Service default/nginx-app already exists and is not controlled by AppService nginx-app")}
	routeAPIMissing := &ChildError{Reason: appv1.ReasonRouteAPIMissing, Err: errors.New("the cluster does not serve HTTPRoutes")}
	unavailable := WriteFailed(as, appv1.ReasonUpdateFailed, "update", "Service", apierrors.NewServiceUnavailable("etcd is down"))
	tests := []struct {
		name string
		err  error
		want error // the error reported as needing the user; nil: none
	}{
		{"none", nil, nil},
		{"an object in the way", inTheWay, inTheWay},
		{"the Gateway API missing", routeAPIMissing, routeAPIMissing},
		{"refused as invalid", invalid, invalid},
		{"forbidden by a quota", quota, quota},
		{"the API server unavailable", unavailable, nil},
		{"not a child's failure", errors.New("connection refused"), nil},
		{"the first that needs the user, among others", errors.Join(unavailable, fmt.Errorf("sync: %w", quota), invalid), quota},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NeedsUser(tc.err)
			if tc.want == nil && got != nil || tc.want != nil && (got == nil || error(got) != tc.want) {
				t.Errorf("NeedsUser = %v, want %v", got, tc.want)
			}
		})
	}
}
