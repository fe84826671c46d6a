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
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/appservice-controller/internal/children"
)

// suspend, resume and restart change the spec (the AppService's, the
// Deployments'), unlike promote, abort and retry.

func newSuspendCommand(o *Options, suspend bool) *cobra.Command {
	use, short, done := "suspend NAME", "Suspend the app: its Deployment to 0 replicas (a spec change)", "suspended"
	if !suspend {
		use, short, done = "resume NAME", "Resume a suspended app: its Pods come back (a spec change)", "resumed"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

It sets spec.suspend to ` + fmt.Sprint(suspend) + ` with a JSON merge patch: a change of the spec, which a GitOps
tool (Argo CD, Flux) reverts at its next sync unless the manifest in git says
the same. It needs patch on appservices, which the plugin's roles do not grant.`,
		Example:           "  kubectl appservice " + use[:len(use)-len(" NAME")] + " web",
		Args:              oneName,
		ValidArgsFunction: completeNames(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClients(o, func(c *Clients) error {
				patch := fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend)
				_, err := c.AppV1.AppServices(c.Namespace).Patch(cmd.Context(), args[0], types.MergePatchType, patch,
					metav1.PatchOptions{FieldManager: FieldManager})
				switch {
				case objectNotFound(err):
					return c.notFoundIn(cmd.Context(), args[0])
				case err != nil:
					return apiError(err, request{verbPatch, resourceAppServices, c.Namespace})
				}
				printf(o.Out, "appservice/%s %s (spec.suspend: %t)\n", args[0], done, suspend)
				return nil
			})
		},
	}
}

// AnnotationRestartedAt is the pod template annotation kubectl rollout
// restart sets: a new value rolls the Pods.
const AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

func newRestartCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "restart NAME",
		Short: "Restart the app's Pods, as kubectl rollout restart does",
		Long: `Restart the app's Pods as kubectl rollout restart does: the pod template
annotation kubectl.kubernetes.io/restartedAt set to now on the AppService's
Deployment, and on its canary's Deployment if a canary runs; each rolls its
Pods with its own strategy. The controller keeps the annotation.

It needs patch on deployments.`,
		Example:           `  kubectl appservice restart web`,
		Args:              oneName,
		ValidArgsFunction: completeNames(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClients(o, func(c *Clients) error {
				as, err := c.getAppService(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				now := o.Now().UTC().Format(time.RFC3339)
				for i, name := range []string{as.Name, children.CanaryName(as)} {
					restarted, err := restartDeployment(cmd.Context(), c, name, now)
					switch {
					case err != nil:
						return err
					case !restarted && i == 0:
						return &Error{Code: ExitError, Err: fmt.Errorf("appservice/%s has no Deployment %q yet", as.Name, name)}
					case restarted:
						printf(o.Out, "deployment.apps/%s restarted\n", name)
					}
				}
				return nil
			})
		},
	}
}

// restartDeployment sets the restart annotation on the Deployment's pod
// template (a strategic merge patch, as kubectl's); false if there is no
// such Deployment.
func restartDeployment(ctx context.Context, c *Clients, name, now string) (bool, error) {
	patch := fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, AnnotationRestartedAt, now)
	_, err := c.AppsV1.Deployments(c.Namespace).Patch(ctx, name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	switch {
	case objectNotFound(err):
		return false, nil
	case err != nil:
		return false, apiError(err, request{verbPatch, resourceDeployments, c.Namespace})
	}
	return true, nil
}
