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

package promtest

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// scrape parses what the Exporter serves, in the text format.
func scrape(t *testing.T, e *Exporter) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the exposition: %v", err)
	}
	if len(families) != 1 || families[MetricName] == nil {
		t.Fatalf("families: got %v, want only %s", families, MetricName)
	}
	f := families[MetricName]
	if f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("%s is a %v, want a counter", MetricName, f.GetType())
	}
	got := map[string]float64{}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		got[labels["namespace"]+"/"+labels["service"]+"/"+labels["code"]] = m.GetCounter().GetValue()
	}
	return got
}

func TestExporterCountsAtTheRatesSet(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	e := NewExporter()
	e.now = clock.now

	e.SetRate("shop", "web", "200", 10)
	e.SetRate("shop", "web", "503", 0.5)
	clock.step(4 * time.Second)
	want := map[string]float64{"shop/web/200": 40, "shop/web/503": 2}
	if got := scrape(t, e); !equal(got, want) {
		t.Errorf("after 4 s: got %v, want %v", got, want)
	}

	// A new rate goes on from what was counted: the counter never goes
	// down, and stops growing at rate 0.
	e.SetRate("shop", "web", "200", 1)
	e.SetRate("shop", "web", "503", 0)
	clock.step(10 * time.Second)
	want = map[string]float64{"shop/web/200": 50, "shop/web/503": 2}
	if got := scrape(t, e); !equal(got, want) {
		t.Errorf("after 10 s more at the new rates: got %v, want %v", got, want)
	}
	if v := e.Value("shop", "web", "200"); v != 50 {
		t.Errorf("Value: got %v, want 50", v)
	}
	if v := e.Value("shop", "api", "200"); v != 0 {
		t.Errorf("Value of a counter never set: got %v, want 0", v)
	}
}

func equal(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || math.Abs(v-w) > 1e-9 {
			return false
		}
	}
	return true
}

func TestStartWithoutTheBinarySaysHowToGetIt(t *testing.T) {
	t.Setenv(EnvBinary, "")
	_, err := Start(context.Background(), Options{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "hack/ensure-prometheus.sh") {
		t.Fatalf("got %v, want an error naming hack/ensure-prometheus.sh", err)
	}
}

// TestServerScrapesStopsAndComesBack runs the real prometheus: it scrapes an
// Exporter, gives back the rate of 5xx answers set, stops (queries fail),
// and, started again on the same port and storage, answers again with what
// it had, and scrapes again.
func TestServerScrapesStopsAndComesBack(t *testing.T) {
	if os.Getenv(EnvBinary) == "" {
		t.Skipf("%s is not set: run with %s=$(./hack/ensure-prometheus.sh) to test against a real Prometheus", EnvBinary, EnvBinary)
	}
	e := NewExporter()
	e.SetRate("shop", "web", "200", 20)
	e.SetRate("shop", "web", "500", 1.5)
	e.SetRate("shop", "web", "503", 0.5)
	e.SetRate("shop", "api", "200", 5)
	target := httptest.NewServer(e)
	defer target.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Dir: t.TempDir(), Targets: []string{strings.TrimPrefix(target.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	// Stops the server if the test ends before its own Stop (a second Stop does nothing).
	t.Cleanup(func() { _ = s.Stop() })

	const query = `sum(rate(gateway_requests_total{code=~"5.."}[5s]))`
	waitForRate(ctx, t, s, query, 2)

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, _, err := s.API().Query(ctx, query, time.Now()); err == nil {
		t.Fatal("a query to the stopped server succeeded")
	}

	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	// What was scraped before the stop is still there.
	v, _, err := s.API().Query(ctx, "count(gateway_requests_total)", time.Now())
	if err != nil {
		t.Fatalf("a query after the restart: %v", err)
	}
	t.Logf("right after the restart, count(gateway_requests_total) = %v", v)
	// And it scrapes again: a new rate shows.
	e.SetRate("shop", "web", "503", 2.5)
	waitForRate(ctx, t, s, query, 4)
}

// waitForRate waits for the query's series, then until its one value is
// within 10% of want.
func waitForRate(ctx context.Context, t *testing.T, s *Server, query string, want float64) {
	t.Helper()
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.WaitForSeries(wctx, query); err != nil {
		t.Fatal(err)
	}
	var last model.Value
	for wctx.Err() == nil {
		v, _, err := s.API().Query(wctx, query, time.Now())
		if err != nil {
			t.Fatalf("query %s: %v", query, err)
		}
		last = v
		if vec, ok := v.(model.Vector); ok && len(vec) == 1 && math.Abs(float64(vec[0].Value)-want) <= want/10 {
			t.Logf("%s = %v after %s", query, vec[0].Value, time.Since(start).Round(time.Millisecond))
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: got %v, want %v within 10%%", query, last, want)
}
