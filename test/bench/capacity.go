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

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The capacity of the shipped container (issue 62): how many realistic
// AppServices the manifests' 256 MiB memory limit holds, one in ten of
// them with a canary and its analysis running.

const (
	// shippedLimit is the memory limit of artifacts/deploy and the chart.
	shippedLimit = 256 << 20
	// shippedSoftLimit is the soft limit (GOMEMLIMIT) the controller sets
	// itself from that limit in its container: -memory-limit-ratio 0.9.
	// Outside a container the benchmark gives it the same through the
	// environment, which the controller honours as it would the cgroup's.
	shippedSoftLimit = shippedLimit * 9 / 10
	// capacityHeadroom is the share of the limit the documented capacity
	// leaves free at the peak.
	capacityHeadroom = 0.2
	// capacityCanaryEvery: one AppService in that many has a canary.
	capacityCanaryEvery = 10
	// capacityBenchLabel marks the AppServices with a canary, so that the
	// benchmark can list those alone.
	capacityBenchLabel = "bench.example.com/canary"
)

// CapacityRun is one size: N realistic AppServices (one in ten behind an
// HTTPRoute with a canary whose first step holds an hour, judged by an
// analysis of three metrics every 10 s), the controller run with the
// shipped soft limit. Memory is read at each moment as RSS (VmRSS) and
// the Go heap in use (go_memstats_heap_inuse_bytes); the peaks are the
// process's VmHWM and the largest heap the runtime's GC trace reported
// at the start of a cycle.
type CapacityRun struct {
	N        int `json:"n"`
	Canaries int `json:"canaries"`
	// Idle: the controller ready, no AppService.
	IdleRSSBytes  int64 `json:"idleRssBytes"`
	IdleHeapBytes int64 `json:"idleHeapBytes"`
	// ConvergeSeconds: the N created with 16 clients, until every
	// Deployment, Service and status exists.
	ConvergeSeconds float64 `json:"convergeSeconds"`
	// The peak during convergence.
	PeakRSSBytes  int64 `json:"peakRssBytes"`
	PeakHeapBytes int64 `json:"peakHeapBytes"`
	// Converged: 10 s after.
	ConvergedRSSBytes  int64 `json:"convergedRssBytes"`
	ConvergedHeapBytes int64 `json:"convergedHeapBytes"`
	// Canaries: a new image for each canaried AppService; until every one
	// has its first step's weight routed and a round of measurements;
	// then its memory after a window of measuring, and the peak since the
	// start (VmHWM).
	CanariesSeconds          float64 `json:"canariesSeconds"`
	CanaryRSSBytes           int64   `json:"canaryRssBytes"`
	CanaryHeapBytes          int64   `json:"canaryHeapBytes"`
	PeakWithCanariesRSSBytes int64   `json:"peakWithCanariesRssBytes"`
	PeakWithCanariesHeap     int64   `json:"peakWithCanariesHeapBytes"`
	// GCShare: the GC's CPU (go_cpu_classes_gc_total_cpu_seconds_total)
	// over the process's (process_cpu_seconds_total), from the start to
	// convergence, and over the canaries' window.
	GCShareConverging float64 `json:"gcShareConverging"`
	GCShareCanaries   float64 `json:"gcShareCanaries"`
	CPUSeconds        float64 `json:"cpuSeconds"`
	// Restart: from a new process's start to /readyz, over the N and their
	// canaries; its peak RSS 10 s after.
	RestartReadySeconds float64 `json:"restartReadySeconds"`
	RestartPeakRSSBytes int64   `json:"restartPeakRssBytes"`
}

