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
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"example.com/appservice-controller/internal/analysis"
	"example.com/appservice-controller/internal/canary"
	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// kubectl appservice analysis NAME tries a judge before a release: it
// resolves the AppService's analysis as a canary starting now would (its
// templates as they are, their arguments in place, beside its own
// metrics), runs each query once, and prints each value against its
// bounds. It asks Prometheus through the API server's service proxy
// (--prometheus-service), as the user, or at a URL (--prometheus-url).

// The resources the command reads besides the AppService.
const (
	resourceTemplates        = "analysistemplates"
	resourceClusterTemplates = "clusteranalysistemplates"
	resourceServiceProxy     = "services/proxy"
)

func newAnalysisCommand(o *Options) *cobra.Command {
	var prometheusURL, prometheusService string
	var timeout time.Duration
	var showQueries bool
	cmd := &cobra.Command{
		Use:   "analysis NAME",
		Short: "Run the AppService's canary analysis once: its templates and its own metrics, each against its bounds",
		Long: `Run the AppService's canary analysis once, as a canary starting now would run
it: its own metrics (spec.canary.analysis.metrics) and its templates'
(AnalysisTemplate, ClusterAnalysisTemplate) with their arguments in place.
Each query is asked once, {{ target }} standing for the canary's name, and its
value printed against its bounds.

Prometheus is reached through the API server's service proxy
(--prometheus-service NAMESPACE/NAME:PORT, which needs get on services/proxy
there), or at --prometheus-url.

It exits 6 when a metric that is not a dry run is out of its bounds (or has
no data under noData: Fail), a query fails, or the templates do not resolve.`,
		Example: `  kubectl appservice analysis web --prometheus-service monitoring/prometheus:9090
  kubectl appservice analysis web --prometheus-url http://localhost:9090 --show-queries`,
		Args:              oneName,
		ValidArgsFunction: completeNames(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (prometheusURL == "") == (prometheusService == "") {
				return usageErrorf("give one of --prometheus-url or --prometheus-service")
			}
			return withClients(o, func(c *Clients) error {
				client, err := prometheusClient(c, prometheusURL, prometheusService)
				if err != nil {
					return err
				}
				return runAnalysis(cmd.Context(), o, c, client, args[0], timeout, showQueries)
			})
		},
	}
	cmd.Flags().StringVar(&prometheusURL, "prometheus-url", "", "Prometheus's address, such as http://localhost:9090.")
	cmd.Flags().StringVar(&prometheusService, "prometheus-service", "",
		"Prometheus's Service, NAMESPACE/NAME:PORT, reached through the API server's service proxy.")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "How long each query may take.")
	cmd.Flags().BoolVar(&showQueries, "show-queries", false, "Print each query as it was asked.")
	return cmd
}

// prometheusClient is the query client of the URL, or of the Service
// through the API server's proxy, with the user's credentials.
func prometheusClient(c *Clients, url, service string) (promv1.API, error) {
	cfg := api.Config{Address: url}
	if service != "" {
		ns, rest1, ok := strings.Cut(service, "/")
		name, port, ok2 := strings.Cut(rest1, ":")
		if !ok || !ok2 || ns == "" || name == "" || port == "" {
			return nil, usageErrorf("--prometheus-service %q: want NAMESPACE/NAME:PORT", service)
		}
		if c.Config == nil {
			return nil, &Error{Code: ExitError, Err: errors.New("no API server to proxy through")}
		}
		rt, err := rest.TransportFor(c.Config)
		if err != nil {
			return nil, &Error{Code: ExitError, Err: err}
		}
		cfg.Address = fmt.Sprintf("%s/api/v1/namespaces/%s/services/%s:%s/proxy", strings.TrimSuffix(c.Config.Host, "/"), ns, name, port)
		cfg.RoundTripper = forbiddenAsError{next: rt, r: request{verbGet, resourceServiceProxy, ns}}
	}
	client, err := api.NewClient(cfg)
	if err != nil {
		return nil, usageErrorf("Prometheus's address: %v", err)
	}
	return promv1.NewAPI(client), nil
}

