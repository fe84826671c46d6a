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

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The canary analysis's costs (spec.canary.analysis, issue 43): what the
// measurements of many canaries cost the controller and the Prometheus it
// asks (measureAnalysis), and that a slow Prometheus costs the AppServices
// without an analysis nothing (measureSlowPrometheus). Both point the
// controller at a fake Prometheus in the benchmark's process.

// Analysis: N canaries held at a routed step (weight 10, a pause of an
// hour), each with an analysis of Metrics metrics every IntervalSeconds,
// the controller pointed at a fake Prometheus that answers every query at
// once with one sample of 1. Over a window once every canary has its first
// round in its status: the queries the fake received per second (against
// N·Metrics/IntervalSeconds), the controller's CPU seconds per second, and
// its writes per second (the AppServices' status among them).
type Analysis struct {
	N               int `json:"n"`
	Metrics         int `json:"metrics"`
	IntervalSeconds int `json:"intervalSeconds"`
	// FirstRoundSeconds: from the image changes until every canary's
	// status holds a first round of measurements at its routed step.
	FirstRoundSeconds   float64 `json:"firstRoundSeconds"`
	WindowSeconds       float64 `json:"windowSeconds"`
	Queries             int64   `json:"queries"`
	QueriesPerSecond    float64 `json:"queriesPerSecond"`
	ExpectedPerSecond   float64 `json:"expectedQueriesPerSecond"`
	MostQueriesInFlight int64   `json:"mostQueriesInFlight"`
	// CPUPerSecond is the controller's CPU time (user and system, from
	// /proc/PID/stat) over the window, per second of it.
	CPUPerSecond float64 `json:"cpuSecondsPerSecond"`
	// IdleCPUPerSecond is the same over a window of the same length
	// before the canaries started (their AppServices Ready, nothing to
	// measure): what the analysis adds is the difference.
	IdleCPUPerSecond      float64        `json:"idleCpuSecondsPerSecond"`
	StatusWritesPerSecond float64        `json:"statusWritesPerSecond"`
	WritesPerSecond       float64        `json:"writesPerSecond"`
	Writes                map[string]int `json:"writes"`
	// Passing: canaries still at their first step at the window's end,
	// every metric Passed.
	Passing int `json:"passing"`
}

// SlowPrometheus: the convergence of N AppServices without an analysis
// (the benchmark's spec), the controller pointed at a fake Prometheus that
// answers every query after DelaySeconds, against the same without
// -prometheus-url; the median of Runs runs of each, alternated (each in
// turn first).
type SlowPrometheus struct {
	N              int     `json:"n"`
	Runs           int     `json:"runs"`
	DelaySeconds   float64 `json:"delaySeconds"`
	WithoutSeconds float64 `json:"withoutPrometheusSeconds"`
	WithSeconds    float64 `json:"slowPrometheusSeconds"`
	Ratio          float64 `json:"ratio"`
	// Each run's seconds, in order.
	WithoutRuns []float64 `json:"withoutPrometheusRunsSeconds"`
	WithRuns    []float64 `json:"slowPrometheusRunsSeconds"`
	// Writes per AppService, without and with.
	WithoutWrites float64 `json:"withoutPrometheusWritesPerAppService"`
	WithWrites    float64 `json:"slowPrometheusWritesPerAppService"`
	// Queries the slow Prometheus received, over every run (no AppService
	// asks for one).
	Queries int64 `json:"queries"`
}

// fakePrometheus answers /api/v1/query (POST or GET, as client_golang
// asks) after delay with a vector of one sample of 1 at the query's time,
// and counts the queries.
type fakePrometheus struct {
	*httptest.Server
	delay               time.Duration
	queries             atomic.Int64
	inFlight, mostAtOne atomic.Int64
}

func newFakePrometheus(delay time.Duration) *fakePrometheus {
	p := &fakePrometheus{delay: delay}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", p.query)
	p.Server = httptest.NewServer(mux)
	return p
}

