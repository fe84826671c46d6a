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

// Package analysis takes the measurements of canary analyses
// (spec.canary.analysis): it renders each metric's query, asks a
// Prometheus-compatible server (Prometheus, Thanos, Mimir,
// VictoriaMetrics: the same HTTP API) through client_golang's
// api/prometheus/v1 client, and turns the answer into one number, no data,
// or an error that says why.
//
// It does so off the sync's path: a sync that finds a round due starts it
// (Runner.Start) and returns; the round runs in goroutines of its own,
// at most a bounded number of queries at once, each with a timeout, and
// when it ends the AppService's key goes back to the queue, whose next
// sync reads the results (Runner.Results) and decides on them
// (internal/canary). So a slow or unreachable Prometheus holds no worker,
// and AppServices without an analysis never wait for it. The last round's
// results live here until the next round's replace them: the status
// records a round only when it changes what the status shows, so the
// decision reads when the last round was taken from here, and /metrics
// the last value (Value). A restart loses them, and a round in flight:
// the next sync, finding the status's last change older than an
// interval, starts one again.
//
// Of this repository it may import internal/canary and the API's types
// (pkg/apis/app/v1).
package analysis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"example.com/appservice-controller/internal/canary"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Config is where the Prometheus-compatible server is, and how to reach it.
type Config struct {
	// URL is its address, such as http://prometheus.monitoring:9090 ("":
	// none; an analysis is then reported and never promoted).
	URL string
	// BearerTokenFile holds a token sent as "Authorization: Bearer",
	// read again as it changes (a projected ServiceAccount token).
	BearerTokenFile string
	// CAFile holds the CA certificates that verify its TLS certificate.
	CAFile string
	// Timeout bounds each query.
	Timeout time.Duration
	// Concurrency bounds the queries in flight, over every AppService.
	Concurrency int
}

// DefaultConcurrency is Config.Concurrency's default.
const DefaultConcurrency = 16

// NewAPI is the query client for cfg (nil, nil: cfg.URL is empty).
//
// Its HTTP client is written here rather than taken from
// prometheus/common/config, which Prometheus configures its own clients
// with: that package reaches text/template's reflective method calls,
// which keep the linker from dropping any exported method of the
// binary's types, and the controller grew from 52 to 95 MB with it. What
// the analysis needs of it is small: a bearer token read from its file at
// each request (a projected token rotates), and CA certificates.
func NewAPI(cfg Config) (promv1.API, error) {
	if cfg.URL == "" {
		return nil, nil
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("the Prometheus CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the Prometheus CA file %s holds no PEM certificate", cfg.CAFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = transport
	if cfg.BearerTokenFile != "" {
		if _, err := readToken(cfg.BearerTokenFile); err != nil {
			return nil, err
		}
		rt = bearerFile{path: cfg.BearerTokenFile, next: transport}
	}
	client, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("the Prometheus client for %q: %w", cfg.URL, err)
	}
	return promv1.NewAPI(client), nil
}

// bearerFile sends the token its file holds, read at each request.
type bearerFile struct {
	path string
	next http.RoundTripper
}

func (b bearerFile) RoundTrip(r *http.Request) (*http.Response, error) {
	token, err := readToken(b.path)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return b.next.RoundTrip(r)
}

func readToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("the Prometheus bearer token file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("the Prometheus bearer token file %s is empty", path)
	}
	return token, nil
}

// Runner takes rounds of measurements in the background. See the package
// comment.
type Runner struct {
	// ctx is the rounds': the controller's.
	ctx     context.Context
	api     promv1.API
	timeout time.Duration
	slots   chan struct{}
	// done is called with the key of an AppService whose round ended.
	done func(cache.ObjectName)

	mu       sync.Mutex
	inFlight map[cache.ObjectName]bool
	results  map[cache.ObjectName][]canary.Measurement
}

// NewRunner runs rounds on client (nil: no Prometheus is configured, and
// Configured says so) until ctx ends, and calls done with an AppService's
// key when its round has ended.
func NewRunner(ctx context.Context, client promv1.API, cfg Config, done func(cache.ObjectName)) *Runner {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Runner{
		ctx: ctx, api: client, timeout: cfg.Timeout, slots: make(chan struct{}, cfg.Concurrency), done: done,
		inFlight: map[cache.ObjectName]bool{}, results: map[cache.ObjectName][]canary.Measurement{},
	}
}

// Configured reports whether there is a Prometheus to query.
func (r *Runner) Configured() bool {
	return r != nil && r.api != nil
}

// Results are the measurements of key's last round that ended.
func (r *Runner) Results(key cache.ObjectName) []canary.Measurement {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[key]
}

// Value is the value key's metric had in its last round that ended, which
// the status records only when it changes what the status shows (false:
// no such round in memory, or it returned no value).
func (r *Runner) Value(key cache.ObjectName, metric string) (float64, bool) {
	if r == nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.results[key] {
		if m.Metric == metric && m.Err == "" && !m.NoData && !math.IsNaN(m.Value) {
			return m.Value, true
		}
	}
	return 0, false
}

// Forget drops what the runner holds of key (its AppService is gone).
func (r *Runner) Forget(key cache.ObjectName) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.results, key)
}

