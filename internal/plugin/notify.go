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
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/notify"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

const (
	resourceDestinations = "notificationdestinations"
	resourceSecrets      = "secrets"
)

// newNotifyCommand is kubectl appservice notify: its one command, test,
// sends a NotificationDestination a test message as the controller would
// send an edge, and prints the answer.
func newNotifyCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Check a NotificationDestination",
	}
	var timeout time.Duration
	test := &cobra.Command{
		Use:   "test DESTINATION",
		Short: "Send a NotificationDestination a test message, and print what it answered",
		Long: `Send a NotificationDestination (in the namespace) a test message, as the
controller sends a release's edges: a signed CloudEvent to a webhook, a
message to Slack or Teams, to the address in its Secret. Print the status and
the start of the body the destination answered; never the address.

It posts once, from this machine (the controller posts from its own Pod, and
--notification-allowed limits it, not this). It reads the destination and its
Secret, so it needs get on both. It exits 1 when the destination does not
answer 2xx.`,
		Example:           `  kubectl appservice notify test ops-slack -n shop`,
		Args:              oneName,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClients(o, func(c *Clients) error { return runNotifyTest(cmd.Context(), o, c, args[0], timeout) })
		},
	}
	test.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "How long the destination may take to answer.")
	cmd.AddCommand(test)
	return cmd
}

func runNotifyTest(ctx context.Context, o *Options, c *Clients, name string, timeout time.Duration) error {
	dest, err := c.AppV1.NotificationDestinations(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if objectNotFound(err) {
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("notificationdestination %q not found in namespace %q", name, c.Namespace)}
	}
	if err != nil {
		return apiError(err, request{verbGet, resourceDestinations, c.Namespace})
	}
	secret, err := c.CoreV1.Secrets(c.Namespace).Get(ctx, dest.Spec.SecretRef.Name, metav1.GetOptions{})
	if objectNotFound(err) {
		return &Error{Code: ExitError, Err: fmt.Errorf("secret %q (spec.secretRef of notificationdestination %q) not found in namespace %q",
			dest.Spec.SecretRef.Name, name, c.Namespace)}
	}
	if err != nil {
		return apiError(err, request{verbGet, resourceSecrets, c.Namespace})
	}
	now := o.Now()
	release := "test-" + strconv.FormatInt(now.Unix(), 10)
	m := notify.Message{Namespace: c.Namespace, AppService: "kubectl-appservice", Owed: notify.Owed{
		ID: notify.DeliveryID(release+".test", name), Destination: name, Release: release,
		Edge: appv1.NotificationEdge{ID: release + ".test", Edge: notify.EdgeTest, Time: metav1.Time{Time: now},
			Message: "A test message from kubectl appservice notify test: the controller sends a release's edges here."},
	}}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := notify.NewRequest(ctx, dest, secret, m, now)
	if err != nil {
		return &Error{Code: ExitError, Err: err}
	}
	client := &http.Client{Transport: notify.Transport(nil),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return &Error{Code: ExitError, Err: fmt.Errorf("posting to notificationdestination %q: %s", name, notify.Describe(err))}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	fmt.Fprintf(o.Out, "Sent notificationdestination %q (%s) a test message, id %s.\nIt answered %s", name, dest.Spec.Type, m.ID, resp.Status)
	if b := strings.TrimSpace(string(body)); b != "" {
		fmt.Fprintf(o.Out, ":\n%s", b)
	}
	fmt.Fprintln(o.Out)
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return &Error{Code: ExitError, Err: errors.New("the destination did not accept the message: it answered " + resp.Status)}
	}
	return nil
}
