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

package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	basemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"

	"example.com/appservice-controller/internal/appcache"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// objectNames are the per-object series.
var objectNames = []string{
	"appservice_info", "appservice_spec_replicas", "appservice_status_ready_replicas", "appservice_status_generation_lag",
	"appservice_suspended", "activity_info", "activity_exit_code", "activity_start_time_seconds", "activity_completion_time_seconds",
	"appservice_canary_weight", "appservice_canary_metric_analysis", "appservice_canary_metric_result", "appservice_canary_metric_failures",
	"appservice_canary_test_result",
}

// canaryNames are the series of an AppService's canary.
var canaryNames = objectNames[len(objectNames)-5:]

// TestObjects: each AppService and Activity in the listers gives its
// series, with only its namespace, name and the controller's own values
// as labels; a process that is not active (a standby, or caches not
// synced) gives none.
func TestObjects(t *testing.T) {
	condition := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	appService := func(name string, gen, observed int64, ready int32, conds ...metav1.Condition) *appv1.AppService {
		return &appv1.AppService{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Generation: gen},
			Spec:       appv1.AppServiceSpec{Image: "registry.example.com/private/shop:v1", Size: new(int32(3))},
			Status:     appv1.AppServiceStatus{ObservedGeneration: observed, ReadyReplicas: ready, Conditions: conds},
		}
	}
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	ready := appService("web", 2, 2, 3, condition(appv1.ConditionReady, metav1.ConditionTrue, appv1.ReasonRolloutComplete),
		condition(appv1.ConditionReconciling, metav1.ConditionFalse, appv1.ReasonRolloutComplete),
		condition(appv1.ConditionStalled, metav1.ConditionFalse, appv1.ReasonAsExpected))
	stalled := appService("blocked", 3, 3, 0, condition(appv1.ConditionReady, metav1.ConditionFalse, appv1.ReasonResourceExists),
		condition(appv1.ConditionStalled, metav1.ConditionTrue, appv1.ReasonResourceExists))
	rolling := appService("api", 5, 4, 1, condition(appv1.ConditionReconciling, metav1.ConditionTrue, appv1.ReasonRollingOut))
	rolling.Spec.Autoscaling = &appv1.Autoscaling{MinReplicas: new(int32(2)), MaxReplicas: 5}
	fresh := appService("new", 1, 0, 0)
	suspended := appService("night", 1, 1, 0, condition(appv1.ConditionReady, metav1.ConditionTrue, appv1.ReasonSuspended))
	suspended.Spec.Suspend = new(true)

	activity := func(name string, prosta appv1.ActivityPhase, exit *int32, start, end *metav1.Time) *appv1.Activity {
		return &appv1.Activity{
			ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: name},
			Status:     appv1.ActivityStatus{Prosta: prosta, ExitCode: exit, StartTime: start, CompletionTime: end},
		}
	}
	started, ended := &metav1.Time{Time: t0}, &metav1.Time{Time: t0.Add(90 * time.Second)}

	appIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, as := range []*appv1.AppService{ready, stalled, rolling, fresh, suspended} {
		if err := appIndex.Add(as); err != nil {
			t.Fatal(err)
		}
	}
	actIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, a := range []*appv1.Activity{
		activity("queued", "", nil, nil, nil),
		activity("migrate", appv1.ActivityRunning, nil, started, nil),
		activity("backup", appv1.ActivitySucceeded, new(int32(0)), started, ended),
		activity("broken", appv1.ActivityFailed, new(int32(3)), started, ended),
	} {
		if err := actIndex.Add(a); err != nil {
			t.Fatal(err)
		}
	}
	collector := func(active bool) *objectCollector {
		c := &objectCollector{}
		c.source.Store(&Objects{
			AppServices: appcache.NewLister(appIndex), Activities: listers.NewActivityLister(actIndex),
			Active: func() bool { return active }, Logger: klog.Background(),
		})
		return c
	}

	start, end := float64(t0.Unix()), float64(t0.Add(90*time.Second).Unix())
	want := fmt.Sprintf(`
# HELP activity_completion_time_seconds [ALPHA] When an Activity's run ended, in seconds since the epoch.
# TYPE activity_completion_time_seconds gauge
activity_completion_time_seconds{name="backup",namespace="jobs"} %[2]g
activity_completion_time_seconds{name="broken",namespace="jobs"} %[2]g
# HELP activity_exit_code [ALPHA] The exit code of an Activity's command, once it ended.
# TYPE activity_exit_code gauge
activity_exit_code{name="backup",namespace="jobs"} 0
activity_exit_code{name="broken",namespace="jobs"} 3
# HELP activity_info [ALPHA] A series of value 1 per Activity: its phase (prosta: Pending, Running, Succeeded or Failed).
# TYPE activity_info gauge
activity_info{name="backup",namespace="jobs",prosta="Succeeded"} 1
activity_info{name="broken",namespace="jobs",prosta="Failed"} 1
activity_info{name="migrate",namespace="jobs",prosta="Running"} 1
activity_info{name="queued",namespace="jobs",prosta="Pending"} 1
# HELP activity_start_time_seconds [ALPHA] When an Activity's run started, in seconds since the epoch.
# TYPE activity_start_time_seconds gauge
activity_start_time_seconds{name="backup",namespace="jobs"} %[1]g
activity_start_time_seconds{name="broken",namespace="jobs"} %[1]g
activity_start_time_seconds{name="migrate",namespace="jobs"} %[1]g
# HELP appservice_info [ALPHA] A series of value 1 per AppService: its state (Ready, Reconciling, Stalled or Unknown, from its kstatus conditions) and that condition's reason.
# TYPE appservice_info gauge
appservice_info{name="api",namespace="shop",reason="RollingOut",state="Reconciling"} 1
appservice_info{name="blocked",namespace="shop",reason="ResourceExists",state="Stalled"} 1
appservice_info{name="new",namespace="shop",reason="None",state="Unknown"} 1
appservice_info{name="night",namespace="shop",reason="Suspended",state="Ready"} 1
appservice_info{name="web",namespace="shop",reason="RolloutComplete",state="Ready"} 1
# HELP appservice_spec_replicas [ALPHA] The replicas an AppService asks for: spec.size; with autoscaling, the autoscaler's minimum; suspended, 0.
# TYPE appservice_spec_replicas gauge
appservice_spec_replicas{name="api",namespace="shop"} 2
appservice_spec_replicas{name="blocked",namespace="shop"} 3
appservice_spec_replicas{name="new",namespace="shop"} 3
appservice_spec_replicas{name="night",namespace="shop"} 0
appservice_spec_replicas{name="web",namespace="shop"} 3
# HELP appservice_status_generation_lag [ALPHA] How many generations of an AppService's spec its status has not observed yet (0: up to date).
# TYPE appservice_status_generation_lag gauge
appservice_status_generation_lag{name="api",namespace="shop"} 1
appservice_status_generation_lag{name="blocked",namespace="shop"} 0
appservice_status_generation_lag{name="new",namespace="shop"} 1
appservice_status_generation_lag{name="night",namespace="shop"} 0
appservice_status_generation_lag{name="web",namespace="shop"} 0
# HELP appservice_status_ready_replicas [ALPHA] The ready Pods of an AppService's Deployment, as its status says.
# TYPE appservice_status_ready_replicas gauge
appservice_status_ready_replicas{name="api",namespace="shop"} 1
appservice_status_ready_replicas{name="blocked",namespace="shop"} 0
appservice_status_ready_replicas{name="new",namespace="shop"} 0
appservice_status_ready_replicas{name="night",namespace="shop"} 0
appservice_status_ready_replicas{name="web",namespace="shop"} 3
# HELP appservice_suspended [ALPHA] 1 while an AppService's spec.suspend is true, else 0.
# TYPE appservice_suspended gauge
appservice_suspended{name="api",namespace="shop"} 0
appservice_suspended{name="blocked",namespace="shop"} 0
appservice_suspended{name="new",namespace="shop"} 0
appservice_suspended{name="night",namespace="shop"} 1
appservice_suspended{name="web",namespace="shop"} 0
`, start, end)
	if err := testutil.CustomCollectAndCompare(collector(true), strings.NewReader(want), objectNames...); err != nil {
		t.Error(err)
	}
	if err := testutil.CustomCollectAndCompare(collector(false), strings.NewReader(""), objectNames...); err != nil {
		t.Errorf("not active: %v", err)
	}
}

