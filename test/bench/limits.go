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
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"example.com/appservice-controller/internal/appcache"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
	appinformers "example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// LimitRun: a backlog of N AppServices of one spec against the limit (the
// same writes made directly), the same N and spec, side by side, with
// where the time and the CPU go. Runs -limit-runs pairs; the medians are
// reported (the ratio's is of the pairs' ratios), and the breakdown of the
// pair whose ratio is the median.
type LimitRun struct {
	Spec           string    `json:"spec"`
	N              int       `json:"n"`
	Runs           int       `json:"runs"`
	LimitSeconds   float64   `json:"limitSeconds"`
	BacklogSeconds float64   `json:"backlogSeconds"`
	Ratio          float64   `json:"ratio"`
	Limits         []float64 `json:"limits"`
	Backlogs       []float64 `json:"backlogs"`
	Ratios         []float64 `json:"ratios"`
	// Pair is the index of the pair whose ratio is the median: the CPU
	// times during its limit's writes, and its backlog's breakdown.
	Pair     int      `json:"pair"`
	LimitCPU CPUTimes `json:"limitCpu"`
	Backlog  Backlog  `json:"backlog"`
	// With -limit-watched, each turn has a third run: the limit's writes
	// with the controller's informers running in the benchmark (watched),
	// timed from before their lists. Floors are the turns' watched/limit,
	// Floor their median: what a controller built on informers pays over
	// the limit before it spends anything of its own; Own is the median of
	// the turns' backlog/watched, what this controller adds to that.
	// WatchedCPU is the median pair's turn's.
	WatchedSeconds float64   `json:"watchedSeconds,omitempty"`
	Watched        []float64 `json:"watched,omitempty"`
	Floors         []float64 `json:"floors,omitempty"`
	Floor          float64   `json:"floor,omitempty"`
	Own            float64   `json:"own,omitempty"`
	WatchedCPU     CPUTimes  `json:"watchedCpu"`
	// With -baseline, each turn has one more run: the same backlog under
	// the baseline's controller (an earlier commit's, -baseline-name).
	// Baselines are its times, BaselineRatios the turns' backlog/baseline
	// (this controller's time over the baseline's, in one turn), VsBaseline
	// their median: a regression shows there, with the limit beside it
	// for the machine's own drift. BaselineBacklog is the median turn's.
	Baseline        string    `json:"baseline,omitempty"`
	BaselineSeconds float64   `json:"baselineSeconds,omitempty"`
	Baselines       []float64 `json:"baselines,omitempty"`
	BaselineRatios  []float64 `json:"baselineRatios,omitempty"`
	VsBaseline      float64   `json:"vsBaseline,omitempty"`
	BaselineBacklog *Backlog  `json:"baselineBacklog,omitempty"`
}

// CPUTimes are the CPU times (seconds) the API server, etcd and the
// benchmark itself (the limit's writers; in the backlog, its reading of
// the audit log, which sees it converge) used over a measurement.
type CPUTimes struct {
	APIServer float64 `json:"apiServerSeconds"`
	Etcd      float64 `json:"etcdSeconds"`
	Benchmark float64 `json:"benchmarkSeconds"`
}

func cpuTimes(e *env) (CPUTimes, error) {
	api, err := e.cluster.CPUSeconds("kube-apiserver")
	if err != nil {
		return CPUTimes{}, err
	}
	etcd, err := e.cluster.CPUSeconds("etcd")
	if err != nil {
		return CPUTimes{}, err
	}
	self, err := localcluster.ProcessCPUSeconds(os.Getpid())
	return CPUTimes{APIServer: api, Etcd: etcd, Benchmark: self}, err
}

func (c CPUTimes) minus(before CPUTimes) CPUTimes {
	return CPUTimes{APIServer: c.APIServer - before.APIServer, Etcd: c.Etcd - before.Etcd, Benchmark: c.Benchmark - before.Benchmark}
}

