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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestBuildRequest: each command in each state of a canary: the status
// patch it writes (the read's resourceVersion and the request naming the
// canary's template, and a Promote its step), or its refusal, exit code 5,
// saying what to do instead.
func TestBuildRequest(t *testing.T) {
	const (
		rv            = `{"metadata":{"resourceVersion":"123"},`
		promote0      = rv + `"status":{"canary":{"request":{"action":"Promote","templateHash":"58db947f6c","step":0}}}}`
		promote1      = rv + `"status":{"canary":{"request":{"action":"Promote","templateHash":"58db947f6c","step":1}}}}`
		promoteFull   = rv + `"status":{"canary":{"request":{"action":"PromoteFull","templateHash":"58db947f6c","step":null}}}}`
		abort         = rv + `"status":{"canary":{"request":{"action":"Abort","templateHash":"58db947f6c","step":null}}}}`
		retry         = rv + `"status":{"canary":{"request":{"action":"Retry","templateHash":"58db947f6c","step":null}}}}`
		noCanary      = "appservice/web: no canary is running"
		isAborted     = "appservice/web: the canary is aborted: nothing to"
		specAbortRefs = "spec.canary.abort is true, which retry cannot undo: set it to false"
	)
	promoting := func() *appv1.AppService {
		as := gatedApp()
		as.Status.Canary.Step, as.Status.Canary.Weight = new(int32(3)), 100
		msg := "Canary 58db947f6c promoted: the stable Pods roll to it; the canary keeps 100% of the traffic by route until they have"
		setConditions(as, appv1.ReasonCanaryPromoting, msg, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse)
		return as
	}
	specAborted := func() *appv1.AppService {
		as := abortedSnapshot().AppService
		as.Spec.Canary.Abort = true
		as.Status.Canary.AbortedTemplateHash, as.Status.Canary.Request = "", nil
		return as
	}
	deadlineAborted := func() *appv1.AppService {
		as := abortedSnapshot().AppService
		as.Status.Canary.Request = nil
		return as
	}
	noSpec := func() *appv1.AppService { return suspendedSnapshot().AppService }
	// A blue-green release past its 3 steps: waiting for its preview at
	// full size (weight 0), or switched (100).
	switching := func(weight int32) func() *appv1.AppService {
		return func() *appv1.AppService {
			as := gatedApp()
			as.Spec.Canary.BlueGreen = &appv1.BlueGreen{}
			as.Status.Canary.Step, as.Status.Canary.Weight, as.Status.Canary.TrafficBy = new(int32(3)), weight, appv1.CanaryByService
			return as
		}
	}
	type want struct{ patch, done string }
	for _, tc := range []struct {
		state string
		as    func() *appv1.AppService
		// by action: the patch and message, or (patch "") the refusal.
		want map[appv1.CanaryAction]want
	}{
		{"gated at step 1", gatedApp, map[appv1.CanaryAction]want{
			appv1.CanaryPromote:     {promote0, "appservice/web: step 1 of 3 promoted (canary 58db947f6c)"},
			appv1.CanaryPromoteFull: {promoteFull, "appservice/web: canary 58db947f6c promoted from step 1 of 3, skipping the steps left"},
			appv1.CanaryAbort:       {abort, "appservice/web: canary 58db947f6c aborted at step 1 of 3"},
			appv1.CanaryRetry:       {"", "appservice/web: canary 58db947f6c runs (step 1 of 3): nothing to retry"},
		}},
		{"step 2 waiting for its Pods", func() *appv1.AppService { return waitingSnapshot().AppService }, map[appv1.CanaryAction]want{
			appv1.CanaryPromote: {promote1, "appservice/web: step 2 of 3 promoted (canary 58db947f6c); it passes once its Pods are available"},
			appv1.CanaryAbort:   {abort, "appservice/web: canary 58db947f6c aborted at step 2 of 3"},
		}},
		{"blue-green, its preview growing for the switch", switching(0), map[appv1.CanaryAction]want{
			appv1.CanaryPromote: {"", "appservice/web: canary 58db947f6c waits for its preview at full size to switch: nothing to promote"},
			appv1.CanaryAbort:   {abort, "appservice/web: canary 58db947f6c aborted before its switch: the users stay on the stable Pods"},
			appv1.CanaryRetry:   {"", "appservice/web: canary 58db947f6c is being promoted: nothing to retry"},
		}},
		{"blue-green, switched", switching(100), map[appv1.CanaryAction]want{
			appv1.CanaryPromote: {rv + `"status":{"canary":{"request":{"action":"Promote","templateHash":"58db947f6c","step":3}}}}`,
				"appservice/web: canary 58db947f6c promoted before its scale-down delay's end: the stable Pods roll to it"},
			appv1.CanaryAbort: {abort, "appservice/web: canary 58db947f6c aborted at its switch: the users go back to the stable Pods"},
		}},
		{"promoting", promoting, map[appv1.CanaryAction]want{
			appv1.CanaryPromote:     {"", "canary 58db947f6c is being promoted already: nothing to promote"},
			appv1.CanaryPromoteFull: {"", "canary 58db947f6c is being promoted already: nothing to promote"},
			appv1.CanaryAbort:       {"", "nothing to abort (to go back, change the template back)"},
			appv1.CanaryRetry:       {"", "canary 58db947f6c is being promoted: nothing to retry"},
		}},
		{"aborted on request", func() *appv1.AppService { return abortedSnapshot().AppService }, map[appv1.CanaryAction]want{
			appv1.CanaryPromote: {"", isAborted + " promote (kubectl appservice retry web starts it again)"},
			appv1.CanaryAbort:   {"", isAborted + " abort"},
			appv1.CanaryRetry:   {retry, "appservice/web: canary 58db947f6c retried: it starts again at step 1 of 3"},
		}},
		{"aborted at its deadline", deadlineAborted, map[appv1.CanaryAction]want{
			appv1.CanaryRetry: {retry, "appservice/web: canary 58db947f6c retried: it starts again at step 1 of 3"},
		}},
		{"aborted by spec.canary.abort", specAborted, map[appv1.CanaryAction]want{
			appv1.CanaryPromote: {"", "aborted by spec.canary.abort: nothing to promote (set it to false"},
			appv1.CanaryRetry:   {"", specAbortRefs},
		}},
		{"held for its route", awaitingRouteApp, map[appv1.CanaryAction]want{
			appv1.CanaryPromote:     {"", "appservice/web: canary 58db947f6c holds at its start, no step and no traffic: waits for its route (the cluster serves no HTTPRoutes): nothing to promote until it starts"},
			appv1.CanaryPromoteFull: {"", "waits for its route (the cluster serves no HTTPRoutes): nothing to promote until it starts"},
			appv1.CanaryAbort:       {"", "waits for its route (the cluster serves no HTTPRoutes): nothing to abort until it starts"},
			appv1.CanaryRetry:       {"", "waits for its route (the cluster serves no HTTPRoutes): nothing to retry"},
		}},
		{"no canary", func() *appv1.AppService { return healthySnapshot().AppService }, map[appv1.CanaryAction]want{
			appv1.CanaryPromote:     {"", noCanary + ": nothing to promote"},
			appv1.CanaryPromoteFull: {"", noCanary + ": nothing to promote"},
			appv1.CanaryAbort:       {"", noCanary + ": nothing to abort"},
			appv1.CanaryRetry:       {"", "appservice/web: no canary is aborted: nothing to retry"},
		}},
		{"no spec.canary", noSpec, map[appv1.CanaryAction]want{
			appv1.CanaryPromote: {"", "appservice/web has no canary (spec.canary is not set)"},
			appv1.CanaryRetry:   {"", "appservice/web has no canary (spec.canary is not set)"},
		}},
	} {
		for action, w := range tc.want {
			t.Run(tc.state+"/"+string(action), func(t *testing.T) {
				patch, done, err := BuildRequest(tc.as(), action)
				if w.patch == "" {
					if err == nil || ExitCode(err) != ExitNotApplicable || !strings.Contains(err.Error(), w.done) {
						t.Fatalf("BuildRequest = %s, %q, %v (exit %d); want a refusal (exit 5) saying %q", patch, done, err, ExitCode(err), w.done)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if string(patch) != w.patch || done != w.done {
					t.Errorf("BuildRequest =\n %s\n %q\nwant\n %s\n %q", patch, done, w.patch, w.done)
				}
			})
		}
	}
}
