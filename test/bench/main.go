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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
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
		"steady, latency, unrelated, config, crd, activities, throttle, canary (or one of canary-route, canary-pods, bluegreen), notify, analysis, "+
		"templates, slow-prometheus, peer, flood, capacity, "+
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
	// CanariesBlueGreen: blue-green releases by the Service's selector.
	CanariesBlueGreen Canaries `json:"canariesBlueGreen"`
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
	if err := measureAllCanaries(o, res); err != nil {
		return nil, err
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

// settle lets a converged controller's garbage be collected before its
// memory is read: RSS right after a burst includes the burst's garbage.
const settle = 10 * time.Second

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
