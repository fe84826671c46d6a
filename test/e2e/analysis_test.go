//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The canary's analysis (spec.canary.analysis), end to end, on a real
// Prometheus that scrapes, every second, the series a gateway would export
// of the requests to each Service (gateway_requests_total, by status
// code); the tests set their rates (gatewayMetrics), per namespace.

// successRate is Flagger's request-success-rate check: the share of the
// canary's requests that were not answered 5xx, over the last 5 s.
func successRate() appv1.AnalysisMetric {
	return appv1.AnalysisMetric{
		Name: "success-rate", Min: new("0.95"),
		Query: `sum(rate(gateway_requests_total{namespace="{{ namespace }}",service="{{ target }}",code!~"5.."}[5s]))` +
			` / sum(rate(gateway_requests_total{namespace="{{namespace}}",service="{{target}}"}[5s]))`,
	}
}

// analysedSpec is canarySpec's AppService with an analysis of these
// metrics, measured every interval seconds.
func analysedSpec(interval int32, metrics []appv1.AnalysisMetric, steps ...appv1.CanaryStep) appv1.AppServiceSpec {
	spec := canarySpec(steps...)
	spec.Canary.Analysis = &appv1.CanaryAnalysis{IntervalSeconds: interval, Metrics: metrics}
	return spec
}

// serve sets the rates of the canary's requests, per second: ok answered
// 200, failed answered 503.
func serve(ns, name string, ok, failed float64) {
	gatewayMetrics.SetRate(ns, name+"-canary", "200", ok)
	gatewayMetrics.SetRate(ns, name+"-canary", "503", failed)
}

// TestCanaryAnalysis: the analysis judges each step, in four namespaces at
// once.
//   - promote: a canary that serves no errors is promoted, step by step, a
//     measurement passing in each, and the measurements stay in the status,
//     which no sync writes again once it is in line.
//   - abort: a canary that answers 20% of its requests 503 is aborted by
//     its analysis once it failed more than failureLimit times: the route
//     goes back to the stable Service in one write, Stalled says
//     CanaryAnalysisFailed, and the Warning Event names the metric, the
//     value and the threshold.
//   - nodata: without traffic the query returns no data, and under the
//     default (Hold) the step holds, measurement after measurement, with
//     neither a failure nor a promotion; once there is traffic, it goes on.
//   - dryrun: a dry-run metric that always fails is measured, counted and
//     announced, and the canary is promoted all the same.
func TestCanaryAnalysis(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	t.Run("promote", func(t *testing.T) { t.Parallel(); testAnalysisPromote(t) })
	t.Run("abort", func(t *testing.T) { t.Parallel(); testAnalysisAbort(t) })
	t.Run("nodata", func(t *testing.T) { t.Parallel(); testAnalysisNoData(t) })
	t.Run("dryrun", func(t *testing.T) { t.Parallel(); testAnalysisDryRun(t) })
}

