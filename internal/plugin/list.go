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
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func newListCommand(o *Options) *cobra.Command {
	var all bool
	var output string
	cmd := &cobra.Command{
		Use:     verbList,
		Aliases: []string{"ls"},
		Short:   "List the AppServices of the namespace (-A: of all) with their state and canary",
		Long: `List the AppServices of the namespace, or of all namespaces with -A: NAME,
STATUS (Healthy, Progressing, Degraded, Suspended or Gated), STEP (the canary's
step, e.g. 2/3, or -), WEIGHT (the canary's share of the traffic and how it is
carried: 10% by route, or 20% by Pods (1/5), its available Pods of those
behind the Service; or -), AGE.`,
		Example: `  kubectl appservice list
  kubectl appservice list -A
  kubectl appservice list -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := objectPrinter(output)
			if err != nil {
				return err
			}
			return withClients(o, func(c *Clients) error {
				ns := c.Namespace
				if all {
					ns = metav1.NamespaceAll
				}
				list, err := c.AppV1.AppServices(ns).List(cmd.Context(), metav1.ListOptions{})
				if err != nil {
					return apiError(err, request{verbList, resourceAppServices, ns})
				}
				if p != nil {
					return printObject(p, list, o.Out)
				}
				if len(list.Items) == 0 {
					if !all {
						if _, err := c.CoreV1.Namespaces().Get(cmd.Context(), ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
							return &Error{Code: ExitNotFound, Err: fmt.Errorf("namespace %q not found", ns)}
						}
						printf(o.ErrOut, "No AppServices found in namespace %q.\n", ns)
						return nil
					}
					printf(o.ErrOut, "No AppServices found.\n")
					return nil
				}
				return printRows(o.Out, Rows(list.Items, all, o.Now()))
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List the AppServices of every namespace.")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Print the AppService objects instead: json or yaml.")
	return cmd
}

// Rows are list's table: a header, then one row per AppService, sorted
// by namespace and name; with the NAMESPACE column when allNamespaces.
func Rows(items []appv1.AppService, allNamespaces bool, now time.Time) [][]string {
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b appv1.AppService) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	header := []string{"NAME", "STATUS", "STEP", "WEIGHT", "AGE"}
	if allNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	rows := make([][]string, 0, 1+len(sorted))
	rows = append(rows, header)
	for i := range sorted {
		as := &sorted[i]
		c := CanaryOf(as)
		step, weight := "-", "-"
		switch c.Phase {
		case CanaryRunning:
			step, weight = fmt.Sprintf("%d/%d", c.Step+1, c.Steps), c.ShortTraffic()
			if len(c.Testing) > 0 {
				step += " testing"
			}
		case CanaryPromoting, CanarySwitched:
			step, weight = fmt.Sprintf("%d/%d", c.Steps, c.Steps), c.ShortTraffic()
		case CanaryAwaitingRoute:
			// No step has started, and no route carries a weight.
			step, weight = fmt.Sprintf("0/%d", c.Steps), "waits for route"
		case CanaryAwaitingAnalysis:
			step, weight = fmt.Sprintf("0/%d", c.Steps), "waits for analysis"
		}
		row := []string{as.Name, string(StateOf(as)), step, weight, age(as.CreationTimestamp.Time, now)}
		if allNamespaces {
			row = append([]string{as.Namespace}, row...)
		}
		rows = append(rows, row)
	}
	return rows
}

// printRows aligns the rows as kubectl's tables are.
func printRows(w io.Writer, rows [][]string) error {
	tw := printers.GetNewTabWriter(w)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// appServiceNames are the namespace's AppServices whose name starts with
// prefix, for shell completion.
func appServiceNames(ctx context.Context, c *Clients, prefix string) ([]string, error) {
	list, err := c.AppV1.AppServices(c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, as := range list.Items {
		if strings.HasPrefix(as.Name, prefix) {
			names = append(names, as.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}
