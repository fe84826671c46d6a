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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// testWalk is a canary with tests as the controller runs it: each
// decision's status is the next one's input, as the status write and the
// cache bring it back (to the second), and the Activities' runs are what
// the test says they are.
type testWalk struct {
	t  *testing.T
	in Input
}

func (w *testWalk) decide(what string) Decision {
	w.t.Helper()
	d := Decide(w.in)
	if d.Status != nil {
		st := d.Status.DeepCopy()
		roundTimes(st)
		w.in.Status = st
	}
	w.t.Logf("%s: %s %s (%s)", what, d.Phase, d.Message, d.Reason)
	return d
}

// roundTimes keeps a status's times to the second, as its JSON does.
func roundTimes(st *appv1.CanaryStatus) {
	round := func(t *metav1.Time) {
		if t != nil {
			t.Time = t.Truncate(time.Second)
		}
	}
	round(st.StepStartTime)
	for i := range st.Tests {
		round(st.Tests[i].StartTime)
		round(st.Tests[i].CompletionTime)
	}
}

func (w *testWalk) record(name string) appv1.CanaryTestStatus {
	w.t.Helper()
	for _, rec := range w.in.Status.Tests {
		if rec.Name == name {
			return rec
		}
	}
	w.t.Fatalf("no record of test %s in %+v", name, w.in.Status.Tests)
	return appv1.CanaryTestStatus{}
}

func (w *testWalk) finish(name string, phase appv1.ActivityPhase, code int32, message string) {
	if w.in.Tests == nil {
		w.in.Tests = map[string]TestRun{}
	}
	w.in.Tests[w.record(name).Activity] = TestRun{Phase: phase, ExitCode: new(code), Message: message,
		StartTime: &metav1.Time{Time: w.in.Now.Add(-10 * time.Second)}, CompletionTime: &metav1.Time{Time: w.in.Now}}
}

func testSpec(tests ...appv1.CanaryTest) *appv1.Canary {
	return &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 60, Tests: tests}, {Weight: 50}}}
}

var (
	smoke = appv1.CanaryTest{Name: "smoke", When: appv1.CanaryTestBefore, Command: "true", DeadlineSeconds: 60}
	load  = appv1.CanaryTest{Name: "load", When: appv1.CanaryTestDuring, Command: "true", DeadlineSeconds: 300}
)

func newWalk(t *testing.T, spec *appv1.Canary) *testWalk {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return &testWalk{t: t, in: Input{Spec: spec, Hash: "new", StableReplicas: 4, StableAvailable: 4,
		ProgressDeadline: 10 * time.Minute, Now: now,
		Status: &appv1.CanaryStatus{StableTemplateHash: "old"}}}
}

// onePod is a canary Deployment of one Pod, available.
func onePod() *Pods {
	return &Pods{Observed: true, Replicas: 1, Total: 1, Updated: 1, Available: 1}
}