// TestObjectsCanary: an AppService with a canary status gives its weight
// and, per metric of its analysis, the last value (when it is a number),
// result and failures; one without a canary status gives none of them
// (TestObjects).
func TestObjectsCanary(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC))
	appService := func(name string, st *appv1.CanaryStatus) *appv1.AppService {
		return &appv1.AppService{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Generation: 1},
			Spec:       appv1.AppServiceSpec{Image: "nginx:1.27", Size: new(int32(2))},
			Status:     appv1.AppServiceStatus{ObservedGeneration: 1, Canary: st},
		}
	}
	index := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, as := range []*appv1.AppService{
		// At its second step, one metric passing, one failed once, one
		// erring (no value), one whose value is not a number.
		appService("cart", &appv1.CanaryStatus{CanaryTemplateHash: "7d9f", Step: new(int32(1)), Weight: 20, Analysis: []appv1.MetricStatus{
			{Name: "success-rate", Result: appv1.MetricPassed, Value: "0.998", Time: t0, PassedStep: new(int32(1))},
			{Name: "latency-p99", Result: appv1.MetricFailed, Value: "0.512", Message: "value 0.512 is above max 0.5", Time: t0, Failures: 1},
			{Name: "saturation", Result: appv1.MetricError, Message: "Prometheus answered 503", Time: t0, Errors: 2},
			{Name: "odd", Result: appv1.MetricPassed, Value: "n/a", Time: t0},
		}}),
		// Aborted by its analysis: no traffic, the results kept.
		appService("checkout", &appv1.CanaryStatus{AbortedTemplateHash: "5c1e", Analysis: []appv1.MetricStatus{
			{Name: "success-rate", Result: appv1.MetricFailed, Value: "0.9", Time: t0, Failures: 3},
			{Name: "requests", Result: appv1.MetricNoData, Time: t0},
		}, Tests: []appv1.CanaryTestStatus{
			{Name: "smoke", Step: 0, Activity: "checkout-k7x2bq", Phase: appv1.TestSucceeded},
			{Name: "load", Step: 0, Activity: "checkout-d4n9zp", Phase: appv1.TestStopped},
			{Name: "smoke", Step: 1, Activity: "checkout-z8m2pq", Phase: appv1.TestFailed, ExitCode: new(int32(7))},
		}}),
		// A canary without analysis, its Pods not serving yet.
		appService("search", &appv1.CanaryStatus{CanaryTemplateHash: "2a4b", Step: new(int32(0))}),
		// By Pods: a 25% step whose 1 Pod beside 4 carries 20%, the share.
		appService("seed", &appv1.CanaryStatus{CanaryTemplateHash: "9e0f", Step: new(int32(0)), Weight: 25,
			TrafficBy: appv1.CanaryByPods, Share: 20, CanaryPods: 1, ServingPods: 5}),
		appService("plain", nil),
	} {
		if err := index.Add(as); err != nil {
			t.Fatal(err)
		}
	}
	c := &objectCollector{}
	c.source.Store(&Objects{
		AppServices: appcache.NewLister(index), Activities: listers.NewActivityLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		Active: func() bool { return true }, Logger: klog.Background(),
		// The last round of cart's success-rate, which passed again
		// (the status keeps the pass it recorded), and of its
		// saturation, which erred: the status's, none.
		Value: func(namespace, name, metric string) (float64, bool) {
			if namespace == "shop" && name == "cart" && metric == "success-rate" {
				return 0.997, true
			}
			return 0, false
		},
	})
	want := `
# HELP appservice_canary_metric_analysis [ALPHA] The last value a query of an AppService's canary analysis returned, per metric (as Flagger's flagger_canary_metric_analysis); none while the last measurement has no value (no data, an error).
# TYPE appservice_canary_metric_analysis gauge
appservice_canary_metric_analysis{metric="latency-p99",name="cart",namespace="shop"} 0.512
appservice_canary_metric_analysis{metric="success-rate",name="cart",namespace="shop"} 0.997
appservice_canary_metric_analysis{metric="success-rate",name="checkout",namespace="shop"} 0.9
# HELP appservice_canary_metric_failures [ALPHA] How many measurements of a metric of an AppService's canary analysis failed in this canary.
# TYPE appservice_canary_metric_failures gauge
appservice_canary_metric_failures{metric="latency-p99",name="cart",namespace="shop"} 1
appservice_canary_metric_failures{metric="odd",name="cart",namespace="shop"} 0
appservice_canary_metric_failures{metric="saturation",name="cart",namespace="shop"} 0
appservice_canary_metric_failures{metric="success-rate",name="cart",namespace="shop"} 0
appservice_canary_metric_failures{metric="requests",name="checkout",namespace="shop"} 0
appservice_canary_metric_failures{metric="success-rate",name="checkout",namespace="shop"} 3
# HELP appservice_canary_metric_result [ALPHA] A series of value 1 per metric of an AppService's canary analysis: the result of its last measurement (Passed, Failed, NoData or Error).
# TYPE appservice_canary_metric_result gauge
appservice_canary_metric_result{metric="latency-p99",name="cart",namespace="shop",result="Failed"} 1
appservice_canary_metric_result{metric="odd",name="cart",namespace="shop",result="Passed"} 1
appservice_canary_metric_result{metric="saturation",name="cart",namespace="shop",result="Error"} 1
appservice_canary_metric_result{metric="success-rate",name="cart",namespace="shop",result="Passed"} 1
appservice_canary_metric_result{metric="requests",name="checkout",namespace="shop",result="NoData"} 1
appservice_canary_metric_result{metric="success-rate",name="checkout",namespace="shop",result="Failed"} 1
# HELP appservice_canary_test_result [ALPHA] A series of value 1 per test of an AppService's canary begun (status.canary.tests): its step (from 1) and phase (Running, Succeeded, Failed or Stopped).
# TYPE appservice_canary_test_result gauge
appservice_canary_test_result{name="checkout",namespace="shop",phase="Stopped",step="1",test="load"} 1
appservice_canary_test_result{name="checkout",namespace="shop",phase="Succeeded",step="1",test="smoke"} 1
appservice_canary_test_result{name="checkout",namespace="shop",phase="Failed",step="2",test="smoke"} 1
# HELP appservice_canary_weight [ALPHA] The percentage of an AppService's traffic its canary gets (status.canary.share): its route's weight, or without a route its Pods' share; 0 when none.
# TYPE appservice_canary_weight gauge
appservice_canary_weight{name="cart",namespace="shop"} 20
appservice_canary_weight{name="checkout",namespace="shop"} 0
appservice_canary_weight{name="search",namespace="shop"} 0
appservice_canary_weight{name="seed",namespace="shop"} 20
`
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want), canaryNames...); err != nil {
		t.Error(err)
	}
}

