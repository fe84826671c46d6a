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

package canary

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"example.com/appservice-controller/internal/plural"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The analysis (spec.canary.analysis) judges each step by what the canary
// serves. The controller measures (internal/analysis queries Prometheus,
// off the sync's path) when a Decision says a round is due, and hands the
// results back to the next decision as Measurements; the decision folds
// them into the status, which keeps, per metric, the last change of what
// it shows (the result, the step it passed in, the counts) and the
// counts. A round that changes none of it is not written: a canary that
// passes round after round writes its status once a step, not once a
// round. From the status alone it knows how many failures and errors
// there were, and whether each metric passed during the current step: a
// restarted controller resumes, it neither forgets a failure nor judges a
// step twice. When the next round is due it knows from the last round's
// results, which the runner keeps; a restarted controller, which has
// none, measures at once if the status's last change is older than an
// interval.
//
// The rules:
//   - Rounds run while a step's weight is routed, every interval, the
//     first one interval after the weight went to the route (a rate over
//     the interval then covers the canary's traffic at that weight), until
//     promotion begins.
//   - A step advances once its pause has passed and the last measurement
//     of every metric that is not a dry run passed during the step: a step
//     without a pause is judged once, and no step advances on an error, on
//     no data, or on a failure within the limit.
//   - A metric that failed more than failureLimit times in the canary, or
//     erred more than errorLimit times in a row, aborts it, as a deadline
//     does (the template is remembered, not retried).
//   - No data (an empty result, or NaN) holds the step under Hold, with no
//     limit, for it is what a label typo or a canary without traffic yet
//     looks like, and neither says the version is bad; under Fail it is a
//     failed measurement.
//   - A dry-run metric is measured, counted and reported, and never holds
//     nor aborts.

// DefaultErrorLimit is spec.canary.analysis.errorLimit's default (as Argo
// Rollouts' consecutiveErrorLimit).
const DefaultErrorLimit = 4

// Analysis is what the decision knows of the measurements.
type Analysis struct {
	// Configured: the controller has a Prometheus to query.
	Configured bool
	// Measurements are results the status may not have yet.
	Measurements []Measurement
	// Pins are the analysis's templates as resolved now, which a canary
	// that starts records (status.canary.templates) and runs until it
	// ends; Unresolved says why they cannot be resolved ("": they can),
	// and a canary then holds at its start, with no traffic, or, running,
	// at its step.
	Pins       []appv1.PinnedTemplate
	Unresolved string
}

// Measurement is the result of one metric's query.
type Measurement struct {
	// Metric names the spec's metric; Hash and Step the canary's template
	// and step it was measured for.
	Metric string
	Hash   string
	Step   int32
	// Time is the time the query was evaluated at.
	Time time.Time
	// Value is the number the query returned, unless NoData or Err.
	Value float64
	// NoData: the query returned no series, or NaN.
	NoData bool
	// Err says why there is no result: no answer, a query error, a result
	// that is not one number.
	Err string
}

// Round is a round of measurements the controller should take now.
type Round struct {
	Hash string
	Step int32
	// Time is the time to evaluate the queries at, to the second (as the
	// status records it).
	Time time.Time
}

// AnalysisInterval is the time between two rounds.
func AnalysisInterval(a *appv1.CanaryAnalysis) time.Duration {
	if a.IntervalSeconds <= 0 {
		return time.Minute
	}
	return time.Duration(a.IntervalSeconds) * time.Second
}

// judged is the analysis's part of a step's decision.
type judged struct {
	status *appv1.CanaryStatus
	// events of the measurements folded in.
	events []Event
	// abort: why the analysis aborts the canary ("": it does not).
	abort string
	// passed: every metric that is not a dry run passed during the step.
	passed bool
	// hold says why the step waits on the analysis.
	hold string
	// round: a round is due now (nil: not).
	round *Round
	// next is when the next round is due.
	next time.Time
}