// Capacity is the sizes measured, the line fitted through their peaks
// (the higher of the convergence's and the canaries'), and the number of
// AppServices whose fitted peak leaves capacityHeadroom of the limit.
type Capacity struct {
	LimitBytes     int64         `json:"limitBytes"`
	SoftLimitBytes int64         `json:"softLimitBytes"`
	Runs           []CapacityRun `json:"runs"`
	// PeakRSS ≈ FixedBytes + PerAppServiceBytes · N.
	FixedBytes         float64 `json:"fixedBytes"`
	PerAppServiceBytes float64 `json:"perAppServiceBytes"`
	// Documented: the largest N, rounded down to 500, whose fitted peak
	// is at most (1 − capacityHeadroom) of the limit.
	Documented int `json:"documented"`
	// HeldBySoftLimit: a size's peak was within 5% of the soft limit, and
	// the line leaves it out.
	HeldBySoftLimit bool `json:"heldBySoftLimit,omitempty"`
	// ThroughHeld: fewer than two other sizes, so the line goes through
	// a held peak.
	ThroughHeld bool `json:"throughHeld,omitempty"`
}

func measureCapacity(o options, res *Results) error {
	if o.skip["capacity"] {
		return nil
	}
	c := Capacity{LimitBytes: shippedLimit, SoftLimitBytes: shippedSoftLimit}
	for _, n := range o.capacitySizes {
		logf("capacity: %d realistic AppServices, one in %d with a canary and an analysis", n, capacityCanaryEvery)
		run, err := measureCapacityAt(o, n)
		if err != nil {
			return err
		}
		c.Runs = append(c.Runs, run)
	}
	c.fit()
	res.Capacity = c
	return nil
}

// peak is the run's peak RSS: the convergence's or, if higher, the
// canaries'.
func (r CapacityRun) peak() int64 {
	return max(r.PeakRSSBytes, r.PeakWithCanariesRSSBytes, r.RestartPeakRSSBytes)
}

// fit draws the line through the smallest and the largest size's peaks
// (two sizes: minutes, not an hour) and solves it for the limit less the
// headroom. A peak the soft limit held down (within 5% of it: the GC ran
// harder to stay under it) is not on that line, and is left out while two
// others remain.
func (c *Capacity) fit() {
	runs := slices.DeleteFunc(slices.Clone(c.Runs), func(r CapacityRun) bool {
		return float64(r.peak()) >= 0.95*float64(c.SoftLimitBytes)
	})
	c.HeldBySoftLimit = len(runs) < len(c.Runs)
	if len(runs) < 2 {
		// Through a held peak all the same: the line is then too flat, and
		// the capacity read off it an upper bound.
		runs, c.ThroughHeld = c.Runs, c.HeldBySoftLimit
	}
	if len(runs) < 2 {
		return
	}
	a, b := runs[0], runs[len(runs)-1]
	c.PerAppServiceBytes = float64(b.peak()-a.peak()) / float64(b.N-a.N)
	c.FixedBytes = float64(a.peak()) - c.PerAppServiceBytes*float64(a.N)
	if c.PerAppServiceBytes <= 0 {
		return
	}
	n := ((1-capacityHeadroom)*float64(c.LimitBytes) - c.FixedBytes) / c.PerAppServiceBytes
	c.Documented = int(math.Floor(n/500)) * 500
}

// capacityAppService is appService(i), and for one in capacityCanaryEvery
// an HTTPRoute and a canary held at its first step by an analysis.
func capacityAppService(i int) *appv1.AppService {
	as := appService(i)
	if i%capacityCanaryEvery != 0 {
		return as
	}
	as.Labels = map[string]string{capacityBenchLabel: "true"}
	as.Spec.HTTPRoute = &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: gatewayName}}}
	as.Spec.Canary = &appv1.Canary{
		Steps:    []appv1.CanaryStep{{Weight: 10, PauseSeconds: 3600}, {Weight: 100}},
		Analysis: &appv1.CanaryAnalysis{IntervalSeconds: 10, Metrics: analysisMetrics()},
	}
	return as
}

