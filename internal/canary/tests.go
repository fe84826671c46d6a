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
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// A step's tests (spec.canary.steps[].tests): commands run once, each as
// an Activity the controller makes for a record of the status
// (status.canary.tests, a test's run). The record is the test's memory:
// written at the test's edges only (begun, passed or failed), it names the
// Activity, whose name comes from the canary's template, the step, the
// test and when the step began (children.TestActivityName); so that a
// restarted controller finds the Activity it made and its result, and
// never runs a test twice for one step of one canary, nor reads the result
// of an earlier canary's.
//
// Before tests run once the step's Pods are available, before its weight
// is carried: the weight waits for them to pass. During tests start with
// the weight, beside the pause and the analysis: the step passes only once
// they have. One that fails (exits non-zero, or passes its deadline) aborts
// the canary. Records stay with the canary's status until the next canary
// starts, the last canary's Activities with them; a test still running
// when its step ends (a promotion on request) or its canary does is
// Stopped, and its Activity deleted.

// TestRun is what the controller's cache has of a test's Activity.
type TestRun struct {
	// Phase is the Activity's (status.prosta); Finished ones are final.
	Phase appv1.ActivityPhase
	// ExitCode is the command's, once it exited.
	ExitCode *int32
	// Reason is the Activity's Failed condition's (DeadlineExceeded when
	// its deadline stopped it), and Message its status message, cut to
	// its last lines (about 1 KB).
	Reason, Message           string
	StartTime, CompletionTime *metav1.Time
}

// testGrace is how long past its deadline a test may go unfinished before
// the canary gives up on it: its Job's deadline counts from the Job's
// start, which a missing ServiceAccount, say, puts off.
const testGrace = time.Minute

// testsResult is where a step's tests of one moment stand.
type testsResult struct {
	// status is the canary status with their records brought up to date.
	status *appv1.CanaryStatus
	// passed: every one has passed (or there is none).
	passed bool
	// failed says how one failed ("": none did).
	failed string
	// waiting names the tests still running; after is when the first of
	// them passes its deadline.
	waiting []string
	after   time.Duration
	events  []Event
}

// stepTests brings the records of step's tests run at moment when up to
// date: it begins those not begun (a new record, whose Activity the
// controller makes), and records how those running ended. begin is when
// the step began, which names the tests' Activities.
func (in Input) stepTests(st *appv1.CanaryStatus, step int32, when appv1.CanaryTestMoment, begin metav1.Time,
	names func(int32, string, metav1.Time) string) testsResult {
	r := testsResult{status: st, passed: true}
	steps := len(in.Spec.Steps)
	for _, t := range in.Spec.Steps[step].Tests {
		if t.When != when {
			continue
		}
		i := slices.IndexFunc(r.status.Tests, func(rec appv1.CanaryTestStatus) bool { return rec.Step == step && rec.Name == t.Name })
		if i < 0 || r.status.Tests[i].Phase == appv1.TestStopped {
			if r.status == st {
				r.status = st.DeepCopy()
			}
			name := names(step, t.Name, begin)
			if i >= 0 {
				// Stopped (the test left the spec mid-step, and came
				// back): it runs anew, as another Activity.
				name = names(step, t.Name, metav1.Time{Time: in.Now})
				r.status.Tests = slices.Delete(r.status.Tests, i, i+1)
			}
			rec := appv1.CanaryTestStatus{Name: t.Name, Step: step, Activity: name, Phase: appv1.TestRunning,
				StartTime: &metav1.Time{Time: in.Now}}
			r.status.Tests = append(trimRecords(r.status.Tests), rec)
			r.passed, r.waiting = false, append(r.waiting, t.Name)
			r.events = append(r.events, Event{corev1.EventTypeNormal, appv1.ReasonCanaryTest,
				fmt.Sprintf("Canary %s at step %d of %d: test %s began (%s its weight), Activity %s", in.Hash, step+1, steps, t.Name, moment(when), rec.Activity)})
			r.after = minAfter(r.after, deadline(t))
			continue
		}
		rec := r.status.Tests[i]
		if rec.Phase == appv1.TestRunning {
			rec = in.settle(rec, t)
			if rec.Phase != appv1.TestRunning {
				if r.status == st {
					r.status = st.DeepCopy()
				}
				r.status.Tests[i] = rec
				if rec.Phase == appv1.TestSucceeded {
					r.events = append(r.events, Event{corev1.EventTypeNormal, appv1.ReasonCanaryTest,
						fmt.Sprintf("Canary %s at step %d of %d: test %s passed (Activity %s)", in.Hash, step+1, steps, t.Name, rec.Activity)})
				}
			}
		}
		switch rec.Phase {
		case appv1.TestSucceeded:
		case appv1.TestRunning:
			r.passed, r.waiting = false, append(r.waiting, t.Name)
			r.after = minAfter(r.after, startTime(&appv1.CanaryStatus{StepStartTime: rec.StartTime}, in.Now).Add(deadline(t)).Sub(in.Now))
		default:
			r.passed = false
			if r.failed == "" {
				r.failed = in.testFailure(rec)
			}
		}
	}
	return r
}