// failed is the abort of a release its analysis failed (j.abort, then
// more), its template remembered, the results and the measurements'
// Events recorded.
func (j judged) failed(in Input, st *appv1.CanaryStatus, more string) Decision {
	d := abort(in, st, j.abort+more, true)
	d.Reason, d.Event.Reason = appv1.ReasonCanaryAnalysisFailed, appv1.ReasonCanaryAnalysisFailed
	d.Status.AbortedTemplateHash, d.Status.Analysis = in.Hash, j.status.Analysis
	d.Events = j.events
	return d
}

// wake is when to look again for the analysis (0: no need): its next
// round's time; while a round runs, its interval (the round's end wakes
// the sync; this, should it not).
func (j judged) wake(a *appv1.CanaryAnalysis, now time.Time) time.Duration {
	if j.round != nil {
		return AnalysisInterval(a)
	}
	return max(0, j.next.Sub(now))
}

// analysisStalled marks d Stalled while its analysis cannot go on without
// the user: the controller has no Prometheus, or its templates do not
// resolve once what it waits for is over (over). say words the message.
func (in Input) analysisStalled(d *Decision, over bool, say func(what string) string) {
	switch {
	case !in.Analysis.Configured:
		d.Stalled, d.Reason = true, appv1.ReasonCanaryAnalysisNotConfigured
		d.Message = say("holds: spec.canary.analysis needs a Prometheus to query, and the controller has none (-prometheus-url)")
	case in.Analysis.Unresolved != "" && over:
		d.Stalled, d.Reason = true, appv1.ReasonCanaryAnalysisUnresolved
		d.Message = say("holds: its analysis cannot be resolved: " + in.Analysis.Unresolved)
	}
}

// judge folds the measurements of the current step into the status st
// (a copy is made when they change it) and judges the step, whose weight
// went to the route at st's stepStartTime.
func judge(a *appv1.CanaryAnalysis, an Analysis, st *appv1.CanaryStatus, hash string, now time.Time) judged {
	step := *st.Step
	routedAt := startTime(st, now)
	j := judged{status: st}
	var last time.Time
	j.status, j.events, last = fold(a, an.Measurements, st, hash)
	statusOf := func(name string) *appv1.MetricStatus {
		for i := range j.status.Analysis {
			if j.status.Analysis[i].Name == name {
				return &j.status.Analysis[i]
			}
		}
		return &appv1.MetricStatus{Name: name}
	}

	if !an.Configured {
		j.hold = "the controller has no Prometheus to query (-prometheus-url)"
		return j
	}
	if j.abort = analysisAbort(a, j.status); j.abort != "" {
		return j
	}
	j.passed = true
	for _, m := range a.Metrics {
		ms := statusOf(m.Name)
		if m.DryRun {
			continue
		}
		if ms.Result != appv1.MetricPassed || ms.PassedStep == nil || *ms.PassedStep != step || ms.Time.Before(&metav1.Time{Time: routedAt}) {
			j.passed = false
			if j.hold == "" {
				j.hold = holdReason(ms)
			}
		}
	}
	j.next = routedAt.Add(AnalysisInterval(a))
	if last.After(routedAt) {
		j.next = last.Add(AnalysisInterval(a))
	}
	if !now.Before(j.next) {
		j.round = &Round{Hash: hash, Step: step, Time: now.Truncate(time.Second)}
	}
	return j
}