// Backlog is one backlog run: the controller started over N AppServices
// that exist, until every child exists and every status is written. Its
// times are seconds from the process's start, read from the API server's
// audit log (the controller's reads are audited in this run).
type Backlog struct {
	Seconds float64 `json:"seconds"`
	// The first request the API server received from the controller;
	// the end of its CRD check (the CRDs' reads and the discovery
	// before the first list); the informers' lists, from the first
	// received to the caches' sync (the workers' start, from the
	// controller's log); the first write received.
	FirstRequest float64 `json:"firstRequestSeconds"`
	CRDsChecked  float64 `json:"crdsCheckedSeconds"`
	ListsStart   float64 `json:"listsStartSeconds"`
	ListsDone    float64 `json:"listsDoneSeconds"`
	Lists        int     `json:"lists"`
	FirstWrite   float64 `json:"firstWriteSeconds"`
	// Listed is what the controller's informers listed (listed).
	Listed []string `json:"listed"`
	// The writes answered before convergence, those refused with a
	// conflict among them, and the last one's answer.
	Writes    int     `json:"writes"`
	Conflicts int     `json:"conflicts"`
	LastWrite float64 `json:"lastWriteSeconds"`
	// CPU time over the run: the controller's, and the API server's,
	// etcd's and the benchmark's.
	ControllerCPU float64  `json:"controllerCpuSeconds"`
	Server        CPUTimes `json:"serverCpu"`
	// The workers: how many, their syncs' total time (the reconcile
	// histogram's sum) and count; of the client's requests in that run
	// (the syncs' and the informers'), the time spent waiting on the
	// client's rate limiter and in the requests themselves.
	Workers            int     `json:"workers"`
	Syncs              float64 `json:"syncs"`
	SyncSeconds        float64 `json:"syncSeconds"`
	RateLimiterSeconds float64 `json:"rateLimiterSeconds"`
	RequestSeconds     float64 `json:"requestSeconds"`
	// Shares of the controller's CPU profile (its first profileSeconds),
	// in what cpuParts names.
	Shares map[string]float64 `json:"cpuShares"`
}

// cpuParts name where the controller's CPU goes, each by the functions
// that do it and what they call: a sample can be in more than one (the
// syncs' requests are in the syncs and in the requests).
var cpuParts = []struct{ name, function string }{
	{"syncs, their requests included", "main.(*Controller).syncHandler"},
	{"building the desired objects", "internal/children.New"},
	{"requests: encode, send, decode the answer (the syncs' and the Events')", "k8s.io/client-go/rest.(*Request)"},
	{"the status, its request included", "main.(*Controller).updateStatus"},
	{"Events: recording and sending", "k8s.io/client-go/tools/record"},
	{"informers: their watches' events read and decoded", "k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive"},
	{"informers: lists, the cache and the handlers", "k8s.io/client-go/tools/cache"},
	{"the event broadcaster", "k8s.io/apimachinery/pkg/watch.(*Broadcaster)"},
	{"TLS", "crypto/tls"},
	{"garbage collection", "runtime.gcBgMarkWorker"},
}

// measureLimits measures the limit and the backlog side by side for each
// of -limit-specs and -limit-sizes.
func measureLimits(o options, res *Results) error {
	defer func(saved string) { specKind = saved }(specKind)
	for _, spec := range o.limitSpecs {
		specKind = spec
		for _, n := range o.limitSizes {
			r, err := measureLimitRun(o, n)
			if err != nil {
				return err
			}
			res.Limits = append(res.Limits, r)
			b := r.Backlog
			logf("%s, n=%d: limit %.2fs, backlog %.2fs (%.2fx); first write at %.2fs, controller CPU %.1f ms/AppService, "+
				"API server %.1f ms/AppService (limit %.1f)", spec, n, r.LimitSeconds, r.BacklogSeconds, r.Ratio,
				b.FirstWrite, 1000*b.ControllerCPU/float64(n), 1000*b.Server.APIServer/float64(n), 1000*r.LimitCPU.APIServer/float64(n))
			if o.limitWatched {
				logf("%s, n=%d: the limit watched %.2fs, the floor %.2fx (%v), the backlog over it %.2fx", spec, n,
					r.WatchedSeconds, r.Floor, r.Floors, r.Own)
			}
		}
	}
	return nil
}