func testAnalysisPromote(t *testing.T) {
	ns := newNamespace(t)
	const name = "steady"
	serve(ns, name, 10, 0)
	createAppService(t, ns, name, analysedSpec(2, []appv1.AnalysisMetric{successRate()},
		appv1.CanaryStep{Weight: 20}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	as := waitCanaryDone(t, ns, name)
	checkCanaryGone(t, ns, name)
	rec.waitWeights(t, 0, 20, 100, 0)
	// Each step advanced on a measurement that passed during it, and none
	// failed. (A query that Prometheus, on a loaded machine, does not
	// answer in time is an error, which only holds the step.)
	passedIn := map[int32]bool{}
	for _, v := range rec.app.snapshot() {
		for _, m := range analysisOf(v.obj) {
			if m.Result == appv1.MetricFailed || m.Failures > 0 {
				t.Errorf("measurement %s of a canary without errors (resourceVersion %d)", metricString(m), v.rv)
			}
			if m.PassedStep != nil {
				passedIn[*m.PassedStep] = true
			}
		}
	}
	if !passedIn[0] || !passedIn[1] {
		t.Errorf("steps with a passed measurement recorded: %v, want 0 and 1", passedIn)
	}
	if ms := analysisOf(as); len(ms) != 1 || ms[0].Result != appv1.MetricPassed || ms[0].Value != "1" {
		t.Errorf("status.canary.analysis once promoted: %v, want success-rate Passed at 1", metricsString(ms))
	}

	// Promoted, its measurements kept in the status: not one write while
	// it syncs.
	waitInLine(t, ns, name)
	steady := time.Now()
	waitSyncs(t, ns, name)
	for _, w := range canaryWrites(t, steady, ns) {
		t.Errorf("write by the controller once promoted and in line: %s", w)
	}
}

func testAnalysisAbort(t *testing.T) {
	ns := newNamespace(t)
	const name = "flaky"
	spec := analysedSpec(2, []appv1.AnalysisMetric{successRate()}, appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100})
	spec.Canary.Analysis.FailureLimit = 1
	serve(ns, name, 8, 2)
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	// The first failure, then the second, past the limit: aborted.
	// (The abort's route write comes an interval, 2 s, after the first
	// failure's status write, whose watch event marks the time.)
	var since time.Time
	rec.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		for _, v := range vs {
			if ms := analysisOf(v.obj); len(ms) == 1 && ms[0].Failures == 1 {
				since = v.at
				return nil
			}
		}
		return fmt.Errorf("no failed measurement recorded yet")
	})
	as := waitStalled(t, ns, name, appv1.ReasonCanaryAnalysisFailed, "metric success-rate failed 2 times, more than its failureLimit of 1")
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryAnalysisFailed, "below min 0.95")
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryMeasurementFailed, "metric success-rate failed, value 0.")
	checkCanaryGone(t, ns, name)
	rec.waitWeights(t, 0, 50, 0)
	if ms := analysisOf(as); len(ms) != 1 || ms[0].Failures != 2 || ms[0].Result != appv1.MetricFailed || !near(ms[0].Value, 0.8) {
		t.Errorf("status.canary.analysis once aborted: %v, want success-rate Failed twice, at 0.8", metricsString(ms))
	}
	if as.Status.Canary.AbortedTemplateHash == "" {
		t.Errorf("status.canary %s does not remember the aborted template", canaryString(as.Status.Canary))
	}
	// The step never advanced, and the route went back in one write.
	for _, e := range edgeNames(canaryEdges(rec.app.snapshot())) {
		if !strings.HasPrefix(e, "0@") {
			t.Errorf("edge %s of a canary whose first step failed", e)
		}
	}
	routeWrites := 0
	for _, w := range canaryWrites(t, since, ns) {
		if w.ObjectRef.Resource == "httproutes" {
			routeWrites++
		}
	}
	if routeWrites != 1 {
		t.Errorf("%d writes of the HTTPRoute after the first failure, want the abort's one", routeWrites)
	}
}

func testAnalysisNoData(t *testing.T) {
	ns := newNamespace(t)
	const name = "quiet"
	createAppService(t, ns, name, analysedSpec(1, []appv1.AnalysisMetric{successRate()}, appv1.CanaryStep{Weight: 30}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	// No traffic: a measurement without data, recorded with a Warning, the
	// step held. The rounds after it change nothing the status shows: the
	// controller logs three more, and neither writes the status nor sends
	// a second Warning for them.
	rec.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		if n := len(measurements(vs, appv1.MetricNoData)); n < 1 {
			return fmt.Errorf("no measurement without data recorded yet")
		}
		return nil
	})
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryMeasurementNoData, "the step holds until there is data (noData: Hold)")
	since := time.Now()
	rounds := len(loggedRounds(t, ns, name))
	eventually(t, time.Minute, func() error {
		if n := len(loggedRounds(t, ns, name)) - rounds; n < 3 {
			return fmt.Errorf("%d rounds logged since the first without data, want 3", n)
		}
		return nil
	})
	// The audit log: no status write, and no Event (the Warning came
	// before: Events leave one process in order).
	for _, w := range controllerWrites(t, since, ns) {
		if r := w.ObjectRef; r != nil && (r.Resource == "appservices" || r.Resource == "events") {
			t.Errorf("%s %s/%s of a canary whose rounds changed nothing the status shows", w.Verb, r.Resource, r.Subresource)
		}
	}
	if n := len(measurements(rec.app.snapshot(), appv1.MetricNoData)); n != 1 {
		t.Errorf("%d measurements without data recorded, want the first only", n)
	}
	for _, v := range rec.app.snapshot() {
		for _, m := range analysisOf(v.obj) {
			if m.Failures != 0 || m.Result == appv1.MetricPassed {
				t.Errorf("measurement %s of a canary without traffic (resourceVersion %d), want no data and no failure", metricString(m), v.rv)
			}
		}
		if c := v.obj.Status.Canary; c != nil && c.Step != nil && *c.Step > 0 {
			t.Errorf("status.canary %s: a step without data passed", canaryString(c))
		}
	}

	serve(ns, name, 10, 0)
	waitCanaryDone(t, ns, name)
	rec.waitWeights(t, 0, 30, 100, 0)
}