func (p *fakePrometheus) query(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p.queries.Add(1)
	n := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for {
		most := p.mostAtOne.Load()
		if n <= most || p.mostAtOne.CompareAndSwap(most, n) {
			break
		}
	}
	if err := r.ParseForm(); err != nil || r.Form.Get("query") == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"no query"}`))
		return
	}
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-r.Context().Done():
			return
		}
	}
	at := float64(time.Now().UnixNano()) / 1e9
	if t, err := strconv.ParseFloat(r.Form.Get("time"), 64); err == nil {
		at = t
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%s,"1"]}]}}`,
		strconv.FormatFloat(at, 'f', -1, 64))
}

// analysisMetrics are three checks in the shape users write them
// (Flagger's request success rate and duration, a floor on the traffic);
// the fake Prometheus answers 1 to each, which passes all three.
func analysisMetrics() []appv1.AnalysisMetric {
	const selector = `namespace="{{ namespace }}",service="{{ target }}"`
	return []appv1.AnalysisMetric{
		{
			Name: "success-rate", Min: new("0.99"),
			Query: `sum(rate(http_requests_total{` + selector + `,code!~"5.."}[{{ interval }}])) / sum(rate(http_requests_total{` + selector + `}[{{ interval }}]))`,
		},
		{
			Name: "latency-p99", Max: new("1.5"),
			Query: `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{` + selector + `}[{{ interval }}])))`,
		},
		{
			Name: "request-rate", Min: new("0.5"),
			Query: `sum(rate(http_requests_total{` + selector + `}[{{ interval }}]))`,
		},
	}
}

// canaryBench is a cluster with a gateway's API, a fake Prometheus that
// answers at once, and the controller pointed at it, running n AppServices
// named app-NNNNN whose canaries hold for an hour at a first step of 10%
// routed, judged by analysis.
type canaryBench struct {
	e      *env
	prom   *fakePrometheus
	ctrl   *harness.Controller
	routes *routeWatch
	n      int
}

func (b *canaryBench) name(i int) string { return fmt.Sprintf("app-%05d", i) }

// newCanaryBench starts it, the AppServices created and running, no
// canary started yet; before, if not nil, runs once the controller is
// ready, before the AppServices are created.
func newCanaryBench(o options, label string, n int, analysis *appv1.CanaryAnalysis, before func(*env) error) (b *canaryBench, err error) {
	b = &canaryBench{prom: newFakePrometheus(0), n: n}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	if b.e, err = newEnvWith(o, label, localcluster.Options{ControllerManager: true, Scheduler: true, Nodes: 2}); err != nil {
		return b, err
	}
	ctx := context.Background()
	if err := localcluster.InstallGatewayAPI(ctx, b.e.cfg); err != nil {
		return b, err
	}
	if b.ctrl, err = startController(o, b.e, "-prometheus-url="+b.prom.URL); err != nil {
		return b, err
	}
	if _, err := waitReady(b.ctrl); err != nil {
		return b, err
	}
	if before != nil {
		// The controller has installed its CRDs.
		if err := before(b.e); err != nil {
			return b, err
		}
	}
	if b.routes, err = watchRoutes(b.e); err != nil {
		return b, err
	}
	// The first step holds for an hour: the canaries stay routed,
	// measured every interval.
	return b, createCanaried(ctx, b.e, n, b.name, &appv1.Canary{
		Steps:    []appv1.CanaryStep{{Weight: 10, PauseSeconds: 3600}, {Weight: 100}},
		Analysis: analysis,
	}, b.routes, true)
}

func (b *canaryBench) close() {
	if b.routes != nil {
		b.routes.close()
	}
	if b.ctrl != nil {
		stop(b.ctrl)
	}
	if b.e != nil {
		b.e.cluster.Stop()
	}
	b.prom.Close()
}