// TestDecideBeforeTest: a smoke test runs once the step's Pods are
// available, and the weight waits for it; it passes, and the weight goes
// to the route in the same decision.
func TestDecideBeforeTest(t *testing.T) {
	w := newWalk(t, testSpec(smoke, load))
	w.decide("start")
	d := w.decide("no Pods yet")
	if len(w.in.Status.Tests) != 0 || d.After != 10*time.Minute {
		t.Fatalf("a test began before the Pods were available: %+v", w.in.Status.Tests)
	}
	w.in.Pods = onePod()
	w.in.Now = w.in.Now.Add(5 * time.Second)
	d = w.decide("Pods available")
	rec := w.record("smoke")
	if rec.Phase != appv1.TestRunning || d.RouteWeight != 0 || w.in.Status.Weight != 0 || !strings.Contains(d.Message, "waits for its test smoke (before its weight)") {
		t.Fatalf("the smoke test did not begin before the weight: %+v, %q", rec, d.Message)
	}
	if len(d.Events) != 1 || !strings.Contains(d.Events[0].Message, "test smoke began") || d.After != 2*time.Minute {
		t.Errorf("events %+v, after %s; want the test's beginning, and a look at its deadline and grace", d.Events, d.After)
	}
	// A restart decides again from the same status: the same Activity.
	again := Decide(w.in)
	if diff := cmp.Diff(w.in.Status.Tests, again.Status.Tests); diff != "" {
		t.Errorf("a second decision changed the records: %s", diff)
	}
	// A result of another Activity (an earlier canary's) is not read.
	w.in.Tests = map[string]TestRun{"new-0-smoke-0": {Phase: appv1.ActivitySucceeded}}
	if d := w.decide("another Activity passed"); d.RouteWeight != 0 || w.record("smoke").Phase != appv1.TestRunning {
		t.Fatalf("advanced on another Activity's result")
	}
	w.in.Now = w.in.Now.Add(10 * time.Second)
	w.finish("smoke", appv1.ActivitySucceeded, 0, "")
	// The controller killed between the Activity's end and the status
	// write that records it: the next one decides the same from the same
	// status (its clock later), and records the pass once.
	lost := Decide(w.in)
	w.in.Now = w.in.Now.Add(3 * time.Second)
	d = w.decide("smoke passed")
	runs := func(tests []appv1.CanaryTestStatus) []string {
		var out []string
		for _, rec := range tests {
			out = append(out, fmt.Sprintf("%s %s %s", rec.Name, rec.Activity, rec.Phase))
		}
		return out
	}
	if diff := cmp.Diff(runs(lost.Status.Tests), runs(d.Status.Tests)); diff != "" || lost.RouteWeight != d.RouteWeight {
		t.Errorf("a decision after a restart differs from the lost one (-lost +now):\n%s", diff)
	}
	if d.RouteWeight != 10 || w.in.Status.Weight != 10 || w.record("smoke").Phase != appv1.TestSucceeded || d.Event == nil {
		t.Fatalf("the weight did not go once the smoke test passed: %+v", d)
	}
	// The During test begins with the weight.
	if rec := w.record("load"); rec.Phase != appv1.TestRunning || rec.Step != 0 {
		t.Errorf("the load test did not begin with the weight: %+v", rec)
	}
	if len(d.Events) != 2 || !strings.Contains(d.Events[0].Message, "test smoke passed") || !strings.Contains(d.Events[1].Message, "test load began") {
		t.Errorf("events %+v", d.Events)
	}
}

// TestDecideDuringTest: the step passes its pause only once its load test
// has; a failed one aborts, with the exit code and the log's last lines.
func TestDecideDuringTest(t *testing.T) {
	w := newWalk(t, testSpec(load))
	w.in.Pods = onePod()
	w.decide("start")
	d := w.decide("Pods available: weight")
	if d.RouteWeight != 10 || w.record("load").Phase != appv1.TestRunning {
		t.Fatalf("no weight nor load test: %+v", d)
	}
	w.in.Now = w.in.Now.Add(2 * time.Minute)
	d = w.decide("pause over, test running")
	if *w.in.Status.Step != 0 || !strings.Contains(d.Message, "waits for its test load (during its weight)") || d.RouteWeight != 10 {
		t.Fatalf("the step did not wait for its test: %q", d.Message)
	}
	if d.After <= 0 || d.After > 5*time.Minute {
		t.Errorf("after %s: want a look at the test's deadline", d.After)
	}
	w.finish("load", appv1.ActivitySucceeded, 0, "")
	d = w.decide("test passed")
	if *w.in.Status.Step != 1 || w.record("load").Phase != appv1.TestSucceeded {
		t.Fatalf("the step did not pass with its test: %+v", w.in.Status)
	}

	// Failed: aborted, the record and the Event saying why.
	w = newWalk(t, testSpec(load))
	w.in.Pods = onePod()
	w.decide("start")
	w.decide("weight")
	w.finish("load", appv1.ActivityFailed, 7, "The command exited 7 (Error):\nconnection refused")
	d = w.decide("test failed")
	if d.Phase != Aborted || d.Reason != appv1.ReasonCanaryTestFailed || d.Event == nil || d.Event.Reason != appv1.ReasonCanaryTestFailed {
		t.Fatalf("a failed test did not abort: %+v", d)
	}
	for _, want := range []string{"its test load failed at step 1 of 2, during its weight", "exited 7", "connection refused"} {
		if !strings.Contains(d.Event.Message, want) {
			t.Errorf("the abort's Event %q does not say %q", d.Event.Message, want)
		}
	}
	rec := w.record("load")
	if rec.Phase != appv1.TestFailed || rec.ExitCode == nil || *rec.ExitCode != 7 || w.in.Status.AbortedTemplateHash != "new" {
		t.Errorf("record %+v", rec)
	}
	// Still aborted: the same message (no condition change), no new Event.
	still := w.decide("still aborted")
	if still.Reason != appv1.ReasonCanaryTestFailed || still.Message != d.Message || still.Event != nil || still.CanaryReplicas != 0 {
		t.Errorf("still aborted: %q (%s), want %q", still.Message, still.Reason, d.Message)
	}
	// A retry runs the tests anew: another Activity.
	w.in.Status.Request = &appv1.CanaryRequest{Action: appv1.CanaryRetry, TemplateHash: "new"}
	w.in.Now = w.in.Now.Add(time.Minute)
	w.decide("retry")
	if len(w.in.Status.Tests) != 0 {
		t.Fatalf("a retry kept the last run's records: %+v", w.in.Status.Tests)
	}
	old := rec.Activity
	w.decide("weight again")
	if got := w.record("load"); got.Activity == old || got.Phase != appv1.TestRunning {
		t.Errorf("the retry's test %+v: want a new Activity, not %s", got, old)
	}
}

