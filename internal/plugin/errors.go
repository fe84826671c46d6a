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

package plugin

import (
	"errors"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The exit codes, for scripts (docs/plugin.md, "Exit codes").
const (
	// ExitOK: the command did what it says.
	ExitOK = 0
	// ExitError: any other error (the API server unreachable, a conflict
	// that outlasted the retries, ...).
	ExitError = 1
	// ExitUsage: an unknown command or flag, a missing or extra argument.
	ExitUsage = 2
	// ExitNotFound: the AppService, or its namespace, does not exist.
	ExitNotFound = 3
	// ExitForbidden: RBAC refused a request; the message names the verb
	// and the resource.
	ExitForbidden = 4
	// ExitNotApplicable: the command does not apply to the canary's state
	// (promote with no canary running, retry with none aborted, ...).
	ExitNotApplicable = 5
	// ExitAnalysisFailed: kubectl appservice analysis found a metric that
	// would hold or abort a canary (out of its bounds, a failed query), or
	// templates that do not resolve.
	ExitAnalysisFailed = 6
)

// Error is an error and the exit code it ends the plugin with.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the exit code err ends the plugin with: an *Error's code,
// ExitError for any other error, ExitOK for none.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitError
}

func usageErrorf(format string, args ...any) error {
	return &Error{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

func notApplicablef(format string, args ...any) error {
	return &Error{Code: ExitNotApplicable, Err: fmt.Errorf(format, args...)}
}

func notFound(name, namespace string) error {
	return &Error{Code: ExitNotFound, Err: fmt.Errorf("appservice %q not found in namespace %q", name, namespace)}
}

// The verbs and resources of the plugin's requests, as RBAC names them.
const (
	verbGet   = "get"
	verbList  = "list"
	verbWatch = "watch"
	verbPatch = "patch"

	resourceAppServices = "appservices"
	resourceStatus      = "appservices/status"
	resourceDeployments = "deployments"
	resourceReplicaSets = "replicasets"
	resourcePods        = "pods"
	resourceActivities  = "activities"
	resourceJobs        = "jobs"
	resourceRoutes      = "httproutes"
	resourceGRPCRoutes  = "grpcroutes"
	resourceEvents      = "events"
)

// request names an API request, for the errors that refuse it.
type request struct {
	verb, resource, namespace string
}

func (r request) String() string {
	if r.namespace == "" {
		return fmt.Sprintf("%s %s in all namespaces", r.verb, r.resource)
	}
	return fmt.Sprintf("%s %s in namespace %q", r.verb, r.resource, r.namespace)
}

// rbacHint says which of docs/plugin.md's roles grants a request.
func (r request) rbacHint() string {
	switch {
	case r.verb == verbPatch && r.resource == resourceStatus:
		return "the ClusterRole appservice-releaser grants it (docs/plugin.md#rbac)"
	case r.verb == verbPatch && r.resource == resourceAppServices:
		return "a spec change: it needs patch on appservices, which the plugin's roles do not grant (docs/plugin.md#rbac)"
	case r.verb == verbPatch && r.resource == resourceDeployments:
		return "it needs patch on deployments, as kubectl rollout restart does (docs/plugin.md#rbac)"
	case r.resource == resourceServiceProxy:
		return "it needs get on services/proxy in Prometheus's namespace, which the plugin's roles do not grant (docs/plugin.md#rbac)"
	}
	return "the ClusterRole appservice-viewer grants it (docs/plugin.md#rbac)"
}

var forbiddenUserRE = regexp.MustCompile(`User "([^"]*)" cannot`)

// apiError is err, of request r, as a user reads it, with its exit code:
// a refusal names the verb and resource refused; a missing API says so.
// A missing object is the caller's to say (it knows what it looked for).
func apiError(err error, r request) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		who := ""
		if m := forbiddenUserRE.FindStringSubmatch(err.Error()); m != nil {
			who = fmt.Sprintf(" (user %q)", m[1])
		}
		return &Error{Code: ExitForbidden, Err: fmt.Errorf("forbidden: cannot %s%s: %s", r, who, r.rbacHint())}
	case apierrors.IsNotFound(err) && !objectNotFound(err):
		return &Error{Code: ExitError, Err: fmt.Errorf("cannot %s: the API server does not serve %s: %v", r, r.resource, err)}
	}
	return &Error{Code: ExitError, Err: fmt.Errorf("cannot %s: %w", r, err)}
}

// objectNotFound tells an object that does not exist from an API that is
// not served: the API server names the object in the first case only.
func objectNotFound(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsNotFound(err) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name != ""
}
