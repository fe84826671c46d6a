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
// the probes' checks.
package servers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
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

// Probes answers the kubelet with k8s.io/apiserver's healthz handlers:
// /readyz once the informer caches have synced (a replica that is not the
// leader is ready too: it is a warm standby), /healthz unless leader
// election's renewal is stuck. Each check is also served on its own
// (/readyz/informer-sync), and ?verbose lists them all.
type Probes struct {
	cachesSynced atomic.Bool
	// leader fails when this replica leads but has not renewed its lease
	// in time; nil without leader election.
	leader healthz.HealthChecker
}

func (p *Probes) liveness() []healthz.HealthChecker {
	checks := []healthz.HealthChecker{healthz.PingHealthz}
	if p.leader != nil {
		checks = append(checks, p.leader)
	}
	return checks
}

func (p *Probes) readiness() []healthz.HealthChecker {
	return []healthz.HealthChecker{
		healthz.PingHealthz,
		healthz.NamedCheck("informer-sync", func(*http.Request) error {
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
	metrics, err := metricsHandler(kube, o.MetricsSecure, o.Profiling)
	if err != nil {
		return nil, err
	}
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
	healthz.InstallHandler(mux, p.liveness()...)
	healthz.InstallReadyzHandler(mux, p.readiness()...)
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
// /metrics (SubjectAccessReview): k8s.io/apiserver's delegating
// authenticator and authorizer do both, and cache the answers for 10 s.
// Anything else gets 401 or 403. A caller allowed /metrics is not allowed
// the profiles: those are further non-resource URLs, /debug/pprof/*.
func metricsHandler(kube kubernetes.Interface, secure, profiling bool) (http.Handler, error) {
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
		return mux, nil
	}
	// The retries of k8s.io/apiserver's DefaultAuthWebhookRetryBackoff (its
	// options package, which would bring the whole generic server along).
	backoff := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient:  kube.AuthenticationV1(),
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      backoff,
		CacheTTL:                 10 * time.Second,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics authentication: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             10 * time.Second,
		DenyCacheTTL:              10 * time.Second,
		WebhookRetryBackoff:       backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("metrics authorization: %w", err)
	}
	var h http.Handler = mux
	h = filters.WithAuthorization(h, authz, scheme.Codecs)
	h = filters.WithAuthentication(h, authn, filters.Unauthorized(scheme.Codecs), nil, nil)
	// The filters read the request's verb and path from its RequestInfo.
	h = filters.WithRequestInfo(h, &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	})
	return h, nil
}

// metricsTLS returns the metrics server's TLS configuration: the
// certificate and key in certFile and keyFile, read again when they change
// on disk (cert-manager renews them in place), or, without them, a
// self-signed certificate made at start-up, as kube-controller-manager
// does. HTTP/2 is off: scrapers do not need it, and it has been a
// denial-of-service vector (CVE-2023-44487).
func metricsTLS(ctx context.Context, certFile, keyFile string) (*tls.Config, error) {
	var cert dynamiccertificates.CertKeyContentProvider
	if certFile != "" {
		files, err := dynamiccertificates.NewDynamicServingContentFromFiles("metrics-serving-cert", certFile, keyFile)
		if err != nil {
			return nil, err
		}
		go files.Run(ctx, 1)
		cert = files
	} else {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
		if err != nil {
			return nil, fmt.Errorf("self-signed metrics certificate: %w", err)
		}
		if cert, err = dynamiccertificates.NewStaticCertKeyContent("self-signed", certPEM, keyPEM); err != nil {
			return nil, err
		}
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	certs := dynamiccertificates.NewDynamicServingCertificateController(base, nil, cert, nil, nil)
	cert.AddListener(certs)
	if err := certs.RunOnce(); err != nil {
		return nil, fmt.Errorf("metrics certificate: %w", err)
	}
	go certs.Run(1, ctx.Done())
	return &tls.Config{MinVersion: base.MinVersion, NextProtos: base.NextProtos, GetConfigForClient: certs.GetConfigForClient}, nil
}
