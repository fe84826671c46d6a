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

// Command appservice-controller turns AppService custom resources
// (app.example.com/v1) into Deployments, Services and the other children an
// app needs, and keeps them in line; and runs each Activity's command once,
// as a Job.
//
// The root is the AppService's controller: main.go wires it and the
// Activity's (internal/activity) on shared clients and informer factories,
// with the process's packages (internal/servers, leader, version).
// controller.go, children.go, status.go, configs.go, routes.go and crd.go
// are what only the AppService's sync uses; what both kinds share is in
// internal/owner. It may import any package of this repository but those
// for tests only (internal/fixtures, harness, localcluster, docscheck,
// argocdhealth), and nothing imports it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // -logging-format=json
	"k8s.io/klog/v2"

	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"example.com/appservice-controller/internal/activity"
	"example.com/appservice-controller/internal/analysis"
	"example.com/appservice-controller/internal/appcache"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/leader"
	"example.com/appservice-controller/internal/metrics"
	"example.com/appservice-controller/internal/notify"
	"example.com/appservice-controller/internal/owner"
	"example.com/appservice-controller/internal/servers"
	"example.com/appservice-controller/internal/version"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
	appscheme "example.com/appservice-controller/pkg/generated/clientset/versioned/scheme"
	informers "example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// options are the command-line flags.
type options struct {
	kubeconfig string
	masterURL  string
	workers    int
	actWorkers int
	// maxConfigRollouts caps the rollouts config changes start at once.
	maxConfigRollouts int
	qps               float64
	burst             int
	compression       bool
	namespace         string
	resync            time.Duration
	installCRD        bool
	crdTimeout        time.Duration
	shutdownWait      time.Duration
	// memoryLimitRatio is the fraction of the container's memory limit set
	// as Go's soft memory limit (setMemoryLimit).
	memoryLimitRatio float64
	// analysis is where the canary analyses' Prometheus is.
	analysis analysis.Config
	// notify is how a release's edges are delivered; notifyAllowed the
	// entries of --notification-allowed.
	notify        notify.Config
	notifyAllowed []string
	servers       servers.Options
	leader        leader.Options
	logging       *logsapi.LoggingConfiguration
	// logFeatures are component-base's logging feature gates
	// (-feature-gates=LoggingAlphaOptions=true, ...).
	logFeatures featuregate.MutableVersionedFeatureGate
	version     bool
}

