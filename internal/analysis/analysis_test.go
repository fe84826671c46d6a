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

package analysis

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/canary"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestRender(t *testing.T) {
	v := Vars{Namespace: "shop", Name: "cart", Target: "cart-canary", Interval: 30 * time.Second}
	for q, want := range map[string]string{
		`sum(rate(x{namespace="{{ namespace }}",service="{{ target }}"}[{{ interval }}]))`: `sum(rate(x{namespace="shop",service="cart-canary"}[30s]))`,
		`up{app="{{name}}"} and up{app="{{  name  }}"}`:                                    `up{app="cart"} and up{app="cart"}`,
		`vector(1)`: `vector(1)`,
		`x{a="{"}`:  `x{a="{"}`,
	} {
		if got := Render(q, v); got != want {
			t.Errorf("Render(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestNumber(t *testing.T) {
	sample := func(v float64) *model.Sample { return &model.Sample{Value: model.SampleValue(v)} }
	for _, tc := range []struct {
		name   string
		v      model.Value
		value  float64
		noData bool
		err    string
	}{
		{name: "a scalar", v: &model.Scalar{Value: 0.25}, value: 0.25},
		{name: "a vector of one", v: model.Vector{sample(3)}, value: 3},
		{name: "an empty vector", v: model.Vector{}, noData: true},
		{name: "NaN", v: model.Vector{sample(nan())}, noData: true},
		{name: "two series", v: model.Vector{sample(1), sample(2)}, err: "returned 2 series, not one number"},
		{name: "a matrix", v: model.Matrix{}, err: "returned a matrix, not one number"},
		{name: "a string", v: &model.String{Value: "x"}, err: "returned a string, not one number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, noData, err := Number(tc.v)
			if value != tc.value || noData != tc.noData || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Number = %v, %v, %v; want %v, %v, an error saying %q", value, noData, err, tc.value, tc.noData, tc.err)
			}
		})
	}
}

func nan() float64 { var zero float64; return zero / zero }

// fakePrometheus answers /api/v1/query as Prometheus does, with answer's
// result for each query, after delay; it records the queries and the
// Authorization headers.
type fakePrometheus struct {
	mu      sync.Mutex
	queries []string
	auth    []string
	delay   time.Duration
	answer  func(query string) (status int, body string)
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	q := r.Form.Get("query")
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	select {
	case <-time.After(f.delay):
	case <-r.Context().Done():
		return
	}
	status, body := f.answer(q)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

func vectorOf(values ...string) string {
	var samples []string
	for _, v := range values {
		samples = append(samples, fmt.Sprintf(`{"metric":{},"value":[1764331200,"%s"]}`, v))
	}
	return fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(samples, ","))
}

