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
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestDecideAnalysis is the analysis's decision as a table: a canary of
// two steps (10% for 60 s, then 100% without a pause) judged by an error
// ratio (max 0.05) measured every 30 s, and, where a case says so, a
// dry-run latency metric.
func TestDecideAnalysis(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.Time{Time: now.Add(-ago)} }
	analysis := func(f func(*appv1.CanaryAnalysis)) *appv1.Canary {
		a := &appv1.CanaryAnalysis{IntervalSeconds: 30, FailureLimit: 1,
			Metrics: []appv1.AnalysisMetric{{Name: "errors", Query: "q", Max: new("0.05")}}}
		if f != nil {
			f(a)
		}
		return &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 60}, {Weight: 100}}, Analysis: a}
	}
	withLatency := func(a *appv1.CanaryAnalysis) {
		a.Metrics = append(a.Metrics, appv1.AnalysisMetric{Name: "latency", Query: "q", Max: new("0.5"), DryRun: true})
	}
	ready := &Pods{Observed: true, Replicas: 1, Total: 1, Updated: 1, Available: 1}
	// At step i, its weight routed ago.
	routed := func(i int32, ago time.Duration, ms ...appv1.MetricStatus) *appv1.CanaryStatus {
		w := []int32{10, 100}[i]
		return &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(i), Weight: w,
			StepStartTime: &metav1.Time{Time: now.Add(-ago)}, Analysis: ms}
	}
	passed := func(name string, step int32, ago time.Duration) appv1.MetricStatus {
		return appv1.MetricStatus{Name: name, Result: appv1.MetricPassed, Value: "0.01", Time: at(ago), PassedStep: new(step)}
	}
	measured := func(name string, step int32, ago time.Duration, v float64) Measurement {
		return Measurement{Metric: name, Hash: "new", Step: step, Time: now.Add(-ago), Value: v}
	}
	in := func(spec *appv1.Canary, st *appv1.CanaryStatus, ms ...Measurement) Input {
		pods := ready
		if st.Step != nil && *st.Step > 0 {
			pods = &Pods{Observed: true, Replicas: 4, Total: 4, Updated: 4, Available: 4}
		}
		return Input{Spec: spec, Hash: "new", StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now, Pods: pods,
			Status: st, Analysis: Analysis{Configured: true, Measurements: ms}}
	}

	type want struct {
		phase  Phase
		step   int32
		reason string
		// message is a part of the decision's message.
		message string
		// metrics are the status's per metric.
		metrics []appv1.MetricStatus
		// round: a round is due now.
		round bool
		after time.Duration
		// events are the reasons of the measurements' Events, then the
		// edge's.
		events  []string
		stalled bool
	}
	for _, tc := range []struct {
		name string
		in   Input
		want want
	}{{
		name: "weight routed 10 s ago: the first round is due 30 s after the routing",
		in:   in(analysis(nil), routed(0, 10*time.Second)),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "pauses", after: 20 * time.Second},
	}, {
		name: "30 s after the routing: a round is due",
		in:   in(analysis(nil), routed(0, 30*time.Second)),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "pauses", round: true, after: 30 * time.Second},
	}, {
		name: "a pass mid-pause: recorded, the pause goes on",
		in:   in(analysis(nil), routed(0, 31*time.Second), measured("errors", 0, time.Second, 0.01)),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "pauses", after: 29 * time.Second,
			metrics: []appv1.MetricStatus{passed("errors", 0, time.Second)}},
	}, {
		name: "a pass again in the step: not recorded (no write), the next round one interval after it",
		in:   in(analysis(nil), routed(0, 50*time.Second, passed("errors", 0, 20*time.Second)), measured("errors", 0, time.Second, 0.02)),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "pauses", after: 10 * time.Second,
			metrics: []appv1.MetricStatus{passed("errors", 0, 20*time.Second)}},
	}, {
		name: "a pass again in the step, the pause over: the step passes on its recorded pass",
		in:   in(analysis(nil), routed(0, 61*time.Second, passed("errors", 0, 31*time.Second)), measured("errors", 0, time.Second, 0.02)),
		want: want{phase: Running, step: 1, reason: appv1.ReasonCanaryProgressing, message: "waits for its Pods", after: 10 * time.Minute,
			metrics: []appv1.MetricStatus{passed("errors", 0, 31*time.Second)}},
	}, {
		name: "a pass recorded before the weight was routed again: the new pass is recorded",
		in:   in(analysis(nil), routed(0, 40*time.Second, passed("errors", 0, 50*time.Second)), measured("errors", 0, time.Second, 0.02)),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "pauses", after: 20 * time.Second,
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricPassed, Value: "0.02", Time: at(time.Second), PassedStep: new(int32(0))}}},
	}, {
		name: "a restart after rounds that were not recorded: a round at once, the last change being older than an interval",
		in:   in(analysis(nil), routed(0, 50*time.Second, passed("errors", 0, 40*time.Second))),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "pauses", round: true, after: 10 * time.Second,
			metrics: []appv1.MetricStatus{passed("errors", 0, 40*time.Second)}},
	}, {
		name: "no data again under Hold: not recorded, no second Warning",
		in: in(analysis(nil), routed(0, 2*time.Minute, appv1.MetricStatus{Name: "errors", Result: appv1.MetricNoData, Message: "the query returned no data", Time: at(time.Minute)}),
			Measurement{Metric: "errors", Hash: "new", Time: now.Add(-time.Second), NoData: true}),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "holds: errors returned no data", after: 29 * time.Second,
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricNoData, Message: "the query returned no data", Time: at(time.Minute)}}},
	}, {
		name: "a failure again: recorded (its count), a Warning",
		in: in(analysis(func(a *appv1.CanaryAnalysis) { a.FailureLimit = 3 }), routed(0, 2*time.Minute,
			appv1.MetricStatus{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Message: "value 0.2 is above max 0.05", Time: at(time.Minute), Failures: 1}),
			measured("errors", 0, time.Second, 0.2)),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "holds: errors failed", after: 29 * time.Second,
			events: []string{appv1.ReasonCanaryMeasurementFailed},
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Message: "value 0.2 is above max 0.05",
				Time: at(time.Second), Failures: 2}}},
	}, {
		name: "pause over, passed during the step: the next step",
		in:   in(analysis(nil), routed(0, 61*time.Second, passed("errors", 0, 31*time.Second))),
		want: want{phase: Running, step: 1, reason: appv1.ReasonCanaryProgressing, message: "waits for its Pods", after: 10 * time.Minute,
			metrics: []appv1.MetricStatus{passed("errors", 0, 31*time.Second)}},
	}, {
		name: "pause over, passed during a gated step: waits at the gate, measured on",
		in: in(func() *appv1.Canary {
			c := analysis(nil)
			c.Steps[0].Gate = true
			return c
		}(), routed(0, 61*time.Second, passed("errors", 0, 31*time.Second))),
		want: want{phase: Running, reason: appv1.ReasonCanaryGated, message: "waits at its gate", round: true, after: 30 * time.Second,
			metrics: []appv1.MetricStatus{passed("errors", 0, 31*time.Second)}},
	}, {
		name: "pause over, the last pass was in the step before: holds, a round due",
		in:   in(analysis(nil), routed(1, 31*time.Second, passed("errors", 0, 2*time.Minute))),
		want: want{phase: Running, step: 1, reason: appv1.ReasonCanaryProgressing, message: "waits for a measurement of errors in this step",
			round: true, after: 30 * time.Second, metrics: []appv1.MetricStatus{passed("errors", 0, 2*time.Minute)}},
	}, {
		name: "a step without a pause is judged once: a pass promotes",
		in:   in(analysis(nil), routed(1, 31*time.Second), measured("errors", 1, time.Second, 0)),
		want: want{phase: Promoting, step: 2, reason: appv1.ReasonCanaryPromoting, message: "promoted",
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricPassed, Value: "0", Time: at(time.Second), PassedStep: new(int32(1))}}},
	}, {
		name: "a step without a pause, not measured yet: holds",
		in:   in(analysis(nil), routed(1, 5*time.Second)),
		want: want{phase: Running, step: 1, reason: appv1.ReasonCanaryProgressing, message: "waits for the first measurement of errors", after: 25 * time.Second},
	}, {
		name: "a failure within the limit: counted, a Warning, the step holds though its pause is over",
		in:   in(analysis(nil), routed(0, 61*time.Second), measured("errors", 0, time.Second, 0.2)),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "holds: errors failed: value 0.2 is above max 0.05", after: 29 * time.Second,
			events: []string{appv1.ReasonCanaryMeasurementFailed},
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Message: "value 0.2 is above max 0.05",
				Time: at(time.Second), Failures: 1}}},
	}, {
		name: "a failure past the limit: aborted by the analysis, its results kept",
		in: in(analysis(nil), routed(0, 61*time.Second, appv1.MetricStatus{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Time: at(31 * time.Second), Failures: 1}),
			measured("errors", 0, time.Second, 0.3)),
		want: want{phase: Aborted, reason: appv1.ReasonCanaryAnalysisFailed, message: "metric errors failed 2 times, more than its failureLimit of 1, last: failed: value 0.3 is above max 0.05",
			events: []string{appv1.ReasonCanaryMeasurementFailed, appv1.ReasonCanaryAnalysisFailed},
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricFailed, Value: "0.3", Message: "value 0.3 is above max 0.05",
				Time: at(time.Second), Failures: 2}}},
	}, {
		name: "aborted by the analysis, synced again: still aborted, no second Event",
		in: in(analysis(nil), &appv1.CanaryStatus{StableTemplateHash: "old", AbortedTemplateHash: "new",
			Analysis: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricFailed, Value: "0.3", Message: "value 0.3 is above max 0.05", Time: at(time.Minute), Failures: 2}}}),
		want: want{phase: Aborted, reason: appv1.ReasonCanaryAnalysisFailed, message: "metric errors failed 2 times",
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricFailed, Value: "0.3", Message: "value 0.3 is above max 0.05",
				Time: at(time.Minute), Failures: 2}}},
	}, {
		name: "no data under Hold: no failure, the step holds, a Warning",
		in:   in(analysis(nil), routed(0, 61*time.Second), Measurement{Metric: "errors", Hash: "new", Time: now, NoData: true}),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "holds: errors returned no data", after: 30 * time.Second,
			events:  []string{appv1.ReasonCanaryMeasurementNoData},
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricNoData, Message: "the query returned no data", Time: at(0)}}},
	}, {
		name: "NaN (0/0, no traffic) is no data",
		in:   in(analysis(nil), routed(0, 61*time.Second), measured("errors", 0, 0, math.NaN())),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "holds: errors returned no data", after: 30 * time.Second,
			events:  []string{appv1.ReasonCanaryMeasurementNoData},
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricNoData, Message: "the query returned no data", Time: at(0)}}},
	}, {
		name: "no data under Fail, failureLimit 0: aborted",
		in: in(analysis(func(a *appv1.CanaryAnalysis) { a.NoData, a.FailureLimit = appv1.AnalysisNoDataFail, 0 }), routed(0, 31*time.Second),
			Measurement{Metric: "errors", Hash: "new", Time: now, NoData: true}),
		want: want{phase: Aborted, reason: appv1.ReasonCanaryAnalysisFailed, message: "metric errors failed 1 time, more than its failureLimit of 0, last: returned no data",
			events:  []string{appv1.ReasonCanaryMeasurementNoData, appv1.ReasonCanaryAnalysisFailed},
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricNoData, Message: "the query returned no data", Time: at(0), Failures: 1}}},
	}, {
		name: "an error, the fourth in a row: the step holds, never promoted",
		in: in(analysis(nil), routed(0, 2*time.Minute, appv1.MetricStatus{Name: "errors", Result: appv1.MetricError, Message: "down", Time: at(31 * time.Second), Errors: 3}),
			Measurement{Metric: "errors", Hash: "new", Time: now.Add(-time.Second), Err: "Prometheus did not answer within 10s"}),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "holds: errors erred: Prometheus did not answer within 10s", after: 29 * time.Second,
			events: []string{appv1.ReasonCanaryMeasurementError},
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricError, Message: "Prometheus did not answer within 10s",
				Time: at(time.Second), Errors: 4}}},
	}, {
		name: "an error, the fifth in a row, past errorLimit 4: aborted",
		in: in(analysis(nil), routed(0, 2*time.Minute, appv1.MetricStatus{Name: "errors", Result: appv1.MetricError, Message: "down", Time: at(31 * time.Second), Errors: 4}),
			Measurement{Metric: "errors", Hash: "new", Time: now.Add(-time.Second), Err: "down"}),
		want: want{phase: Aborted, reason: appv1.ReasonCanaryAnalysisFailed, message: "metric errors erred 5 times in a row, more than its errorLimit of 4, last: erred: down",
			events:  []string{appv1.ReasonCanaryMeasurementError, appv1.ReasonCanaryAnalysisFailed},
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricError, Message: "down", Time: at(time.Second), Errors: 5}}},
	}, {
		name: "a pass after errors: they no longer count, the step advances",
		in: in(analysis(nil), routed(0, 2*time.Minute, appv1.MetricStatus{Name: "errors", Result: appv1.MetricError, Message: "down", Time: at(31 * time.Second), Errors: 4}),
			measured("errors", 0, time.Second, 0.01)),
		want: want{phase: Running, step: 1, reason: appv1.ReasonCanaryProgressing, message: "waits for its Pods", after: 10 * time.Minute,
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricPassed, Value: "0.01", Time: at(time.Second), PassedStep: new(int32(0))}}},
	}, {
		name: "a dry-run metric that fails: recorded and announced, never holds nor aborts",
		in: in(analysis(withLatency), routed(0, 61*time.Second,
			appv1.MetricStatus{Name: "latency", Result: appv1.MetricFailed, Value: "0.9", Time: at(31 * time.Second), Failures: 5}),
			measured("errors", 0, time.Second, 0.01), measured("latency", 0, time.Second, 0.9)),
		want: want{phase: Running, step: 1, reason: appv1.ReasonCanaryProgressing, message: "waits for its Pods", after: 10 * time.Minute,
			events: []string{appv1.ReasonCanaryMeasurementFailed},
			metrics: []appv1.MetricStatus{
				{Name: "errors", Result: appv1.MetricPassed, Value: "0.01", Time: at(time.Second), PassedStep: new(int32(0))},
				{Name: "latency", Result: appv1.MetricFailed, Value: "0.9", Message: "value 0.9 is above max 0.5", Time: at(time.Second), Failures: 6}}},
	}, {
		name: "a restart between two measurements: the counts stay, the next round waits for its time",
		in: in(analysis(nil), routed(0, 61*time.Second,
			appv1.MetricStatus{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Message: "value 0.2 is above max 0.05", Time: at(10 * time.Second), Failures: 1})),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "holds: errors failed", after: 20 * time.Second,
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Message: "value 0.2 is above max 0.05",
				Time: at(10 * time.Second), Failures: 1}}},
	}, {
		name: "results already recorded, of another step or of another template: ignored",
		in: in(analysis(nil), routed(0, 61*time.Second,
			appv1.MetricStatus{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Message: "value 0.2 is above max 0.05", Time: at(10 * time.Second), Failures: 1}),
			measured("errors", 0, 10*time.Second, 0.2), measured("errors", 1, time.Second, 0.01),
			Measurement{Metric: "errors", Hash: "older", Time: now, Value: 0.9}),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "holds: errors failed", after: 20 * time.Second,
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Message: "value 0.2 is above max 0.05",
				Time: at(10 * time.Second), Failures: 1}}},
	}, {
		name: "a result the status has, its time kept to the second by the API server: not counted again",
		in: in(analysis(nil), routed(0, 61*time.Second,
			appv1.MetricStatus{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Message: "value 0.2 is above max 0.05", Time: at(10 * time.Second), Failures: 1}),
			measured("errors", 0, 10*time.Second-300*time.Millisecond, 0.2)),
		want: want{phase: Running, reason: appv1.ReasonCanaryProgressing, message: "holds: errors failed", after: 20 * time.Second,
			metrics: []appv1.MetricStatus{{Name: "errors", Result: appv1.MetricFailed, Value: "0.2", Message: "value 0.2 is above max 0.05",
				Time: at(10 * time.Second), Failures: 1}}},
	}, {
		name: "no Prometheus configured: Stalled at the step, nothing measured",
		in: func() Input {
			i := in(analysis(nil), routed(0, 2*time.Minute))
			i.Analysis.Configured = false
			return i
		}(),
		want: want{phase: Running, reason: appv1.ReasonCanaryAnalysisNotConfigured, message: "the controller has none (-prometheus-url)", stalled: true},
	}, {
		name: "its templates do not resolve, running: held at the step past its pause, Stalled, though every metric passed",
		in: func() Input {
			i := in(analysis(nil), routed(0, 61*time.Second, passed("errors", 0, 31*time.Second)))
			i.Analysis.Unresolved = "AnalysisTemplate shop/latency does not exist"
			return i
		}(),
		want: want{phase: Running, reason: appv1.ReasonCanaryAnalysisUnresolved, message: "cannot be resolved: AnalysisTemplate shop/latency does not exist",
			stalled: true, round: true, after: 30 * time.Second, metrics: []appv1.MetricStatus{passed("errors", 0, 31*time.Second)}},
	}, {
		name: "its templates do not resolve, at the start: held with no step and no traffic, Stalled",
		in: func() Input {
			i := in(analysis(nil), &appv1.CanaryStatus{StableTemplateHash: "old"})
			i.Pods, i.Analysis.Unresolved = nil, "AnalysisTemplate shop/latency does not exist"
			return i
		}(),
		want: want{phase: AwaitingAnalysis, reason: appv1.ReasonCanaryAnalysisUnresolved,
			message: "holds at its start, with no step and no traffic: its analysis cannot be resolved: AnalysisTemplate shop/latency does not exist", stalled: true},
	}, {
		name: "promoted and rolled out: the measurements stay in the status",
		in: func() Input {
			i := in(analysis(nil), routed(1, time.Minute, passed("errors", 1, time.Second)))
			i.Status.Step, i.StableInLine, i.StableRolledOut = new(int32(2)), true, true
			return i
		}(),
		want: want{phase: None, metrics: []appv1.MetricStatus{passed("errors", 1, time.Second)}, events: []string{appv1.ReasonCanaryPromoted}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			got := want{phase: d.Phase, reason: d.Reason, round: d.Round != nil, after: d.After, stalled: d.Stalled}
			if d.Status != nil {
				got.metrics = d.Status.Analysis
				if d.Status.Step != nil {
					got.step = *d.Status.Step
				}
			}
			for _, e := range d.Events {
				got.events = append(got.events, e.Reason)
			}
			if d.Event != nil {
				got.events = append(got.events, d.Event.Reason)
			}
			if strings.Contains(d.Message, tc.want.message) {
				got.message = tc.want.message
			} else {
				got.message = d.Message
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
			if d.Round != nil && (d.Round.Hash != "new" || !d.Round.Time.Equal(now)) {
				t.Errorf("round %+v, want one of template new at %s", d.Round, now)
			}
			if d.Phase == Aborted && d.Status.AbortedTemplateHash != "new" {
				t.Errorf("aborted, status %+v does not remember the template", d.Status)
			}
		})
	}
}

