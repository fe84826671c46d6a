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
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// promote, abort and retry write status.canary.request, to the status
// subresource (docs/plugin.md, "Why the status"): a request names the
// canary's template (and a Promote its step), so that the controller acts
// on it once, and only for the canary it names.

// conflictRetries is how many times a command reads, checks and patches
// again when the AppService changed in between (a Conflict).
const conflictRetries = 5

// verbPromote names the promote command, and the dashboard's button.
const verbPromote = "promote"

func newPromoteCommand(o *Options) *cobra.Command {
	var full bool
	cmd := &cobra.Command{
		Use:   "promote NAME",
		Short: "Pass the canary's current step (--full: every step left)",
		Long: `Pass the canary's current step, whatever its pause, analysis or gate: the
canary goes on to its next step, or is promoted after the last. If the step's
Pods are not available yet, the step passes once they are.

--full skips every step left: the stable Pods roll to the canary's template.

It writes status.canary.request (action Promote or PromoteFull, the canary's
template and step) to the AppService's status subresource: it needs patch on
appservices/status (the ClusterRole appservice-releaser), not on the spec.`,
		Example: `  kubectl appservice promote web
  kubectl appservice promote web --full`,
		Args:              oneName,
		ValidArgsFunction: completeNames(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			action := appv1.CanaryPromote
			if full {
				action = appv1.CanaryPromoteFull
			}
			return requestCommand(cmd.Context(), o, args[0], action)
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "Skip every step left: promote the canary now.")
	return cmd
}

func newAbortCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "abort NAME",
		Short: "Abort the canary: all the traffic back to the stable Pods",
		Long: `Abort the running canary: the route sends all the traffic to the stable Pods
again, the canary's Pods go, and the AppService is Stalled (CanaryAborted) until
kubectl appservice retry, a new template, or a change back to the stable one.

It writes status.canary.request (action Abort) to the status subresource,
where it stays as the record of the abort.`,
		Example:           `  kubectl appservice abort web`,
		Args:              oneName,
		ValidArgsFunction: completeNames(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return requestCommand(cmd.Context(), o, args[0], appv1.CanaryAbort)
		},
	}
}

func newRetryCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "retry NAME",
		Short: "Start an aborted canary again, at its first step",
		Long: `Start the aborted canary again at its first step: one aborted on request, at
its progress deadline or by its analysis. It cannot undo spec.canary.abort: true
(a spec field; set it back to false instead).

It writes status.canary.request (action Retry, the aborted template) to the
status subresource.`,
		Example:           `  kubectl appservice retry web`,
		Args:              oneName,
		ValidArgsFunction: completeNames(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return requestCommand(cmd.Context(), o, args[0], appv1.CanaryRetry)
		},
	}
}

// requestCommand reads the AppService, checks the request applies and
// patches it into the status, with the read's resourceVersion as a
// precondition: on a Conflict it reads and checks again.
func requestCommand(ctx context.Context, o *Options, name string, action appv1.CanaryAction) error {
	return withClients(o, func(c *Clients) error {
		done, err := c.sendRequest(ctx, name, action)
		if err == nil {
			printf(o.Out, "%s\n", done)
		}
		return err
	})
}

// sendRequest is a command's request to the AppService of c's namespace:
// what it did, or why not (the dashboard's buttons send it too).
func (c *Clients) sendRequest(ctx context.Context, name string, action appv1.CanaryAction) (string, error) {
	for attempt := 1; ; attempt++ {
		as, err := c.getAppService(ctx, name)
		if err != nil {
			return "", err
		}
		patch, done, err := BuildRequest(as, action)
		if err != nil {
			return "", err
		}
		_, err = c.AppV1.AppServices(c.Namespace).Patch(ctx, name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager}, "status")
		switch {
		case err == nil:
			return done, nil
		case apierrors.IsConflict(err) && attempt < conflictRetries:
			continue
		case objectNotFound(err):
			return "", notFound(name, c.Namespace)
		}
		return "", apiError(err, request{verbPatch, resourceStatus, c.Namespace})
	}
}

// statusPatch is the JSON merge patch of a request: the resourceVersion
// read (a precondition: the API server refuses the patch with a Conflict
// if the AppService changed since) and the request.
type statusPatch struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status struct {
		Canary struct {
			Request requestPatch `json:"request"`
		} `json:"canary"`
	} `json:"status"`
}

// requestPatch is appv1.CanaryRequest with a step always written: null
// removes a step an earlier request left (a merge patch merges maps).
type requestPatch struct {
	Action       appv1.CanaryAction `json:"action"`
	TemplateHash string             `json:"templateHash"`
	Step         *int32             `json:"step"`
}