// measureLimitRun runs -limit-runs turns of the limit and the backlog
// (and, with -limit-watched, the watched limit), each turn starting one
// later in that order than the last (limit first in the first turn, the
// backlog first in the second, ...), so that a machine whose speed drifts
// over the turns weighs on every side alike. The ratio is the median of
// the pairs' ratios: a turn's runs are a minute or two apart, its ratio
// the least touched by the drift.
func measureLimitRun(o options, n int) (LimitRun, error) {
	r := LimitRun{Spec: specKind, N: n, Runs: o.limitRuns}
	var limitCPU, watchedCPU []CPUTimes
	var watchedListed [][]string
	var backlogs []Backlog
	limit := func(i int) error {
		logf("limit, %s, n=%d, run %d/%d", specKind, n, i+1, r.Runs)
		l, err := measureLimit(o, n, false)
		r.Limits, limitCPU = append(r.Limits, l.Seconds), append(limitCPU, l.CPU)
		return err
	}
	backlog := func(i int) error {
		logf("backlog, %s, n=%d, run %d/%d", specKind, n, i+1, r.Runs)
		b, err := measureBacklog(o, n)
		r.Backlogs, backlogs = append(r.Backlogs, b.Seconds), append(backlogs, b)
		return err
	}
	watched := func(i int) error {
		logf("the limit watched, %s, n=%d, run %d/%d", specKind, n, i+1, r.Runs)
		l, err := measureLimit(o, n, true)
		r.Watched, watchedCPU, watchedListed = append(r.Watched, l.Seconds), append(watchedCPU, l.CPU), append(watchedListed, l.Listed)
		return err
	}
	var baselines []Backlog
	baseline := func(i int) error {
		logf("backlog under the baseline %s, %s, n=%d, run %d/%d", o.baselineName, specKind, n, i+1, r.Runs)
		ob := o
		ob.controller = o.baseline
		b, err := measureBacklog(ob, n)
		baselines = append(baselines, b)
		return err
	}
	runs := []func(int) error{limit, backlog}
	if o.limitWatched {
		runs = append(runs, watched)
	}
	if o.baseline != "" {
		runs = append(runs, baseline)
	}
	for i := range r.Runs {
		for k := range runs {
			if err := runs[(i+k)%len(runs)](i); err != nil {
				return r, err
			}
		}
		r.Ratios = append(r.Ratios, r.Backlogs[i]/r.Limits[i])
		// The floor stands for the controller only if it watches what
		// the controller watched.
		if o.limitWatched && !slices.Equal(watchedListed[i], backlogs[i].Listed) {
			return r, fmt.Errorf("the floor's informers listed %q, the controller's %q: watchAsTheController must start "+
				"the informers the controller starts", watchedListed[i], backlogs[i].Listed)
		}
	}
	r.LimitSeconds, r.BacklogSeconds, r.Ratio = median(r.Limits), median(r.Backlogs), median(r.Ratios)
	// The breakdown compares the runs of one turn, the median pair's: a
	// limit and a backlog of different turns may have run at different
	// speeds.
	r.Pair = medianIndex(r.Ratios)
	r.LimitCPU, r.Backlog = limitCPU[r.Pair], backlogs[r.Pair]
	if o.limitWatched {
		own := make([]float64, r.Runs)
		for i := range r.Runs {
			r.Floors = append(r.Floors, r.Watched[i]/r.Limits[i])
			own[i] = r.Backlogs[i] / r.Watched[i]
		}
		r.WatchedSeconds, r.Floor, r.Own = median(r.Watched), median(r.Floors), median(own)
		r.WatchedCPU = watchedCPU[r.Pair]
	}
	if o.baseline != "" {
		r.setBaseline(o.baselineName, baselines)
	}
	return r, nil
}

// setBaseline records the backlogs under the baseline's controller
// (named name), one per turn, beside this controller's.
func (r *LimitRun) setBaseline(name string, baselines []Backlog) {
	r.Baseline, r.Baselines, r.BaselineRatios = name, nil, nil
	for i, b := range baselines {
		r.Baselines = append(r.Baselines, b.Seconds)
		r.BaselineRatios = append(r.BaselineRatios, r.Backlogs[i]/b.Seconds)
	}
	r.BaselineSeconds, r.VsBaseline = median(r.Baselines), median(r.BaselineRatios)
	r.BaselineBacklog = &baselines[medianIndex(r.BaselineRatios)]
}

// medianIndex is the index of xs's median (the lower of the middle two).
func medianIndex(xs []float64) int {
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	return order[(len(xs)-1)/2]
}

