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

// Command bench measures the controller against a real control plane (etcd
// and kube-apiserver only: no kube-controller-manager, so the controller is
// the only writer) and writes the results as JSON and a Markdown table.
//
//	go run ./test/bench -bin-dir DIR -controller bin/appservice-controller -peer bin/peer -out _output/bench
//
// `make bench` runs it, after building the peer (test/bench/peer), the
// controller-runtime controller it compares this one with (measurePeer).
// See BENCHMARKS.md for the method and the results.
//
// It may import any package of this repository, the test helpers
// (internal/harness, internal/localcluster) among them; nothing imports it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/google/pprof/profile"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
	appinformers "example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// controllerUser is the controller's identity: the audit log counts its
// writes apart from the benchmark's own.
const controllerUser = "appservice-controller"

// The benchmark's AppServices live in benchNamespace; the objects that are
// not theirs, in othersNamespace.
const (
	benchNamespace  = "bench"
	othersNamespace = "others"
)

// benchImage is the image of the AppServices the runs without a spec of
// their own create.
const benchImage = "nginx:1.27"

// gatewayName is the Gateway the AppServices' HTTPRoutes name.
const gatewayName = "public"

// parallelClients write the "limit" and create the AppServices.
const parallelClients = 16

// The controllers of the side-by-side runs (measurePeer).
const (
	sideOurs = "appservice-controller"
	sidePeer = "peer"
)

type options struct {
	binDir, controller, out string
	sizes                   []int
	runs                    int
	controllerArgs          []string
	controllerEnv           []string
	skip                    map[string]bool
	// peer is the peer's binary (test/bench/peer), peerSizes the numbers
	// of AppServices measurePeer runs both controllers over.
	peer      string
	peerSizes []int
	// limitSizes and limitSpecs are the numbers of AppServices and the
	// specs of measureLimits.
	limitSizes []int
	limitSpecs []string
	// capacitySizes are the numbers of AppServices of measureCapacity.
	capacitySizes []int
	// limitRuns is the number of pairs of measureLimits at each size;
	// limitWatched adds the watched limit to each (measureLimitRun).
	limitRuns    int
	limitWatched bool
	// baseline is an earlier commit's controller binary (baselineName its
	// commit): measureLimitRun runs its backlog too, in the same turns.
	baseline, baselineName string
	// sides are the controllers of the side-by-side runs, peerSpecs their
	// specs.
	sides, peerSpecs []string
}

// The AppServices' specs -spec chooses from.
const (
	specRealistic  = "realistic"
	specMinimal    = "minimal"
	specEveryChild = "every-child"
	specSidecar    = "sidecar"
)

func main() {
	var o options
	var sizes, peerSizes, limitSizes, capacitySizes, args, env string
	flag.StringVar(&o.binDir, "bin-dir", os.Getenv("APPSERVICE_BIN_DIR"), "Folder with the control plane's binaries (hack/ensure-binaries.sh).")
	flag.StringVar(&o.controller, "controller", "bin/appservice-controller", "The controller binary to measure.")
	flag.StringVar(&o.out, "out", "_output/bench", "Folder for results.json, results.md and the clusters' logs.")
	flag.StringVar(&sizes, "sizes", "100,1000,5000", "Numbers of AppServices for the convergence runs.")
	flag.StringVar(&o.peer, "peer", "bin/peer", "The peer's binary (go build -o bin/peer ./test/bench/peer), for the side-by-side runs.")
	flag.StringVar(&limitSizes, "limit-sizes", "1000,5000", "Numbers of AppServices for the backlog against the limit.")
	flag.StringVar(&capacitySizes, "capacity-sizes", "1000,5000,10000", "Numbers of AppServices for the capacity of the shipped container "+
		"(the line through the smallest and the largest peaks the soft limit did not hold gives the documented capacity).")
	limitSpecsFlag := flag.String("limit-specs", specMinimal+","+specRealistic, "The specs of the backlog against the limit, comma-separated.")
	flag.StringVar(&peerSizes, "peer-sizes", "1000,5000", "Numbers of AppServices for the side-by-side runs against the peer.")
	peerSpecs := flag.String("peer-specs", specMinimal+","+specRealistic+","+specEveryChild,
		"The specs of the side-by-side runs against the peer, comma-separated (the peer makes a Deployment and a Service of any).")
	sides := flag.String("sides", sideOurs+","+sidePeer, "The controllers of the side-by-side runs, comma-separated: "+
		"appservice-controller, peer, or both (to measure one again).")
	flag.IntVar(&o.limitRuns, "limit-runs", 3, "Pairs of the backlog against the limit at each size and spec (the pairs' median ratio is reported).")
	flag.BoolVar(&o.limitWatched, "limit-watched", true, "With each pair of the backlog against the limit, the limit's writes "+
		"with the controller's informers running in the benchmark: the floor of any controller built on informers.")
	flag.StringVar(&o.baseline, "baseline", "", "An earlier commit's controller binary (make bench builds BASELINE's): with each pair of the "+
		"backlog against the limit, the same backlog under it, in turns, to show a regression apart from the machine's drift.")
	flag.StringVar(&o.baselineName, "baseline-name", "", "What -baseline is, for the results (its commit).")
	flag.IntVar(&o.runs, "runs", 3, "Repetitions of the limit and convergence runs below 5000 (the median is reported).")
	flag.StringVar(&args, "controller-args", "", "Extra flags for the controller, space-separated (e.g. \"-workers=8\").")
	flag.StringVar(&env, "controller-env", "", "Extra environment for the controller only, space-separated KEY=VALUE "+
		"(e.g. \"GOMEMLIMIT=241591910\", the soft limit the manifests' 256Mi gives it).")
	flag.StringVar(&specKind, "spec", specRealistic, "The AppServices' spec: realistic (probes, a ConfigMap volume, envFrom, resources), "+
		"minimal (an image and a port) or every-child (realistic, with a ServiceAccount, an Ingress, an HTTPRoute, "+
		"a PodDisruptionBudget and a HorizontalPodAutoscaler) or sidecar (realistic, with a log-shipping sidecar).")
	skip := flag.String("skip", "", "Measurements to leave out, comma-separated: "+
		"convergence (the limit, convergence and backlog runs, with the steady state and the restart), "+
		"limits (the backlog against the limit, minimal and realistic, at 1000 and 5000, with where the time goes), "+
		"steady, latency, unrelated, config, crd, activities, throttle, canary, notify, analysis, templates, slow-prometheus, peer, flood, capacity, "+
		"events "+
		"(for quick tuning runs, or to run the peer alone: "+
		"-skip convergence,latency,unrelated,config,crd,activities,throttle,canary,notify,analysis,templates,slow-prometheus,flood,capacity,events; "+
		"the floods alone, both controllers: the same with peer in place of flood).")
	flag.Parse()
	if specKind != specRealistic && specKind != specMinimal && specKind != specEveryChild && specKind != specSidecar {
		fatalf("bad -spec %q: realistic, minimal, every-child or sidecar", specKind)
	}
	o.skip = map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		o.skip[strings.TrimSpace(s)] = true
	}
	o.sizes, o.peerSizes = parseSizes("-sizes", sizes), parseSizes("-peer-sizes", peerSizes)
	o.limitSizes = parseSizes("-limit-sizes", limitSizes)
	o.capacitySizes = parseSizes("-capacity-sizes", capacitySizes)
	if o.limitRuns < 1 {
		fatalf("bad -limit-runs %d: one pair at least", o.limitRuns)
	}
	o.limitSpecs, o.peerSpecs = parseSpecs("-limit-specs", *limitSpecsFlag), parseSpecs("-peer-specs", *peerSpecs)
	for _, side := range strings.Split(*sides, ",") {
		if side = strings.TrimSpace(side); side != sideOurs && side != sidePeer {
			fatalf("bad -sides %q", *sides)
		}
		o.sides = append(o.sides, side)
	}
	o.controllerArgs = strings.Fields(args)
	o.controllerEnv = strings.Fields(env)
	if o.binDir == "" {
		fatalf("-bin-dir (or APPSERVICE_BIN_DIR) is required")
	}
	if !o.skip["peer"] || !o.skip["flood"] {
		// Fail now rather than after the runs before the peer's.
		if _, err := os.Stat(o.peer); err != nil {
			fatalf("-peer: %v (go build -o bin/peer ./test/bench/peer, or -skip peer)", err)
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fatalf("%v", err)
	}
	res, err := run(o)
	if err != nil {
		fatalf("%v", err)
	}
	data, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(o.out, "results.json"), data, 0o644); err != nil {
		fatalf("%v", err)
	}
	md := res.markdown()
	if err := os.WriteFile(filepath.Join(o.out, "results.md"), []byte(md), 0o644); err != nil {
		fatalf("%v", err)
	}
	fmt.Print("\n" + md)
}