// TestRunner: a round's queries, rendered, go to Prometheus with the
// bearer token; each answer becomes a measurement, and the round's end
// calls done once; a second Start while one is under way does nothing.
func TestRunner(t *testing.T) {
	fake := &fakePrometheus{answer: func(q string) (int, string) {
		switch {
		case strings.Contains(q, "errors"):
			return http.StatusOK, vectorOf("0.125")
		case strings.Contains(q, "empty"):
			return http.StatusOK, vectorOf()
		case strings.Contains(q, "many"):
			return http.StatusOK, vectorOf("1", "2")
		default:
			return http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"1:1: parse error: unexpected"}`
		}
	}}
	server := httptest.NewServer(fake)
	defer server.Close()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{URL: server.URL, BearerTokenFile: token, Timeout: 5 * time.Second}
	client, err := NewAPI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan cache.ObjectName, 4)
	r := NewRunner(ctx, client, cfg, func(key cache.ObjectName) { done <- key })
	if !r.Configured() {
		t.Fatal("a runner with a client says it is not configured")
	}

	as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}, Spec: appv1.AppServiceSpec{Canary: &appv1.Canary{
		Analysis: &appv1.CanaryAnalysis{IntervalSeconds: 30, Metrics: []appv1.AnalysisMetric{
			{Name: "errors", Query: `errors{namespace="{{ namespace }}",service="{{ target }}"}[{{ interval }}]`},
			{Name: "empty", Query: `empty`},
			{Name: "many", Query: `many`},
			{Name: "typo", Query: `sum(`},
		}},
	}}}
	key := cache.MetaObjectToName(as)
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	round := canary.Round{Hash: "h", Step: 1, Time: at}
	fake.delay = 200 * time.Millisecond
	r.Start(key, as, as.Spec.Canary.Analysis, round, "cart-canary")
	r.Start(key, as, as.Spec.Canary.Analysis, round, "cart-canary") // under way: nothing more
	select {
	case got := <-done:
		if got != key {
			t.Errorf("done(%v), want done(%v)", got, key)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the round did not end")
	}
	want := []canary.Measurement{
		{Metric: "errors", Hash: "h", Step: 1, Time: at, Value: 0.125},
		{Metric: "empty", Hash: "h", Step: 1, Time: at, NoData: true},
		{Metric: "many", Hash: "h", Step: 1, Time: at, Err: "the query returned 2 series, not one number: aggregate them (sum, max, ...)"},
		{Metric: "typo", Hash: "h", Step: 1, Time: at, Err: "Prometheus refused the query (bad_data): 1:1: parse error: unexpected"},
	}
	if diff := cmp.Diff(want, r.Results(key)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	fake.mu.Lock()
	queries, auth := fake.queries, fake.auth
	fake.mu.Unlock()
	if diff := cmp.Diff([]string{`errors{namespace="shop",service="cart-canary"}[30s]`, "empty", "many", "sum("}, queries, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("queries, one each (-want +got):\n%s", diff)
	}
	for _, a := range auth {
		if a != "Bearer s3cr3t" {
			t.Errorf("Authorization %q, want the token file's", a)
		}
	}
	select {
	case <-done:
		t.Error("the second Start of a round under way took a round of its own")
	case <-time.After(300 * time.Millisecond):
	}
	// The last round's value, for /metrics: a number only.
	for metric, want := range map[string]bool{"errors": true, "empty": false, "many": false, "typo": false, "other": false} {
		if v, ok := r.Value(key, metric); ok != want || (ok && v != 0.125) {
			t.Errorf("Value(%s) = %v, %t; want a value: %t", metric, v, ok, want)
		}
	}
	r.Forget(key)
	if got := r.Results(key); got != nil {
		t.Errorf("results after Forget: %v", got)
	}
	if v, ok := r.Value(key, "errors"); ok {
		t.Errorf("Value after Forget: %v", v)
	}
}

// TestRunnerTimeout: a Prometheus that does not answer within the timeout
// is an error that says so, not a worker held.
func TestRunnerTimeout(t *testing.T) {
	fake := &fakePrometheus{delay: time.Minute, answer: func(string) (int, string) { return http.StatusOK, vectorOf("1") }}
	server := httptest.NewServer(fake)
	defer server.Close()
	cfg := Config{URL: server.URL, Timeout: 300 * time.Millisecond}
	client, err := NewAPI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan cache.ObjectName, 1)
	r := NewRunner(context.Background(), client, cfg, func(key cache.ObjectName) { done <- key })
	as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cart"}, Spec: appv1.AppServiceSpec{Canary: &appv1.Canary{
		Analysis: &appv1.CanaryAnalysis{Metrics: []appv1.AnalysisMetric{{Name: "errors", Query: "errors"}}}}}}
	key := cache.MetaObjectToName(as)
	start := time.Now()
	r.Start(key, as, as.Spec.Canary.Analysis, canary.Round{Hash: "h", Time: start}, "cart-canary")
	if waited := time.Since(start); waited > 100*time.Millisecond {
		t.Errorf("Start took %s: it must not wait for Prometheus", waited)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the round did not end at its timeout")
	}
	got := r.Results(key)
	if len(got) != 1 || got[0].Err != "Prometheus did not answer within 300ms" {
		t.Errorf("results %+v, want one error saying Prometheus did not answer within 300ms", got)
	}
}

// TestBearerTokenRotates: the token file is read at each request, as a
// projected ServiceAccount token rotates under a running controller.
func TestBearerTokenRotates(t *testing.T) {
	fake := &fakePrometheus{answer: func(string) (int, string) { return http.StatusOK, vectorOf("1") }}
	server := httptest.NewServer(fake)
	defer server.Close()
	token := filepath.Join(t.TempDir(), "token")
	for _, tok := range []string{"first", "second"} {
		if err := os.WriteFile(token, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		client, err := NewAPI(Config{URL: server.URL, BearerTokenFile: token})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := client.Query(context.Background(), "up", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	client, err := NewAPI(Config{URL: server.URL, BearerTokenFile: token})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("third"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := client.Query(context.Background(), "up", time.Now()); err != nil {
		t.Fatal(err)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if want := []string{"Bearer first", "Bearer second", "Bearer third"}; !cmp.Equal(want, fake.auth) {
		t.Errorf("Authorization headers %q, want %q: the file read at each request", fake.auth, want)
	}
}

func TestNotConfigured(t *testing.T) {
	client, err := NewAPI(Config{})
	if err != nil || client != nil {
		t.Fatalf("NewAPI without a URL = %v, %v; want nil, nil", client, err)
	}
	r := NewRunner(context.Background(), nil, Config{}, func(cache.ObjectName) { t.Error("done called without a Prometheus") })
	if r.Configured() {
		t.Error("a runner without a client says it is configured")
	}
	as := &appv1.AppService{Spec: appv1.AppServiceSpec{Canary: &appv1.Canary{Analysis: &appv1.CanaryAnalysis{Metrics: []appv1.AnalysisMetric{{Name: "m", Query: "q"}}}}}}
	r.Start(cache.ObjectName{Name: "x"}, as, as.Spec.Canary.Analysis, canary.Round{}, "x-canary")
	if _, err := NewAPI(Config{URL: "http://127.0.0.1:1", CAFile: "/nonexistent/ca.pem"}); err == nil {
		t.Error("NewAPI with a CA file that does not exist: no error")
	}
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAPI(Config{URL: "http://127.0.0.1:1", CAFile: notPEM}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("NewAPI with a CA file of no certificate: %v, want an error saying so", err)
	}
	if _, err := NewAPI(Config{URL: "http://127.0.0.1:1", BearerTokenFile: "/nonexistent/token"}); err == nil {
		t.Error("NewAPI with a token file that does not exist: no error")
	}
}