// fold is st with the measurements of its step and template that it does
// not have yet (a copy; st itself when there are none), the Events they
// call for, and the time of the last measurement.
func fold(a *appv1.CanaryAnalysis, measurements []Measurement, st *appv1.CanaryStatus, hash string) (*appv1.CanaryStatus, []Event, time.Time) {
	step, routedAt := *st.Step, startTime(st, time.Time{})
	var events []Event
	// Each metric of the spec, as the status has it (a metric never
	// measured has no Time, and no entry in the status until it is).
	byName := map[string]*appv1.MetricStatus{}
	for _, m := range a.Metrics {
		ms := &appv1.MetricStatus{Name: m.Name}
		for _, old := range st.Analysis {
			if old.Name == m.Name {
				ms = old.DeepCopy()
			}
		}
		byName[m.Name] = ms
	}
	var last time.Time
	for _, ms := range byName {
		if ms.Time.After(last) {
			last = ms.Time.Time
		}
	}
	changed := false
	for _, r := range measurements {
		// The status keeps times to the second (metav1.Time): so does the
		// comparison, or a result would be counted again at every sync.
		r.Time = r.Time.Truncate(time.Second)
		ms := byName[r.Metric]
		if ms == nil || r.Hash != hash || r.Step != step || r.Time.Before(routedAt) || !r.Time.After(ms.Time.Time) {
			continue
		}
		if r.Time.After(last) {
			last = r.Time
		}
		// A round that changes nothing the entry shows (its result, the
		// step it passed in, its counts, its message) is not recorded: the
		// entry keeps the last change, and the status is not written for
		// it. So a canary that passes round after round writes nothing
		// until its step ends. An entry from before the weight was routed
		// (again) is not the step's: the round is recorded.
		next := ms.DeepCopy()
		e := measure(a, metric(a, r.Metric), next, r)
		if !ms.Time.IsZero() && !ms.Time.Time.Before(routedAt) && sameShown(ms, next) {
			continue
		}
		*ms = *next
		if e != nil {
			events = append(events, *e)
		}
		changed = true
	}
	// The status keeps the measured metrics of the spec, in its order.
	var measured []appv1.MetricStatus
	for _, m := range a.Metrics {
		if ms := byName[m.Name]; !ms.Time.IsZero() {
			measured = append(measured, *ms)
		}
	}
	if !changed && len(measured) == len(st.Analysis) {
		return st, events, last
	}
	next := st.DeepCopy()
	next.Analysis = measured
	return next, events, last
}

// sameShown reports whether two entries of a metric show the same: what
// the decision judges by (the result, the step it passed in, the counts)
// and why it did not pass. The value and the time of a round that passes
// again are not among it: the controller's /metrics has the last round's
// value (Runner.Value).
func sameShown(a, b *appv1.MetricStatus) bool {
	return a.Result == b.Result && ptr.Equal(a.PassedStep, b.PassedStep) && a.Failures == b.Failures &&
		a.Errors == b.Errors && a.Message == b.Message
}

// analysisAbort says why the analysis in st aborts the canary ("": it
// does not): a metric that is not a dry run failed more often than
// failureLimit, or erred more often in a row than errorLimit.
func analysisAbort(a *appv1.CanaryAnalysis, st *appv1.CanaryStatus) string {
	errorLimit := ptr.Deref(a.ErrorLimit, DefaultErrorLimit)
	for _, ms := range st.Analysis {
		m := metric(a, ms.Name)
		switch {
		case m == nil || m.DryRun:
		case ms.Failures > a.FailureLimit:
			return fmt.Sprintf("its analysis failed: metric %s failed %s, more than its failureLimit of %d, last: %s",
				m.Name, plural.Count(ms.Failures, "time"), a.FailureLimit, resultText(&ms))
		case ms.Errors > errorLimit:
			return fmt.Sprintf("its analysis failed: metric %s erred %s in a row, more than its errorLimit of %d, last: %s",
				m.Name, plural.Count(ms.Errors, "time"), errorLimit, resultText(&ms))
		}
	}
	return ""
}

// holdReason says why a metric holds its step.
func holdReason(ms *appv1.MetricStatus) string {
	switch ms.Result {
	case "":
		return "waits for the first measurement of " + ms.Name
	case appv1.MetricPassed:
		return "waits for a measurement of " + ms.Name + " in this step"
	default:
		return fmt.Sprintf("holds: %s %s", ms.Name, resultText(ms))
	}
}

func resultText(ms *appv1.MetricStatus) string {
	switch ms.Result {
	case appv1.MetricNoData:
		return "returned no data"
	case appv1.MetricError:
		return "erred: " + ms.Message
	default:
		return "failed: " + ms.Message
	}
}