func (o *options) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Default: $KUBECONFIG, else the in-cluster service account, else ~/.kube/config.")
	fs.StringVar(&o.masterURL, "master", "", "The address of the Kubernetes API server. Overrides any value in kubeconfig. Only required if out-of-cluster.")
	fs.IntVar(&o.workers, "workers", 32, "Number of AppServices synced in parallel.")
	fs.IntVar(&o.actWorkers, "activity-workers", 8, "Number of Activities synced in parallel "+
		"(they have their own queue; a sync makes a few requests at most, so fewer workers than for AppServices).")
	fs.IntVar(&o.maxConfigRollouts, "max-config-rollouts", 10, "At most this many AppServices roll their Pods at once because a ConfigMap or Secret "+
		"they read changed (rolloutOnConfigChange); the others wait their turn, oldest first, and say so (Reconciling, ConfigRolloutQueued). "+
		"Spec changes are never held. 0: no cap.")
	fs.Float64Var(&o.qps, "kube-api-qps", 500, "Queries per second the controller may send to the API server (client-side limit).")
	fs.IntVar(&o.burst, "kube-api-burst", 1000, "Burst of queries the controller may send above --kube-api-qps.")
	fs.BoolVar(&o.compression, "kube-api-compression", false, "Ask the API server to compress its responses (gzip), watch streams included. "+
		"Off, as in kube-controller-manager: in a cluster the network is fast, and compressing costs the API server's CPU and ours; "+
		"turn it on across a slow link.")
	fs.StringVar(&o.namespace, "namespace", metav1.NamespaceAll, "Only manage AppServices and Activities in this namespace (default: all namespaces).")
	fs.DurationVar(&o.resync, "resync-period", 10*time.Minute,
		"How often every AppService and Activity is synced again even when nothing changed (a sync in steady state writes nothing).")
	fs.BoolVar(&o.installCRD, "install-crd", true, "Create or update the CRDs (AppService, Activity) at start-up and wait until they are established. "+
		"Turn off where the CRD is installed separately and the controller may not write CRDs.")
	fs.DurationVar(&o.crdTimeout, "crd-timeout", time.Minute, "How long to wait for each CRD to be established at start-up.")
	fs.DurationVar(&o.shutdownWait, "shutdown-timeout", 30*time.Second, "How long to wait on shutdown for pending Events to be sent.")
	fs.Float64Var(&o.memoryLimitRatio, "memory-limit-ratio", 0.9, "Set Go's soft memory limit to this fraction of the container's memory limit "+
		"(its cgroup's), so that the garbage collector works harder before the kernel would kill the controller for memory; 0 leaves it unset. "+
		"GOMEMLIMIT, or AUTOMEMLIMIT (a fraction, or off), in the environment wins.")
	fs.StringVar(&o.analysis.URL, "prometheus-url", "", "Address of the Prometheus-compatible server (Prometheus, Thanos, Mimir, VictoriaMetrics) "+
		"that canary analyses (spec.canary.analysis) query, such as http://prometheus.monitoring:9090. "+
		"Unset: a canary with an analysis holds its first step and says so (Stalled, CanaryAnalysisNotConfigured).")
	fs.StringVar(&o.analysis.BearerTokenFile, "prometheus-bearer-token-file", "",
		"File holding a token sent to --prometheus-url as Authorization: Bearer, read again as it changes.")
	fs.StringVar(&o.analysis.CAFile, "prometheus-ca-file", "", "PEM CA certificates that verify --prometheus-url's certificate (default: the system's).")
	fs.DurationVar(&o.analysis.Timeout, "prometheus-timeout", 10*time.Second, "How long a canary analysis's query may take; "+
		"past it, the measurement is an error (the step holds, and errorLimit errors in a row abort the canary).")
	fs.Func("notification-allowed", "Where the controller may post a release's edges (NotificationDestination): "+
		"host names (hooks.slack.com, or *.example.com for its subdomains) and CIDRs (203.0.113.0/24), comma-separated or repeated. "+
		"A post goes to a host named here, or to an address, as dialled, inside a CIDR here; any other is refused. "+
		"Unset: anywhere, the cluster's own network included (docs/production.md).", func(v string) error {
		o.notifyAllowed = append(o.notifyAllowed, strings.Split(v, ",")...)
		return nil
	})
	o.notify = notify.DefaultConfig
	fs.DurationVar(&o.notify.GiveUpAfter, "notification-give-up-after", notify.DefaultConfig.GiveUpAfter,
		"How long after a release's edge its delivery to a destination is tried (with a jittered backoff that honours Retry-After) "+
			"before it is given up, as the status, a Warning Event and appservice_notification_deliveries_total say.")
	fs.StringVar(&o.servers.MetricsAddr, "metrics-bind-address", ":8443", "Address of the Prometheus /metrics endpoint; 0 turns it off.")
	fs.BoolVar(&o.servers.MetricsSecure, "metrics-secure", true, "Serve /metrics over HTTPS to callers the API server authenticates (TokenReview) "+
		"and authorizes to get /metrics (SubjectAccessReview). false: plain HTTP, open to anyone who reaches the port.")
	fs.StringVar(&o.servers.MetricsCertFile, "metrics-tls-cert-file", "",
		"PEM certificate of the secure metrics endpoint, read again when it changes. Default: a self-signed certificate made at start-up.")
	fs.StringVar(&o.servers.MetricsKeyFile, "metrics-tls-private-key-file", "", "PEM private key matching --metrics-tls-cert-file.")
	fs.BoolVar(&o.servers.Profiling, "profiling", false, "Serve Go's pprof profiles under /debug/pprof/ on the metrics server, "+
		"behind the same authentication and authorization as /metrics.")
	fs.StringVar(&o.servers.ProbeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints; 0 turns them off.")
	fs.BoolVar(&o.leader.Enabled, "leader-elect", false, "Elect a leader among replicas with a Lease; only the leader syncs. On in the deploy manifests.")
	fs.StringVar(&o.leader.Namespace, "leader-election-namespace", "", "Namespace of the Lease (default: the Pod's namespace in a cluster, else default).")
	fs.StringVar(&o.leader.ID, "leader-election-id", "appservice-controller", "Name of the Lease.")
	fs.DurationVar(&o.leader.LeaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long a standby waits after the last renewal before taking the Lease over.")
	fs.DurationVar(&o.leader.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew before it gives up leading (and exits).")
	fs.DurationVar(&o.leader.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "How often replicas try to acquire or renew the Lease.")
	fs.BoolVar(&o.version, "version", false, "Print the version and exit.")

	// Logging as the Kubernetes components log: -v, -vmodule,
	// -logging-format=text|json and the rest of component-base's options.
	o.logging = logsapi.NewLoggingConfiguration()
	logsapi.AddGoFlags(o.logging, fs)
	o.logFeatures = featuregate.NewFeatureGate()
	utilruntime.Must(logsapi.AddFeatureGates(o.logFeatures))
	fs.Func("feature-gates", "Comma-separated key=value pairs of logging feature gates: "+strings.Join(o.logFeatures.KnownFeatures(), "; "), o.logFeatures.Set)
}

func main() {
	var o options
	o.addFlags(flag.CommandLine)
	flag.Parse()
	if o.version {
		version.Print(os.Stdout)
		return
	}
	// Go's log package writes through klog too (the HTTP servers' errors).
	logs.InitLogs()
	if err := logsapi.ValidateAndApply(o.logging, o.logFeatures); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	// The first SIGINT or SIGTERM cancels ctx and starts a graceful
	// shutdown; a second one ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()

	if err := run(ctx, o); err != nil {
		if stoppedBySignal(ctx, err) {
			klog.FromContext(ctx).Info("Stopped while starting", "step", err)
			logs.FlushLogs()
			return
		}
		klog.FromContext(ctx).Error(err, "appservice-controller failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	logs.FlushLogs()
}

// stoppedBySignal reports whether err is only the signal's cancellation
// reaching a start-up step (the CRD install, the cache sync): a clean stop,
// exit status 0, not a failure.
func stoppedBySignal(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, context.Canceled)
}

// run starts the controller and returns when ctx ends (or a step fails).
// Its steps, in order:
//
//  1. complete the options, set Go's soft memory limit from the
//     container's (setMemoryLimit) and name this replica;
//  2. build the clients;
//  3. serve the probes and metrics, which answer from the start;
//  4. install the CRDs;
//  5. start the Event recorder;
//  6. build the informers and the controllers of both kinds on them, and
//     fill the caches (every replica does, leader or not);
//  7. run both kinds' workers: at once, or only while this replica leads.
func run(ctx context.Context, o options) error {
	if err := o.complete(); err != nil {
		return err
	}
	setMemoryLimit(klog.FromContext(ctx), o.memoryLimitRatio, memlimit.FromCgroup)
	identity, err := replicaIdentity()
	if err != nil {
		return err
	}
	c, err := newClients(o, identity)
	if err != nil {
		return err
	}
	probes, watchdog := servers.NewProbes(o.leader.Enabled)
	stopServers, err := servers.Start(ctx, o.servers, c.reviews, probes)
	if err != nil {
		return err
	}
	defer stopServers()
	if o.installCRD {
		if err := ensureCRDs(ctx, c.crds, c.metadata, o.crdTimeout); err != nil {
			return fmt.Errorf("installing the CRDs: %w", err)
		}
	}
	recorder := newRecorder(ctx, c.kube, o.namespace)
	defer shutdownRecorder(recorder, o.shutdownWait)

	f := newInformerFactories(c, o)
	controller, err := NewController(ctx, c.kube, c.metadata, c.apps, f.kube, f.apps.App().V1(),
		&GatewayAPI{Client: c.gateway, Informers: f.gateway}, recorder, o.maxConfigRollouts, o.analysis, o.notify)
	if err != nil {
		return err
	}
	activities, err := activity.NewController(ctx, c.kube, c.apps, f.jobs, f.apps.App().V1().Activities(), recorder)
	if err != nil {
		return err
	}
	// The series of each AppService and Activity, from the listers, while
	// this process leads and its caches have synced.
	var leading atomic.Bool
	appServices, acts := f.apps.App().V1().AppServices(), f.apps.App().V1().Activities()
	metrics.ReportObjects(metrics.Objects{
		AppServices: appcache.NewLister(appServices.Informer().GetIndexer()), Activities: acts.Lister(), Logger: klog.FromContext(ctx),
		Active: func() bool {
			return leading.Load() && appServices.Informer().HasSynced() && acts.Informer().HasSynced()
		},
		Value: controller.analysisValue})
	f.kube.Start(ctx.Done())
	f.jobs.Start(ctx.Done())
	f.apps.Start(ctx.Done())
	defer f.kube.Shutdown()
	defer f.jobs.Shutdown()
	defer f.apps.Shutdown()
	defer f.gateway.Shutdown() // started by the controller, if the cluster serves HTTPRoutes
	go probes.ReadyWhenSynced(ctx, append(slices.Clone(controller.cachesSynced), activities.CachesSynced()...)...)

	work := func(ctx context.Context) error {
		leading.Store(true)
		defer leading.Store(false)
		return runBoth(ctx,
			func(ctx context.Context) error { return controller.Run(ctx, o.workers) },
			func(ctx context.Context) error { return activities.Run(ctx, o.actWorkers) })
	}
	if o.leader.Enabled {
		err = leader.Run(ctx, c.leases, identity, o.leader, watchdog, work)
	} else {
		err = work(ctx)
	}
	klog.FromContext(ctx).Info("Stopping")
	return err
}

// runBoth runs the controllers of both kinds until ctx ends, and returns
// when both have stopped. If one fails (its caches never sync), the other
// is stopped too: a process that runs half its kinds would look healthy.
func runBoth(ctx context.Context, runs ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, run := range runs {
		wg.Go(func() {
			if errs[i] = run(ctx); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// complete checks the options and fills in the defaults that depend on
// where the controller runs.
func (o *options) complete() error {
	if o.workers < 1 {
		return fmt.Errorf("--workers must be at least 1, not %d", o.workers)
	}
	if o.maxConfigRollouts < 0 {
		return fmt.Errorf("--max-config-rollouts must be 0 (no cap) or more, not %d", o.maxConfigRollouts)
	}
	if o.analysis.URL != "" && o.analysis.Timeout <= 0 {
		return fmt.Errorf("--prometheus-timeout must be more than 0, not %s", o.analysis.Timeout)
	}
	if o.actWorkers < 1 {
		return fmt.Errorf("--activity-workers must be at least 1, not %d", o.actWorkers)
	}
	if o.memoryLimitRatio < 0 || o.memoryLimitRatio > 1 {
		return fmt.Errorf("--memory-limit-ratio must be between 0 (off) and 1, not %v", o.memoryLimitRatio)
	}
	if (o.servers.MetricsCertFile == "") != (o.servers.MetricsKeyFile == "") {
		return errors.New("--metrics-tls-cert-file and --metrics-tls-private-key-file go together")
	}
	if o.notify.GiveUpAfter <= 0 {
		return fmt.Errorf("--notification-give-up-after must be more than 0, not %s", o.notify.GiveUpAfter)
	}
	allowed, err := notify.ParseAllowed(o.notifyAllowed)
	if err != nil {
		return fmt.Errorf("--notification-allowed: %w", err)
	}
	o.notify.Allowed = allowed
	if o.leader.Namespace == "" {
		o.leader.Namespace = leader.DefaultNamespace()
	}
	return nil
}

// setMemoryLimit sets Go's soft memory limit (GOMEMLIMIT) to ratio of the
// memory limit that limits reports: the container's, read from its cgroup.
// At Go's default GOGC=100 the heap grows to twice the live data before a
// collection, so a controller whose live data fits in its container's
// limit can still be killed for memory (BENCHMARKS.md: 5000 AppServices with
// every child need 286 MiB at GOGC=100, 90 MB of it live; the manifests
// allow 256 MiB). Under the soft limit the collector runs as often as it
// must to stay below it, for more CPU time. The limit is set once: a
// container's memory limit changes only with a new Pod. Without a limit
// (outside a container, or none set), it stays Go's default, none; so it
// does where it cannot be read, with a warning.
//
// KimMachineGun/automemlimit reads the cgroup (v1 and v2), as Prometheus
// does for its --auto-gomemlimit: the library rather than our own parsing
// of /proc/self/mountinfo and the cgroup files.
func setMemoryLimit(logger klog.Logger, ratio float64, limits memlimit.Provider) {
	if ratio == 0 {
		return
	}
	limit, err := memlimit.Set(memlimit.WithRatio(ratio), memlimit.WithProvider(limits))
	if err != nil {
		logger.Error(err, "Go's soft memory limit is not set from the container's memory limit; running without one")
		return
	}
	if limit == math.MaxInt64 {
		logger.V(1).Info("No memory limit to follow: Go's soft memory limit stays unset")
		return
	}
	logger.Info("Go's soft memory limit", "bytes", limit, "MiB", limit>>20)
}

// replicaIdentity tells replicas apart in the Lease, in logs and, through
// the user agent, in the API server's audit log.
func replicaIdentity() (string, error) {
	hostname, err := os.Hostname()
	if err != nil {
		return "", err
	}
	return hostname + "_" + string(uuid.NewUUID()), nil
}

// clients are the controller's clientsets. Those of the syncs share one
// rate limiter (see clientConfigs); leases and reviews have their own.
type clients struct {
	kube kubernetes.Interface
	// metadata watches ConfigMaps and Secrets as metadata only.
	metadata metadata.Interface
	apps     clientset.Interface
	crds     apiextensionsclient.Interface
	// gateway is the Gateway API's (HTTPRoutes), which the cluster may not
	// serve.
	gateway gatewayclient.Interface
	// leases renews the Lease, as kube-controller-manager's leader election
	// does, with a client of its own: a backlog of syncs that spends
	// --kube-api-qps to the last token does not delay a renewal.
	leases kubernetes.Interface
	// reviews sends the metrics server's TokenReviews and
	// SubjectAccessReviews (internal/servers), at reviewQPS: callers of
	// :8443 with random tokens spend that, not what the syncs and the Lease
	// need.
	reviews kubernetes.Interface
}

// The budgets of the clients apart from the syncs': the Lease's renewal is
// two requests every --leader-elect-retry-period; the reviews are two per
// scraper and token cache period (10 s), and a caller with random tokens
// gets no more than this.
const (
	leaseQPS, leaseBurst   = 5, 10
	reviewQPS, reviewBurst = 10, 20
)

func newClients(o options, identity string) (*clients, error) {
	base, err := buildConfig(o.masterURL, o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("building kubeconfig: %w", err)
	}
	cfg, kubeCfg := clientConfigs(base, o, identity)
	c := &clients{}
	if c.kube, err = kubernetes.NewForConfig(kubeCfg); err != nil {
		return nil, fmt.Errorf("building kubernetes clientset: %w", err)
	}
	if c.metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("building metadata client: %w", err)
	}
	if c.apps, err = clientset.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("building appservice clientset: %w", err)
	}
	if c.crds, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("building apiextensions clientset: %w", err)
	}
	if c.gateway, err = gatewayclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("building Gateway API clientset: %w", err)
	}
	if c.leases, err = kubernetes.NewForConfig(ownBucket(kubeCfg, leaseQPS, leaseBurst)); err != nil {
		return nil, fmt.Errorf("building leader election clientset: %w", err)
	}
	if c.reviews, err = kubernetes.NewForConfig(ownBucket(kubeCfg, reviewQPS, reviewBurst)); err != nil {
		return nil, fmt.Errorf("building metrics reviews clientset: %w", err)
	}
	return c, nil
}

// newRecorder starts the Event broadcasters (owner.Recorder: several, so
// that Events keep up with a backlog's writes) and returns a recorder on
// them. They are not cancelled with ctx, so that Events recorded during
// shutdown are still sent: stop them with shutdownRecorder.
func newRecorder(ctx context.Context, kube kubernetes.Interface, namespace string) *owner.Recorder {
	// Events are recorded against AppServices, so the scheme the recorder
	// uses must know their kind.
	utilruntime.Must(appscheme.AddToScheme(scheme.Scheme))
	return owner.NewRecorder(ctx, &typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events(namespace)}, scheme.Scheme,
		corev1.EventSource{Component: controllerAgentName}, owner.EventShards)
}

// informerFactories feed the controller's caches.
type informerFactories struct {
	kube    kubeinformers.SharedInformerFactory
	jobs    kubeinformers.SharedInformerFactory
	apps    informers.SharedInformerFactory
	gateway gatewayinformers.SharedInformerFactory
}

// newInformerFactories returns the factories for o's namespace. The child
// informers see only objects carrying our label, and keep only what the
// controller reads of them (children.Trim: the owned fields, the metadata
// claiming needs, the status it reports). The AppServices lose only their
// managedFields, which the controller never reads and which in a big
// cluster are a large share of an object's size, and are kept encoded
// (appcache.Transform).
func newInformerFactories(c *clients, o options) informerFactories {
	return informerFactories{
		kube: kubeinformers.NewSharedInformerFactoryWithOptions(c.kube, o.resync,
			kubeinformers.WithNamespace(o.namespace),
			kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = appv1.LabelAppService }),
			kubeinformers.WithTransform(children.Trim),
		),
		// The Activities' Jobs, which carry their own label: a factory of
		// their own, as a list can select one label, not either of two.
		jobs: kubeinformers.NewSharedInformerFactoryWithOptions(c.kube, o.resync,
			kubeinformers.WithNamespace(o.namespace),
			kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = appv1.LabelActivity }),
			kubeinformers.WithTransform(children.Trim),
		),
		apps: informers.NewSharedInformerFactoryWithOptions(c.apps, o.resync,
			informers.WithNamespace(o.namespace),
			informers.WithTransform(appcache.Transform),
		),
		gateway: gatewayinformers.NewSharedInformerFactoryWithOptions(c.gateway, o.resync,
			gatewayinformers.WithNamespace(o.namespace),
			gatewayinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = appv1.LabelAppService }),
			gatewayinformers.WithTransform(children.Trim),
		),
	}
}

