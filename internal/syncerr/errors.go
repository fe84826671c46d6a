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

// Package syncerr says what a sync's errors mean, for both kinds of owner
// (the AppService and the Activity): which are stale and retried quietly,
// which are reported, and which only the user can fix.
//
// Of this repository it may import only the API's types (pkg/apis/app/v1),
// and it imports no client: internal/appstatus, which reads it, must build
// without one.
package syncerr

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// A sync's errors fall in three groups, each handled its own way:
//
//   - stale (IsStale): a write conflict, or a cache found behind the API
//     server. The next try sees the newer state: retried with backoff, with
//     no status write, no Event and no error log.
//   - ErrNamespaceTerminating: a create refused because the namespace is
//     going. Nothing to retry, nothing to report.
//   - everything else: reported in the Degraded condition and a Warning
//     Event (a ChildError carries the condition's reason), then retried with
//     backoff. Those only the user can fix (NeedsUser) make the owner
//     Stalled; the others keep it Reconciling.

// ChildError is a failure to bring a child in line with the spec, with the
// reason the Degraded condition and the Warning Event give for it.
type ChildError struct {
	Reason string
	Err    error
}

func (e *ChildError) Error() string { return e.Err.Error() }
func (e *ChildError) Unwrap() error { return e.Err }

// ErrCacheLag marks a sync that found the cache behind the API server.
var ErrCacheLag = errors.New("informer cache is behind the API server")

// ErrNamespaceTerminating marks a create refused because the namespace is
// being deleted: the owner goes with it, so there is nothing to retry
// and nothing to report (kube-controller-manager's controllers do the same).
var ErrNamespaceTerminating = errors.New("the namespace is being terminated")

// IsStale reports whether err only says that this sync worked from an
// outdated view: a conflict, or a cache behind the API server.
func IsStale(err error) bool {
	return apierrors.IsConflict(err) || errors.Is(err, ErrCacheLag)
}

// OnlyStale reports whether there is an error and every one is stale.
func OnlyStale(errs ...error) bool {
	some := false
	for _, err := range errs {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			if !OnlyStale(joined.Unwrap()...) {
				return false
			}
			some = true
			continue
		}
		if err != nil && !IsStale(err) {
			return false
		}
		some = some || err != nil
	}
	return some
}

// NeedsUser returns the first of a sync's errors that retrying cannot fix,
// only the user (Stalled): an object of a child's name in the way, the
// Gateway API missing for a route, or a child the API server refuses as
// invalid, forbidden (a quota, an admission policy) or malformed. nil when
// every error may pass on retry (the API server down or overloaded).
func NeedsUser(err error) *ChildError {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if ce := NeedsUser(e); ce != nil {
				return ce
			}
		}
		return nil
	}
	var ce *ChildError
	if !errors.As(err, &ce) {
		return nil
	}
	switch {
	case ce.Reason == appv1.ReasonResourceExists, ce.Reason == appv1.ReasonRouteAPIMissing, ce.Reason == appv1.ReasonServiceAccountNotFound,
		apierrors.IsInvalid(ce.Err), apierrors.IsForbidden(ce.Err), apierrors.IsBadRequest(ce.Err):
		return ce
	}
	return nil
}

// WriteFailed wraps a failed write (verb: create, update, …) of the owner's
// child of kind (named as its owner is). Conflicts pass through unwrapped:
// they are stale, and never make the owner Degraded or Stalled.
func WriteFailed(owner metav1.Object, reason, verb, kind string, err error) error {
	if apierrors.IsConflict(err) {
		return err
	}
	return &ChildError{Reason: reason, Err: fmt.Errorf("failed to %s %s %s/%s: %w", verb, kind, owner.GetNamespace(), owner.GetName(), err)}
}
