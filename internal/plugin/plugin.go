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

// Package plugin is kubectl appservice, the kubectl plugin
// (cmd/kubectl-appservice wires it; docs/plugin.md tells how to use it):
// get shows an AppService as a tree of its children with its canary's
// step, weight, pause, gate and analysis (--watch redraws it from watches,
// never polling); list its namespace's AppServices; promote, abort and
// retry command a canary through status.canary.request; suspend, resume
// and restart change the spec or restart the Pods; dashboard serves a web
// page of them all, live, with the same requests as buttons; analysis runs
// an AppService's canary analysis once, its templates resolved.
//
// Its dependencies, and why each:
//   - k8s.io/cli-runtime: kubectl's own flags (genericclioptions'
//     ConfigFlags: --kubeconfig, --context, -n, --as, ...) read as kubectl
//     reads them, so the plugin talks to the cluster kubectl talks to, as
//     the same user; and kubectl's printers for -o json|yaml.
//   - github.com/spf13/cobra: kubectl's command framework: subcommands,
//     help, shell completion (completion, and AppService names for NAME).
//   - client-go and the generated clientset of this repository: typed
//     reads, watches (informers on the AppService and its children,
//     filtered by name and label) and patches; the Gateway API's clientset
//     for the HTTPRoute.
//   - internal/children, for the names of the canary's objects only;
//     internal/version for the user agent's version; internal/analysis and
//     internal/canary for analysis: the controller's own resolution of the
//     templates, rendering of the queries and reading of their answers, so
//     that what it prints is what a canary would measure.
//   - github.com/prometheus/client_golang's API client, as the controller
//     asks Prometheus.
//
// The logic is here, each part a function of its inputs that the tests
// call: the tree (Render), the states (StateOf, CanaryOf), list's rows
// (Rows), the requests and their refusals (BuildRequest); the commands
// around them read and write through Clients.
//
// It imports of this repository only internal/analysis, internal/canary,
// internal/children, internal/dashboard, internal/notify, internal/version,
// pkg/apis/app/v1 and pkg/generated/...; the controller
// never links it.
package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"example.com/appservice-controller/internal/version"
)

// Options are what the plugin runs with besides its arguments: the tests
// give fakes.
type Options struct {
	genericiooptions.IOStreams
	// Clients makes the API clients; nil: from kubectl's flags.
	Clients func() (*Clients, error)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Terminal: standard output is a terminal, where get --watch clears
	// the screen between frames (nil: asks Out).
	Terminal func() bool
	// Coalesce is the least time between two frames of get --watch (0:
	// 200 ms).
	Coalesce time.Duration
}

// Main runs the plugin with args (without the program's name) and returns
// its exit code, having printed any error on one line of standard error.
func Main(ctx context.Context, args []string, o Options) int {
	cmd := NewCommand(&o)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(o.ErrOut, "Error: "+err.Error())
	if ExitCode(err) == ExitUsage {
		fmt.Fprintf(o.ErrOut, "See 'kubectl appservice --help' for usage.\n")
	}
	return ExitCode(err)
}

// NewCommand is the plugin's root command, kubectl appservice, with its
// subcommands and kubectl's flags.
func NewCommand(o *Options) *cobra.Command {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Coalesce == 0 {
		o.Coalesce = 200 * time.Millisecond
	}
	if o.Terminal == nil {
		o.Terminal = func() bool {
			f, ok := o.Out.(*os.File)
			return ok && term.IsTerminal(int(f.Fd()))
		}
	}
	flags := genericclioptions.NewConfigFlags(true)
	if o.Clients == nil {
		o.Clients = clientsFromFlags(flags, o.ErrOut)
	}
	root := &cobra.Command{
		Use:   "kubectl-appservice",
		Short: "See and command AppServices and their canaries",
		Long: `kubectl appservice shows an AppService (app.example.com/v1) as a tree of its
Deployments, ReplicaSets, Pods and HTTPRoute with its canary's step, and
commands the canary: promote, abort, retry.

Exit codes: 0 success; 1 any other error; 2 bad usage; 3 the AppService or
its namespace does not exist; 4 forbidden (RBAC); 5 the command does not
apply to the canary's state; 6 analysis: a metric does not pass. docs/plugin.md
says more.`,
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl appservice"},
		Version:     version.Get().GitVersion,
		// The errors are printed once, by Main, with the exit code's
		// meaning; a usage error points to the help.
		SilenceErrors: true,
		SilenceUsage:  true,
		// An unknown command is a usage error (legacyArgs would make it
		// an error of no particular kind).
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q", args[0], "kubectl appservice")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetIn(o.In)
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &Error{Code: ExitUsage, Err: err} })
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newGetCommand(o), newListCommand(o), newPromoteCommand(o), newAbortCommand(o), newRetryCommand(o),
		newSuspendCommand(o, true), newSuspendCommand(o, false), newRestartCommand(o), newDashboardCommand(o), newAnalysisCommand(o), newNotifyCommand(o))
	return root
}

// oneName is the argument rule of the commands that take NAME: a missing
// or extra one is a usage error.
func oneName(_ *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return usageErrorf("NAME is required: the AppService's name")
	case len(args) > 1:
		return usageErrorf("one NAME only, got %d arguments", len(args))
	}
	return nil
}

// completeNames completes NAME with the AppServices of the namespace.
func completeNames(o *Options) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := o.Clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names, err := appServiceNames(cmd.Context(), c, toComplete)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// withClients runs f with the clients, their errors as a user reads them.
func withClients(o *Options, f func(c *Clients) error) error {
	c, err := o.Clients()
	if err != nil {
		return &Error{Code: ExitError, Err: err}
	}
	return f(c)
}

// printf writes to w, for output whose write errors do not matter more
// than the command's.
func printf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
