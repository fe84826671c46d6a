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
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestCanaryTests: a canary's steps that run a command, as Activities the
// AppService owns, in four namespaces at once (the kwok nodes end a Job's
// Pod as its command says: `exit 7` with 7, `sleep 8` with 0 after 8
// seconds, `sleep 3600` never, any other with 0).
//   - pass: a smoke test before the first step's weight, and a load test
//     during it; the weight goes to the route only once the smoke test
//     passed, the step passes only once the load test has; the tests'
//     Activities stay once the canary is promoted, nothing written then,
//     and go with the AppService, their Jobs with them.
//   - fail: a smoke test that exits 7 aborts the canary before any weight
//     was routed, with the code and its log's last line in the Event; a
//     retry runs it again, as a new Activity.
//   - deadline: a load test past its deadline aborts the canary.
//   - bypods: without a route, the first step's smoke test runs against
//     the canary's Pods while they are out of the Service; they join it
//     only once it passed.
//
// A controller killed while a test runs is TestCanaryRestart's.
func TestCanaryTests(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	t.Run("pass", func(t *testing.T) { t.Parallel(); testCanaryTestsPass(t) })
	t.Run("fail", func(t *testing.T) { t.Parallel(); testCanaryTestsFail(t) })
	t.Run("deadline", func(t *testing.T) { t.Parallel(); testCanaryTestsDeadline(t) })
	t.Run("bypods", func(t *testing.T) { t.Parallel(); testCanaryTestsByPods(t) })
}

func smokeTest(command string) appv1.CanaryTest {
	return appv1.CanaryTest{Name: "smoke", When: appv1.CanaryTestBefore, Command: command, DeadlineSeconds: 120}
}

func loadTest(command string, deadline int32) appv1.CanaryTest {
	return appv1.CanaryTest{Name: "load", When: appv1.CanaryTestDuring, Command: command, DeadlineSeconds: deadline,
		Envs: []string{"RATE=50"}}
}

// recordTests records the Activities of an AppService's tests.
func recordTests(t *testing.T, ns, name string) *recording[version[*appv1.Activity]] {
	t.Helper()
	return recordSelected[*appv1.Activity](t, apps.AppV1().Activities(ns).Watch,
		metav1.ListOptions{LabelSelector: appv1.LabelAppService + "=" + name}, name+"'s tests")
}

// testEnded is the first recorded version of the test's Activity (by its
// LabelCanaryTest) in which it has ended so; it fails the test when none
// is.
func testEnded(t *testing.T, tests *recording[version[*appv1.Activity]], test string, phase appv1.ActivityPhase) version[*appv1.Activity] {
	t.Helper()
	var found version[*appv1.Activity]
	tests.wait(t, 2*time.Minute, func(vs []version[*appv1.Activity]) error {
		for _, v := range vs {
			if v.obj.Labels[appv1.LabelCanaryTest] == test && v.obj.Status.Prosta == phase {
				found = v
				return nil
			}
		}
		return fmt.Errorf("no version of test %s's Activity %s", test, phase)
	})
	return found
}

// activityNames are the names of the Activities recorded (once each).
func activityNames(vs []version[*appv1.Activity]) []string {
	var names []string
	for _, v := range vs {
		if !slices.Contains(names, v.obj.Name) {
			names = append(names, v.obj.Name)
		}
	}
	return names
}