// BenchmarkObjects: the per-object series of 5000 AppServices and 5000
// Activities collected (BENCHMARKS.md).
func BenchmarkObjects(b *testing.B) {
	o := benchObjects(b)
	b.ReportAllocs()
	for b.Loop() {
		ch := make(chan basemetrics.Metric, 1024)
		done := make(chan int)
		go func() {
			n := 0
			for range ch {
				n++
			}
			done <- n
		}()
		o.collect(ch)
		close(ch)
		if n := <-done; n != 5*5000+4*5000 {
			b.Fatalf("%d series, want %d", n, 9*5000)
		}
	}
}

// BenchmarkScrape: a whole scrape of /metrics, as Prometheus's would be,
// with the series of 5000 AppServices and 5000 Activities among the
// controller's own (BENCHMARKS.md).
func BenchmarkScrape(b *testing.B) {
	objects.source.Store(benchObjects(b))
	b.Cleanup(func() { objects.source.Store(nil) })
	handler := legacyregistry.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `appservice_info{name="app-04999"`) {
			b.Fatalf("/metrics = %d, without the last AppService", rec.Code)
		}
	}
}

// benchObjects are 5000 AppServices and 5000 Activities, Ready and
// Succeeded, in 50 namespaces; the AppServices encoded as the controller
// caches them.
func benchObjects(b *testing.B) *Objects {
	b.Helper()
	appIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	actIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range 5000 {
		as := &appv1.AppService{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%50), Name: fmt.Sprintf("app-%05d", i), Generation: 1},
			Spec:       appv1.AppServiceSpec{Image: "nginx:1.27", Size: new(int32(2))},
			Status: appv1.AppServiceStatus{ObservedGeneration: 1, ReadyReplicas: 2, Conditions: []metav1.Condition{
				{Type: appv1.ConditionReady, Status: metav1.ConditionTrue, Reason: appv1.ReasonRolloutComplete},
				{Type: appv1.ConditionReconciling, Status: metav1.ConditionFalse, Reason: appv1.ReasonRolloutComplete},
				{Type: appv1.ConditionStalled, Status: metav1.ConditionFalse, Reason: appv1.ReasonAsExpected},
			}},
		}
		a := &appv1.Activity{
			ObjectMeta: metav1.ObjectMeta{Namespace: as.Namespace, Name: as.Name},
			Status: appv1.ActivityStatus{Prosta: appv1.ActivitySucceeded, ExitCode: new(int32(0)),
				StartTime: &metav1.Time{Time: time.Unix(1e9, 0)}, CompletionTime: &metav1.Time{Time: time.Unix(1e9+60, 0)}},
		}
		encoded, err := appcache.Transform(as)
		if err != nil {
			b.Fatal(err)
		}
		if err := appIndex.Add(encoded); err != nil {
			b.Fatal(err)
		}
		if err := actIndex.Add(a); err != nil {
			b.Fatal(err)
		}
	}
	return &Objects{AppServices: appcache.NewLister(appIndex), Activities: listers.NewActivityLister(actIndex), Active: func() bool { return true }, Logger: klog.Background()}
}
