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

package servers

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	// The build info TestSecureMetrics looks for.
	_ "example.com/appservice-controller/internal/metrics"
)

// TestProbes: /readyz fails until the caches have synced; /healthz fails
// only when leader election's renewal check does; each check answers on its
// own path, and ?verbose names them.
func TestProbes(t *testing.T) {
	stuck := NamedCheck("leaderElection", func(*http.Request) error { return errors.New("lease not renewed") })
	tests := []struct {
		name     string
		synced   bool
		leader   Check
		path     string
		want     int
		wantBody string
	}{
		{name: "not synced", path: "/readyz", want: http.StatusInternalServerError},
		{name: "not synced, verbose", path: "/readyz?verbose", want: http.StatusInternalServerError,
			wantBody: "[-]informer-sync failed: reason withheld"},
		{name: "synced", synced: true, path: "/readyz", want: http.StatusOK},
		{name: "synced, verbose", synced: true, path: "/readyz?verbose", want: http.StatusOK, wantBody: "[+]informer-sync ok"},
		{name: "one check", path: "/readyz/informer-sync", want: http.StatusInternalServerError,
			wantBody: "informer caches have not synced yet"},
		{name: "healthy before sync", path: "/healthz", want: http.StatusOK},
		{name: "renewal stuck", synced: true, leader: stuck, path: "/healthz", want: http.StatusInternalServerError},
		{name: "renewal stuck, verbose", synced: true, leader: stuck, path: "/healthz?verbose",
			want: http.StatusInternalServerError, wantBody: "[-]leaderElection failed"},
		{name: "renewal stuck, still ready", synced: true, leader: stuck, path: "/readyz", want: http.StatusOK},
		{name: "renewal stuck, its own path", synced: true, leader: stuck, path: "/healthz/leaderElection",
			want: http.StatusInternalServerError, wantBody: "lease not renewed"},
		{name: "renewal stuck, excluded", synced: true, leader: stuck, path: "/healthz?exclude=leaderElection&verbose",
			want: http.StatusOK, wantBody: "[+]leaderElection excluded: ok"},
		{name: "ping", path: "/readyz/ping", want: http.StatusOK, wantBody: "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Probes{leader: tc.leader}
			p.cachesSynced.Store(tc.synced)
			rec := httptest.NewRecorder()
			probesHandler(p).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("GET %s = %d %q, want %d containing %q", tc.path, rec.Code, rec.Body.String(), tc.want, tc.wantBody)
			}
		})
	}
}

// TestServe: "0" turns a server off; a port in use is an error at start-up;
// otherwise it serves until stopped, over TLS when given a configuration.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop, err := serve(ctx, "off", "0", http.NotFoundHandler(), nil, 0)
	if err != nil {
		t.Fatalf("serve(\"0\"): %v", err)
	}
	stop()

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if _, err := serve(ctx, "taken", taken.Addr().String(), http.NotFoundHandler(), nil, 0); err == nil {
		t.Error("serve on a port in use: no error")
	}

	p := &Probes{}
	p.cachesSynced.Store(true)
	addr := freeAddr(t)
	stop, err = serve(ctx, "probes", addr, probesHandler(p), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if code := get(t, http.DefaultClient, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d, want 200", code)
	}
	stop()
	if _, err := http.Get("http://" + addr + "/readyz"); err == nil {
		t.Error("still serving after stop")
	}

	tlsConfig, err := metricsTLS(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	addr = freeAddr(t)
	stop, err = serve(ctx, "tls", addr, probesHandler(p), tlsConfig, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if code := get(t, insecure, "https://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz over TLS with the self-signed certificate = %d, want 200", code)
	}
	if code := get(t, http.DefaultClient, "http://"+addr+"/readyz"); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS server = %d, want 400", code)
	}
}