// TestDecideTestDeadline: a test whose Activity passed its deadline
// aborts, and one with no end at all gives up after the grace.
func TestDecideTestDeadline(t *testing.T) {
	w := newWalk(t, testSpec(smoke))
	w.in.Pods = onePod()
	w.decide("start")
	w.decide("smoke began")
	w.in.Tests = map[string]TestRun{w.record("smoke").Activity: {Phase: appv1.ActivityFailed, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}
	d := w.decide("deadline")
	if d.Phase != Aborted || !strings.Contains(d.Message, "it passed its deadline (60s)") || d.RouteWeight != 0 {
		t.Fatalf("%+v", d)
	}

	w = newWalk(t, testSpec(smoke))
	w.in.Pods = onePod()
	w.decide("start")
	w.decide("smoke began")
	w.in.Now = w.in.Now.Add(time.Minute + 59*time.Second)
	if d := w.decide("not yet"); d.Phase != Running {
		t.Fatalf("gave up before the grace: %+v", d)
	}
	w.in.Now = w.in.Now.Add(time.Second)
	if d := w.decide("no end"); d.Phase != Aborted || !strings.Contains(d.Message, "did not finish within its deadline (60s) and 1m0s") {
		t.Fatalf("%+v", d)
	}
}

// TestDecideTestsWithAnalysisAndGate: a step passes when its pause, its
// analysis, its tests and its gate all have; a promotion on request passes
// it whatever its test, which stops.
func TestDecideTestsWithAnalysisAndGate(t *testing.T) {
	spec := testSpec(load)
	spec.Steps[0].Gate = true
	spec.Analysis = &appv1.CanaryAnalysis{IntervalSeconds: 30, Metrics: []appv1.AnalysisMetric{{Name: "ok", Query: "1", Min: new("1")}}}
	w := newWalk(t, spec)
	w.in.Pods = onePod()
	w.decide("start")
	w.decide("weight")
	w.in.Now = w.in.Now.Add(2 * time.Minute)
	w.in.Analysis = Analysis{Configured: true, Measurements: []Measurement{{Metric: "ok", Hash: "new", Value: 1, Time: w.in.Now.Add(-time.Second)}}}
	d := w.decide("analysis passed, test running")
	if d.Reason == appv1.ReasonCanaryGated || !strings.Contains(d.Message, "waits for its test load") {
		t.Fatalf("at the gate before its test passed: %q", d.Message)
	}
	w.finish("load", appv1.ActivitySucceeded, 0, "")
	w.in.Now = w.in.Now.Add(time.Second)
	d = w.decide("test passed")
	if d.Reason != appv1.ReasonCanaryGated {
		t.Fatalf("not at the gate once all passed: %q (%s)", d.Message, d.Reason)
	}

	w = newWalk(t, testSpec(load))
	w.in.Pods = onePod()
	w.decide("start")
	w.decide("weight")
	w.in.Status.Request = &appv1.CanaryRequest{Action: appv1.CanaryPromote, TemplateHash: "new", Step: new(int32(0))}
	w.decide("promoted on request")
	if *w.in.Status.Step != 1 || w.record("load").Phase != appv1.TestStopped {
		t.Fatalf("a promotion did not pass the step and stop its test: %+v", w.in.Status)
	}
}

// TestDecideBeforeTestByPods: without a route, the first step's smoke test
// runs against the canary's Pods out of the Service; once it passed they
// join it, and the share counts them only then. At a later step, the
// step's Pods wait for its smoke test at the last step's count.
func TestDecideBeforeTestByPods(t *testing.T) {
	spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 25, Tests: []appv1.CanaryTest{smoke}}, {Weight: 50, Tests: []appv1.CanaryTest{smoke}}, {Weight: 100}}}
	w := newWalk(t, spec)
	w.in.NoRoute = true
	if PodsServe(w.in) {
		t.Fatal("the first step's Pods would serve before its smoke test")
	}
	d := w.decide("start")
	if d.PodsServe || d.CanaryReplicas != 1 {
		t.Fatalf("start: %+v", d)
	}
	w.in.Pods = onePod()
	d = w.decide("smoke began")
	if d.PodsServe || d.Status.Share != 0 || w.record("smoke").Phase != appv1.TestRunning {
		t.Fatalf("Pods out of the Service carry a share, or serve: %+v", d.Status)
	}
	w.finish("smoke", appv1.ActivitySucceeded, 0, "")
	d = w.decide("smoke passed")
	if d.PodsServe || w.in.Status.Weight != 0 || w.record("smoke").Phase != appv1.TestSucceeded {
		t.Fatalf("the Pods joined the Service before the pass was recorded, or the weight went first: %+v", d)
	}
	// Recorded, the pass relabels them: the Deployment rolls to the
	// serving template (in.Pods is matched to it), then the weight.
	w.in.Pods = nil
	if !PodsServe(w.in) {
		t.Fatal("the recorded pass does not relabel the Pods")
	}
	d = w.decide("pass recorded")
	if !d.PodsServe || w.in.Status.Weight != 0 || !strings.Contains(d.Message, "waits for its Pods") {
		t.Fatalf("the Pods did not join the Service once tested, or the weight went first: %+v", d)
	}
	w.in.Pods, w.in.CanaryServing, w.in.CanaryServingAvailable = onePod(), 1, 1
	d = w.decide("serving Pods available")
	if w.in.Status.Weight != 25 || d.Status.Share != 20 || !d.PodsServe {
		t.Fatalf("%+v", d.Status)
	}
	w.in.Now = w.in.Now.Add(time.Second)
	d = w.decide("step 2")
	if *w.in.Status.Step != 1 || d.CanaryReplicas != 1 {
		t.Fatalf("step 2's Pods came before its smoke test: %+v (%d Pods)", w.in.Status, d.CanaryReplicas)
	}
	d = w.decide("step 2's smoke began")
	rec := w.in.Status.Tests[len(w.in.Status.Tests)-1]
	if rec.Step != 1 || rec.Phase != appv1.TestRunning || d.CanaryReplicas != 1 || !d.PodsServe {
		t.Fatalf("%+v, %d Pods", rec, d.CanaryReplicas)
	}
	w.in.Tests[rec.Activity] = TestRun{Phase: appv1.ActivitySucceeded, ExitCode: new(int32(0))}
	d = w.decide("step 2's smoke passed")
	if d.CanaryReplicas != 4 || w.in.Status.Weight != 25 {
		t.Fatalf("step 2's Pods did not come after its smoke test: %d, weight %d", d.CanaryReplicas, w.in.Status.Weight)
	}
}

