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

// Package servers serves the controller's HTTP endpoints: the kubelet's
// health probes (/healthz, /readyz, plain HTTP) and the Prometheus metrics
// (/metrics, over HTTPS to callers the API server authenticates and
// authorizes).
//
// It imports nothing of this repository: main.go gives it the clients and
// the probes' checks. Nor does it import k8s.io/apiserver, whose healthz
// handlers, delegating authenticator and authorizer and certificate
// reloader would link 255 more packages (CEL, gRPC, OpenTelemetry) and
// double the binary, whose mapped pages are most of an idle controller's
// memory: the probes (probes.go), the token and access reviews (auth.go)
// and the certificate (metricsTLS) are the same protocols, written for the
// little this server needs of them.
package servers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// Options are where the servers listen and how /metrics is secured (the
// -metrics-* and -health-probe-bind-address flags).
type Options struct {
	// MetricsAddr and ProbeAddr: "0" or "" turns that server off.
	MetricsAddr string
	ProbeAddr   string
	// MetricsSecure serves /metrics over HTTPS behind authentication and
	// authorization (see metricsHandler); false: plain HTTP, open.
	MetricsSecure bool
	// MetricsCertFile and MetricsKeyFile: the serving certificate, read
	// again when it changes; none: self-signed at start-up.
	MetricsCertFile string
	MetricsKeyFile  string
	// Profiling serves Go's pprof profiles under /debug/pprof/ on the
	// metrics server, behind the same authentication and authorization.
	Profiling bool
}

// Probes answers the kubelet as the Kubernetes components answer it
// (probes.go): /readyz once the informer caches have synced (a replica
// that is not the leader is ready too: it is a warm standby), /healthz
// unless leader election's renewal is stuck. Each check is also served on
// its own (/readyz/informer-sync), and ?verbose lists them all.
type Probes struct {
	cachesSynced atomic.Bool
	// leader fails when this replica leads but has not renewed its lease
	// in time; nil without leader election.
	leader Check
}

func (p *Probes) liveness() []Check {
	checks := []Check{ping}
	if p.leader != nil {
		checks = append(checks, p.leader)
	}
	return checks
}

func (p *Probes) readiness() []Check {
	return []Check{
		ping,
		NamedCheck("informer-sync", func(*http.Request) error {
			if !p.cachesSynced.Load() {
				return errors.New("informer caches have not synced yet")
			}
			return nil
		}),
	}
}

// NewProbes returns the probes' state: not ready until the caches have
// synced. With leader election, /healthz also fails when the leader has not
// renewed its Lease for 20 s past the lease duration (a stuck renewal loop):
// the returned watchdog goes to the leader elector.
func NewProbes(leaderElection bool) (*Probes, *leaderelection.HealthzAdaptor) {
	p := &Probes{}
	if !leaderElection {
		return p, nil
	}
	watchdog := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	p.leader = watchdog
	return p, watchdog
}

// ReadyWhenSynced marks the replica ready once the caches have synced, or
// never if ctx ends first.
func (p *Probes) ReadyWhenSynced(ctx context.Context, synced ...cache.InformerSynced) {
	if cache.WaitForCacheSync(ctx.Done(), synced...) {
		p.cachesSynced.Store(true)
		klog.FromContext(ctx).Info("Informer caches synced: ready")
	}
}

// Start serves the health probes (plain HTTP, open: the kubelet calls them)
// and the metrics (see metricsHandler) until the returned function is
// called. Both listen before it returns: a port in use is an error here.
func Start(ctx context.Context, o Options, kube kubernetes.Interface, p *Probes) (stop func(), err error) {
	metrics := metricsHandler(kube, o.MetricsSecure, o.Profiling)
	var metricsTLSConfig *tls.Config
	if o.MetricsSecure && o.MetricsAddr != "0" && o.MetricsAddr != "" {
		if metricsTLSConfig, err = metricsTLS(ctx, o.MetricsCertFile, o.MetricsKeyFile); err != nil {
			return nil, err
		}
	}
	stopProbes, err := serve(ctx, "health probes", o.ProbeAddr, probesHandler(p), nil)
	if err != nil {
		return nil, err
	}
	stopMetrics, err := serve(ctx, "metrics", o.MetricsAddr, metrics, metricsTLSConfig)
	if err != nil {
		stopProbes()
		return nil, err
	}
	return func() { stopMetrics(); stopProbes() }, nil
}