func measureCapacityAt(o options, n int) (CapacityRun, error) {
	r := CapacityRun{N: n, Canaries: (n + capacityCanaryEvery - 1) / capacityCanaryEvery}
	prom := newFakePrometheus(0)
	defer prom.Close()
	e, err := newEnv(o, fmt.Sprintf("capacity-%d", n))
	if err != nil {
		return r, err
	}
	defer e.cluster.Stop()
	ctx := context.Background()
	if err := localcluster.InstallGatewayAPI(ctx, e.cfg); err != nil {
		return r, err
	}
	// No kube-controller-manager (as for method 2): the benchmark plays
	// the Deployment controller for the canaries' Deployments alone, so
	// that they become available and take their weight.
	stopFake, err := fakeCanaryDeployments(e)
	if err != nil {
		return r, err
	}
	defer stopFake()

	// The shipped soft limit, and the runtime's GC trace for the heap at
	// each cycle's start.
	o.controllerEnv = append(slices.Clone(o.controllerEnv), fmt.Sprintf("GOMEMLIMIT=%d", shippedSoftLimit), "GODEBUG=gctrace=1")
	ctrl, err := startController(o, e, "-prometheus-url="+prom.URL)
	if err != nil {
		return r, err
	}
	defer func() { stop(ctrl) }()
	if _, err := waitReady(ctrl); err != nil {
		return r, err
	}
	time.Sleep(settle)
	idle, err := readMemory(ctrl)
	if err != nil {
		return r, err
	}
	r.IdleRSSBytes, r.IdleHeapBytes = idle.rss, idle.heap

	tr, err := newTracker(e)
	if err != nil {
		return r, err
	}
	began := time.Now()
	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, capacityAppService(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		tr.close()
		return r, err
	}
	err = tr.waitAll(n, 20*time.Minute)
	tr.close()
	if err != nil {
		return r, err
	}
	r.ConvergeSeconds = time.Since(began).Seconds()
	converged, err := readMemory(ctrl)
	if err != nil {
		return r, err
	}
	r.PeakRSSBytes = converged.hwm
	if r.PeakHeapBytes, err = tracePeak(ctrl); err != nil {
		return r, err
	}
	r.GCShareConverging = converged.gcShare(idle)
	time.Sleep(settle)
	if converged, err = readMemory(ctrl); err != nil {
		return r, err
	}
	r.ConvergedRSSBytes, r.ConvergedHeapBytes = converged.rss, converged.heap
	// What holds the memory, by type: go tool pprof -sample_index=inuse_space.
	if err := saveHeapProfile(ctrl, filepath.Join(o.out, fmt.Sprintf("heap-capacity-%d.pb.gz", n))); err != nil {
		return r, err
	}

	// The canaries: a new image each; until each is routed and measured.
	logf("capacity: %d canaries", r.Canaries)
	changed := time.Now()
	if err := inParallel(r.Canaries, func(k int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Patch(ctx, appService(k*capacityCanaryEvery).Name, types.MergePatchType,
			[]byte(`{"spec":{"image":"nginx:1.28"}}`), metav1.PatchOptions{})
		return err
	}); err != nil {
		return r, err
	}
	metrics := len(analysisMetrics())
	if err := pollEvery(2*time.Second, "a first round of measurements of every canary", func() (bool, error) {
		measured, _, err := canariesMeasuredIn(ctx, e, metrics, metav1.ListOptions{LabelSelector: capacityBenchLabel})
		return measured == r.Canaries, err
	}); err != nil {
		return r, err
	}
	r.CanariesSeconds = time.Since(changed).Seconds()
	before, err := readMemory(ctrl)
	if err != nil {
		return r, err
	}
	// Three rounds of every canary's analysis.
	time.Sleep(30 * time.Second)
	after, err := readMemory(ctrl)
	if err != nil {
		return r, err
	}
	r.CanaryRSSBytes, r.CanaryHeapBytes, r.PeakWithCanariesRSSBytes = after.rss, after.heap, after.hwm
	if r.PeakWithCanariesHeap, err = tracePeak(ctrl); err != nil {
		return r, err
	}
	r.GCShareCanaries = after.gcShare(before)
	r.CPUSeconds = after.cpu

	// A restart over them all.
	logf("capacity: restart over %d", n)
	stop(ctrl)
	if err := ctrl.Start(); err != nil {
		return r, err
	}
	ready, err := waitReady(ctrl)
	if err != nil {
		return r, err
	}
	r.RestartReadySeconds = ready.Seconds()
	time.Sleep(settle)
	restarted, err := readMemory(ctrl)
	if err != nil {
		return r, err
	}
	r.RestartPeakRSSBytes = restarted.hwm
	return r, nil
}