// BuildRequest checks that action applies to the AppService as read, and
// returns the status patch that asks for it and what to print once it is
// written. An action that does not apply is an error with ExitNotApplicable
// that says what to do instead.
func BuildRequest(as *appv1.AppService, action appv1.CanaryAction) (patch []byte, done string, err error) {
	who := "appservice/" + as.Name
	if as.Spec.Canary == nil {
		return nil, "", notApplicablef("%s has no canary (spec.canary is not set)", who)
	}
	c := CanaryOf(as)
	req := requestPatch{Action: action, TemplateHash: c.Hash}
	switch action {
	case appv1.CanaryPromote, appv1.CanaryPromoteFull, appv1.CanaryAbort:
		if err := mustRun(who, as, c, action); err != nil {
			return nil, "", err
		}
		switch {
		case c.Phase == CanarySwitched && action == appv1.CanaryAbort && c.Weight < 100:
			done = fmt.Sprintf("%s: canary %s aborted before its switch: the users stay on the stable Pods", who, c.Hash)
		case c.Phase == CanarySwitched && action == appv1.CanaryAbort:
			done = fmt.Sprintf("%s: canary %s aborted at its switch: the users go back to the stable Pods", who, c.Hash)
		case c.Phase == CanarySwitched:
			req.Step = &c.Step
			done = fmt.Sprintf("%s: canary %s promoted before its scale-down delay's end: the stable Pods roll to it", who, c.Hash)
		case action == appv1.CanaryPromote:
			req.Step = &c.Step
			done = fmt.Sprintf("%s: step %s promoted (canary %s)", who, c.StepString(), c.Hash)
			if !c.Routed {
				done += "; it passes once its Pods are available"
			}
		case action == appv1.CanaryPromoteFull:
			done = fmt.Sprintf("%s: canary %s promoted from step %s, skipping the steps left", who, c.Hash, c.StepString())
		default:
			done = fmt.Sprintf("%s: canary %s aborted at step %s", who, c.Hash, c.StepString())
		}
	case appv1.CanaryRetry:
		switch {
		case c.SpecAbort:
			return nil, "", notApplicablef("%s: spec.canary.abort is true, which retry cannot undo: set it to false to start the canary again", who)
		case c.Phase == CanaryRunning:
			return nil, "", notApplicablef("%s: canary %s runs (step %s): nothing to retry", who, c.Hash, c.StepString())
		case c.Phase == CanaryPromoting || c.Phase == CanarySwitched:
			return nil, "", notApplicablef("%s: canary %s is being promoted: nothing to retry", who, c.Hash)
		case c.Phase == CanaryAwaitingRoute:
			return nil, "", notApplicablef("%s: canary %s %s: nothing to retry", who, c.Hash, c.awaitingRoute())
		case c.Phase == CanaryAwaitingAnalysis:
			return nil, "", notApplicablef("%s: canary %s %s%s: nothing to retry", who, c.Hash, awaitingAnalysis, c.Held)
		case c.Phase != CanaryAborted || c.Hash == "":
			return nil, "", notApplicablef("%s: no canary is aborted: nothing to retry", who)
		}
		done = fmt.Sprintf("%s: canary %s retried: it starts again at step 1 of %d", who, c.Hash, c.Steps)
	default:
		return nil, "", usageErrorf("unknown action %q", action)
	}
	var p statusPatch
	p.Metadata.ResourceVersion = as.ResourceVersion
	p.Status.Canary.Request = req
	patch, err = json.Marshal(p)
	return patch, done, err
}

// mustRun is nil when a canary runs, for promote and abort; else the
// refusal, and what to do.
func mustRun(who string, as *appv1.AppService, c Canary, action appv1.CanaryAction) error {
	verb := map[appv1.CanaryAction]string{appv1.CanaryPromote: verbPromote, appv1.CanaryPromoteFull: verbPromote, appv1.CanaryAbort: "abort"}[action]
	switch c.Phase {
	case CanaryRunning:
		return nil
	case CanarySwitched:
		if action == appv1.CanaryAbort || c.Weight == 100 {
			return nil
		}
		return notApplicablef("%s: canary %s waits for its preview at full size to switch: nothing to promote", who, c.Hash)
	case CanaryPromoting:
		if action == appv1.CanaryAbort {
			return notApplicablef("%s: canary %s is being promoted, its stable Pods roll to it: nothing to abort (to go back, change the template back)", who, c.Hash)
		}
		return notApplicablef("%s: canary %s is being promoted already: nothing to promote", who, c.Hash)
	case CanaryAwaitingRoute:
		return notApplicablef("%s: canary %s %s: nothing to %s until it starts", who, c.Hash, c.awaitingRoute(), verb)
	case CanaryAwaitingAnalysis:
		return notApplicablef("%s: canary %s %s%s: nothing to %s until it starts", who, c.Hash, awaitingAnalysis, c.Held, verb)
	case CanaryAborted:
		if c.SpecAbort {
			return notApplicablef("%s: the canary is aborted by spec.canary.abort: nothing to %s (set it to false to start the canary again)", who, verb)
		}
		return notApplicablef("%s: the canary is aborted: nothing to %s (kubectl appservice retry %s starts it again)", who, verb, as.Name)
	}
	return notApplicablef("%s: no canary is running: nothing to %s", who, verb)
}