func probesHandler(p *Probes) http.Handler {
	mux := http.NewServeMux()
	installChecks(mux, "healthz", p.liveness())
	installChecks(mux, "readyz", p.readiness())
	return mux
}

// serve starts an HTTP server on addr ("0" or "" turns it off), over TLS
// when tlsConfig is set, and returns a function that shuts it down. The
// listener is opened before returning, so a port already in use is an error
// at start-up, not a log line later.
func serve(ctx context.Context, name, addr string, handler http.Handler, tlsConfig *tls.Config) (func(), error) {
	if addr == "" || addr == "0" {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	protocol := "http"
	if tlsConfig != nil {
		l, protocol = tls.NewListener(l, tlsConfig), "https"
	}
	logger := klog.FromContext(ctx)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Server failed", "server", name)
		}
	}()
	logger.Info("Serving", "server", name, "address", l.Addr().String(), "scheme", protocol)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// metricsHandler serves /metrics and, with profiling, /debug/pprof/ (as
// kube-controller-manager's --profiling does). Secured, as kube-controller-manager
// secures its own, callers must present a bearer token, which the API server
// authenticates (TokenReview), and be allowed to get the non-resource URL
// /metrics (SubjectAccessReview); the answers are cached for 10 s
// (auth.go). Anything else gets 401 or 403. A caller allowed /metrics is
// not allowed the profiles: those are further non-resource URLs,
// /debug/pprof/*.
func metricsHandler(kube kubernetes.Interface, secure, profiling bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if !secure {
		return mux
	}
	return newReviews(kube.AuthenticationV1().TokenReviews(), kube.AuthorizationV1().SubjectAccessReviews(),
		10*time.Second).protect(mux)
}

// metricsTLS returns the metrics server's TLS configuration: the
// certificate and key in certFile and keyFile, read again when they change
// on disk (cert-manager renews them in place), or, without them, a
// self-signed certificate made at start-up, as kube-controller-manager
// does. HTTP/2 is off: scrapers do not need it, and it has been a
// denial-of-service vector (CVE-2023-44487).
func metricsTLS(ctx context.Context, certFile, keyFile string) (*tls.Config, error) {
	config := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if certFile == "" {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
		if err != nil {
			return nil, fmt.Errorf("self-signed metrics certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("self-signed metrics certificate: %w", err)
		}
		config.Certificates = []tls.Certificate{cert}
		return config, nil
	}
	files := &certFiles{cert: certFile, key: keyFile, logger: klog.FromContext(ctx)}
	if _, err := files.get(nil); err != nil {
		return nil, err
	}
	config.GetCertificate = files.get
	return config, nil
}

// certFiles is a serving certificate read from two files, and read again
// at the first handshake after either changed (its modification time or
// size: a Secret's volume swaps both files at once). A pair that does not
// load, such as one caught between the two files' writes, keeps the
// previous certificate in use until the next change.
type certFiles struct {
	cert, key string
	logger    klog.Logger

	mu      sync.Mutex
	stamp   string
	current *tls.Certificate
}

func (f *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	stamp, err := fileStamp(f.cert, f.key)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil && stamp == f.stamp {
		return f.current, nil
	}
	if err == nil {
		var cert tls.Certificate
		if cert, err = tls.LoadX509KeyPair(f.cert, f.key); err == nil {
			if f.current != nil {
				f.logger.Info("Metrics serving certificate changed: loaded", "certFile", f.cert)
			}
			f.stamp, f.current = stamp, &cert
			return f.current, nil
		}
	}
	if f.current == nil {
		return nil, fmt.Errorf("metrics serving certificate: %w", err)
	}
	if f.stamp != stamp {
		// Logged once per change, not per handshake.
		f.stamp = stamp
		f.logger.Error(err, "Metrics serving certificate changed but does not load: serving the previous one", "certFile", f.cert)
	}
	return f.current, nil
}

// fileStamp is what changes when any of the files is written or replaced.
func fileStamp(paths ...string) (string, error) {
	var b strings.Builder
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %d %d;", p, fi.ModTime().UnixNano(), fi.Size())
	}
	return b.String(), nil
}