// memory is what readMemory reads of the controller at one moment.
type memory struct {
	rss, hwm, heap int64
	// cpu and gcCPU: the process's CPU seconds and the GC's.
	cpu, gcCPU float64
}

// gcShare is the GC's share of the CPU the process used since from.
func (m memory) gcShare(from memory) float64 {
	if m.cpu <= from.cpu {
		return 0
	}
	return (m.gcCPU - from.gcCPU) / (m.cpu - from.cpu)
}

// readMemory reads the controller's RSS and peak RSS from /proc, and the
// heap in use and the GC's CPU from its metrics.
func readMemory(p *harness.Controller) (memory, error) {
	var m memory
	var err error
	if m.rss, m.cpu, err = p.Usage(); err != nil {
		return m, err
	}
	if m.hwm, err = p.PeakRSS(); err != nil {
		return m, err
	}
	code, body, err := p.Get(p.MetricsAddr, "/metrics")
	if err != nil {
		return m, err
	}
	if code != 200 {
		return m, fmt.Errorf("/metrics: %d", code)
	}
	found := 0
	for line := range strings.Lines(body) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		switch name {
		case "go_memstats_heap_inuse_bytes":
			m.heap, found = int64(v), found+1
		case "go_cpu_classes_gc_total_cpu_seconds_total":
			m.gcCPU, found = v, found+1
		default:
			continue
		}
		if err != nil {
			return m, fmt.Errorf("/metrics: %s: %v", name, err)
		}
	}
	if found != 2 {
		return m, fmt.Errorf("/metrics: no go_memstats_heap_inuse_bytes or go_cpu_classes_gc_total_cpu_seconds_total")
	}
	return m, nil
}

// gcTrace matches the sizes in a line of GODEBUG=gctrace=1: "gc 7
// @2.345s 1%: ..., 12->13->6 MB, ...": the heap at the cycle's start, at
// its end, and live. The runtime writes the trace to the same stderr as
// the controller's logs, and a log line may break a trace line in two:
// the sizes are looked for anywhere in a line.
var gcTrace = regexp.MustCompile(`(\d+)->(\d+)->\d+ MB`)

// gcTracePeak is the largest heap of a GC cycle (at its start or its end,
// whichever is larger: the heap grows while it is marked) in the log, from
// the last run's banner (harness.Controller starts each run with one: the
// running process's) up to the byte offset until (the log's size at the
// moment asked), in whole MiB, the trace's own unit.
func gcTracePeak(log string, until int64) (int64, error) {
	f, err := os.Open(log)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var peak int64
	s := bufio.NewScanner(io.LimitReader(f, until))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "===== starting ") {
			peak = 0
			continue
		}
		for _, m := range gcTrace.FindAllStringSubmatch(line, -1) {
			start, _ := strconv.ParseInt(m[1], 10, 64)
			end, _ := strconv.ParseInt(m[2], 10, 64)
			peak = max(peak, start<<20, end<<20)
		}
	}
	return peak, s.Err()
}

// tracePeak is gcTracePeak of the running controller, up to now.
func tracePeak(p *harness.Controller) (int64, error) {
	size, err := logSize(p)
	if err != nil {
		return 0, err
	}
	return gcTracePeak(p.Log, size)
}