// TestSecureMetrics: behind -metrics-secure, /metrics asks the API server
// who the bearer of a token is (TokenReview) and whether they may get
// /metrics (SubjectAccessReview): 401 without a token or with one it does
// not know, 403 without the permission, 200 with it.
func TestSecureMetrics(t *testing.T) {
	// The API server's two review endpoints, answering as RBAC would for
	// tokens "token-of-<user>" and a ClusterRole granting /metrics to
	// "scraper". (TestProbesAndMetrics in test/e2e asks the real one.)
	var reviews []authorizationv1.SubjectAccessReviewSpec
	api := http.NewServeMux()
	api.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if user, ok := strings.CutPrefix(tr.Spec.Token, "token-of-"); ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(tr)
	})
	api.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reviews = append(reviews, sar.Spec)
		path := sar.Spec.NonResourceAttributes.Path
		sar.Status.Allowed = sar.Spec.User == "scraper" && path == "/metrics" ||
			sar.Spec.User == "profiler" && strings.HasPrefix(path, "/debug/pprof/")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(sar)
	})
	apiServer := httptest.NewServer(api)
	defer apiServer.Close()
	kube := kubernetes.NewForConfigOrDie(&rest.Config{Host: apiServer.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	h := metricsHandler(kube, true, true)
	for _, tc := range []struct {
		token string
		want  int
	}{
		{"", http.StatusUnauthorized},
		{"unknown", http.StatusUnauthorized},
		{"token-of-somebody", http.StatusForbidden},
		{"token-of-scraper", http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("token %q: %d %q, want %d", tc.token, rec.Code, rec.Body.String(), tc.want)
		}
		if tc.want == http.StatusOK && !strings.Contains(rec.Body.String(), "appservice_controller_build_info{") {
			t.Errorf("token %q: no build info in /metrics", tc.token)
		}
	}
	for _, r := range reviews {
		if r.NonResourceAttributes == nil || r.NonResourceAttributes.Path != "/metrics" || r.NonResourceAttributes.Verb != "get" {
			t.Errorf("SubjectAccessReview for %+v, want get on the non-resource URL /metrics", r)
		}
	}
	if len(reviews) != 2 {
		t.Errorf("%d SubjectAccessReviews, want 2 (one per authenticated caller)", len(reviews))
	}

	// -profiling: the profiles are their own non-resource URLs, which a
	// scraper allowed /metrics is not allowed.
	for _, tc := range []struct {
		token string
		want  int
	}{
		{"", http.StatusUnauthorized},
		{"token-of-scraper", http.StatusForbidden},
		{"token-of-profiler", http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodGet, "/debug/pprof/heap", nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("/debug/pprof/heap, token %q: %d, want %d", tc.token, rec.Code, tc.want)
		}
	}
}

// TestProfilingOff: without -profiling there are no profiles to get.
func TestProfilingOff(t *testing.T) {
	h := metricsHandler(nil, false, false)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/heap", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/debug/pprof/heap without -profiling = %d, want 404", rec.Code)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestMetricsServerBounds: the metrics server refuses headers past its
// bound (431), closes the connection of a refused request, and holds
// connections past its bound unaccepted until one closes.
func TestMetricsServerBounds(t *testing.T) {
	ctx := context.Background()
	tlsConfig, err := metricsTLS(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			refuse(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	const conns = 2
	limitHandshakes(tlsConfig, 1000, time.Second)
	stop, err := serve(ctx, "bounded", addr, h, tlsConfig, conns)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dial := func() *tls.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Client(c, &tls.Config{InsecureSkipVerify: true})
	}
	// send writes a request on c and returns the status line of its answer,
	// and whether the server closed the connection after it.
	send := func(c *tls.Conn, path, extra string) (string, bool) {
		t.Helper()
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", path, extra); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = r.ReadByte()
		return resp.Status, errors.Is(err, io.EOF)
	}
	c := dial()
	if status, closed := send(c, "/ok", "X-Long: "+strings.Repeat("x", maxHeaderBytes+8192)+"\r\n"); !strings.HasPrefix(status, "431") || !closed {
		t.Errorf("headers past the bound: %s, closed %v; want 431, closed", status, closed)
	}
	c = dial()
	if status, closed := send(c, "/refused", ""); !strings.HasPrefix(status, "401") || !closed {
		t.Errorf("a refused request: %s, closed %v; want 401, closed", status, closed)
	}

	// conns connections held open: one more is not accepted (its handshake
	// does not end) until one of them closes.
	var held []*tls.Conn
	for range conns {
		c := dial()
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		defer c.Close()
	}
	extra := dial()
	_ = extra.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if err := extra.Handshake(); err == nil {
		t.Fatalf("a connection past the bound of %d was accepted", conns)
	}
	_ = extra.Close()
	_ = held[0].Close()
	late := dial()
	defer late.Close()
	_ = late.SetDeadline(time.Now().Add(10 * time.Second))
	if err := late.Handshake(); err != nil {
		t.Errorf("after one closed, a new connection: %v", err)
	}
}

// TestHandshakesLimited: TLS handshakes wait their turn at the rate, and
// one whose turn would come too late is refused after the longest wait,
// not at once.
func TestHandshakesLimited(t *testing.T) {
	ctx := context.Background()
	tlsConfig, err := metricsTLS(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	limitHandshakes(tlsConfig, 2, 200*time.Millisecond)
	addr := freeAddr(t)
	stop, err := serve(ctx, "limited", addr, http.NotFoundHandler(), tlsConfig, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var done []error
	var last time.Duration
	for range 3 {
		start := time.Now()
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			_ = c.Close()
		}
		done, last = append(done, err), time.Since(start)
	}
	if done[0] != nil || done[1] != nil || done[2] == nil || last < 200*time.Millisecond {
		t.Errorf("three handshakes at once under a rate of 2 a second, waiting 200 ms at most: %v, the last after %s; "+
			"want two, then one refused after 200 ms", done, last)
	}
}

// TestPeerGone: a connection its client closed is told from one it keeps
// open, and looking consumes nothing it sent.
func TestPeerGone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := limitListener(l, 2)
	defer ll.Close()
	accept := func() (client, server net.Conn) {
		t.Helper()
		client, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err = ll.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return client, server
	}
	client, server := accept()
	if peerGone(server) {
		t.Error("a connection kept open: gone")
	}
	_, _ = client.Write([]byte("hi"))
	time.Sleep(50 * time.Millisecond)
	if peerGone(server) {
		t.Error("a connection with data waiting: gone")
	}
	if b, err := io.ReadAll(io.LimitReader(server, 2)); err != nil || string(b) != "hi" {
		t.Errorf("read after the look: %q %v, want \"hi\"", b, err)
	}
	_ = client.Close()
	time.Sleep(50 * time.Millisecond)
	if !peerGone(server) {
		t.Error("a connection its client closed: not gone")
	}
	_ = server.Close()
	// Its slot is free again: two more are accepted.
	c1, s1 := accept()
	c2, s2 := accept()
	for _, c := range []net.Conn{c1, s1, c2, s2} {
		_ = c.Close()
	}
}

// TestServerLimits: the self-signed certificate's key is ECDSA (cheap
// handshakes), and a profile, trace or delta profile longer than
// maxProfileSeconds, or of seconds that are no number, is refused at once.
func TestServerLimits(t *testing.T) {
	ctx := context.Background()
	tlsConfig, err := metricsTLS(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tlsConfig.Certificates[0].PrivateKey.(*ecdsa.PrivateKey); !ok {
		t.Errorf("self-signed key %T, want *ecdsa.PrivateKey", tlsConfig.Certificates[0].PrivateKey)
	}
	addr := freeAddr(t)
	stop, err := serve(ctx, "profiles", addr, metricsHandler(nil, false, true), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, path := range []string{"profile?seconds=61", "trace?seconds=3600", "heap?seconds=1e9", "profile?seconds=NaNs"} {
		if code := get(t, http.DefaultClient, "http://"+addr+"/debug/pprof/"+path); code != http.StatusBadRequest {
			t.Errorf("/debug/pprof/%s: %d, want 400", path, code)
		}
	}
}