// forbiddenAsError turns the API server's refusal of the proxy into the
// plugin's: the verb, the resource and the role that grants it.
type forbiddenAsError struct {
	next http.RoundTripper
	r    request
}

func (f forbiddenAsError) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		_ = resp.Body.Close()
		return nil, &Error{Code: ExitForbidden, Err: fmt.Errorf("forbidden: cannot %s: %s", f.r, f.r.rbacHint())}
	}
	return resp, err
}

// metricRun is one metric's query, asked once.
type metricRun struct {
	metric appv1.AnalysisMetric
	// from is where it comes from: "inline", or a template's kind and name.
	from   string
	query  string
	value  string
	result appv1.MetricResult
	// message says why it did not pass.
	message string
	// fails: it counts against the analysis (not a dry run, and Failed,
	// Error, or NoData under noData: Fail).
	fails bool
	// refused is the API server's refusal of the service proxy, if it
	// refused (an *Error, ExitForbidden).
	refused error
}

// runAnalysis resolves name's analysis, runs it once on client and prints
// it; it fails (ExitAnalysisFailed) as a canary would.
func runAnalysis(ctx context.Context, o *Options, c *Clients, client promv1.API, name string, timeout time.Duration, showQueries bool) error {
	as, err := c.getAppService(ctx, name)
	if err != nil {
		return err
	}
	if as.Spec.Canary == nil || as.Spec.Canary.Analysis == nil {
		return notApplicablef("appservice %q has no spec.canary.analysis: nothing to run", name)
	}
	a := as.Spec.Canary.Analysis
	resolved, err := analysis.Resolve(as.Namespace, a, nil, templateLookup(ctx, c))
	var u *analysis.Unresolved
	switch {
	case errors.As(err, &u):
		return &Error{Code: ExitAnalysisFailed, Err: fmt.Errorf("the analysis of %s cannot be resolved: a canary would hold at its start: %s", name, u.Why)}
	case err != nil:
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return &Error{Code: ExitError, Err: err}
	}
	from := map[string]string{}
	for _, m := range a.Metrics {
		from[m.Name] = "inline"
	}
	for _, p := range resolved.Pins {
		for _, m := range p.Metrics {
			from[m.Name] = analysis.RefName(p.Kind, p.Name)
		}
	}
	vars := analysis.Vars{Namespace: as.Namespace, Name: as.Name, Target: children.CanaryName(as), Interval: canary.AnalysisInterval(a)}
	now := o.Now()
	runs := make([]metricRun, len(resolved.Analysis.Metrics))
	for i, m := range resolved.Analysis.Metrics {
		runs[i] = measureOnce(ctx, client, a, m, analysis.Render(m.Query, vars), now, timeout)
		runs[i].from = from[m.Name]
	}
	for _, r := range runs {
		if r.refused != nil {
			var e *Error
			errors.As(r.refused, &e)
			return e
		}
	}
	printAnalysis(o.Out, as, resolved, runs, showQueries)
	failed := 0
	for _, r := range runs {
		if r.fails {
			failed++
		}
	}
	if failed > 0 {
		return &Error{Code: ExitAnalysisFailed, Err: fmt.Errorf("%d of %d metrics of %s do not pass: a canary would not advance", failed, len(runs), name)}
	}
	return nil
}

// templateLookup reads the templates from the API server, its refusals
// as the plugin says them.
func templateLookup(ctx context.Context, c *Clients) analysis.Lookup {
	return func(kind appv1.AnalysisTemplateKind, namespace, name string) (*appv1.AnalysisTemplateSpec, bool, error) {
		var spec *appv1.AnalysisTemplateSpec
		var err error
		r := request{verbGet, resourceTemplates, namespace}
		if kind == appv1.KindClusterAnalysisTemplate {
			r = request{verb: verbGet, resource: resourceClusterTemplates}
			var t *appv1.ClusterAnalysisTemplate
			if t, err = c.AppV1.ClusterAnalysisTemplates().Get(ctx, name, metav1.GetOptions{}); err == nil {
				spec = &t.Spec
			}
		} else {
			var t *appv1.AnalysisTemplate
			if t, err = c.AppV1.AnalysisTemplates(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
				spec = &t.Spec
			}
		}
		switch {
		case objectNotFound(err):
			return nil, false, nil
		case err != nil:
			return nil, false, apiError(err, r)
		}
		return spec, true, nil
	}
}

