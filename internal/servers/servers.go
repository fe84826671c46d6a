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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	pprofile "runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
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
func Start(ctx context.Context, o Options, reviewer kubernetes.Interface, p *Probes) (stop func(), err error) {
	metrics := metricsHandler(reviewer, o.MetricsSecure, o.Profiling)
	var metricsTLSConfig *tls.Config
	if o.MetricsSecure && o.MetricsAddr != "0" && o.MetricsAddr != "" {
		if metricsTLSConfig, err = metricsTLS(ctx, o.MetricsCertFile, o.MetricsKeyFile); err != nil {
			return nil, err
		}
	}
	stopProbes, err := serve(ctx, "health probes", o.ProbeAddr, probesHandler(p), nil, 0)
	if err != nil {
		return nil, err
	}
	if metricsTLSConfig != nil {
		limitHandshakes(metricsTLSConfig, handshakeRate, handshakeWait)
	}
	stopMetrics, err := serve(ctx, "metrics", o.MetricsAddr, metrics, metricsTLSConfig, metricsConns)
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

// The servers' bounds. Timeouts as controller-runtime sets its servers'
// (IdleTimeout, the keep-alive of Go's default client), with a
// WriteTimeout. Headers are bounded far below Go's 1 MiB default, and
// still well above the largest bearer tokens (OIDC tokens with groups run
// to a few KiB). pprof's seconds are bounded apart (boundSeconds): pprof
// extends its response's write deadline by them.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 90 * time.Second
	writeTimeout      = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	maxProfileSeconds = 60
)

// The metrics server's connections: at most metricsConns open at once, and
// at most handshakeRate TLS handshakes a second (with as much burst), each
// waiting its turn after the client's hello for up to handshakeWait, then
// refused. Together with refusals that close their connection (auth.go), a
// caller who is refused costs at most that many handshakes and requests a
// second, however many it keeps in flight: the others wait in the kernel's
// listen queue or for their turn, costing this process no CPU. A
// connection its client gave up on ends at its hello, taking no turn. A
// scraper's allowed connection stays open between scrapes (idleTimeout)
// and is not affected.
const (
	metricsConns  = 256
	handshakeRate = 20
	handshakeWait = 5 * time.Second
)

// serve starts an HTTP server on addr ("0" or "" turns it off), over TLS
// when tlsConfig is set, and returns a function that shuts it down. The
// listener is opened before returning, so a port already in use is an error
// at start-up, not a log line later. With conns, at most that many
// connections are open at once: the next is accepted when one closes.
func serve(ctx context.Context, name, addr string, handler http.Handler, tlsConfig *tls.Config, conns int) (func(), error) {
	if addr == "" || addr == "0" {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	if conns > 0 {
		l = limitListener(l, conns)
	}
	protocol := "http"
	if tlsConfig != nil {
		l, protocol = tls.NewListener(l, tlsConfig), "https"
	}
	logger := klog.FromContext(ctx)
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		WriteTimeout:      writeTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// A caller's failed TLS handshakes and malformed requests are not
		// worth a log line each, at whatever rate it sends them.
		ErrorLog: log.New(io.Discard, "", 0),
	}
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

// limitHandshakes makes the handshakes of config wait their turn at
// perSecond a second. One whose turn would come after wait is refused
// after wait, not at once: a caller that connects again as soon as it is
// refused would otherwise make the server refuse as fast as it can. A
// connection whose client has gone, before or after its wait, takes no
// turn (a flood's connections left in the listen queue when it stops are
// accepted after it, each with its hello: they take nothing from the
// callers after them).
func limitHandshakes(config *tls.Config, perSecond float64, wait time.Duration) {
	limiter := rate.NewLimiter(rate.Limit(perSecond), int(perSecond))
	config.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if peerGone(hello.Conn) {
			return nil, errors.New("the client closed the connection")
		}
		turn := limiter.Reserve()
		delay := turn.Delay()
		if delay > wait {
			turn.Cancel()
		}
		if delay > 0 {
			select {
			case <-time.After(min(delay, wait)):
			case <-hello.Context().Done():
				turn.Cancel()
				return nil, hello.Context().Err()
			}
		}
		if delay > wait {
			return nil, errors.New("too many TLS handshakes waiting")
		}
		if peerGone(hello.Conn) {
			turn.Cancel()
			return nil, errors.New("the client closed the connection")
		}
		return nil, nil
	}
}

// metricsHandler serves /metrics and, with profiling, /debug/pprof/ (as
// kube-controller-manager's --profiling does). Secured, as kube-controller-manager
// secures its own, callers must present a bearer token, which the API server
// authenticates (TokenReview), and be allowed to get the non-resource URL
// /metrics (SubjectAccessReview); the answers are cached for 10 s
// (auth.go). Anything else gets 401 or 403. A caller allowed /metrics is
// not allowed the profiles: those are further non-resource URLs,
// /debug/pprof/*. reviewer sends the reviews: a client of their own, whose
// rate limit is theirs alone.
func metricsHandler(reviewer kubernetes.Interface, secure, profiling bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	if profiling {
		mux.HandleFunc("/debug/pprof/", boundSeconds(pprof.Index))
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", boundSeconds(pprof.Profile))
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", boundSeconds(pprof.Trace))
	}
	if !secure {
		return mux
	}
	return newReviews(reviewer.AuthenticationV1().TokenReviews(), reviewer.AuthorizationV1().SubjectAccessReviews(),
		10*time.Second).protect(served(servedPaths(profiling)), mux)
}

// boundSeconds refuses (400) a profile, trace or delta profile whose
// seconds are not a number up to maxProfileSeconds: each holds its
// connection and a goroutine that long.
func boundSeconds(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s := r.URL.Query().Get("seconds"); s != "" {
			if sec, err := strconv.ParseFloat(s, 64); err != nil || sec > maxProfileSeconds {
				http.Error(w, fmt.Sprintf("seconds: a number up to %d", maxProfileSeconds), http.StatusBadRequest)
				return
			}
		}
		h(w, r)
	}
}

// servedPaths are the paths metricsHandler serves, each with the methods
// it answers.
func servedPaths(profiling bool) map[string]string {
	const get = "GET, HEAD"
	paths := map[string]string{"/metrics": get}
	if profiling {
		for _, p := range []string{"", "cmdline", "profile", "trace"} {
			paths["/debug/pprof/"+p] = get
		}
		paths["/debug/pprof/symbol"] = get + ", POST"
		for _, p := range pprofile.Profiles() {
			paths["/debug/pprof/"+p.Name()] = get
		}
	}
	return paths
}

// served says whether paths serve method on path; allow lists the methods
// path is served with, "" for a path not served.
func served(paths map[string]string) func(method, path string) (ok bool, allow string) {
	return func(method, path string) (bool, string) {
		allow, ok := paths[path]
		if !ok {
			return false, ""
		}
		for m := range strings.SplitSeq(allow, ", ") {
			if m == method {
				return true, allow
			}
		}
		return false, allow
	}
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
		cert, err := selfSigned()
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

// selfSigned is a certificate for localhost and 127.0.0.1, valid for a
// year, signed by its own ECDSA P-256 key. Not client-go's
// GenerateSelfSignedCertKey, whose RSA 2048 key makes each TLS handshake
// cost the server about fifty times the CPU: the handshakes a refused
// caller makes, at the rate the listener accepts them, are this process's
// to pay (limitListener).
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("localhost@%d", now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
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
