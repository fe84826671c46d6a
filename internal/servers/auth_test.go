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
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
)

// TestReviewsCachedAndRetried: one TokenReview and one SubjectAccessReview
// per token and path while the answers are fresh, both asked again once
// they expire; a review the API server fails (500) is retried, one it
// refuses (400) is not, and neither is cached.
func TestReviewsCachedAndRetried(t *testing.T) {
	var tokenReviews, accessReviews, failNext atomic.Int32
	api := http.NewServeMux()
	api.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		tokenReviews.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if failNext.Load() > 0 {
			failNext.Add(-1)
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`))
			return
		}
		var tr authenticationv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&tr)
		if tr.Spec.Token == "refused" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":400}`))
			return
		}
		tr.Status = authenticationv1.TokenReviewStatus{Authenticated: tr.Spec.Token == "good",
			User: authenticationv1.UserInfo{Username: "scraper", Groups: []string{"monitoring"}}}
		_ = json.NewEncoder(w).Encode(tr)
	})
	api.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		accessReviews.Add(1)
		w.Header().Set("Content-Type", "application/json")
		var sar authorizationv1.SubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&sar)
		sar.Status.Allowed = sar.Spec.User == "scraper" && len(sar.Spec.Groups) == 1 &&
			sar.Spec.NonResourceAttributes.Path == "/metrics" && sar.Spec.NonResourceAttributes.Verb == "get"
		_ = json.NewEncoder(w).Encode(sar)
	})
	apiServer := httptest.NewServer(api)
	defer apiServer.Close()
	kube := kubernetes.NewForConfigOrDie(&rest.Config{Host: apiServer.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	const ttl = 300 * time.Millisecond
	rv := newReviews(kube.AuthenticationV1().TokenReviews(), kube.AuthorizationV1().SubjectAccessReviews(), ttl)
	rv.backoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}
	h := rv.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Error("the token reached the handler")
		}
	}))
	call := func(token, path string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	expect := func(what string, got, want int, tokens, accesses int32) {
		t.Helper()
		if got != want || tokenReviews.Load() != tokens || accessReviews.Load() != accesses {
			t.Errorf("%s: %d after %d TokenReviews and %d SubjectAccessReviews, want %d after %d and %d",
				what, got, tokenReviews.Load(), accessReviews.Load(), want, tokens, accesses)
		}
	}
	expect("first scrape", call("good", "/metrics"), http.StatusOK, 1, 1)
	expect("second scrape, cached", call("good", "/metrics"), http.StatusOK, 1, 1)
	expect("another path: its own review", call("good", "/debug/pprof/heap"), http.StatusForbidden, 1, 2)
	expect("an unknown token", call("bad", "/metrics"), http.StatusUnauthorized, 2, 2)
	expect("an unknown token, cached", call("bad", "/metrics"), http.StatusUnauthorized, 2, 2)
	time.Sleep(ttl + 50*time.Millisecond)
	expect("after the answers expired", call("good", "/metrics"), http.StatusOK, 3, 3)

	failNext.Store(2)
	expect("a token review that failed twice, then answered", call("new", "/metrics"), http.StatusUnauthorized, 6, 3)
	failNext.Store(3) // as many as the backoff's steps
	expect("a token review that kept failing", call("other", "/metrics"), http.StatusUnauthorized, 9, 3)
	expect("the failure was not cached", call("other", "/metrics"), http.StatusUnauthorized, 10, 3)
	expect("a refused token review is not retried", call("refused", "/metrics"), http.StatusUnauthorized, 11, 3)
}

// TestCertFilesReloaded: the metrics server's certificate is read again
// from its files after they change, and a pair that does not load keeps
// the previous one in use.
func TestCertFilesReloaded(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(host string) {
		t.Helper()
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := metricsTLS(context.Background(), certFile, keyFile); err == nil {
		t.Fatal("metricsTLS without the files: no error")
	}
	write("first.example.com")
	config, err := metricsTLS(context.Background(), certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	stop, err := serve(context.Background(), "tls", addr, http.NotFoundHandler(), config)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].DNSNames[0]
	}
	if got := served(); got != "first.example.com" {
		t.Errorf("served %q, want first.example.com", got)
	}
	// A later modification time, as a renewal would bring.
	write("second.example.com")
	later := time.Now().Add(2 * time.Second)
	_ = os.Chtimes(certFile, later, later)
	if got := served(); got != "second.example.com" {
		t.Errorf("after the files changed, served %q, want second.example.com", got)
	}
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := served(); got != "second.example.com" {
		t.Errorf("after a key that does not load, served %q, want the previous second.example.com", got)
	}
}