// measureBacklog creates n AppServices before the controller starts, then
// times the controller alone: from its start until the audit log shows
// every Deployment and Service created and every status written
// (waitWritten), the writes the limit makes, as the limit's last answer
// ends the limit. It takes the controller's CPU profile meanwhile
// (backlog-cpu-<spec>-<N>.pb.gz) and reads where the time went.
func measureBacklog(o options, n int) (Backlog, error) {
	var b Backlog
	e, err := newEnvWith(o, fmt.Sprintf("backlog-%d", n), localcluster.Options{Profiling: true})
	if err != nil {
		return b, err
	}
	defer e.cluster.Stop()
	if err := installCRD(o, e); err != nil {
		return b, err
	}
	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Create(context.Background(), appService(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return b, err
	}
	before, err := cpuTimes(e)
	if err != nil {
		return b, err
	}
	ctrl, err := startControllerIn(o, e, []string{localcluster.AuditReadsGroup})
	if err != nil {
		return b, err
	}
	defer stop(ctrl)
	profilePath := filepath.Join(o.out, fmt.Sprintf("backlog-cpu-%s-%d.pb.gz", specKind, n))
	profiled := profileController(ctrl, profilePath, profileSeconds(n))
	serverProfiled := profileAPIServer(e, filepath.Join(o.out, fmt.Sprintf("backlog-apiserver-cpu-%s-%d.pb.gz", specKind, n)), profileSeconds(n))
	done, err := waitWritten(e.cluster, controllerUser, ctrl.Started(), n, 10*time.Minute)
	if err != nil {
		return b, err
	}
	b.Seconds = done.Sub(ctrl.Started()).Seconds()
	after, err := cpuTimes(e)
	if err != nil {
		return b, err
	}
	b.Server = after.minus(before)
	if _, b.ControllerCPU, err = ctrl.Usage(); err != nil {
		return b, err
	}
	if err := b.readAudit(e, ctrl); err != nil {
		return b, err
	}
	if err := b.readMetrics(o, ctrl); err != nil {
		return b, err
	}
	if err := <-profiled; err != nil {
		return b, err
	}
	if err := <-serverProfiled; err != nil {
		return b, err
	}
	b.Shares = map[string]float64{}
	functions := make([]string, len(cpuParts))
	for i, p := range cpuParts {
		functions[i] = p.function
	}
	shares, err := cpuShares(profilePath, functions...)
	if err != nil {
		return b, err
	}
	for i, p := range cpuParts {
		b.Shares[p.name] = shares[i]
	}
	return b, nil
}

// waitWritten follows the audit log until it shows, for each of n
// AppServices, the Deployment and the Service user created and the status
// it wrote, from since on; it returns when the last of those writes was
// answered. The backlog is timed as the limit is, by its writes' answers,
// and by a file the API server writes on both sides: a watch of the
// benchmark's own (newTracker) would be served by the API server and
// decoded by the benchmark, on the same two cores, on one side only.
func waitWritten(c *localcluster.Cluster, user string, since time.Time, n int, timeout time.Duration) (time.Time, error) {
	tail, err := c.TailAudit()
	if err != nil {
		return time.Time{}, err
	}
	defer tail.Close()
	written := map[string]map[string]bool{"deployments": {}, "services": {}, "appservices/status": {}}
	var last time.Time
	deadline := time.Now().Add(timeout)
	for {
		events, err := tail.Next()
		if err != nil {
			return last, err
		}
		for _, ev := range events {
			if !wroteSince(ev, user, since) {
				continue
			}
			what := ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				what += "/" + ev.ObjectRef.Subresource
			}
			if names, ok := written[what]; ok && !names[ev.ObjectRef.Name] {
				names[ev.ObjectRef.Name] = true
				if ev.StageTimestamp.After(last) {
					last = ev.StageTimestamp
				}
			}
		}
		d, s, st := len(written["deployments"]), len(written["services"]), len(written["appservices/status"])
		if d >= n && s >= n && st >= n {
			return last, nil
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("after %s: %d Deployments, %d Services, %d statuses written of %d", timeout, d, s, st, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wroteSince reports whether ev is a write of user's, received from since
// on, that the API server answered with success.
func wroteSince(ev localcluster.AuditEvent, user string, since time.Time) bool {
	return ev.Stage == "ResponseComplete" && ev.User.Username == user && !ev.RequestReceivedTimestamp.Before(since) &&
		(ev.Verb == "create" || ev.Verb == "update" || ev.Verb == "patch") &&
		ev.ObjectRef != nil && ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300
}

// watcherUser runs the floor's informers (watchAsTheController).
const watcherUser = "bench-watcher"

// watchAsTheController starts, in the benchmark's process, the informers
// the controller starts (newInformerFactories and NewController in the
// repository's root, and the Activities' controller): the same kinds, label
// selectors, transforms and encodings (protobuf for the built-in kinds,
// JSON for ours, uncompressed), over every namespace; the HTTPRoutes' where
// the spec makes them. Start starts them and returns once they have listed;
// stop ends them. They do nothing else: the limit watched by them is what
// any controller built on informers pays before it does anything of its
// own.
//
// They run as watcherUser, whose reads are audited as the controller's
// are in the backlog's run: measureLimit reads what they listed, and
// measureLimitRun checks it against what the controller listed.
func watchAsTheController(e *env) (start func() error, stop func(), err error) {
	kubeconfig, err := e.cluster.MintUser(watcherUser, "system:masters", localcluster.AuditReadsGroup)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := localcluster.RESTConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg.DisableCompression = true
	kubeClient, appClient, gatewayClient := kubernetes.NewForConfigOrDie(protobuf(cfg)), clientset.NewForConfigOrDie(cfg), gatewayclient.NewForConfigOrDie(cfg)

	ourLabel := func(lo *metav1.ListOptions) { lo.LabelSelector = appv1.LabelAppService }
	kube := informers.NewSharedInformerFactoryWithOptions(kubeClient, 0,
		informers.WithTweakListOptions(ourLabel), informers.WithTransform(children.Trim))
	jobs := informers.NewSharedInformerFactoryWithOptions(kubeClient, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = appv1.LabelActivity }),
		informers.WithTransform(children.Trim))
	apps := appinformers.NewSharedInformerFactoryWithOptions(appClient, 0, appinformers.WithTransform(appcache.Transform))
	gateway := gatewayinformers.NewSharedInformerFactoryWithOptions(gatewayClient, 0,
		gatewayinformers.WithTweakListOptions(ourLabel), gatewayinformers.WithTransform(children.Trim))
	synced := []cache.InformerSynced{
		kube.Core().V1().ServiceAccounts().Informer().HasSynced,
		kube.Apps().V1().Deployments().Informer().HasSynced,
		kube.Core().V1().Services().Informer().HasSynced,
		kube.Networking().V1().Ingresses().Informer().HasSynced,
		kube.Policy().V1().PodDisruptionBudgets().Informer().HasSynced,
		kube.Autoscaling().V2().HorizontalPodAutoscalers().Informer().HasSynced,
		jobs.Batch().V1().Jobs().Informer().HasSynced,
		apps.App().V1().AppServices().Informer().HasSynced,
		apps.App().V1().Activities().Informer().HasSynced,
	}
	if specKind == specEveryChild {
		synced = append(synced, gateway.Gateway().V1().HTTPRoutes().Informer().HasSynced)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop = func() {
		cancel()
		kube.Shutdown()
		jobs.Shutdown()
		apps.Shutdown()
		gateway.Shutdown()
	}
	start = func() error {
		kube.Start(ctx.Done())
		jobs.Start(ctx.Done())
		apps.Start(ctx.Done())
		gateway.Start(ctx.Done())
		waitCtx, cancelWait := context.WithTimeout(ctx, 5*time.Minute)
		defer cancelWait()
		if !cache.WaitForCacheSync(waitCtx.Done(), synced...) {
			return fmt.Errorf("the controller's informers in the benchmark did not sync in 5 minutes")
		}
		return nil
	}
	return start, stop, nil
}

// listed is what requests listed, as informers do (a list, or a watch,
// which follows a list or is one: client-go's streaming lists), each once
// and in order: "<group>/<resource> <namespace> <label selector>".
func listed(requests []localcluster.AuditEvent) []string {
	var out []string
	for _, r := range requests {
		if r.Verb != "list" && r.Verb != "watch" || r.ObjectRef == nil {
			continue
		}
		selector := ""
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
			selector = u.Query().Get("labelSelector")
		}
		out = append(out, fmt.Sprintf("%s/%s %s %s", r.ObjectRef.APIGroup, r.ObjectRef.Resource, r.ObjectRef.Namespace, selector))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// profileSeconds is how long the controller's CPU profile of a backlog of
// n lasts: its whole run, as far as the controller's bound on profiles
// (60 s) allows.
func profileSeconds(n int) int { return min(60, max(5, 15*n/1000+5)) }

// profileController takes the controller's CPU profile of its first
// seconds, as soon as its metrics server answers, into path; the channel
// gets the outcome.
func profileController(ctrl *harness.Controller, path string, seconds int) <-chan error {
	done := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body, err := ctrl.Get(ctrl.MetricsAddr, "/debug/pprof/profile?seconds="+strconv.Itoa(seconds))
			if err == nil && code == http.StatusOK {
				done <- os.WriteFile(path, []byte(body), 0o644)
				return
			}
			if err == nil || time.Now().After(deadline) {
				done <- fmt.Errorf("the controller's CPU profile: %d %v", code, err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return done
}

// profileAPIServer takes the API server's CPU profile of the next seconds
// into path (started with Profiling); the channel gets the outcome.
func profileAPIServer(e *env, path string, seconds int) <-chan error {
	done := make(chan error, 1)
	go func() {
		data, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(seconds)).DoRaw(context.Background())
		if err != nil {
			done <- fmt.Errorf("the API server's CPU profile: %w", err)
			return
		}
		done <- os.WriteFile(path, data, 0o644)
	}()
	return done
}

// readAudit reads the run's timeline from the controller's requests in
// the audit log, and from its log when its caches synced.
func (b *Backlog) readAudit(e *env, ctrl *harness.Controller) error {
	started := ctrl.Started()
	requests, err := e.cluster.Requests(controllerUser, started)
	if err != nil {
		return err
	}
	at := func(t time.Time) float64 { return t.Sub(started).Seconds() }
	b.FirstRequest, b.ListsStart, b.FirstWrite = math.NaN(), math.NaN(), math.NaN()
	for _, r := range requests {
		received, answered := at(r.RequestReceivedTimestamp), at(r.StageTimestamp)
		if math.IsNaN(b.FirstRequest) {
			b.FirstRequest = received
		}
		switch {
		case r.Verb == "list" || r.Verb == "watch" && strings.Contains(r.RequestURI, "sendInitialEvents=true"):
			// An informer's list: a list, or a watch that sends the
			// current objects first (client-go's streaming lists).
			b.Lists++
			if math.IsNaN(b.ListsStart) {
				b.ListsStart = received
			}
		case r.Verb == "get" && math.IsNaN(b.ListsStart) &&
			(r.ObjectRef == nil || r.ObjectRef.Resource == "customresourcedefinitions"):
			// The CRD check and the discovery before the informers.
			b.CRDsChecked = max(b.CRDsChecked, answered)
		case r.Verb == "create" || r.Verb == "update" || r.Verb == "patch":
			if r.ObjectRef != nil && r.ObjectRef.Resource == "leases" || answered > b.Seconds {
				continue
			}
			b.Writes++
			if r.ResponseStatus != nil && r.ResponseStatus.Code == http.StatusConflict {
				b.Conflicts++
			}
			if math.IsNaN(b.FirstWrite) {
				b.FirstWrite = received
			}
			b.LastWrite = max(b.LastWrite, answered)
		}
	}
	b.Listed = listed(requests)
	if math.IsNaN(b.FirstWrite) || math.IsNaN(b.ListsStart) {
		return fmt.Errorf("the audit log of the backlog has no list or no write of %s", controllerUser)
	}
	// The informers' lists end, as streams, in an event the audit log does
	// not record: the workers start once every one has.
	synced, err := ctrl.LogTime(`"Starting workers" controller="appservice"`)
	if err != nil {
		return err
	}
	b.ListsDone = at(synced)
	return nil
}

// readMetrics reads the workers' time from the controller's metrics.
func (b *Backlog) readMetrics(o options, ctrl *harness.Controller) error {
	code, text, err := ctrl.Get(ctrl.MetricsAddr, "/metrics")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("the controller's metrics: %d", code)
	}
	b.Workers = workers(o)
	b.SyncSeconds = sumOf(text, "controller_runtime_reconcile_time_seconds_sum", `controller="appservice"`)
	b.Syncs = sumOf(text, "controller_runtime_reconcile_time_seconds_count", `controller="appservice"`)
	b.RateLimiterSeconds = sumOf(text, "rest_client_rate_limiter_duration_seconds_sum")
	b.RequestSeconds = sumOf(text, "rest_client_request_duration_seconds_sum")
	return nil
}

// workers is the controller's -workers in the benchmark's arguments, or
// its default.
func workers(o options) int {
	w := 32
	for i, a := range o.controllerArgs {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "workers="); ok {
			w, _ = strconv.Atoi(v)
		} else if a == "workers" && i+1 < len(o.controllerArgs) {
			w, _ = strconv.Atoi(o.controllerArgs[i+1])
		}
	}
	return w
}

// sumOf adds up the samples of series name (exactly) whose labels include
// every one of labels, in a /metrics text.
func sumOf(text, name string, labels ...string) float64 {
	var sum float64
	for line := range strings.SplitSeq(text, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) ||
			slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(series, l) }) {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			sum += v
		}
	}
	return sum
}

