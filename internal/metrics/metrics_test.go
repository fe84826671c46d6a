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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
)

// TestMetrics: the reconcile series are served under controller-runtime's
// names from the start, next to the build info, and a sync's result moves them. (client-go's series
// appear once a queue or client exists: TestProbesAndMetrics in test/e2e
// checks those on the running binary.)
func TestMetrics(t *testing.T) {
	scrape := func() string {
		rec := httptest.NewRecorder()
		legacyregistry.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("/metrics = %d", rec.Code)
		}
		return rec.Body.String()
	}
	value := func(body, series string) string {
		for line := range strings.SplitSeq(body, "\n") {
			if v, ok := strings.CutPrefix(line, series+" "); ok {
				return v
			}
		}
		t.Fatalf("no series %s in /metrics", series)
		return ""
	}
	const errorsSeries = `controller_runtime_reconcile_errors_total{controller="appservice"}`
	const errorTotal = `controller_runtime_reconcile_total{controller="appservice",result="error"}`
	before := scrape()
	for _, series := range []string{
		`controller_runtime_reconcile_total{controller="appservice",result="success"}`,
		`controller_runtime_reconcile_total{controller="appservice",result="requeue"}`,
		errorTotal, errorsSeries,
		`controller_runtime_reconcile_total{controller="activity",result="success"}`,
		`controller_runtime_reconcile_errors_total{controller="activity"}`,
	} {
		value(before, series)
	}
	if !strings.Contains(before, "appservice_controller_build_info{") {
		t.Error("no appservice_controller_build_info in /metrics")
	}

	ObserveReconcile("appservice", "error", 10*time.Millisecond)
	after := scrape()
	for _, series := range []string{errorsSeries, errorTotal} {
		if value(before, series) == value(after, series) {
			t.Errorf("%s did not move after an error: %s", series, value(after, series))
		}
	}
	if !strings.Contains(after, `controller_runtime_reconcile_time_seconds_count{controller="appservice"}`) {
		t.Error("no reconcile time histogram after a sync")
	}
}