func metric(a *appv1.CanaryAnalysis, name string) *appv1.AnalysisMetric {
	for i := range a.Metrics {
		if a.Metrics[i].Name == name {
			return &a.Metrics[i]
		}
	}
	return nil
}

// measure folds the measurement r of the metric m into ms, and returns
// the Event it calls for (nil: it passed).
func measure(a *appv1.CanaryAnalysis, m *appv1.AnalysisMetric, ms *appv1.MetricStatus, r Measurement) *Event {
	ms.Time = metav1.Time{Time: r.Time}
	ms.Value, ms.Message = "", ""
	dry := ""
	if m.DryRun {
		dry = " (dry run)"
	}
	if r.Err == "" && !r.NoData && math.IsNaN(r.Value) {
		r.NoData = true
	}
	switch {
	case r.Err != "":
		ms.Result, ms.Message = appv1.MetricError, r.Err
		ms.Errors++
		return &Event{corev1.EventTypeWarning, appv1.ReasonCanaryMeasurementError,
			fmt.Sprintf("Canary %s at step %d: metric %s%s erred (%d in a row, limit %d): %s",
				r.Hash, r.Step+1, m.Name, dry, ms.Errors, ptr.Deref(a.ErrorLimit, DefaultErrorLimit), r.Err)}
	case r.NoData:
		ms.Result, ms.Errors = appv1.MetricNoData, 0
		ms.Message = "the query returned no data"
		what := "the step holds until there is data (noData: Hold)"
		if a.NoData == appv1.AnalysisNoDataFail {
			ms.Failures++
			what = fmt.Sprintf("a failure (noData: Fail), %d of %d tolerated", ms.Failures, a.FailureLimit)
		}
		return &Event{corev1.EventTypeWarning, appv1.ReasonCanaryMeasurementNoData,
			fmt.Sprintf("Canary %s at step %d: metric %s%s returned no data: %s", r.Hash, r.Step+1, m.Name, dry, what)}
	}
	ms.Errors = 0
	ms.Value = strconv.FormatFloat(r.Value, 'g', 6, 64)
	if why := outside(m, r.Value); why != "" {
		ms.Result, ms.Message = appv1.MetricFailed, why
		ms.Failures++
		return &Event{corev1.EventTypeWarning, appv1.ReasonCanaryMeasurementFailed,
			fmt.Sprintf("Canary %s at step %d: metric %s%s failed, %s (failure %d, %d tolerated)",
				r.Hash, r.Step+1, m.Name, dry, why, ms.Failures, a.FailureLimit)}
	}
	ms.Result, ms.PassedStep = appv1.MetricPassed, new(r.Step)
	return nil
}

// outside says how v misses the metric's bounds ("": it does not).
func outside(m *appv1.AnalysisMetric, v float64) string {
	value := strconv.FormatFloat(v, 'g', 6, 64)
	lo, hi, err := Thresholds(m)
	switch {
	case err != nil:
		return err.Error()
	case v < lo:
		return fmt.Sprintf("value %s is below min %s", value, *m.Min)
	case v > hi:
		return fmt.Sprintf("value %s is above max %s", value, *m.Max)
	}
	return ""
}

// Thresholds are the metric's min and max as numbers (-Inf and +Inf when
// unset). The CRD admits only decimals there; the error is for a metric
// that did not come through the API server.
func Thresholds(m *appv1.AnalysisMetric) (lo, hi float64, err error) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if m.Min != nil {
		if lo, err = strconv.ParseFloat(*m.Min, 64); err != nil {
			return lo, hi, fmt.Errorf("min %q is not a number", *m.Min)
		}
	}
	if m.Max != nil {
		if hi, err = strconv.ParseFloat(*m.Max, 64); err != nil {
			return lo, hi, fmt.Errorf("max %q is not a number", *m.Max)
		}
	}
	return lo, hi, nil
}