// ownGoal is the goal of what the controller adds over the floor (issue
// 62): its backlog within 1.05× of the limit's writes made with its
// informers running, at every size and spec.
const ownGoal = 1.05

// limitsMarkdown is the table of measureLimits: the ratios, then the
// breakdown.
func (r *Results) limitsMarkdown() string {
	if len(r.Limits) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### The backlog against the limit, both specs (issue 45)\n\n")
	b.WriteString("| spec | AppServices | pairs | limit (s) | backlog (s) | ratio (median of the pairs') | the pairs' ratios |\n" +
		"|---|---:|---:|---:|---:|---:|---|\n")
	for _, l := range r.Limits {
		ratios := make([]string, len(l.Ratios))
		for i, x := range l.Ratios {
			ratios[i] = fmt.Sprintf("%.2f×", x)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.2f | %.2f | %.2f× | %s |\n", l.Spec, l.N, l.Runs, l.LimitSeconds, l.BacklogSeconds, l.Ratio,
			strings.Join(ratios, ", "))
	}
	if len(r.Limits[0].Watched) > 0 {
		b.WriteString("\nThe floor: the limit's writes with the controller's informers running in the benchmark, timed from before " +
			"their lists (-limit-watched), in the same turns:\n\n" +
			"| spec | AppServices | limit watched (s) | watched / limit (the floor, median) | the turns' | backlog / watched (median) | " +
			"goal (issue 62): backlog / watched ≤ 1.05× |\n" +
			"|---|---:|---:|---:|---|---:|---|\n")
		for _, l := range r.Limits {
			floors := make([]string, len(l.Floors))
			for i, x := range l.Floors {
				floors[i] = fmt.Sprintf("%.2f×", x)
			}
			met := "met"
			if l.Own > ownGoal {
				met = "**not met**"
			}
			fmt.Fprintf(&b, "| %s | %d | %.2f | %.2f× | %s | %.2f× | %s |\n", l.Spec, l.N, l.WatchedSeconds, l.Floor, strings.Join(floors, ", "), l.Own, met)
		}
	}
	if len(r.Limits[0].Baselines) > 0 {
		b.WriteString(r.baselineMarkdown())
	}
	b.WriteString("\nWhere the time and the CPU go (the pair whose ratio is the median; seconds from the controller's start; CPU per AppService):\n\n|  |")
	for _, l := range r.Limits {
		fmt.Fprintf(&b, " %s %d |", l.Spec, l.N)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(r.Limits)) + "\n")
	row := func(name string, cell func(l LimitRun) string) {
		b.WriteString("| " + name + " |")
		for _, l := range r.Limits {
			b.WriteString(" " + cell(l) + " |")
		}
		b.WriteString("\n")
	}
	secs := func(f func(b Backlog) float64) func(l LimitRun) string {
		return func(l LimitRun) string { return fmt.Sprintf("%.2f", f(l.Backlog)) }
	}
	perApp := func(f func(l LimitRun) float64) func(l LimitRun) string {
		return func(l LimitRun) string { return fmt.Sprintf("%.2f ms", 1000*f(l)/float64(l.N)) }
	}
	row("first request", secs(func(b Backlog) float64 { return b.FirstRequest }))
	row("CRDs checked", secs(func(b Backlog) float64 { return b.CRDsChecked }))
	row("informers' lists sent → caches synced (workers start)", func(l LimitRun) string {
		return fmt.Sprintf("%.2f → %.2f (%d)", l.Backlog.ListsStart, l.Backlog.ListsDone, l.Backlog.Lists)
	})
	row("first write", secs(func(b Backlog) float64 { return b.FirstWrite }))
	row("last write answered", secs(func(b Backlog) float64 { return b.LastWrite }))
	row("converged (the backlog)", secs(func(b Backlog) float64 { return b.Seconds }))
	row("the limit (its own start at 0)", func(l LimitRun) string { return fmt.Sprintf("%.2f", l.Limits[l.Pair]) })
	row("writes before convergence / AppService (conflicts)", func(l LimitRun) string {
		return fmt.Sprintf("%.2f (%d)", float64(l.Backlog.Writes)/float64(l.N), l.Backlog.Conflicts)
	})
	row("controller CPU", perApp(func(l LimitRun) float64 { return l.Backlog.ControllerCPU }))
	row("API server CPU, backlog / limit", func(l LimitRun) string {
		return fmt.Sprintf("%.2f / %.2f ms", 1000*l.Backlog.Server.APIServer/float64(l.N), 1000*l.LimitCPU.APIServer/float64(l.N))
	})
	row("etcd CPU, backlog / limit", func(l LimitRun) string {
		return fmt.Sprintf("%.2f / %.2f ms", 1000*l.Backlog.Server.Etcd/float64(l.N), 1000*l.LimitCPU.Etcd/float64(l.N))
	})
	if len(r.Limits[0].Watched) > 0 {
		row("the limit watched: its time, API server / etcd / the benchmark's CPU (writers and informers)", func(l LimitRun) string {
			c := l.WatchedCPU
			return fmt.Sprintf("%.2f s, %.2f / %.2f / %.2f ms", l.Watched[l.Pair], 1000*c.APIServer/float64(l.N),
				1000*c.Etcd/float64(l.N), 1000*c.Benchmark/float64(l.N))
		})
	}
	row("the benchmark's CPU, backlog (reading the audit log) / limit (its writers)", func(l LimitRun) string {
		return fmt.Sprintf("%.2f / %.2f ms", 1000*l.Backlog.Server.Benchmark/float64(l.N), 1000*l.LimitCPU.Benchmark/float64(l.N))
	})
	row("workers busy (syncs' time / workers × write window)", func(l LimitRun) string {
		window := l.Backlog.LastWrite - l.Backlog.FirstWrite
		return fmt.Sprintf("%.0f%%", 100*l.Backlog.SyncSeconds/(float64(l.Backlog.Workers)*window))
	})
	row("syncs / AppService", func(l LimitRun) string { return fmt.Sprintf("%.2f", l.Backlog.Syncs/float64(l.N)) })
	row("mean sync", func(l LimitRun) string { return fmt.Sprintf("%.0f ms", 1000*l.Backlog.SyncSeconds/l.Backlog.Syncs) })
	row("waiting on the rate limiter (worker-seconds)", secs(func(b Backlog) float64 { return b.RateLimiterSeconds }))
	row("in requests (worker-seconds)", secs(func(b Backlog) float64 { return b.RequestSeconds }))
	for _, p := range cpuParts {
		row("CPU: "+p.name, func(l LimitRun) string { return fmt.Sprintf("%.0f%%", 100*l.Backlog.Shares[p.name]) })
	}
	return b.String()
}