// parseSizes reads the comma-separated AppService counts of the flag name.
func parseSizes(name, value string) []int {
	fields := strings.Split(value, ",")
	sizes := make([]int, 0, len(fields))
	for _, s := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fatalf("bad %s %q", name, value)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// parseSpecs reads the comma-separated specs of the flag name.
func parseSpecs(name, value string) []string {
	var specs []string
	for _, spec := range strings.Split(value, ",") {
		switch spec = strings.TrimSpace(spec); spec {
		case specRealistic, specMinimal, specEveryChild, specSidecar:
			specs = append(specs, spec)
		default:
			fatalf("bad %s %q", name, value)
		}
	}
	return specs
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Results are what the benchmark reports.
type Results struct {
	Machine       string        `json:"machine"`
	Date          string        `json:"date"`
	Spec          string        `json:"spec"`
	Controller    []string      `json:"controllerArgs"`
	ControllerEnv []string      `json:"controllerEnv,omitempty"`
	Convergence   []Convergence `json:"convergence"`
	Latency       Latency       `json:"latency"`
	Steady        Steady        `json:"steadyState"`
	Unrelated     Unrelated     `json:"unrelatedObjects"`
	Restart       Restart       `json:"restart"`
	Config        Config        `json:"rolloutOnConfigChange"`
	CRDCost       CRDCost       `json:"crdCost"`
	Objects       []ObjectSize  `json:"objects"`
	Activities    Activities    `json:"activities"`
	// ConfigRollouts: one edit of a ConfigMap that N AppServices read,
	// under the default cap on config rollouts and without one.
	ConfigRollouts []ConfigRollouts `json:"configRollouts,omitempty"`
	Canaries       Canaries         `json:"canaries"`
	CanariesByPods Canaries         `json:"canariesByPods"`
	// Analysis: what canary analyses cost the controller and Prometheus;
	// SlowPrometheus: what a slow Prometheus costs the AppServices
	// without one (test/bench/analysis.go).
	Analysis Analysis `json:"analysis"`
	// Templates: the same analysis inline and in a template
	// (test/bench/templates.go).
	Templates []TemplatesRun `json:"templates,omitempty"`
	// Notifications: releases without and with a slow destination
	// (test/bench/notify.go).
	Notifications []NotifyRun `json:"notifications,omitempty"`
	// EventsLags: how far a backlog's Events trail its writes
	// (test/bench/events.go).
	EventsLags     []EventsLag    `json:"eventsLags,omitempty"`
	SlowPrometheus SlowPrometheus `json:"slowPrometheus"`
	// Peer: this controller and the peer side by side, per N, this one
	// first (measurePeer).
	Peer []PeerRun `json:"peer,omitempty"`
	// Floods: the metrics endpoint under a flood of random tokens, this
	// controller and the peer (test/bench/flood.go).
	Floods []Flood `json:"floods,omitempty"`
	// Limits: the backlog against the limit for both specs at 1000 and
	// 5000, with where the time goes (test/bench/limits.go).
	Limits []LimitRun `json:"limits,omitempty"`
	// Capacity: how many realistic AppServices the shipped container
	// holds (test/bench/capacity.go).
	Capacity Capacity `json:"capacity"`
}

// ConfigRollouts: N AppServices (one replica each) read one ConfigMap
// with rolloutOnConfigChange, on a cluster that runs their Pods; the
// ConfigMap is edited once. How long until every Deployment has rolled out
// the new template, and the most that were rolling at once (a Deployment
// on the new digest, replacing its Pods), seen through a watch.
type ConfigRollouts struct {
	N int `json:"n"`
	// Cap is -max-config-rollouts (0: none).
	Cap     int     `json:"cap"`
	Seconds float64 `json:"seconds"`
	Peak    int     `json:"peak"`
}

// Activities: N Activities (the second kind) created at once, each run to
// Succeeded by its Job on the fake nodes, then a restart over them.
type Activities struct {
	N                  int     `json:"n"`
	SucceededSeconds   float64 `json:"succeededSeconds"`
	WritesPerActivity  float64 `json:"writesPerActivity"`
	RSSBytes           int64   `json:"rssBytes"`
	BaselineRSSBytes   int64   `json:"baselineRssBytes"`
	RSSPerActivityByte float64 `json:"rssPerActivityBytes"`
	// A restart over the finished Activities: writes in the window after
	// it is ready.
	RestartWindowSeconds float64 `json:"restartWindowSeconds"`
	RestartWrites        int     `json:"restartWrites"`
}

// ObjectSize is the size of one AppService's object of a kind, as JSON:
// as the API server holds it (without managedFields) and as the
// controller's cache keeps it (children.Trim).
type ObjectSize struct {
	Kind      string `json:"kind"`
	JSONBytes int    `json:"jsonBytes"`
	// The encoded part of the cached child (children.Cached.Data), 0 for
	// an AppService, which is cached whole.
	CachedBytes int `json:"cachedEncodedBytes"`
	// The Go heap one such object holds once decoded: whole (without
	// managedFields, as the caches held every object before children.Trim)
	// and as the controller's cache keeps it now.
	HeapBytes       float64 `json:"heapBytes"`
	CachedHeapBytes float64 `json:"cachedHeapBytes"`
}

// CRDCost: the time to create N AppServices against N Deployments with the
// same Pod template, on a control plane without the controller.
type CRDCost struct {
	N                  int     `json:"n"`
	AppServicesSeconds float64 `json:"appServicesSeconds"`
	DeploymentsSeconds float64 `json:"deploymentsSeconds"`
	Ratio              float64 `json:"ratio"`
	// From the API server's metrics: the mean time it took to serve one
	// create of each (apiserver_request_duration_seconds).
	AppServiceCreateMillis float64 `json:"appServiceCreateMilliseconds"`
	DeploymentCreateMillis float64 `json:"deploymentCreateMilliseconds"`
	// From its CPU profile of the AppService creates: the share of its
	// CPU time in the CEL rules (cel.Validator.Validate) and in the
	// OpenAPI schema's validation. (Its metric
	// apiserver_cel_evaluation_duration_seconds cannot say: it observes
	// every node of the object the rules walk, nested in one another.)
	CELShare    float64 `json:"celShareOfCPU"`
	SchemaShare float64 `json:"schemaShareOfCPU"`
	// The same validation, offline (measureValidation).
	Validation Validation `json:"validation"`
}

// Convergence of N AppServices created at once, against the limit.
type Convergence struct {
	N                    int     `json:"n"`
	Runs                 int     `json:"runs"`
	LimitSeconds         float64 `json:"limitSeconds"`
	ConvergenceSeconds   float64 `json:"convergenceSeconds"`
	Ratio                float64 `json:"ratio"`
	BacklogSeconds       float64 `json:"backlogSeconds"`
	BacklogRatio         float64 `json:"backlogRatio"`
	WritesPerAppService  float64 `json:"writesPerAppService"`
	RSSBytes             int64   `json:"rssBytes"`
	BaselineRSSBytes     int64   `json:"baselineRssBytes"`
	RSSPerAppServiceByte float64 `json:"rssPerAppServiceBytes"`
	CPUSeconds           float64 `json:"cpuSeconds"`
}

// Steady state: writes when nothing changes.
type Steady struct {
	N                           int     `json:"n"`
	WindowSeconds               float64 `json:"windowSeconds"`
	Writes                      int     `json:"writes"`
	WritesPerAppServicePerHour  float64 `json:"writesPerAppServicePerHour"`
	ResyncPeriodSeconds         float64 `json:"resyncPeriodSeconds"`
	ResyncsInWindowPerAppServic int     `json:"resyncsInWindow"`
}

// Restart over N AppServices in sync.
type Restart struct {
	N            int     `json:"n"`
	ReadySeconds float64 `json:"readySeconds"`
	Writes       int     `json:"writes"`
}

func run(o options) (*Results, error) {
	res := &Results{
		Machine:       fmt.Sprintf("%d cores, %s/%s, %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version()),
		Date:          time.Now().UTC().Format(time.RFC3339),
		Spec:          specKind,
		Controller:    o.controllerArgs,
		ControllerEnv: o.controllerEnv,
	}
	if !o.skip["convergence"] {
		if err := measureConvergences(o, res); err != nil {
			return nil, err
		}
	}
	if !o.skip["limits"] {
		if err := measureLimits(o, res); err != nil {
			return nil, err
		}
	}
	if !o.skip["peer"] {
		if err := measurePeers(o, res); err != nil {
			return nil, err
		}
	}
	if !o.skip["latency"] {
		logf("latency at 50/s")
		lat, err := measureLatency(o, 50, 20*time.Second)
		if err != nil {
			return nil, err
		}
		res.Latency = lat
	}
	if !o.skip["unrelated"] {
		logf("unrelated objects")
		unr, err := measureUnrelated(o, 100, 10000)
		if err != nil {
			return nil, err
		}
		res.Unrelated = unr
	}
	if !o.skip["crd"] {
		logf("what the CRD costs the API server")
		crd, err := measureCRDCost(o, 1000)
		if err != nil {
			return nil, err
		}
		res.CRDCost = crd
	}
	if !o.skip["activities"] {
		logf("activities")
		act, err := measureActivities(o, 1000)
		if err != nil {
			return nil, err
		}
		res.Activities = act
	}
	if !o.skip["throttle"] {
		for _, maxRollouts := range []int{10, 0} {
			logf("config rollouts under a cap of %d (0: none)", maxRollouts)
			cr, err := measureConfigRollouts(o, 1000, maxRollouts)
			if err != nil {
				return nil, err
			}
			res.ConfigRollouts = append(res.ConfigRollouts, cr)
		}
	}
	if !o.skip["canary"] {
		logf("canaries")
		c, err := measureCanaries(o, 100, false)
		if err != nil {
			return nil, err
		}
		res.Canaries = c
		logf("canaries by Pods")
		if res.CanariesByPods, err = measureCanaries(o, 100, true); err != nil {
			return nil, err
		}
	}
	if !o.skip["notify"] {
		logf("notifications")
		runs, err := measureNotifications(o, 100, 10*time.Second)
		if err != nil {
			return nil, err
		}
		res.Notifications = runs
	}
	if err := measureEvents(o, res); err != nil {
		return nil, err
	}
	if err := measureAnalyses(o, res); err != nil {
		return nil, err
	}
	if err := measureFloods(o, res); err != nil {
		return nil, err
	}
	if err := measureCapacity(o, res); err != nil {
		return nil, err
	}
	if !o.skip["config"] && specKind != specMinimal {
		logf("rolloutOnConfigChange")
		cfg, err := measureConfig(o, 100, 10000, 10<<10)
		if err != nil {
			return nil, err
		}
		res.Config = cfg
	}
	return res, nil
}

// measureConvergences runs the limit, convergence and backlog runs of each
// of -sizes, -runs times below 5000 (the medians are reported), into res;
// the largest size's last run carries on into the steady state and the
// restart.
func measureConvergences(o options, res *Results) error {
	largest := slices.Max(o.sizes)
	for _, n := range o.sizes {
		runs := o.runs
		if n >= 5000 {
			runs = 1
		}
		var limits, convs, backlogs []float64
		var last Convergence
		for i := range runs {
			logf("limit, n=%d, run %d/%d", n, i+1, runs)
			l, err := measureLimit(o, n, false)
			if err != nil {
				return err
			}
			limits = append(limits, l.Seconds)
			logf("convergence, n=%d, run %d/%d", n, i+1, runs)
			// The largest size's last run carries on into the restart.
			c, err := measureConvergence(o, n, n == largest && i == runs-1 && !o.skip["steady"], res)
			if err != nil {
				return err
			}
			convs = append(convs, c.ConvergenceSeconds)
			last = c
			logf("backlog, n=%d, run %d/%d", n, i+1, runs)
			b, err := measureBacklog(o, n)
			if err != nil {
				return err
			}
			backlogs = append(backlogs, b.Seconds)
		}
		last.Runs = runs
		last.LimitSeconds = median(limits)
		last.ConvergenceSeconds = median(convs)
		last.Ratio = last.ConvergenceSeconds / last.LimitSeconds
		last.BacklogSeconds = median(backlogs)
		last.BacklogRatio = last.BacklogSeconds / last.LimitSeconds
		res.Convergence = append(res.Convergence, last)
		logf("n=%d: limit %.2fs, convergence %.2fs (%.2fx), backlog %.2fs (%.2fx), %.2f writes/AppService, RSS %s",
			n, last.LimitSeconds, last.ConvergenceSeconds, last.Ratio, last.BacklogSeconds, last.BacklogRatio, last.WritesPerAppService, mib(last.RSSBytes))
	}
	return nil
}

// env is one fresh control plane with clients for the benchmark.
type env struct {
	cluster *localcluster.Cluster
	kube    kubernetes.Interface
	apps    clientset.Interface
	gateway gatewayclient.Interface
	cfg     *rest.Config
}

func newEnv(o options, name string) (*env, error) {
	return newEnvWith(o, name, localcluster.Options{})
}

// newEnvWith is newEnv with more of the cluster's options.
func newEnvWith(o options, name string, opts localcluster.Options) (*env, error) {
	dir := filepath.Join(o.out, "clusters", name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts.BinDir, opts.Dir = o.binDir, dir
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	cfg, err := localcluster.RESTConfig(c.Kubeconfig)
	if err != nil {
		c.Stop()
		return nil, err
	}
	// No client-side limit, protobuf for the built-in kinds: the fastest a
	// client can write. No compression, as the controller's clients: the
	// API server would gzip every event of the trackers' watches.
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.DisableCompression = true
	e := &env{
		cluster: c, cfg: cfg, kube: kubernetes.NewForConfigOrDie(protobuf(cfg)),
		apps: clientset.NewForConfigOrDie(cfg), gateway: gatewayclient.NewForConfigOrDie(cfg),
	}
	bench := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if _, err := e.kube.CoreV1().Namespaces().Create(context.Background(), bench, metav1.CreateOptions{}); err != nil {
		c.Stop()
		return nil, err
	}
	if specKind == specEveryChild {
		// HTTPRoutes need the Gateway API, from the pinned module.
		if err := localcluster.InstallGatewayAPI(context.Background(), cfg); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return e, nil
}

// protobuf is cfg asking for protobuf, as the controller's client of the
// built-in kinds does (custom resources have no protobuf form).
func protobuf(cfg *rest.Config) *rest.Config {
	proto := rest.CopyConfig(cfg)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	proto.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return proto
}

// inParallel runs f(i) for i in [0, n) on parallelClients goroutines.
func inParallel(n int, f func(i int) error) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range parallelClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// specKind is the -spec flag: which AppServices the benchmark creates.
var specKind = "realistic"

// appService is the i-th AppService the benchmark creates: with -spec
// minimal, an image and a port; with -spec realistic (the default), what a
// web app says besides (see artifacts/examples/webapp.yaml): probes, a
// ConfigMap mounted as a file, envFrom, resources and a preStop sleep; with
// -spec sidecar, that and a log-shipping sidecar.
func appService(i int) *appv1.AppService {
	size := int32(1)
	as := &appv1.AppService{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%05d", i), Namespace: benchNamespace},
		Spec: appv1.AppServiceSpec{
			Size: &size, Image: benchImage,
			Ports:       []corev1.ServicePort{{Port: 80}},
			ServiceType: corev1.ServiceTypeClusterIP,
		},
	}
	if specKind == "minimal" {
		return as
	}
	s := &as.Spec
	health := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}}
	s.ReadinessProbe = &corev1.Probe{ProbeHandler: health, PeriodSeconds: 5}
	s.LivenessProbe = &corev1.Probe{ProbeHandler: health, InitialDelaySeconds: 5, PeriodSeconds: 20}
	s.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
	s.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	s.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	s.Volumes = []appv1.Volume{{Name: "config", ConfigMap: &appv1.ConfigMapVolumeSource{Name: as.Name + "-config"}}}
	s.VolumeMounts = []appv1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true}}
	if specKind == specSidecar {
		// A log shipper beside the app, reading its logs from an emptyDir
		// (artifacts/examples/sidecar.yaml).
		const logs = "logs"
		s.Volumes = append(s.Volumes, appv1.Volume{Name: logs, EmptyDir: &appv1.EmptyDirVolumeSource{}})
		s.VolumeMounts = append(s.VolumeMounts, appv1.VolumeMount{Name: logs, MountPath: "/var/log/nginx"})
		s.Sidecars = []appv1.Container{{
			Name: "log-shipper", Image: "fluent/fluent-bit:3.1",
			Ports:          []appv1.ContainerPort{{Name: "metrics", ContainerPort: 2020}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/api/v1/health", Port: intstr.FromString("metrics")}}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
			},
			VolumeMounts: []appv1.VolumeMount{{Name: logs, MountPath: "/var/log/nginx", ReadOnly: true}},
		}}
	}
	if specKind == specEveryChild {
		// What a Helm chart's defaults turned on would add.
		s.ServiceAccount = &appv1.ServiceAccount{Create: true, AutomountToken: new(false)}
		s.Ingress = &appv1.Ingress{
			ClassName: "nginx",
			Hosts:     []appv1.IngressHost{{Host: as.Name + ".example.com", Paths: []appv1.IngressPath{{Path: "/", PathType: networkingv1.PathTypePrefix}}}},
		}
		s.HTTPRoute = &appv1.HTTPRoute{
			ParentRefs: []gatewayv1.ParentReference{{Name: gatewayName, Namespace: new(gatewayv1.Namespace("infra"))}},
			Hostnames:  []gatewayv1.Hostname{gatewayv1.Hostname(as.Name + ".example.com")},
		}
		s.DisruptionBudget = &appv1.DisruptionBudget{MaxUnavailable: new(intstr.FromInt32(1))}
		s.Autoscaling = &appv1.Autoscaling{MinReplicas: &size, MaxReplicas: 3, TargetCPUUtilizationPercentage: new(int32(80))}
	}
	return as
}

// ownedChildren are the children the controller writes for appService(i),
// built by the controller's own builders: what "the limit" writes. The
// owner's UID is made up: "the limit" creates no AppServices, and the
// benchmark's cluster runs no garbage collector.
func ownedChildren(i int) (*appsv1.Deployment, *corev1.Service) {
	as := ownedAppService(i)
	return children.NewDeployment(as), children.NewService(as)
}

func ownedAppService(i int) *appv1.AppService {
	as := appService(i)
	as.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
	return as
}

// createOtherChildren creates an AppService's children besides the
// Deployment and the Service, those it asks for.
func createOtherChildren(ctx context.Context, e *env, as *appv1.AppService) error {
	kube := e.kube
	if r := children.NewHTTPRoute(as); r != nil {
		if _, err := e.gateway.GatewayV1().HTTPRoutes(as.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if sa := children.NewServiceAccount(as); sa != nil {
		if _, err := kube.CoreV1().ServiceAccounts(as.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if in := children.NewIngress(as); in != nil {
		if _, err := kube.NetworkingV1().Ingresses(as.Namespace).Create(ctx, in, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if b := children.NewDisruptionBudget(as); b != nil {
		if _, err := kube.PolicyV1().PodDisruptionBudgets(as.Namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if h := children.NewAutoscaler(as); h != nil {
		if _, err := kube.AutoscalingV2().HorizontalPodAutoscalers(as.Namespace).Create(ctx, h, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// unrelatedChildren are the same objects as another tool would write
// them in namespace: no owner, and a label of their own instead of ours.
func unrelatedChildren(i int, namespace string) (*appsv1.Deployment, *corev1.Service) {
	d, s := ownedChildren(i)
	labels := map[string]string{"app.kubernetes.io/name": d.Name}
	for _, meta := range []*metav1.ObjectMeta{&d.ObjectMeta, &d.Spec.Template.ObjectMeta, &s.ObjectMeta} {
		meta.OwnerReferences, meta.Labels = nil, labels
	}
	d.Namespace, s.Namespace = namespace, namespace
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	s.Spec.Selector = labels
	return d, s
}

// measureLimit times the writes the controller makes for n new
// AppServices, made directly with parallel clients: every child the spec
// asks for (built by the controller's own builders), the status of a new
// AppService, and one Event. The AppServices are created first, untimed
// (their status is a subresource of theirs), after the controller has
// installed the CRD. It also returns the CPU the API server, etcd and the
// writers used meanwhile, and saves the API server's CPU profile
// (limit-apiserver-cpu-<spec>-<N>.pb.gz). Watched, the benchmark first
// starts the informers the controller starts (watchAsTheController), timed,
// and makes the writes once they have listed, as the controller does; the
// informers run until the last write is answered (the profile is
// limit-watched-apiserver-cpu-<spec>-<N>.pb.gz), and what they listed
// is read from the audit log.
func measureLimit(o options, n int, watched bool) (limitResult, error) {
	var r limitResult
	name := "limit"
	if watched {
		name = "limit-watched"
	}
	e, err := newEnvWith(o, fmt.Sprintf("%s-%d", name, n), localcluster.Options{Profiling: true})
	if err != nil {
		return r, err
	}
	defer e.cluster.Stop()
	if err := installCRD(o, e); err != nil {
		return r, err
	}
	ctx := context.Background()
	created := make([]*appv1.AppService, n)
	if err := inParallel(n, func(i int) error {
		as, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, appService(i), metav1.CreateOptions{})
		created[i] = as
		return err
	}); err != nil {
		return r, err
	}
	before, err := cpuTimes(e)
	if err != nil {
		return r, err
	}
	profiled := profileAPIServer(e, filepath.Join(o.out, fmt.Sprintf("%s-apiserver-cpu-%s-%d.pb.gz", name, specKind, n)), profileSeconds(n))
	startWatching := func() error { return nil }
	if watched {
		var stopWatching func()
		if startWatching, stopWatching, err = watchAsTheController(e); err != nil {
			return r, err
		}
		defer stopWatching()
	}
	start := time.Now()
	if err := startWatching(); err != nil {
		return r, err
	}
	err = inParallel(n, func(i int) error {
		as := created[i]
		d, s := children.NewDeployment(as), children.NewService(as)
		if _, err := e.kube.AppsV1().Deployments(benchNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := e.kube.CoreV1().Services(benchNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := createOtherChildren(ctx, e, as); err != nil {
			return err
		}
		as = as.DeepCopy()
		as.Status = newAppServiceStatus(as)
		if _, err := e.apps.AppV1().AppServices(benchNamespace).UpdateStatus(ctx, as, metav1.UpdateOptions{}); err != nil {
			return err
		}
		_, err := e.kube.CoreV1().Events(benchNamespace).Create(ctx, createdEvent(as), metav1.CreateOptions{})
		return err
	})
	r.Seconds = time.Since(start).Seconds()
	if err != nil {
		return r, err
	}
	after, err := cpuTimes(e)
	if err != nil {
		return r, err
	}
	r.CPU = after.minus(before)
	if watched {
		requests, err := e.cluster.Requests(watcherUser, start)
		if err != nil {
			return r, err
		}
		r.Listed = listed(requests)
	}
	return r, <-profiled
}

// limitResult is one run of measureLimit: its time, the CPU the API
// server, etcd and the benchmark used, and, watched, what the informers
// listed (listed).
type limitResult struct {
	Seconds float64
	CPU     CPUTimes
	Listed  []string
}

// newAppServiceStatus is the status the controller writes for a new
// AppService, whose Deployment has not reported yet (appstatus.New
// in that case).
func newAppServiceStatus(as *appv1.AppService) appv1.AppServiceStatus {
	now := metav1.Now()
	cond := func(t string, st metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: st, ObservedGeneration: as.Generation, LastTransitionTime: now, Reason: reason, Message: message}
	}
	waiting := fmt.Sprintf("Waiting for the Deployment's controller to observe generation %d", 1)
	return appv1.AppServiceStatus{
		ObservedGeneration: as.Generation,
		Selector:           appv1.LabelAppService + "=" + as.Name,
		Conditions: []metav1.Condition{
			cond(appv1.ConditionAvailable, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, "The Deployment has not reported this condition yet"),
			cond(appv1.ConditionProgressing, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, "The Deployment has not reported this condition yet"),
			cond(appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "Every child matches the spec"),
			cond(appv1.ConditionReady, metav1.ConditionFalse, appv1.ReasonRollingOut, waiting),
			cond(appv1.ConditionReconciling, metav1.ConditionTrue, appv1.ReasonRollingOut, waiting),
			cond(appv1.ConditionStalled, metav1.ConditionFalse, appv1.ReasonAsExpected, "Nothing needs the user"),
		},
	}
}

// createdEvent is the Event the controller sends for a new AppService's
// children, as its broadcaster writes it.
func createdEvent(as *appv1.AppService) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: as.Name + ".", Namespace: as.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "AppService", APIVersion: appv1.SchemeGroupVersion.String(), Namespace: as.Namespace, Name: as.Name,
			UID: as.UID, ResourceVersion: as.ResourceVersion,
		},
		Reason: appv1.ReasonCreated, Message: fmt.Sprintf("Created Deployment %s, Service %s", as.Name, as.Name),
		Source: corev1.EventSource{Component: "appservice-controller"}, Type: corev1.EventTypeNormal,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
}

// measureCRDCost is what the CRD costs the API server: n AppServices
// created with parallel clients on a fresh control plane without the
// controller, against n Deployments carrying the same Pod template.
func measureCRDCost(o options, n int) (CRDCost, error) {
	c := CRDCost{N: n}
	e, err := newEnvWith(o, "crd-cost", localcluster.Options{Profiling: true})
	if err != nil {
		return c, err
	}
	defer e.cluster.Stop()
	if err := installCRD(o, e); err != nil {
		return c, err
	}
	ctx := context.Background()
	// A first create of each, untimed: the first writes of a just
	// established CRD are slow for reasons of their own.
	warm := appService(n)
	warm.Name = "warm-up"
	if _, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, warm, metav1.CreateOptions{}); err != nil {
		return c, err
	}
	// Each half under a CPU profile of the API server, saved for `go tool
	// pprof`: where its time goes (BENCHMARKS.md).
	appServicesProfile := filepath.Join(o.out, "apiserver-cpu-appservices-"+specKind+".pb.gz")
	if c.AppServicesSeconds, err = profiled(e, appServicesProfile, func() error {
		return inParallel(n, func(i int) error {
			_, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, appService(i), metav1.CreateOptions{})
			return err
		})
	}); err != nil {
		return c, err
	}
	if c.DeploymentsSeconds, err = profiled(e, filepath.Join(o.out, "apiserver-cpu-deployments-"+specKind+".pb.gz"), func() error {
		return inParallel(n, func(i int) error {
			d, _ := ownedChildren(i)
			_, err := e.kube.AppsV1().Deployments(benchNamespace).Create(ctx, d, metav1.CreateOptions{})
			return err
		})
	}); err != nil {
		return c, err
	}
	c.Ratio = c.AppServicesSeconds / c.DeploymentsSeconds
	metrics, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return c, err
	}
	c.AppServiceCreateMillis = 1000 * meanOf(string(metrics), "apiserver_request_duration_seconds", `resource="appservices"`, `verb="POST"`)
	c.DeploymentCreateMillis = 1000 * meanOf(string(metrics), "apiserver_request_duration_seconds", `resource="deployments"`, `verb="POST"`)
	shares, err := cpuShares(appServicesProfile, "schema/cel.(*Validator).Validate", "validation.ValidateCustomResource")
	if err != nil {
		return c, err
	}
	c.CELShare, c.SchemaShare = shares[0], shares[1]
	c.Validation, err = measureValidation(appService(0))
	return c, err
}

// profiled times work while the API server takes a CPU profile of its
// first two seconds, saved to path. A CPU profile samples only the time on
// a CPU, so the seconds after work ends add nothing to it, and the shares
// of its functions are work's.
func profiled(e *env, path string, work func() error) (float64, error) {
	cpu := profileAPIServer(e, path, 2)
	start := time.Now()
	err := work()
	took := time.Since(start).Seconds()
	if profileErr := <-cpu; err == nil {
		err = profileErr
	}
	return took, err
}

// cpuShares returns, for each function (a part of its full name), the
// share of a CPU profile's time spent in it and what it calls.
func cpuShares(path string, functions ...string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, err
	}
	in := make([]int64, len(functions))
	var total int64
	for _, sample := range p.Sample {
		cpu := sample.Value[len(sample.Value)-1] // nanoseconds
		total += cpu
		for i, fn := range functions {
			if slices.ContainsFunc(sample.Location, func(l *profile.Location) bool {
				return slices.ContainsFunc(l.Line, func(line profile.Line) bool { return strings.Contains(line.Function.Name, fn) })
			}) {
				in[i] += cpu
			}
		}
	}
	shares := make([]float64, len(functions))
	for i := range in {
		if total > 0 {
			shares[i] = float64(in[i]) / float64(total)
		}
	}
	return shares, nil
}

// meanOf is a Prometheus histogram's mean (sum over count) in a /metrics
// text, over the series whose labels include every one of labels.
func meanOf(text, name string, labels ...string) float64 {
	count := sumOf(text, name+"_count", labels...)
	if count == 0 {
		return 0
	}
	return sumOf(text, name+"_sum", labels...) / count
}

// startController starts the controller under measurement, with the
// benchmark's controller arguments and extra, as a user with every right
// (the audit log counts its writes apart from the benchmark's own).
func startController(o options, e *env, extra ...string) (*harness.Controller, error) {
	return startControllerIn(o, e, nil, extra...)
}

// startControllerIn is startController with the controller's user in more
// groups (localcluster.AuditReadsGroup: its reads audited too).
func startControllerIn(o options, e *env, groups []string, extra ...string) (*harness.Controller, error) {
	kubeconfig, err := e.cluster.MintUser(controllerUser, append([]string{"system:masters"}, groups...)...)
	if err != nil {
		return nil, err
	}
	// The heap profiles (saveHeapProfile) come from the metrics server,
	// over plain HTTP here.
	args := append([]string{"-kubeconfig", kubeconfig, "-profiling", "-metrics-secure=false"}, o.controllerArgs...)
	p, err := harness.NewController("bench", o.controller,
		filepath.Join(e.cluster.LogDir, "appservice-controller.log"), append(args, extra...)...)
	if err != nil {
		return nil, err
	}
	p.Env = o.controllerEnv
	return p, p.Start()
}

// waitReady returns the time from the controller's start to /readyz 200.
func waitReady(p *harness.Controller) (time.Duration, error) {
	if err := p.WaitReady(2 * time.Minute); err != nil {
		return 0, err
	}
	return time.Since(p.Started()), nil
}

// saveHeapProfile writes the controller's heap profile (in-use and
// allocated bytes, after a collection) to path, for `go tool pprof`.
func saveHeapProfile(p *harness.Controller, path string) error {
	code, body, err := p.Get(p.MetricsAddr, "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("heap profile: %d %s", code, body)
	}
	return os.WriteFile(path, []byte(body), 0o644)
}

// stop stops the controller as Kubernetes would, with SIGTERM.
func stop(p *harness.Controller) { _, _ = p.Stop(syscall.SIGTERM) }

// tracker follows the AppServices and their children through informers,
// which cost the API server one watch each, not repeated lists.
type tracker struct {
	deployments, services, statuses atomic.Int64
	deploymentSeen                  sync.Map // name → time.Time
	stop                            chan struct{}
}

func newTracker(e *env) (*tracker, error) {
	t := &tracker{stop: make(chan struct{})}
	// Protobuf for the built-in kinds, as the controller's watches: the
	// API server encodes each event once for both.
	kf := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(benchNamespace))
	af := appinformers.NewSharedInformerFactoryWithOptions(e.apps, 0, appinformers.WithNamespace(benchNamespace))
	if _, err := kf.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			t.deployments.Add(1)
			t.deploymentSeen.LoadOrStore(obj.(*appsv1.Deployment).Name, time.Now())
		},
	}); err != nil {
		return nil, err
	}
	if _, err := kf.Core().V1().Services().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { t.services.Add(1) },
	}); err != nil {
		return nil, err
	}
	var seen sync.Map
	if _, err := af.App().V1().AppServices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			as := obj.(*appv1.AppService)
			if as.Status.ObservedGeneration == as.Generation {
				if _, loaded := seen.LoadOrStore(as.Name, true); !loaded {
					t.statuses.Add(1)
				}
			}
		},
	}); err != nil {
		return nil, err
	}
	kf.Start(t.stop)
	af.Start(t.stop)
	kf.WaitForCacheSync(t.stop)
	af.WaitForCacheSync(t.stop)
	return t, nil
}