func testAnalysisDryRun(t *testing.T) {
	ns := newNamespace(t)
	const name = "trial"
	// A p99 of 2 s against a max of 0.5: it fails at every measurement.
	latency := appv1.AnalysisMetric{Name: "latency", Query: `max_over_time(vector(2)[{{ interval }}:1s])`, Max: new("0.5"), DryRun: true}
	serve(ns, name, 10, 0)
	createAppService(t, ns, name, analysedSpec(2, []appv1.AnalysisMetric{successRate(), latency}, appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	as := waitCanaryDone(t, ns, name)
	rec.waitWeights(t, 0, 50, 100, 0)
	failed := measurements(rec.app.snapshot(), appv1.MetricFailed)
	if len(failed) < 2 {
		t.Errorf("%d failed measurements of the dry-run metric, want one per step at least", len(failed))
	}
	for _, m := range failed {
		if m.Name != "latency" {
			t.Errorf("failed measurement %s: only the dry run fails", metricString(m))
		}
	}
	var last appv1.MetricStatus
	for _, m := range analysisOf(as) {
		if m.Name == "latency" {
			last = m
		}
	}
	if last.Result != appv1.MetricFailed || last.Failures < 2 || last.Message != "value 2 is above max 0.5" {
		t.Errorf("the dry-run metric once promoted: %s, want Failed, counted, with its value and threshold", metricString(last))
	}
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryMeasurementFailed, "metric latency (dry run) failed, value 2 is above max 0.5")
	if n := len(events(t, ns, name, appv1.ReasonCanaryAnalysisFailed)); n != 0 {
		t.Errorf("%d %s Events for a dry-run metric, want none", n, appv1.ReasonCanaryAnalysisFailed)
	}
}

// TestCanaryAnalysisOutages: what the analysis does when Prometheus or the
// controller goes away. Serial: it stops the suite's Prometheus and kills
// the controller.
//   - Prometheus down while a canary's step is routed: each measurement is
//     an error (the condition and a Warning Event say so), the step holds
//     and nothing is promoted; once Prometheus is back, the canary passes
//     and is promoted.
//   - The controller killed (SIGKILL) right after a failed measurement is
//     recorded: the next one counts on from it, the failures never go
//     back, and the canary is aborted past its failureLimit, at the step it
//     was on.
//   - The controller killed in the middle of a release judged by a
//     template, edited while the controller is down: the canary runs what
//     it pinned (templates_test.go).
//   - A controller without a Prometheus (no -prometheus-url): the canary
//     holds at its first routed step, Stalled, with one Warning Event.
func TestCanaryAnalysisOutages(t *testing.T) {
	serial(t, 1)
	installGatewayAPI(t)
	// A short lease, so that a restarted process takes over from the
	// killed one in seconds.
	swapController(t, "analysis-outages", "-leader-elect-lease-duration=4s", "-leader-elect-renew-deadline=3s", "-leader-elect-retry-period=1s")
	t.Run("prometheus down", testAnalysisPrometheusDown)
	t.Run("controller killed", testAnalysisControllerKilled)
	t.Run("template pinned across a kill", testAnalysisTemplateKilled)
	t.Run("no prometheus", testAnalysisNotConfigured)
}

// testAnalysisNotConfigured: a controller without -prometheus-url holds a
// canary with an analysis at its first routed step, Stalled with a reason
// of its own and one Warning Event, and never promotes it.
func testAnalysisNotConfigured(t *testing.T) {
	swapController(t, "analysis-unconfigured", "-prometheus-url=", "-leader-elect-lease-duration=4s", "-leader-elect-renew-deadline=3s", "-leader-elect-retry-period=1s")
	ns := newNamespace(t)
	const name = "unjudged"
	serve(ns, name, 10, 0)
	createAppService(t, ns, name, analysedSpec(1, []appv1.AnalysisMetric{successRate()}, appv1.CanaryStep{Weight: 25}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	waitStalled(t, ns, name, appv1.ReasonCanaryAnalysisNotConfigured, "the controller has none (-prometheus-url)")
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryAnalysisNotConfigured, "-prometheus-url")
	// Held at its first step, routed, for several intervals and resyncs.
	waitSyncs(t, ns, name)
	if edges := edgeNames(canaryEdges(rec.app.snapshot())); !slices.Equal(edges, []string{"0@0%", "0@25%"}) {
		t.Errorf("the canary's edges without a Prometheus: %v, want its first step routed, and held", edges)
	}
	for _, v := range rec.app.snapshot() {
		if ms := analysisOf(v.obj); len(ms) != 0 {
			t.Errorf("measurements %s without a Prometheus", metricsString(ms))
		}
	}
	n := 0
	for _, e := range events(t, ns, name, appv1.ReasonCanaryAnalysisNotConfigured) {
		n += int(e.Count)
	}
	if n != 1 {
		t.Errorf("%d %s Events, want one", n, appv1.ReasonCanaryAnalysisNotConfigured)
	}
}

func testAnalysisPrometheusDown(t *testing.T) {
	ns := newNamespace(t)
	const name = "blind"
	spec := analysedSpec(2, []appv1.AnalysisMetric{successRate()}, appv1.CanaryStep{Weight: 40}, appv1.CanaryStep{Weight: 100})
	spec.Canary.Analysis.ErrorLimit = new(int32(100))
	serve(ns, name, 10, 0)
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)

	if err := prometheus.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := prometheus.Restart(context.Background()); err != nil {
				t.Errorf("restarting Prometheus: %v", err)
			}
		}
	})
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	// Routed, then three errors in a row; held there.
	rec.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		last := analysisOf(vs[len(vs)-1].obj)
		if len(last) != 1 || last[0].Errors < 3 {
			return fmt.Errorf("status.canary.analysis %s, want 3 errors in a row", metricsString(last))
		}
		return nil
	})
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryMeasurementError, "metric success-rate erred")
	as, err := getAppService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(as, appv1.ConditionReconciling); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "holds: success-rate erred: Prometheus") {
		t.Errorf("Reconciling while Prometheus is down: %+v, want True, saying the step holds and why", c)
	}
	down := rec.app.snapshot()
	if edges := edgeNames(canaryEdges(down)); !slices.Equal(edges, []string{"0@0%", "0@40%"}) {
		t.Errorf("the canary's edges while Prometheus was down: %v, want its first step routed, and held", edges)
	}

	if err := prometheus.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted = true
	waitCanaryDone(t, ns, name)
	rec.waitWeights(t, 0, 40, 100, 0)
	if ms := analysisOf(rec.app.snapshot()[len(rec.app.snapshot())-1].obj); len(ms) != 1 || ms[0].Result != appv1.MetricPassed || ms[0].Errors != 0 {
		t.Errorf("status.canary.analysis once promoted: %s, want Passed, the errors reset", metricsString(ms))
	}
}