// clientConfigs returns the configuration for the AppService and
// apiextensions clients and, with protobuf, for the built-in kinds. They share
// one token bucket: --kube-api-qps bounds the process, not each clientset
// (each would otherwise make its own). They ask for uncompressed responses
// unless --kube-api-compression: kube-controller-manager and the scheduler
// do the same (kubernetes#80919). Since Kubernetes 1.37 the API server
// gzips every event of an informer's watch that asks (WatchListCompression):
// in a backlog of 3000 here, about 1% of its CPU per watching client, and
// 3-4% of ours to inflate (BENCHMARKS.md, issue 45).
func clientConfigs(base *rest.Config, o options, identity string) (cfg, kubeCfg *rest.Config) {
	cfg = rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	cfg.UserAgent = fmt.Sprintf("%s (%s)", rest.DefaultKubernetesUserAgent(), identity)
	cfg.DisableCompression = !o.compression
	// Protobuf for the built-in kinds: smaller and cheaper to decode than
	// JSON. Custom resources have no protobuf form and stay JSON.
	kubeCfg = rest.CopyConfig(cfg)
	kubeCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kubeCfg.ContentType = "application/vnd.kubernetes.protobuf"
	return cfg, kubeCfg
}

// ownBucket is cfg with a token bucket of its own, of qps and burst.
func ownBucket(cfg *rest.Config, qps float32, burst int) *rest.Config {
	own := rest.CopyConfig(cfg)
	own.QPS, own.Burst = qps, burst
	own.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	return own
}

// buildConfig finds the cluster as kubectl does: -kubeconfig, else the
// KUBECONFIG environment variable, else the in-cluster service account when
// running in a Pod, else ~/.kube/config; -master overrides the server.
func buildConfig(masterURL, kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	if kubeconfig == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			if masterURL != "" {
				cfg.Host = masterURL
			}
			return cfg, nil
		}
	}
	overrides := &clientcmd.ConfigOverrides{}
	overrides.ClusterInfo.Server = masterURL
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
}

// shutdownRecorder stops the Event broadcasters, which send the Events they
// still hold first, without letting a slow API server hold the exit up.
func shutdownRecorder(b *owner.Recorder, timeout time.Duration) {
	done := make(chan struct{})
	go func() { b.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		fmt.Fprintln(os.Stderr, "gave up waiting for pending Events to be sent")
	}
}
