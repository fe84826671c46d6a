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
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"example.com/appservice-controller/internal/docscheck"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestObjectMetrics: /metrics reports each live AppService and Activity,
// as it stands: a Ready AppService and a Stalled one (a Deployment in its
// way), one with a canary at its first step, measured by its analysis,
// Activities running, succeeded and failed (with the exit code); and
// every metric the alert rules and the dashboard (artifacts/monitoring)
// read is served (but up, which Prometheus makes).
func TestObjectMetrics(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	ns := newNamespace(t)
	spec := analysedSpec(1, []appv1.AnalysisMetric{{Name: "ok", Query: "vector(1)", Min: new("0")}},
		appv1.CanaryStep{Weight: 50, PauseSeconds: 600}, appv1.CanaryStep{Weight: 100})
	createAppService(t, ns, "trying", spec)
	createAppService(t, ns, "fine", appv1.AppServiceSpec{Size: int32p(2), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}}})
	createTheirDeployment(t, ns, "blocked")
	createAppService(t, ns, "blocked", appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27"})
	createActivity(t, ns, "runs", appv1.ActivitySpec{Command: "sleep 3600"})
	createActivity(t, ns, "works", appv1.ActivitySpec{Command: "true"})
	createActivity(t, ns, "fails", appv1.ActivitySpec{Command: "exit 3"})
	waitAvailable(t, ns, "fine", 2)
	waitDegraded(t, ns, "blocked", appv1.ReasonResourceExists)
	waitActivity(t, ns, "runs", appv1.ActivityRunning)
	waitActivity(t, ns, "works", appv1.ActivitySucceeded)
	waitActivity(t, ns, "fails", appv1.ActivityFailed)
	waitAvailable(t, ns, "trying", 1)
	updateAppService(t, ns, "trying", func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	label := func(name string) string { return fmt.Sprintf(`name="%s",namespace="%s"`, name, ns) }
	want := map[string]float64{
		`appservice_info{` + label("fine") + `,reason="RolloutComplete",state="Ready"}`:        1,
		`appservice_info{` + label("blocked") + `,reason="ResourceExists",state="Stalled"}`:    1,
		`appservice_spec_replicas{` + label("fine") + `}`:                                      2,
		`appservice_status_ready_replicas{` + label("fine") + `}`:                              2,
		`appservice_status_generation_lag{` + label("fine") + `}`:                              0,
		`appservice_suspended{` + label("fine") + `}`:                                          0,
		`activity_info{` + label("runs") + `,prosta="Running"}`:                                1,
		`activity_info{` + label("works") + `,prosta="Succeeded"}`:                             1,
		`activity_info{` + label("fails") + `,prosta="Failed"}`:                                1,
		`activity_exit_code{` + label("works") + `}`:                                           0,
		`activity_exit_code{` + label("fails") + `}`:                                           3,
		`appservice_canary_weight{` + label("trying") + `}`:                                    50,
		`appservice_canary_metric_analysis{metric="ok",` + label("trying") + `}`:               1,
		`appservice_canary_metric_result{metric="ok",` + label("trying") + `,result="Passed"}`: 1,
	}
	token := metricsToken(t, ns)
	var body string
	eventually(t, time.Minute, func() error {
		code, b, err := ctrl.Metrics(token)
		if err != nil || code != 200 {
			return fmt.Errorf("/metrics: %d %v %.200s", code, err, b)
		}
		body = b
		for series, v := range want {
			if got, ok := metricValue(body, series); !ok || got != v {
				return fmt.Errorf("%s = %v (present: %v), want %v", series, got, ok, v)
			}
		}
		return nil
	})
	for _, name := range []string{"activity_start_time_seconds", "activity_completion_time_seconds"} {
		if _, ok := metricValue(body, name+"{"+label("fails")+"}"); !ok {
			t.Errorf("no %s of the failed Activity", name)
		}
	}
	if _, ok := metricValue(body, `activity_exit_code{`+label("runs")+`}`); ok {
		t.Error("an exit code for the Activity that still runs")
	}

	// What the alerts and the dashboard read, served.
	queries, err := docscheck.MonitoringQueries(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		for _, name := range docscheck.MetricNames(q.Expr) {
			if name != "up" && !strings.Contains(body, "\n"+name+"{") && !strings.Contains(body, "\n"+name+" ") {
				t.Errorf("%s reads %s, which /metrics does not serve", q.Where, name)
			}
		}
	}
}