// Start takes the round of as's analysis a (its templates' metrics among
// its own: Resolve) that the decision asks for, unless one of as's rounds
// is still under way (its end wakes the sync, which asks again if one is
// still due). It returns at once.
func (r *Runner) Start(key cache.ObjectName, as *appv1.AppService, a *appv1.CanaryAnalysis, round canary.Round, target string) {
	if !r.Configured() || a == nil {
		return
	}
	r.mu.Lock()
	if r.inFlight[key] {
		r.mu.Unlock()
		return
	}
	r.inFlight[key] = true
	r.mu.Unlock()

	ctx := r.ctx
	vars := Vars{Namespace: as.Namespace, Name: as.Name, Target: target, Interval: canary.AnalysisInterval(a)}
	metrics := make([]appv1.AnalysisMetric, len(a.Metrics))
	copy(metrics, a.Metrics)
	go func() {
		results := make([]canary.Measurement, len(metrics))
		var wg sync.WaitGroup
		for i, m := range metrics {
			wg.Go(func() {
				results[i] = r.measure(ctx, m, Render(m.Query, vars), round)
			})
		}
		wg.Wait()
		r.mu.Lock()
		delete(r.inFlight, key)
		if ctx.Err() == nil {
			r.results[key] = results
		}
		r.mu.Unlock()
		if ctx.Err() == nil {
			// The status records a round only when it changes what the
			// status shows: the log says that each round was taken.
			klog.FromContext(ctx).V(2).Info("Measured", "appservice", klog.KRef(key.Namespace, key.Name),
				"template", round.Hash, "step", round.Step+1, "results", summary(results))
			r.done(key)
		}
	}()
}

// summary is a round's results in a few words: "success-rate=0.998
// latency=no-data".
func summary(results []canary.Measurement) string {
	parts := make([]string, len(results))
	for i, m := range results {
		switch {
		case m.Err != "":
			parts[i] = m.Metric + "=error"
		case m.NoData || math.IsNaN(m.Value):
			parts[i] = m.Metric + "=no-data"
		default:
			parts[i] = m.Metric + "=" + strconv.FormatFloat(m.Value, 'g', 6, 64)
		}
	}
	return strings.Join(parts, " ")
}

// measure runs one metric's query, waiting for a free slot first.
func (r *Runner) measure(ctx context.Context, m appv1.AnalysisMetric, query string, round canary.Round) canary.Measurement {
	res := canary.Measurement{Metric: m.Name, Hash: round.Hash, Step: round.Step, Time: round.Time}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-ctx.Done():
		res.Err = fmt.Sprintf("no query slot free within %s (%d queries in flight)", r.timeout, cap(r.slots))
		return res
	}
	v, _, err := r.api.Query(ctx, query, round.Time, promv1.WithTimeout(r.timeout))
	if err != nil {
		res.Err = QueryError(err, r.timeout)
		return res
	}
	res.Value, res.NoData, err = Number(v)
	if err != nil {
		res.Err = err.Error()
	}
	return res
}

// QueryError says why a query failed, in a sentence for the status.
func QueryError(err error, timeout time.Duration) string {
	var apiErr *promv1.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("Prometheus did not answer within %s", timeout)
	case errors.As(err, &apiErr):
		return fmt.Sprintf("Prometheus refused the query (%s): %s", apiErr.Type, apiErr.Msg)
	default:
		return "Prometheus could not be queried: " + err.Error()
	}
}

// Number is the one number v holds: a scalar, or a vector of one sample.
// An empty vector, or NaN, is no data; anything else is an error.
func Number(v model.Value) (value float64, noData bool, err error) {
	switch v := v.(type) {
	case *model.Scalar:
		value = float64(v.Value)
	case model.Vector:
		switch len(v) {
		case 0:
			return 0, true, nil
		case 1:
			value = float64(v[0].Value)
		default:
			return 0, false, fmt.Errorf("the query returned %d series, not one number: aggregate them (sum, max, ...)", len(v))
		}
	default:
		return 0, false, fmt.Errorf("the query returned a %s, not one number: a scalar or a vector of one series", v.Type())
	}
	if math.IsNaN(value) {
		return 0, true, nil
	}
	return value, false, nil
}

// Vars are what a query's placeholders stand for.
type Vars struct {
	// Namespace and Name are the AppService's; Target is the canary's
	// Deployment and Service's name.
	Namespace, Name, Target string
	// Interval is the time between two measurements.
	Interval time.Duration
}

// placeholder is a placeholder of a query; the CRD's rule on
// spec.canary.analysis.metrics[].query admits these and no other "{{".
var placeholder = regexp.MustCompile(`\{\{ *(namespace|name|target|interval) *\}\}`)

// Render is query with its placeholders replaced: {{ namespace }},
// {{ name }}, {{ target }} and {{ interval }} (in seconds, such as 60s).
func Render(query string, v Vars) string {
	return placeholder.ReplaceAllStringFunc(query, func(p string) string {
		switch placeholder.FindStringSubmatch(p)[1] {
		case "namespace":
			return v.Namespace
		case "name":
			return v.Name
		case "target":
			return v.Target
		default:
			return fmt.Sprintf("%ds", int64(v.Interval/time.Second))
		}
	})
}