// measureOnce asks query and judges its answer as the canary's analysis
// does (internal/canary).
func measureOnce(ctx context.Context, client promv1.API, a *appv1.CanaryAnalysis, m appv1.AnalysisMetric, query string,
	now time.Time, timeout time.Duration) metricRun {
	r := metricRun{metric: m, query: query}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, _, err := client.Query(ctx, query, now, promv1.WithTimeout(timeout))
	var value float64
	noData := false
	if err != nil {
		if ExitCode(err) == ExitForbidden {
			r.refused = err
		}
		err = errors.New(analysis.QueryError(err, timeout))
	} else {
		value, noData, err = analysis.Number(v)
	}
	lo, hi, boundsErr := canary.Thresholds(&m)
	switch {
	case err != nil:
		r.result, r.message = appv1.MetricError, err.Error()
	case noData:
		r.result, r.message = appv1.MetricNoData, "the query returned no data"
		if a.NoData == appv1.AnalysisNoDataFail {
			r.message += " (noData: Fail)"
		}
	case boundsErr != nil:
		r.result, r.message = appv1.MetricError, boundsErr.Error()
	default:
		r.value = strconv.FormatFloat(value, 'g', 6, 64)
		switch {
		case value < lo:
			r.result, r.message = appv1.MetricFailed, "below min "+*m.Min
		case value > hi:
			r.result, r.message = appv1.MetricFailed, "above max "+*m.Max
		default:
			r.result = appv1.MetricPassed
		}
	}
	r.fails = !m.DryRun && (r.result == appv1.MetricFailed || r.result == appv1.MetricError ||
		(r.result == appv1.MetricNoData && a.NoData == appv1.AnalysisNoDataFail))
	return r
}

// printAnalysis writes the runs as a table, after a line on the analysis.
func printAnalysis(w io.Writer, as *appv1.AppService, resolved analysis.Resolved, runs []metricRun, showQueries bool) {
	a := as.Spec.Canary.Analysis
	head := fmt.Sprintf("Analysis of %s/%s: %d metrics, every %s, noData %s",
		as.Namespace, as.Name, len(runs), shortDuration(canary.AnalysisInterval(a)), cmp.Or(a.NoData, appv1.AnalysisNoDataHold))
	if len(resolved.Pins) > 0 {
		parts := make([]string, len(resolved.Pins))
		for i, p := range resolved.Pins {
			parts[i] = analysis.RefName(p.Kind, p.Name) + "@" + p.Digest
		}
		head += "; templates as they are now: " + strings.Join(parts, ", ")
	}
	printf(w, "%s\n", head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	printf(tw, "METRIC\tFROM\tVALUE\tBOUNDS\tRESULT\tMESSAGE\n")
	for _, r := range runs {
		name := r.metric.Name
		if r.metric.DryRun {
			name += " (dry run)"
		}
		printf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\n", metricSymbol(r.result), name, r.from, orNone(r.value), boundsText(r.metric.Min, r.metric.Max), r.result, r.message)
	}
	_ = tw.Flush()
	if showQueries {
		printf(w, "Queries:\n")
		for _, r := range runs {
			printf(w, "  %s: %s\n", r.metric.Name, r.query)
		}
	}
}

// boundsText is a metric's bounds: "≥ 0.99", "≤ 0.5", or both.
func boundsText(lo, hi *string) string {
	var b []string
	if lo != nil {
		b = append(b, "≥ "+*lo)
	}
	if hi != nil {
		b = append(b, "≤ "+*hi)
	}
	return strings.Join(b, ", ")
}