// release gives every AppService a new image and waits until each canary
// has a first round of its metrics measured at its routed step; it
// returns the time that took.
func (b *canaryBench) release(metrics int) (time.Duration, error) {
	ctx := context.Background()
	start := time.Now()
	if err := inParallel(b.n, func(i int) error {
		_, err := b.e.apps.AppV1().AppServices(benchNamespace).Patch(ctx, b.name(i), types.MergePatchType,
			[]byte(`{"spec":{"image":"nginx:1.28"}}`), metav1.PatchOptions{})
		return err
	}); err != nil {
		return 0, err
	}
	err := poll("a first round of measurements of every canary", func() (bool, error) {
		measured, _, err := canariesMeasured(ctx, b.e, metrics)
		return measured == b.n, err
	})
	return time.Since(start), err
}

// measureAnalysis runs n canaries held at a routed step, each with an
// analysis of three metrics every interval, against a fake Prometheus,
// and measures over window (see Analysis).
func measureAnalysis(o options, n int, interval int32, window time.Duration) (Analysis, error) {
	metrics := analysisMetrics()
	res := Analysis{N: n, Metrics: len(metrics), IntervalSeconds: int(interval),
		ExpectedPerSecond: float64(n*len(metrics)) / float64(interval)}
	b, err := newCanaryBench(o, "analysis", n, &appv1.CanaryAnalysis{IntervalSeconds: interval, Metrics: metrics}, nil)
	if err != nil {
		return res, err
	}
	defer b.close()
	ctx, e, ctrl, prom := context.Background(), b.e, b.ctrl, b.prom
	// The idle controller's CPU over a window as long, for reference.
	_, idleStart, err := ctrl.Usage()
	if err != nil {
		return res, err
	}
	time.Sleep(window)
	_, idleEnd, err := ctrl.Usage()
	if err != nil {
		return res, err
	}
	res.IdleCPUPerSecond = (idleEnd - idleStart) / window.Seconds()

	first, err := b.release(len(metrics))
	if err != nil {
		return res, err
	}
	res.FirstRoundSeconds = first.Seconds()

	logf("analysis: %d canaries measured, window of %s", n, window)
	_, cpu0, err := ctrl.Usage()
	if err != nil {
		return res, err
	}
	q0, from := prom.queries.Load(), time.Now()
	time.Sleep(window)
	_, cpu1, err := ctrl.Usage()
	if err != nil {
		return res, err
	}
	q1, to := prom.queries.Load(), time.Now()
	took := to.Sub(from).Seconds()
	res.WindowSeconds = took
	res.Queries = q1 - q0
	res.QueriesPerSecond = float64(res.Queries) / took
	res.MostQueriesInFlight = prom.mostAtOne.Load()
	res.CPUPerSecond = (cpu1 - cpu0) / took

	writes, err := e.cluster.Writes(controllerUser, from)
	if err != nil {
		return res, err
	}
	res.Writes = map[string]int{}
	total, status := 0, 0
	for _, w := range writes {
		if w.ObjectRef == nil || !w.RequestReceivedTimestamp.Before(to) {
			continue
		}
		res.Writes[w.Verb+" "+strings.TrimSuffix(w.ObjectRef.Resource+"/"+w.ObjectRef.Subresource, "/")]++
		total++
		if w.ObjectRef.Resource == "appservices" && w.ObjectRef.Subresource == "status" {
			status++
		}
	}
	res.WritesPerSecond = float64(total) / took
	res.StatusWritesPerSecond = float64(status) / took
	_, res.Passing, err = canariesMeasured(ctx, e, len(metrics))
	return res, err
}

// canariesMeasured counts the AppServices whose canary has its first
// step's weight routed and, at that step, a measurement of each of its
// metrics in the status; and of those, the ones whose every metric
// Passed at that step.
func canariesMeasured(ctx context.Context, e *env, metrics int) (measured, passing int, err error) {
	return canariesMeasuredIn(ctx, e, metrics, metav1.ListOptions{})
}