func (t *tracker) waitAll(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		d, s, st := t.deployments.Load(), t.services.Load(), t.statuses.Load()
		if d >= int64(n) && s >= int64(n) && st >= int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %d Deployments, %d Services, %d statuses of %d", timeout, d, s, st, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (t *tracker) close() { close(t.stop) }

// settle lets a converged controller's garbage be collected before its
// memory is read: RSS right after a burst includes the burst's garbage.
const settle = 10 * time.Second

// measureConvergence creates n AppServices at once and waits until every
// child exists and every status is written. With last it also measures the
// steady state and a restart, into res.
func measureConvergence(o options, n int, last bool, res *Results) (Convergence, error) {
	e, err := newEnv(o, fmt.Sprintf("convergence-%d", n))
	if err != nil {
		return Convergence{}, err
	}
	defer e.cluster.Stop()
	c := Convergence{N: n}
	ctrl, err := startController(o, e)
	if err != nil {
		return c, err
	}
	defer func() { stop(ctrl) }()
	if _, err := waitReady(ctrl); err != nil {
		return c, err
	}
	time.Sleep(settle)
	if c.BaselineRSSBytes, _, err = ctrl.Usage(); err != nil {
		return c, err
	}
	if c.ConvergenceSeconds, c.WritesPerAppService, err = createAndConverge(e, n, 10*time.Minute); err != nil {
		return c, err
	}
	ctx := context.Background()
	time.Sleep(settle)
	if c.RSSBytes, c.CPUSeconds, err = ctrl.Usage(); err != nil {
		return c, err
	}
	c.RSSPerAppServiceByte = float64(c.RSSBytes-c.BaselineRSSBytes) / float64(n)
	if err := saveHeapProfile(ctrl, filepath.Join(o.out, fmt.Sprintf("heap-%s-%d.pb.gz", specKind, n))); err != nil {
		return c, err
	}
	if !last {
		return c, nil
	}
	if res.Objects, err = objectSizes(ctx, e, appService(0).Name); err != nil {
		return c, err
	}

	// Steady state: nothing changes for over a minute; the controller
	// resyncs every AppService on a short period and must write nothing.
	const resync = 20 * time.Second
	const window = 65 * time.Second
	logf("steady state over %s, n=%d", window, n)
	stop(ctrl)
	if ctrl, err = startController(o, e, "-resync-period="+resync.String()); err != nil {
		return c, err
	}
	ready, err := waitReady(ctrl)
	if err != nil {
		return c, err
	}
	since := ctrl.Started()
	time.Sleep(window)
	writes, err := e.cluster.Writes(controllerUser, since)
	if err != nil {
		return c, err
	}
	res.Restart = Restart{N: n, ReadySeconds: ready.Seconds(), Writes: len(writes)}
	res.Steady = Steady{
		N: n, WindowSeconds: window.Seconds(), Writes: len(writes), ResyncPeriodSeconds: resync.Seconds(),
		ResyncsInWindowPerAppServic: int(window / resync),
		WritesPerAppServicePerHour:  float64(len(writes)) / float64(n) / window.Hours(),
	}
	return c, nil
}

// createAndConverge creates n AppServices with 16 clients and waits until
// every Deployment, Service and status exists, watched by a tracker: the
// seconds from the first create, and the controller's writes per
// AppService in the audit log since then.
func createAndConverge(e *env, n int, timeout time.Duration) (seconds, writesPerAppService float64, err error) {
	tr, err := newTracker(e)
	if err != nil {
		return 0, 0, err
	}
	defer tr.close()
	start := time.Now()
	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Create(context.Background(), appService(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return 0, 0, err
	}
	if err := tr.waitAll(n, timeout); err != nil {
		return 0, 0, err
	}
	seconds = time.Since(start).Seconds()
	writes, err := e.cluster.Writes(controllerUser, start)
	if err != nil {
		return 0, 0, err
	}
	return seconds, float64(len(writes)) / float64(n), nil
}

// measureActivities creates n Activities at once on a cluster that runs
// Jobs (the Job controller, the scheduler, kwok's nodes, whose Pods end at
// once with exit code 0), waits until every one has Succeeded, and counts
// the controller's writes and memory; then restarts it over them.
func measureActivities(o options, n int) (Activities, error) {
	a := Activities{N: n}
	e, err := newEnvWith(o, "activities", localcluster.Options{ControllerManager: true, Scheduler: true, Nodes: 2})
	if err != nil {
		return a, err
	}
	defer e.cluster.Stop()
	ctrl, err := startController(o, e)
	if err != nil {
		return a, err
	}
	defer func() { stop(ctrl) }()
	if _, err := waitReady(ctrl); err != nil {
		return a, err
	}
	time.Sleep(settle)
	if a.BaselineRSSBytes, _, err = ctrl.Usage(); err != nil {
		return a, err
	}
	var succeeded atomic.Int64
	var seen sync.Map
	stopInformer := make(chan struct{})
	defer close(stopInformer)
	af := appinformers.NewSharedInformerFactoryWithOptions(e.apps, 0, appinformers.WithNamespace(benchNamespace))
	if _, err := af.App().V1().Activities().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if act := obj.(*appv1.Activity); act.Status.Prosta == appv1.ActivitySucceeded {
				if _, loaded := seen.LoadOrStore(act.Name, true); !loaded {
					succeeded.Add(1)
				}
			}
		},
	}); err != nil {
		return a, err
	}
	af.Start(stopInformer)
	af.WaitForCacheSync(stopInformer)

	ctx := context.Background()
	start := time.Now()
	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().Activities(benchNamespace).Create(ctx, &appv1.Activity{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("run-%05d", i)},
			Spec:       appv1.ActivitySpec{Command: "echo done", Envs: []string{"RUN=" + strconv.Itoa(i)}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return a, err
	}
	deadline := start.Add(15 * time.Minute)
	for succeeded.Load() < int64(n) {
		if time.Now().After(deadline) {
			return a, fmt.Errorf("after 15m: %d of %d Activities Succeeded", succeeded.Load(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.SucceededSeconds = time.Since(start).Seconds()
	// Counted after the settling time: the last Events are still on
	// their way (the broadcaster sends them asynchronously) when the last
	// status says Succeeded.
	time.Sleep(settle)
	writes, err := e.cluster.Writes(controllerUser, start)
	if err != nil {
		return a, err
	}
	a.WritesPerActivity = float64(len(writes)) / float64(n)
	if a.RSSBytes, _, err = ctrl.Usage(); err != nil {
		return a, err
	}
	a.RSSPerActivityByte = float64(a.RSSBytes-a.BaselineRSSBytes) / float64(n)

	stop(ctrl)
	if ctrl, err = startController(o, e); err != nil {
		return a, err
	}
	if _, err := waitReady(ctrl); err != nil {
		return a, err
	}
	since := ctrl.Started()
	const window = 15 * time.Second
	time.Sleep(window)
	if writes, err = e.cluster.Writes(controllerUser, since); err != nil {
		return a, err
	}
	a.RestartWindowSeconds, a.RestartWrites = window.Seconds(), len(writes)
	return a, nil
}

// measureConfigRollouts creates n AppServices of one replica reading one
// ConfigMap, on a cluster that runs their Pods, with a controller capped at
// maxRollouts config rollouts (0: none); once all run, it edits the
// ConfigMap and watches the Deployments roll.
func measureConfigRollouts(o options, n, maxRollouts int) (ConfigRollouts, error) {
	const shared = "shared" // the ConfigMap every AppService reads
	cr := ConfigRollouts{N: n, Cap: maxRollouts}
	e, err := newEnvWith(o, fmt.Sprintf("config-rollouts-%d", maxRollouts), localcluster.Options{ControllerManager: true, Scheduler: true, Nodes: 2})
	if err != nil {
		return cr, err
	}
	defer e.cluster.Stop()
	ctrl, err := startController(o, e, fmt.Sprintf("-max-config-rollouts=%d", maxRollouts))
	if err != nil {
		return cr, err
	}
	defer func() { stop(ctrl) }()
	if _, err := waitReady(ctrl); err != nil {
		return cr, err
	}
	ctx := context.Background()
	if _, err := e.kube.CoreV1().ConfigMaps(benchNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: shared}, Data: map[string]string{"ca.crt": "v1"},
	}, metav1.CreateOptions{}); err != nil {
		return cr, err
	}

	// The Deployments as a watch shows them: by name, the digest of their
	// template and whether they rolled it out.
	type state struct {
		digest string
		// done: rolled out; midway: replacing its Pods (generation not
		// observed, replicas not all updated, or old ones still running).
		done, midway bool
	}
	var mu sync.Mutex
	states := map[string]state{}
	observe := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return
		}
		want := *d.Spec.Replicas
		st := d.Status
		mu.Lock()
		states[d.Name] = state{
			digest: d.Spec.Template.Annotations[appv1.AnnotationConfigDigest],
			done:   st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want,
			midway: st.ObservedGeneration < d.Generation || st.UpdatedReplicas < want || st.Replicas > want,
		}
		mu.Unlock()
	}
	stopInformer := make(chan struct{})
	defer close(stopInformer)
	kf := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(benchNamespace))
	if _, err := kf.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return cr, err
	}
	kf.Start(stopInformer)
	kf.WaitForCacheSync(stopInformer)
	// count returns how many Deployments run digest, rolled out, and how
	// many are rolling to a digest other than old.
	count := func(digest, old string) (done, rolling int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range states {
			switch {
			case s.digest == digest && s.done:
				done++
			case s.digest != old && s.midway:
				rolling++
			}
		}
		return done, rolling
	}
	firstDigest := func() string {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range states {
			return s.digest
		}
		return ""
	}

	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, &appv1.AppService{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%05d", i)},
			Spec: appv1.AppServiceSpec{
				Size: new(int32(1)), Image: benchImage, RolloutOnConfigChange: true,
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: shared}}}},
			},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return cr, err
	}
	wait := func(what string, done func() bool) error {
		deadline := time.Now().Add(15 * time.Minute)
		for !done() {
			if time.Now().After(deadline) {
				return fmt.Errorf("after 15m: %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	}
	var old string
	if err := wait("the AppServices running", func() bool {
		old = firstDigest()
		done, _ := count(old, "")
		return old != "" && done == n
	}); err != nil {
		return cr, err
	}

	start := time.Now()
	if _, err := e.kube.CoreV1().ConfigMaps(benchNamespace).Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: shared}, Data: map[string]string{"ca.crt": "v2"},
	}, metav1.UpdateOptions{}); err != nil {
		return cr, err
	}
	if err := wait("the config rollouts", func() bool {
		var current string
		mu.Lock()
		for _, s := range states {
			if s.digest != old {
				current = s.digest
				break
			}
		}
		mu.Unlock()
		done, rolling := count(current, old)
		cr.Peak = max(cr.Peak, rolling)
		return current != "" && done == n
	}); err != nil {
		return cr, err
	}
	cr.Seconds = time.Since(start).Seconds()
	return cr, nil
}