func testAnalysisControllerKilled(t *testing.T) {
	ns := newNamespace(t)
	const name = "doomed"
	spec := analysedSpec(2, []appv1.AnalysisMetric{successRate()}, appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100})
	spec.Canary.Analysis.FailureLimit = 3
	serve(ns, name, 5, 5)
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	rec.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		if ms := analysisOf(vs[len(vs)-1].obj); len(ms) != 1 || ms[0].Failures < 1 {
			return fmt.Errorf("status.canary.analysis %s, want a failure", metricsString(ms))
		}
		return nil
	})
	restartController(t)
	as := waitStalled(t, ns, name, appv1.ReasonCanaryAnalysisFailed, "metric success-rate failed 4 times, more than its failureLimit of 3")
	// The failures counted on across the restart: 1, 2, 3, 4, none
	// forgotten (a count going back) nor counted twice (a jump), as the
	// watch recorded them (up to the abort's version). Before the first
	// failure a measurement may have found no data yet (Prometheus had not
	// scraped the canary's traffic: NoData, 0 failures), which is no count.
	rec.app.wait(t, time.Minute, func(vs []version[*appv1.AppService]) error {
		var counts []int32
		for _, v := range vs {
			if ms := analysisOf(v.obj); len(ms) == 1 && (len(counts) == 0 && ms[0].Failures > 0 ||
				len(counts) > 0 && counts[len(counts)-1] != ms[0].Failures) {
				counts = append(counts, ms[0].Failures)
			}
		}
		return wantPrefix(t, "the failures across the controller's restart", counts, []int32{1, 2, 3, 4})
	})
	if ms := analysisOf(as); len(ms) != 1 || ms[0].Failures != 4 {
		t.Errorf("status.canary.analysis once aborted: %s, want 4 failures", metricsString(ms))
	}
	for _, e := range edgeNames(canaryEdges(rec.app.snapshot())) {
		if !strings.HasPrefix(e, "0@") {
			t.Errorf("edge %s of a canary whose first step failed", e)
		}
	}
	checkCanaryGone(t, ns, name)
}

// analysisOf is a version's status.canary.analysis.
func analysisOf(as *appv1.AppService) []appv1.MetricStatus {
	if as.Status.Canary == nil {
		return nil
	}
	return as.Status.Canary.Analysis
}

// measurements are the distinct measurements of a result the versions
// recorded (by metric and time).
func measurements(vs []version[*appv1.AppService], result appv1.MetricResult) []appv1.MetricStatus {
	var out []appv1.MetricStatus
	seen := map[string]bool{}
	for _, v := range vs {
		for _, m := range analysisOf(v.obj) {
			if key := m.Name + " " + m.Time.String(); m.Result == result && !seen[key] {
				seen[key] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// near reports whether value is a number within 0.05 of want.
func near(value string, want float64) bool {
	v, err := strconv.ParseFloat(value, 64)
	return err == nil && math.Abs(v-want) < 0.05
}

func metricString(m appv1.MetricStatus) string {
	return fmt.Sprintf("{%s %s value %q at %s, failures %d, errors %d: %s}", m.Name, m.Result, m.Value, m.Time.Format(time.TimeOnly), m.Failures, m.Errors, m.Message)
}

func metricsString(ms []appv1.MetricStatus) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = metricString(m)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