func testCanaryTestsPass(t *testing.T) {
	ns := newNamespace(t)
	const name = "tested"
	spec := canarySpec(appv1.CanaryStep{Weight: 20, Tests: []appv1.CanaryTest{
		smokeTest(`curl -fsS "$CANARY_URL/healthz" -H 'x-app: {{ name }}'`), loadTest("sleep 8", 60)}}, appv1.CanaryStep{Weight: 100})
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	tests := recordTests(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	waitCanaryDone(t, ns, name)
	rec.waitWeights(t, 0, 20, 100, 0)
	edges := rec.waitEdges(t, "0@0%", "0@20%", "1@20%", "1@100%", "2@100%")
	smoke := testEnded(t, tests, "smoke", appv1.ActivitySucceeded)
	load := testEnded(t, tests, "load", appv1.ActivitySucceeded)

	// The weight went to the route only after the smoke test passed; the
	// step passed only after the load test had.
	firstWeight := rec.weightChanges()[1]
	if routeWeight(firstWeight.obj) != 20 || firstWeight.rv < smoke.rv {
		t.Errorf("the route sent the canary %d%% at resourceVersion %d, before the smoke test passed (%d)",
			routeWeight(firstWeight.obj), firstWeight.rv, smoke.rv)
	}
	if e := edges["1@20%"]; e.v.rv < load.rv {
		t.Errorf("step 2 began at resourceVersion %d, before the load test passed (%d)", e.v.rv, load.rv)
	}
	// The smoke test's command, with its placeholders filled in and the
	// canary's address; the load test's own env beside it.
	if got := smoke.obj.Spec.Command; got != `curl -fsS "$CANARY_URL/healthz" -H 'x-app: tested'` {
		t.Errorf("the smoke test's command is %q", got)
	}
	wantEnv := fmt.Sprintf("CANARY_URL=http://%s-canary.%s.svc:80", name, ns)
	if !slices.Contains(smoke.obj.Spec.Envs, wantEnv) || !slices.Contains(load.obj.Spec.Envs, "RATE=50") || !slices.Contains(load.obj.Spec.Envs, wantEnv) {
		t.Errorf("the tests' envs %v and %v, want %s in both and RATE=50 in the load test's", smoke.obj.Spec.Envs, load.obj.Spec.Envs, wantEnv)
	}
	if err := ownedBy(smoke.obj, mustGetAppService(t, ns, name)); err != nil {
		t.Error(err)
	}
	// Each test ran once, and stays, recorded, after the promotion.
	if names := activityNames(tests.snapshot()); len(names) != 2 {
		t.Errorf("the tests' Activities %v, want two: one run each", names)
	}
	as := mustGetAppService(t, ns, name)
	if st := as.Status.Canary; st == nil || len(st.Tests) != 2 || st.Tests[0].Phase != appv1.TestSucceeded || st.Tests[1].Phase != appv1.TestSucceeded {
		t.Errorf("status.canary.tests once promoted: %+v", as.Status.Canary)
	}
	for _, msg := range []string{"test smoke began", "test smoke passed", "test load began", "test load passed"} {
		waitEvent(t, ns, name, "Normal", appv1.ReasonCanaryTest, msg)
	}
	// Promoted, its tests' Activities kept: nothing to write.
	waitInLine(t, ns, name)
	steady := time.Now()
	waitSyncs(t, ns, name)
	for _, w := range canaryWrites(t, steady, ns) {
		t.Errorf("write by the controller once promoted and in line: %s", w)
	}

	// Deleted, the AppService takes its tests' Activities and their Jobs
	// with it (the garbage collector, through the owner references).
	if err := apps.AppV1().AppServices(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, func() error {
		acts, err := apps.AppV1().Activities(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		jobs, err := kube.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(acts.Items)+len(jobs.Items) > 0 {
			return fmt.Errorf("%d Activities and %d Jobs left, want none", len(acts.Items), len(jobs.Items))
		}
		return nil
	})
}

func mustGetAppService(t *testing.T, ns, name string) *appv1.AppService {
	t.Helper()
	as, err := getAppService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

func testCanaryTestsFail(t *testing.T) {
	ns := newNamespace(t)
	const name = "untested"
	createAppService(t, ns, name, canarySpec(appv1.CanaryStep{Weight: 20, Tests: []appv1.CanaryTest{smokeTest("exit 7")}}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	tests := recordTests(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	as := waitStalled(t, ns, name, appv1.ReasonCanaryTestFailed, "its test smoke failed at step 1 of 2, before its weight")
	failed := testEnded(t, tests, "smoke", appv1.ActivityFailed)
	waitEvent(t, ns, name, "Warning", appv1.ReasonCanaryTestFailed, "The command exited 7 (Error):\ncurl: (7) Failed to connect to the canary")
	if st := as.Status.Canary; st == nil || len(st.Tests) != 1 || st.Tests[0].ExitCode == nil || *st.Tests[0].ExitCode != 7 || st.AbortedTemplateHash == "" {
		t.Errorf("status.canary once aborted: %+v", as.Status.Canary)
	}
	checkCanaryGone(t, ns, name)
	// No weight was ever routed.
	if ws := weightsOf(rec.weightChanges()); slices.ContainsFunc(ws, func(w int32) bool { return w > 0 }) {
		t.Errorf("the route's weights went %v: the canary took traffic before its smoke test", ws)
	}

	// A retry runs the test again, as another Activity (which exits 7
	// too); the first one's stays until then, kept for inspection.
	(&plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}).expect(0, "", "", "retry", name)
	tests.wait(t, 2*time.Minute, func(vs []version[*appv1.Activity]) error {
		names := activityNames(vs)
		failedRuns := 0
		for _, v := range vs {
			if v.obj.Status.Prosta == appv1.ActivityFailed && v.obj.Name != failed.obj.Name {
				failedRuns++
			}
		}
		if len(names) != 2 || failedRuns == 0 {
			return fmt.Errorf("Activities %v, want the first and the retry's, failed", names)
		}
		return nil
	})
	waitStalled(t, ns, name, appv1.ReasonCanaryTestFailed, "its test smoke failed")
	if ws := weightsOf(rec.weightChanges()); slices.ContainsFunc(ws, func(w int32) bool { return w > 0 }) {
		t.Errorf("the route's weights went %v", ws)
	}
}

func testCanaryTestsDeadline(t *testing.T) {
	ns := newNamespace(t)
	const name = "slow-test"
	createAppService(t, ns, name, canarySpec(appv1.CanaryStep{Weight: 20, Tests: []appv1.CanaryTest{loadTest("sleep 3600", 3)}}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	waitStalled(t, ns, name, appv1.ReasonCanaryTestFailed, "its test load failed at step 1 of 2, during its weight (Activity "+name+"-")
	waitStalled(t, ns, name, appv1.ReasonCanaryTestFailed, "it passed its deadline (3s)")
	checkCanaryGone(t, ns, name)
	rec.waitWeights(t, 0, 20, 0)
}

func testCanaryTestsByPods(t *testing.T) {
	ns := newNamespace(t)
	const name = "pods-tested"
	createAppService(t, ns, name, podsSpec(2, appv1.CanaryStep{Weight: 25, Tests: []appv1.CanaryTest{smokeTest("sleep 8")}}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 2)
	rec := recordCanary(t, ns, name)
	tests := recordTests(t, ns, name)
	endpoints := recordServing(t, ns, name, 2)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	waitCanaryDone(t, ns, name)
	// Nothing holds step 1 once its weight is routed (its test ran
	// Before it): its weight and step 2 are one status write.
	rec.waitEdges(t, "0@0%", "1@25%", "1@100%", "2@100%")
	smoke := testEnded(t, tests, "smoke", appv1.ActivitySucceeded)
	// No canary Pod behind the Service before the smoke test passed; some
	// after.
	var joined bool
	for _, s := range endpointStates(endpoints.snapshot()) {
		canaries := slices.ContainsFunc(s.pods, func(p string) bool { return canaryPod(name, p) })
		if canaries && s.v.rv < smoke.rv {
			t.Errorf("a canary Pod served at resourceVersion %d, before its smoke test passed (%d): %v", s.v.rv, smoke.rv, s.pods)
		}
		joined = joined || canaries
	}
	if !joined {
		t.Error("no canary Pod ever served behind the Service")
	}
	checkNeverBelow(t, endpointStates(endpoints.snapshot()), 2)
	// The smoke test reached the canary's Pods alone, through its Service.
	if !slices.ContainsFunc(smoke.obj.Spec.Envs, func(e string) bool { return strings.HasPrefix(e, "CANARY_URL=http://"+name+"-canary.") }) {
		t.Errorf("the smoke test's envs %v", smoke.obj.Spec.Envs)
	}
}