// logSize is the size of the controller's log now: where gcTracePeak
// stops.
func logSize(p *harness.Controller) (int64, error) {
	fi, err := os.Stat(p.Log)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// fakeCanaryDeployments plays the Deployment controller for the canaries'
// Deployments (those labelled appv1.LabelCanary): each spec it sees is
// reported rolled out and available at once, as kwok's Pods would be.
func fakeCanaryDeployments(e *env) (func(), error) {
	stopCh := make(chan struct{})
	f := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(benchNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = appv1.LabelCanary }))
	report := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		if s.ObservedGeneration == d.Generation && s.AvailableReplicas == want && s.Replicas == want && s.UpdatedReplicas == want {
			return
		}
		d = d.DeepCopy()
		now := metav1.Now()
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: want, UpdatedReplicas: want, ReadyReplicas: want, AvailableReplicas: want,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
					LastUpdateTime: now, LastTransitionTime: now},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
					LastUpdateTime: now, LastTransitionTime: now},
			},
		}
		if _, err := e.kube.AppsV1().Deployments(d.Namespace).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
			logf("capacity: the status of Deployment %s: %v", d.Name, err)
		}
	}
	if _, err := f.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    report,
		UpdateFunc: func(_, obj any) { report(obj) },
	}); err != nil {
		return nil, err
	}
	f.Start(stopCh)
	f.WaitForCacheSync(stopCh)
	return func() { close(stopCh) }, nil
}

// pollEvery calls done every every until it reports true, for at most
// 15 minutes (poll: every 100 ms; a check that lists asks less often).
func pollEvery(every time.Duration, what string, done func() (bool, error)) error {
	deadline := time.Now().Add(15 * time.Minute)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after 15m: %s", what)
		}
		time.Sleep(every)
	}
}

// markdown is the capacity's table: a row per size, then the line and
// the documented number.
func (c Capacity) markdown() string {
	if len(c.Runs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nCapacity of the shipped container: realistic AppServices, one in %d with a canary held at its first step "+
		"and an analysis of three metrics every 10 s; the controller with GOMEMLIMIT=%d (%s, as it sets itself in a %s container).\n\n",
		capacityCanaryEvery, c.SoftLimitBytes, mib(c.SoftLimitBytes), mib(c.LimitBytes))
	b.WriteString("| AppServices (canaries) | idle: RSS, heap | converging: time; peak RSS, heap; GC share | converged: RSS, heap | " +
		"canaries: to a first round; RSS, heap; peak RSS, heap; GC share | restart: ready; peak RSS |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, r := range c.Runs {
		fmt.Fprintf(&b, "| %d (%d) | %s, %s | %.1f s; %s, %s; %.1f%% | %s, %s | %.1f s; %s, %s; %s, %s; %.1f%% | %.2f s; %s |\n",
			r.N, r.Canaries, mib(r.IdleRSSBytes), mib(r.IdleHeapBytes),
			r.ConvergeSeconds, mib(r.PeakRSSBytes), mib(r.PeakHeapBytes), 100*r.GCShareConverging,
			mib(r.ConvergedRSSBytes), mib(r.ConvergedHeapBytes),
			r.CanariesSeconds, mib(r.CanaryRSSBytes), mib(r.CanaryHeapBytes), mib(r.PeakWithCanariesRSSBytes), mib(r.PeakWithCanariesHeap),
			100*r.GCShareCanaries, r.RestartReadySeconds, mib(r.RestartPeakRSSBytes))
	}
	switch {
	case c.ThroughHeld:
		b.WriteString("\nA size's peak was held by the soft limit (within 5% of it), and fewer than two others were measured: " +
			"the line goes through it, too flat, and the capacity read off it is an upper bound (measure a size between).\n")
	case c.HeldBySoftLimit:
		b.WriteString("\nA size's peak was held by the soft limit (within 5% of it): the line leaves it out.\n")
	}
	if c.PerAppServiceBytes > 0 {
		fmt.Fprintf(&b, "\nThe peak RSS ≈ %s + %.1f KiB × N; with %.0f%% of %s left free at the peak: **%d AppServices**.\n",
			mib(int64(c.FixedBytes)), c.PerAppServiceBytes/1024, 100*capacityHeadroom, mib(c.LimitBytes), c.Documented)
	}
	return b.String()
}