// settle is a running test's record once its Activity's run is known: it
// Succeeded or Failed as the Activity did, or Failed once past its
// deadline and the grace without an end.
func (in Input) settle(rec appv1.CanaryTestStatus, t appv1.CanaryTest) appv1.CanaryTestStatus {
	run, found := in.Tests[rec.Activity]
	switch {
	case found && run.Phase == appv1.ActivitySucceeded:
		rec.Phase, rec.ExitCode, rec.Message = appv1.TestSucceeded, run.ExitCode, ""
		rec.StartTime, rec.CompletionTime = orTime(run.StartTime, rec.StartTime), orTime(run.CompletionTime, &metav1.Time{Time: in.Now})
	case found && run.Phase == appv1.ActivityFailed:
		rec.Phase, rec.ExitCode = appv1.TestFailed, run.ExitCode
		rec.StartTime, rec.CompletionTime = orTime(run.StartTime, rec.StartTime), orTime(run.CompletionTime, &metav1.Time{Time: in.Now})
		rec.Message = run.Message
		if run.Reason == "DeadlineExceeded" {
			rec.Message = fmt.Sprintf("it passed its deadline (%ds)", deadlineSeconds(t))
		}
	case rec.StartTime != nil && !in.Now.Before(rec.StartTime.Add(deadline(t))):
		rec.Phase, rec.CompletionTime = appv1.TestFailed, &metav1.Time{Time: in.Now}
		rec.Message = fmt.Sprintf("it did not finish within its deadline (%ds) and %s", deadlineSeconds(t), testGrace)
	}
	return rec
}

// deadline is how long a test may run, with the grace.
func deadline(t appv1.CanaryTest) time.Duration {
	return time.Duration(deadlineSeconds(t))*time.Second + testGrace
}

func deadlineSeconds(t appv1.CanaryTest) int32 {
	if t.DeadlineSeconds <= 0 {
		return 600 // the CRD's default, for a spec the API server has not defaulted
	}
	return t.DeadlineSeconds
}

func moment(when appv1.CanaryTestMoment) string {
	if when == appv1.CanaryTestBefore {
		return "before"
	}
	return "during"
}

func orTime(t, def *metav1.Time) *metav1.Time {
	if t == nil {
		return def
	}
	return t
}

// minAfter is the sooner of two waits, 0 being none.
func minAfter(a, b time.Duration) time.Duration {
	if b <= 0 {
		b = time.Second
	}
	if a == 0 || b < a {
		return b
	}
	return a
}

// hasTests reports whether a step of the canary has tests of moment when
// ("": of either).
func hasTests(step appv1.CanaryStep, when appv1.CanaryTestMoment) bool {
	return slices.ContainsFunc(step.Tests, func(t appv1.CanaryTest) bool { return when == "" || t.When == when })
}

// HasTests reports whether any step of spec has a test.
func HasTests(spec *appv1.Canary) bool {
	return spec != nil && slices.ContainsFunc(spec.Steps, func(s appv1.CanaryStep) bool { return hasTests(s, "") })
}

// beforePassed reports whether the Before tests of st's step, if any, have
// all passed, as its records say.
func beforePassed(spec *appv1.Canary, st *appv1.CanaryStatus, step int32) bool {
	for _, t := range spec.Steps[step].Tests {
		if t.When == appv1.CanaryTestBefore && !slices.ContainsFunc(st.Tests, func(rec appv1.CanaryTestStatus) bool {
			return rec.Step == step && rec.Name == t.Name && rec.Phase == appv1.TestSucceeded
		}) {
			return false
		}
	}
	return true
}

// testsClock is when the last of the tests of st's step began or ended
// (zero when none did): before its weight, its Pods' deadline counts from
// then. Its Pods were available when a Before test began, and a canary by
// Pods scales up to the step only once they passed.
func testsClock(st *appv1.CanaryStatus, step int32) time.Time {
	var last time.Time
	for _, rec := range st.Tests {
		for _, t := range []*metav1.Time{rec.StartTime, rec.CompletionTime} {
			if rec.Step == step && t != nil && t.After(last) {
				last = t.Time
			}
		}
	}
	return last
}

// maxRecords is status.canary.tests' maxItems: two tests a step, 20 steps.
const maxRecords = 40