// objectSizes reads the AppService name and its children, and measures
// each as JSON, whole and as the controller caches it.
func objectSizes(ctx context.Context, e *env, name string) ([]ObjectSize, error) {
	gets := []func() (kruntime.Object, error){
		func() (kruntime.Object, error) {
			return e.apps.AppV1().AppServices(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.AppsV1().Deployments(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.CoreV1().Services(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.CoreV1().ServiceAccounts(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.NetworkingV1().Ingresses(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.gateway.GatewayV1().HTTPRoutes(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.PolicyV1().PodDisruptionBudgets(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.AutoscalingV2().HorizontalPodAutoscalers(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
	}
	var out []ObjectSize
	for _, get := range gets {
		obj, err := get()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		obj.(metav1.Object).SetManagedFields(nil)
		whole, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		trimmed, err := children.Trim(obj.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		size := ObjectSize{Kind: reflect.TypeOf(obj).Elem().Name(), JSONBytes: len(whole)}
		if c, ok := trimmed.(*children.Cached); ok {
			size.CachedBytes = len(c.Data)
		}
		if size.HeapBytes, err = heapBytes(obj, whole, nil); err != nil {
			return nil, err
		}
		if size.CachedHeapBytes, err = heapBytes(obj, whole, children.Trim); err != nil {
			return nil, err
		}
		out = append(out, size)
	}
	return out, nil
}

// heapBytes is the Go heap that one object of obj's type, decoded from
// data and passed through transform (nil: none), holds: measured over
// a thousand of them, after a collection.
func heapBytes(obj kruntime.Object, data []byte, transform cache.TransformFunc) (float64, error) {
	const n = 1000
	kept := make([]any, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range kept {
		o := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
		if err := json.Unmarshal(data, o); err != nil {
			return 0, err
		}
		kept[i] = o
		if transform != nil {
			t, err := transform(o)
			if err != nil {
				return 0, err
			}
			kept[i] = t
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(after.HeapAlloc-before.HeapAlloc) / n, nil
}

// installCRD has the controller install its CRD, as it does whenever it
// starts, and stops it again.
func installCRD(o options, e *env) error {
	ctrl, err := startController(o, e)
	if err != nil {
		return err
	}
	defer stop(ctrl)
	return harness.WaitForCRD(context.Background(), e.apps, ctrl, time.Minute)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func percentile(sorted []float64, p float64) float64 {
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