// baselineMarkdown is the table of -baseline: the backlog under this
// controller beside the same backlog under the baseline's, in the same
// turns, with the limit of each turn for the machine's drift.
func (r *Results) baselineMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe backlog beside the baseline's controller (%s, -baseline), in the same turns as the limit: "+
		"a regression shows as this / baseline above 1 while the limit stays (medians; CPU and writes per AppService, "+
		"of the median turns):\n\n", r.Limits[0].Baseline)
	b.WriteString("| spec | AppServices | turns | baseline (s) | this (s) | **this / baseline** | the turns' | baseline / limit | this / limit | " +
		"writes, this / baseline | controller CPU, this / baseline | API server CPU, this / baseline |\n" +
		"|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Limits {
		turns := make([]string, len(l.BaselineRatios))
		againstLimit := make([]float64, len(l.Baselines))
		for i, x := range l.BaselineRatios {
			turns[i] = fmt.Sprintf("%.2f×", x)
			againstLimit[i] = l.Baselines[i] / l.Limits[i]
		}
		n, ours, theirs := float64(l.N), l.Backlog, l.BaselineBacklog
		fmt.Fprintf(&b, "| %s | %d | %d | %.2f | %.2f | **%.2f×** | %s | %.2f× | %.2f× | %.2f / %.2f | %.2f / %.2f ms | %.2f / %.2f ms |\n",
			l.Spec, l.N, l.Runs, l.BaselineSeconds, l.BacklogSeconds, l.VsBaseline, strings.Join(turns, ", "), median(againstLimit), l.Ratio,
			float64(ours.Writes)/n, float64(theirs.Writes)/n, 1000*ours.ControllerCPU/n, 1000*theirs.ControllerCPU/n,
			1000*ours.Server.APIServer/n, 1000*theirs.Server.APIServer/n)
	}
	return b.String()
}