// trimRecords makes room for one more record: with maxRecords already,
// the oldest that is not running goes (tests renamed mid-canary leave
// records of tests no longer in the spec).
func trimRecords(tests []appv1.CanaryTestStatus) []appv1.CanaryTestStatus {
	if len(tests) < maxRecords {
		return tests
	}
	if i := slices.IndexFunc(tests, func(rec appv1.CanaryTestStatus) bool { return rec.Phase != appv1.TestRunning }); i >= 0 {
		return slices.Delete(tests, i, i+1)
	}
	return tests[1:]
}

// PodsServe reports whether the Pods of the canary in decides on serve
// behind the AppService's Service (a canary by Pods), and so carry its
// LabelAppService: always by Pods, but while the canary has carried no
// share yet and its step's Before tests have not all passed. Those run
// first against its Pods alone, through its Service.
func PodsServe(in Input) bool {
	if TrafficBy(in) != appv1.CanaryByPods {
		return false
	}
	st, c := in.Status, in.Spec
	if st == nil || st.CanaryTemplateHash != in.Hash || st.Step == nil {
		// Not begun yet (or begun over): at its first step.
		return !hasTests(c.Steps[0], appv1.CanaryTestBefore)
	}
	step := *st.Step
	return step >= int32(len(c.Steps)) || st.Weight > 0 || beforePassed(c, st, step)
}

// stopRunning is the records with those still running Stopped, but those
// of step while the canary runs (phase Running): their Activities are
// deleted. A record of a test the spec no longer has stops too. One whose
// Activity has ended records how instead.
func (in Input) stopRunning(tests []appv1.CanaryTestStatus, running bool, step int32) []appv1.CanaryTestStatus {
	var out []appv1.CanaryTestStatus
	for i, rec := range tests {
		if rec.Phase != appv1.TestRunning || (running && rec.Step == step && inSpec(in.Spec, rec)) {
			continue
		}
		if out == nil {
			out = slices.Clone(tests)
		}
		if run, found := in.Tests[rec.Activity]; found && run.Phase.Finished() {
			out[i] = in.settle(rec, appv1.CanaryTest{DeadlineSeconds: math.MaxInt32})
			continue
		}
		out[i].Phase, out[i].Message = appv1.TestStopped, "its step or its canary ended first"
	}
	if out == nil {
		return tests
	}
	return out
}

// inSpec reports whether the spec still has the test a record is of.
func inSpec(spec *appv1.Canary, rec appv1.CanaryTestStatus) bool {
	return spec != nil && rec.Step >= 0 && int(rec.Step) < len(spec.Steps) &&
		slices.ContainsFunc(spec.Steps[rec.Step].Tests, func(t appv1.CanaryTest) bool { return t.Name == rec.Name })
}

// failedTest is the first failed test's record in st (nil: none).
func failedTest(st *appv1.CanaryStatus) *appv1.CanaryTestStatus {
	for i := range st.Tests {
		if st.Tests[i].Phase == appv1.TestFailed {
			return &st.Tests[i]
		}
	}
	return nil
}

// waitingFor says what a step waits for while tests run.
func waitingFor(when appv1.CanaryTestMoment, names []string) string {
	s := "s"
	if len(names) == 1 {
		s = ""
	}
	return fmt.Sprintf("waits for its test%s %s (%s its weight)", s, strings.Join(names, ", "), moment(when))
}

// testFailure says how the test of a failed record failed, for the abort's
// message and Event (the same at the abort and after it, so that the
// condition's message does not change).
func (in Input) testFailure(rec appv1.CanaryTestStatus) string {
	when := ""
	if inSpec(in.Spec, rec) {
		for _, t := range in.Spec.Steps[rec.Step].Tests {
			if t.Name == rec.Name {
				when = ", " + moment(t.When) + " its weight"
			}
		}
	}
	return fmt.Sprintf("its test %s failed at step %d of %d%s (Activity %s): %s",
		rec.Name, rec.Step+1, len(in.Spec.Steps), when, rec.Activity, rec.Message)
}

// testAbort is the decision that aborts the canary for a test that failed
// (why), st recording it, with the Events of the tests' records.
func testAbort(in Input, st *appv1.CanaryStatus, why string, events []Event) Decision {
	d := abort(in, st, why, true)
	d.Reason, d.Event.Reason = appv1.ReasonCanaryTestFailed, appv1.ReasonCanaryTestFailed
	d.Status.AbortedTemplateHash, d.Status.Analysis = in.Hash, st.Analysis
	d.Events = events
	return d
}

// testActivity names a test's Activity: in.TestActivity's name, or in a
// test of the decision one of its own.
func (in Input) testActivity(step int32, test string, begin metav1.Time) string {
	if in.TestActivity != nil {
		return in.TestActivity(step, test, begin)
	}
	return fmt.Sprintf("%s-%d-%s-%d", in.Hash, step, test, begin.Unix())
}