// canariesMeasuredIn is canariesMeasured of the AppServices opts lists.
func canariesMeasuredIn(ctx context.Context, e *env, metrics int, opts metav1.ListOptions) (measured, passing int, err error) {
	list, err := e.apps.AppV1().AppServices(benchNamespace).List(ctx, opts)
	if err != nil {
		return 0, 0, err
	}
	for _, as := range list.Items {
		c := as.Status.Canary
		if c == nil || c.CanaryTemplateHash == "" || c.Step == nil || *c.Step != 0 || c.Weight == 0 ||
			c.StepStartTime == nil || len(c.Analysis) != metrics {
			continue
		}
		taken, passed := 0, 0
		for _, m := range c.Analysis {
			if !m.Time.Before(c.StepStartTime) {
				taken++
			}
			if m.Result == appv1.MetricPassed && m.PassedStep != nil && *m.PassedStep == 0 {
				passed++
			}
		}
		if taken == metrics {
			measured++
			if passed == metrics {
				passing++
			}
		}
	}
	return measured, passing, nil
}

// measureSlowPrometheus times the convergence of n AppServices of the
// benchmark's spec (no canary, no analysis) with the controller pointed
// at a Prometheus that answers after delay, against the same without
// -prometheus-url, runs times each, alternated, each in turn first (see
// SlowPrometheus).
func measureSlowPrometheus(o options, n, runs int, delay time.Duration) (SlowPrometheus, error) {
	res := SlowPrometheus{N: n, Runs: runs, DelaySeconds: delay.Seconds()}
	prom := newFakePrometheus(delay)
	defer prom.Close()
	converge := func(name string, extra ...string) (seconds, writes float64, err error) {
		e, err := newEnv(o, name)
		if err != nil {
			return 0, 0, err
		}
		defer e.cluster.Stop()
		ctrl, err := startController(o, e, extra...)
		if err != nil {
			return 0, 0, err
		}
		defer func() { stop(ctrl) }()
		if _, err := waitReady(ctrl); err != nil {
			return 0, 0, err
		}
		return createAndConverge(e, n, 10*time.Minute)
	}
	var without, with, withoutWrites, withWrites []float64
	for i := range runs {
		// Which goes first alternates (ABBA): a run right after another
		// shares the machine with the last one's control plane exiting.
		for j := range 2 {
			if (i+j)%2 == 0 {
				logf("slow prometheus: n=%d without -prometheus-url, run %d/%d", n, i+1, runs)
				s, w, err := converge(fmt.Sprintf("slow-prometheus-without-%d", i))
				if err != nil {
					return res, err
				}
				without, withoutWrites = append(without, s), append(withoutWrites, w)
				continue
			}
			logf("slow prometheus: n=%d, Prometheus answering after %s, run %d/%d", n, delay, i+1, runs)
			s, w, err := converge(fmt.Sprintf("slow-prometheus-with-%d", i), "-prometheus-url="+prom.URL)
			if err != nil {
				return res, err
			}
			with, withWrites = append(with, s), append(withWrites, w)
		}
	}
	res.WithoutRuns, res.WithRuns = without, with
	res.WithoutSeconds, res.WithSeconds = median(without), median(with)
	res.Ratio = res.WithSeconds / res.WithoutSeconds
	res.WithoutWrites, res.WithWrites = median(withoutWrites), median(withWrites)
	res.Queries = prom.queries.Load()
	return res, nil
}

// measureAnalyses runs the measurements of canary analyses that -skip
// leaves in: their cost (measureAnalysis), and what a slow Prometheus
// costs the AppServices without one (measureSlowPrometheus).
func measureAnalyses(o options, res *Results) error {
	if !o.skip["analysis"] {
		logf("canary analyses")
		a, err := measureAnalysis(o, 1000, 10, time.Minute)
		if err != nil {
			return err
		}
		res.Analysis = a
	}
	if !o.skip["templates"] {
		logf("analysis templates")
		runs, err := measureTemplates(o, 1000)
		if err != nil {
			return err
		}
		res.Templates = runs
	}
	if !o.skip["slow-prometheus"] {
		logf("a slow Prometheus")
		sp, err := measureSlowPrometheus(o, 1000, o.runs, 2*time.Second)
		if err != nil {
			return err
		}
		res.SlowPrometheus = sp
	}
	return nil
}
