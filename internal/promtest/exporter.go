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

// Package promtest runs a real Prometheus server and the metrics it scrapes,
// for the tests of canary analysis: an Exporter that serves the request
// counters a gateway would export per backend Service, at rates the test
// sets, and a Server, the prometheus binary built by
// hack/ensure-prometheus.sh, that scrapes it every second and can be stopped
// and started again on the same port and storage. Only tests, the
// end-to-end tests and the demo import it.
//
// It imports nothing of this repository.
package promtest

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricName is the counter the Exporter serves, with the labels
// namespace, service and code (the HTTP status code, e.g. "503").
const MetricName = "gateway_requests_total"

// Exporter serves MetricName in Prometheus's exposition formats, as a
// gateway in front of the Services would: one counter per namespace,
// Service and status code. Each grows continuously at the rate its test
// set, computed when it is scraped, so that Prometheus's rate() over it
// gives that rate back. It is an http.Handler, safe for concurrent use.
type Exporter struct {
	handler http.Handler
	desc    *prometheus.Desc

	mu     sync.Mutex
	series map[seriesKey]*series
	// now is the clock; tests of the package replace it.
	now func() time.Time
}

type seriesKey struct{ namespace, service, code string }

// series is one counter: value at since, growing by rate each second after.
type series struct {
	value float64
	rate  float64
	since time.Time
}

// NewExporter returns an Exporter that serves no counter until SetRate.
func NewExporter() *Exporter {
	e := &Exporter{
		desc: prometheus.NewDesc(MetricName,
			"Requests the gateway passed to a backend Service, by the status code of the answer.",
			[]string{"namespace", "service", "code"}, nil),
		series: map[seriesKey]*series{},
		now:    time.Now,
	}
	// A registry of its own: only the gateway's counters, not the test
	// binary's Go and process metrics.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{e})
	e.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	return e
}

// SetRate makes the counter of namespace, service and code grow by
// perSecond from now on (0 stops it growing). A counter set for the first
// time starts at 0; one that exists keeps what it counted so far, so that it
// never goes down, as a real counter between restarts.
func (e *Exporter) SetRate(namespace, service, code string, perSecond float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	k := seriesKey{namespace, service, code}
	s, ok := e.series[k]
	if !ok {
		s = &series{since: now}
		e.series[k] = s
	}
	s.value = s.valueAt(now)
	s.rate = perSecond
	s.since = now
}

// Value is the counter of namespace, service and code now (0 if it was
// never set).
func (e *Exporter) Value(namespace, service, code string) float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.series[seriesKey{namespace, service, code}]
	if !ok {
		return 0
	}
	return s.valueAt(e.now())
}

// ServeHTTP serves the counters (text format, or what the scraper asks for).
func (e *Exporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.handler.ServeHTTP(w, r)
}

func (s *series) valueAt(t time.Time) float64 {
	elapsed := t.Sub(s.since).Seconds()
	if elapsed < 0 {
		elapsed = 0
	}
	return s.value + s.rate*elapsed
}

// collector computes the counters when Prometheus scrapes them.
type collector struct{ e *Exporter }

func (c collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.e.desc }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	now := c.e.now()
	for k, s := range c.e.series {
		ch <- prometheus.MustNewConstMetric(c.e.desc, prometheus.CounterValue, s.valueAt(now), k.namespace, k.service, k.code)
	}
}
