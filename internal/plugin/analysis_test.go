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

package plugin

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	appfake "example.com/appservice-controller/pkg/generated/clientset/versioned/fake"
)

// fakePrometheus answers /api/v1/query with the value of the first of
// values' keys the query contains (an empty vector for none, an error
// for "error"), and records the queries asked.
type fakePrometheus struct {
	values map[string]string
	mu     sync.Mutex
	asked  []string
}

func (p *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	q := r.Form.Get("query")
	p.mu.Lock()
	p.asked = append(p.asked, q)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	for k, v := range p.values {
		if !strings.Contains(q, k) {
			continue
		}
		if v == "error" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"parse error"}`)
			return
		}
		_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,%q]}]}}`, v)
		return
	}
	_, _ = fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
}

// TestAnalysisCommand: kubectl appservice analysis resolves the templates
// beside the inline metrics, asks each query once with its arguments and
// placeholders in place, prints each value against its bounds, and exits
// 6 when one would hold or abort a canary, or the templates do not
// resolve.
func TestAnalysisCommand(t *testing.T) {
	as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appv1.AppServiceSpec{Canary: &appv1.Canary{
		Steps: []appv1.CanaryStep{{Weight: 10}},
		Analysis: &appv1.CanaryAnalysis{IntervalSeconds: 30,
			Metrics:   []appv1.AnalysisMetric{{Name: "errors", Query: `sum(errors{ns="{{ namespace }}"})`, Max: new("5")}},
			Templates: []appv1.AnalysisTemplateRef{{Kind: appv1.KindClusterAnalysisTemplate, Name: "success-rate", Args: map[string]string{"service": "web-canary"}}},
		}}}}
	template := &appv1.ClusterAnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: "success-rate"}, Spec: appv1.AnalysisTemplateSpec{
		Args: []appv1.AnalysisArg{{Name: "service"}},
		Metrics: []appv1.AnalysisMetric{
			{Name: "success-rate", Query: `ok{service="{{ args.service }}",app="{{ target }}"}[{{ interval }}]`, Min: new("0.99")},
			{Name: "latency", Query: `latency{service="{{ args.service }}"}`, Max: new("0.5"), DryRun: true},
		}}}
	for _, tc := range []struct {
		name   string
		values map[string]string
		drop   bool
		code   int
		out    []string
		errOut string
	}{
		{name: "every metric passes", values: map[string]string{"errors": "1", "ok{": "0.995", "latency": "0.9"}, code: ExitOK,
			out: []string{
				"Analysis of " + ns + "/web: 3 metrics, every 30s, noData Hold; templates as they are now: ClusterAnalysisTemplate success-rate@",
				"errors", "inline", "≤ 5", "Passed",
				"success-rate", "ClusterAnalysisTemplate success-rate", "0.995", "≥ 0.99",
				"latency (dry run)", "0.9", "above max 0.5",
				`ok{service="web-canary",app="web-canary"}[30s]`,
			}},
		{name: "a metric out of its bounds", values: map[string]string{"errors": "1", "ok{": "0.9"}, code: ExitAnalysisFailed,
			out: []string{"success-rate", "below min 0.99", "Failed"}, errOut: "1 of 3 metrics of web do not pass"},
		{name: "a query that fails", values: map[string]string{"errors": "error", "ok{": "1"}, code: ExitAnalysisFailed,
			out: []string{"Prometheus refused the query", "Error"}, errOut: "1 of 3 metrics of web do not pass"},
		{name: "a template that does not exist", drop: true, code: ExitAnalysisFailed,
			errOut: "a canary would hold at its start: ClusterAnalysisTemplate success-rate does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prom := &fakePrometheus{values: tc.values}
			srv := httptest.NewServer(prom)
			defer srv.Close()
			objects := []runtime.Object{as.DeepCopy()}
			if !tc.drop {
				objects = append(objects, template.DeepCopy())
			}
			f := &fakes{apps: appfake.NewSimpleClientset(objects...), kube: kubefake.NewClientset(), gateway: gatewayfake.NewClientset()}
			out, errOut, code := f.run(context.Background(), "analysis", "web", "--prometheus-url", srv.URL, "--show-queries")
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			for _, want := range tc.out {
				if !strings.Contains(out, want) {
					t.Errorf("the output does not say %q:\n%s", want, out)
				}
			}
			if !strings.Contains(errOut, tc.errOut) {
				t.Errorf("standard error %q, want %q", errOut, tc.errOut)
			}
			if !tc.drop && len(prom.asked) != 3 {
				t.Errorf("%d queries asked, want each of 3 once: %q", len(prom.asked), prom.asked)
			}
		})
	}
}

// TestAnalysisCommandUsage: one of the two ways to Prometheus, and a
// Service named NAMESPACE/NAME:PORT.
func TestAnalysisCommandUsage(t *testing.T) {
	f := &fakes{apps: appfake.NewSimpleClientset(), kube: kubefake.NewClientset(), gateway: gatewayfake.NewClientset()}
	for _, args := range [][]string{
		{"analysis", "web"},
		{"analysis", "web", "--prometheus-url", "http://p", "--prometheus-service", "m/p:9090"},
		{"analysis", "web", "--prometheus-service", "prometheus:9090"},
	} {
		if _, errOut, code := f.run(context.Background(), args...); code != ExitUsage {
			t.Errorf("%v: exit code %d (%s), want %d", args, code, errOut, ExitUsage)
		}
	}
}