// TestDecideTestsEdges: a Before test on a step of the last one's weight
// still runs; a test stopped mid-step (it left the spec) and back runs
// anew as another Activity; a Pod lost while a long Before test runs waits
// from the test's start, not the step's; a rollback keeps the records; an
// abort records a test that had ended rather than stopping it.
func TestDecideTestsEdges(t *testing.T) {
	t.Run("a step of the last one's weight", func(t *testing.T) {
		spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10}, {Weight: 10, Tests: []appv1.CanaryTest{smoke}}, {Weight: 100}}}
		w := newWalk(t, spec)
		w.in.Pods = onePod()
		w.decide("start")
		w.decide("weight")
		w.decide("step 2")
		d := w.decide("step 2's smoke")
		if *w.in.Status.Step != 1 || w.record("smoke").Phase != appv1.TestRunning || !strings.Contains(d.Message, "waits for its test smoke") {
			t.Fatalf("step 2's smoke test did not run: %+v, %q", w.in.Status, d.Message)
		}
	})
	t.Run("stopped, and back", func(t *testing.T) {
		w := newWalk(t, testSpec(load))
		w.in.Pods = onePod()
		w.decide("start")
		w.decide("weight")
		first := w.record("load").Activity
		w.in.Spec = testSpec()
		w.decide("the test left the spec")
		if got := w.record("load").Phase; got != appv1.TestStopped {
			t.Fatalf("a test no longer in the spec is %s, want Stopped", got)
		}
		w.in.Spec = testSpec(load)
		w.in.Now = w.in.Now.Add(time.Second)
		d := w.decide("back")
		if rec := w.record("load"); rec.Phase != appv1.TestRunning || rec.Activity == first || d.Phase != Running {
			t.Fatalf("the test back in the spec: %+v (first %s), %s", rec, first, d.Phase)
		}
	})
	t.Run("a Pod lost during a long smoke test", func(t *testing.T) {
		long := smoke
		long.DeadlineSeconds = 3600
		w := newWalk(t, testSpec(long))
		w.in.Pods = onePod()
		w.decide("start")
		w.in.Now = w.in.Now.Add(time.Minute)
		w.decide("smoke began")
		w.in.Now = w.in.Now.Add(15 * time.Minute) // past the step's progress deadline of 10m
		w.in.Pods = &Pods{Observed: true, Replicas: 1, Total: 1, Updated: 1}
		if d := w.decide("a Pod lost"); d.Phase != Running {
			t.Fatalf("a Pod lost while its smoke test runs: %s %q", d.Phase, d.Message)
		}
		w.in.Pods.DeadlineExceeded = true
		if d := w.decide("its Deployment past its deadline"); d.Phase != Aborted {
			t.Fatalf("the canary's Deployment past its progress deadline: %s", d.Phase)
		}
	})
	t.Run("a rollback keeps the records", func(t *testing.T) {
		spec := testSpec(load)
		spec.RollbackWindow = 1
		w := newWalk(t, spec)
		w.in.Pods = onePod()
		w.in.Status.History = []string{"older"}
		w.decide("start")
		w.decide("weight")
		w.in.Hash = "older"
		if d := w.decide("rolled back"); d.Phase != RollingBack || len(d.Status.Tests) != 1 || d.Status.Tests[0].Phase != appv1.TestStopped {
			t.Fatalf("a rollback: %s, records %+v", d.Phase, d.Status.Tests)
		}
	})
	t.Run("an abort records a test that ended", func(t *testing.T) {
		w := newWalk(t, testSpec(load))
		w.in.Pods = onePod()
		w.decide("start")
		w.decide("weight")
		w.finish("load", appv1.ActivitySucceeded, 0, "")
		w.in.Spec.Abort = true
		if d := w.decide("aborted"); d.Phase != Aborted || w.record("load").Phase != appv1.TestSucceeded {
			t.Fatalf("an abort: %s, record %+v", d.Phase, w.record("load"))
		}
	})
}