// TestDecidePins: a canary that starts records the templates as resolved
// now; running, aborted and promoted, it keeps what it recorded; one held
// at its start for its templates starts, with its pins, once they resolve.
func TestDecidePins(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	pins := func(digest string) []appv1.PinnedTemplate {
		return []appv1.PinnedTemplate{{Kind: appv1.KindClusterAnalysisTemplate, Name: "success", Digest: digest,
			Metrics: []appv1.PinnedMetric{{Name: "success-rate", Query: "q", Min: new("0.99")}}}}
	}
	spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 60}},
		Analysis: &appv1.CanaryAnalysis{Metrics: []appv1.AnalysisMetric{{Name: "success-rate", Query: "q", Min: new("0.99")}}}}
	base := func(st *appv1.CanaryStatus) Input {
		return Input{Spec: spec, Hash: "new", StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now, Status: st,
			Analysis: Analysis{Configured: true, Pins: pins("now")}}
	}
	running := &appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new", Step: new(int32(0)), Weight: 10,
		StepStartTime: &metav1.Time{Time: now.Add(-10 * time.Second)}, Templates: pins("start")}
	for _, tc := range []struct {
		name  string
		in    Input
		phase Phase
		want  string
	}{
		{"a new canary pins the templates as they are now", base(&appv1.CanaryStatus{StableTemplateHash: "old"}), Running, "now"},
		{"held at its start, it pins nothing", func() Input {
			i := base(&appv1.CanaryStatus{StableTemplateHash: "old"})
			i.Analysis.Pins, i.Analysis.Unresolved = nil, "gone"
			return i
		}(), AwaitingAnalysis, ""},
		{"once they resolve, the held canary starts with them", base(&appv1.CanaryStatus{StableTemplateHash: "old", CanaryTemplateHash: "new"}), Running, "now"},
		{"running, it keeps its pins", func() Input {
			i := base(running.DeepCopy())
			i.Pods = &Pods{Observed: true, Replicas: 1, Total: 1, Updated: 1, Available: 1}
			return i
		}(), Running, "start"},
		{"aborted, it keeps them for whoever looks", func() Input {
			i := base(running.DeepCopy())
			i.Spec = spec.DeepCopy()
			i.Spec.Abort = true
			return i
		}(), Aborted, "start"},
		{"promoted, too", func() Input {
			i := base(running.DeepCopy())
			i.Status.Step, i.StableInLine, i.StableRolledOut = new(int32(1)), true, true
			return i
		}(), None, "start"},
		{"once the spec has no analysis, they go with its results", func() Input {
			i := base(running.DeepCopy())
			i.Spec = spec.DeepCopy()
			i.Spec.Analysis = nil
			i.Status.Step, i.StableInLine, i.StableRolledOut = new(int32(1)), true, true
			return i
		}(), None, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			got := ""
			if d.Status != nil && len(d.Status.Templates) > 0 {
				got = d.Status.Templates[0].Digest
			}
			if d.Phase != tc.phase || got != tc.want {
				t.Errorf("phase %s, pinned %q; want %s, %q (%s)", d.Phase, got, tc.phase, tc.want, d.Message)
			}
		})
	}
}
