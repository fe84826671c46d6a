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
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	h := rv.protect(served(servedPaths(true)), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	stop, err := serve(context.Background(), "tls", addr, http.NotFoundHandler(), config, 0)
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

// fakeReviewer is an API server's two review endpoints, answering by
// users (token → user; none: unknown) and allow (a SubjectAccessReview's
// status), counting the reviews. Until release is closed (if it is set)
// each review of a token "held-…" waits for it.
type fakeReviewer struct {
	users   map[string]authenticationv1.UserInfo
	allow   func(authorizationv1.SubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus
	release chan struct{}
	// sarStatus, when set, answers every SubjectAccessReview with it.
	sarStatus int

	tokenReviews, accessReviews atomic.Int32
}

func (f *fakeReviewer) start(t *testing.T) kubernetes.Interface {
	t.Helper()
	api := http.NewServeMux()
	api.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		f.tokenReviews.Add(1)
		var tr authenticationv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&tr)
		if f.release != nil && strings.HasPrefix(tr.Spec.Token, "held-") {
			<-f.release
		}
		if user, ok := f.users[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: user}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(tr)
	})
	api.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		f.accessReviews.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if f.sarStatus != 0 {
			w.WriteHeader(f.sarStatus)
			_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d}`, f.sarStatus)
			return
		}
		var sar authorizationv1.SubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&sar)
		sar.Status = f.allow(sar.Spec)
		_ = json.NewEncoder(w).Encode(sar)
	})
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		if f.release != nil {
			select {
			case <-f.release:
			default:
				close(f.release)
			}
		}
		srv.Close()
	})
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, QPS: -1,
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
}

// protected is the metrics handler behind reviews of f, with profiling,
// answering 200 "ok" when let through, and a function sending it a request.
func (f *fakeReviewer) protected(t *testing.T) (*reviews, func(method, path, authorization string) *httptest.ResponseRecorder) {
	t.Helper()
	kube := f.start(t)
	rv := newReviews(kube.AuthenticationV1().TokenReviews(), kube.AuthorizationV1().SubjectAccessReviews(), time.Minute)
	rv.backoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}
	h := rv.protect(served(servedPaths(true)), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	return rv, func(method, path, authorization string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
}

func allowScraper(spec authorizationv1.SubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
	return authorizationv1.SubjectAccessReviewStatus{Allowed: spec.User == "scraper"}
}

// TestAccessReviewAnswers: an access review that keeps failing gives 500
// and is not cached; one that says Denied gives 403, even beside Allowed.
func TestAccessReviewAnswers(t *testing.T) {
	f := &fakeReviewer{users: map[string]authenticationv1.UserInfo{"good": {Username: "scraper"}, "denied": {Username: "denied"}},
		allow: func(spec authorizationv1.SubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
			return authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: spec.User == "denied"}
		}, sarStatus: http.StatusServiceUnavailable}
	_, call := f.protected(t)
	if rec := call(http.MethodGet, "/metrics", "Bearer good"); rec.Code != http.StatusInternalServerError {
		t.Errorf("an access review that keeps failing: %d %q, want 500", rec.Code, rec.Body.String())
	}
	if got := f.accessReviews.Load(); got != 3 {
		t.Errorf("%d access reviews, want 3 (the backoff's steps)", got)
	}
	f.sarStatus = 0
	if rec := call(http.MethodGet, "/metrics", "Bearer good"); rec.Code != http.StatusOK {
		t.Errorf("once the access review answers: %d %q, want 200 (the failure was not cached)", rec.Code, rec.Body.String())
	}
	if rec := call(http.MethodGet, "/metrics", "Bearer denied"); rec.Code != http.StatusForbidden {
		t.Errorf("Denied beside Allowed: %d %q, want 403", rec.Code, rec.Body.String())
	}
}

// TestBearerToken: the Authorization header parsed as the API server
// parses it; a header without a usable token costs no review.
func TestBearerToken(t *testing.T) {
	f := &fakeReviewer{users: map[string]authenticationv1.UserInfo{"good": {Username: "scraper"}}, allow: allowScraper}
	_, call := f.protected(t)
	for _, tc := range []struct {
		header string
		want   int
		review bool
	}{
		{"Bearer good", http.StatusOK, true},
		{"bearer good", http.StatusOK, true},
		{"BEARER good", http.StatusOK, true},
		{"  Bearer good  ", http.StatusOK, true},
		// The API server reads the token up to the next space.
		{"Bearer good trailing", http.StatusOK, true},
		{"Bearer  good", http.StatusUnauthorized, false},
		{"Bearer\tgood", http.StatusUnauthorized, false},
		{"Bearer", http.StatusUnauthorized, false},
		{"Bearer ", http.StatusUnauthorized, false},
		{"Basic Z29vZDo=", http.StatusUnauthorized, false},
		{"good", http.StatusUnauthorized, false},
		{"", http.StatusUnauthorized, false},
		{"Bearer unknown", http.StatusUnauthorized, true},
	} {
		before := f.tokenReviews.Load()
		rec := call(http.MethodGet, "/metrics", tc.header)
		if rec.Code != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.header, rec.Code, tc.want)
		}
		// "good" is cached after its first review.
		if reviewed := f.tokenReviews.Load() > before; !tc.review && reviewed {
			t.Errorf("Authorization %q: a TokenReview was sent", tc.header)
		}
	}
	if got := f.tokenReviews.Load(); got != 2 {
		t.Errorf("%d TokenReviews, want 2 (good once, unknown once)", got)
	}
}

// TestUsersApart: users who differ only in their groups or their extra
// get answers of their own, whichever asks first.
func TestUsersApart(t *testing.T) {
	users := map[string]authenticationv1.UserInfo{
		"plain":        {Username: "scraper"},
		"monitoring":   {Username: "scraper", Groups: []string{"monitoring"}},
		"groups-split": {Username: "scraper", Groups: []string{"monitor", "ing"}},
		"scoped":       {Username: "scraper", Extra: map[string]authenticationv1.ExtraValue{"scopes": {"metrics"}}},
		"scoped-other": {Username: "scraper", Extra: map[string]authenticationv1.ExtraValue{"scopes": {"other"}}},
	}
	allowed := map[string]bool{"monitoring": true, "scoped": true}
	for _, order := range [][]string{
		{"plain", "monitoring", "groups-split", "scoped", "scoped-other"},
		{"scoped-other", "scoped", "groups-split", "monitoring", "plain"},
	} {
		f := &fakeReviewer{users: users, allow: func(spec authorizationv1.SubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
			ok := slices.Equal(spec.Groups, []string{"monitoring"}) ||
				slices.Equal(spec.Extra["scopes"], authorizationv1.ExtraValue{"metrics"})
			return authorizationv1.SubjectAccessReviewStatus{Allowed: ok}
		}}
		_, call := f.protected(t)
		for _, token := range order {
			want := http.StatusForbidden
			if allowed[token] {
				want = http.StatusOK
			}
			if rec := call(http.MethodGet, "/metrics", "Bearer "+token); rec.Code != want {
				t.Errorf("order %v, %s: %d, want %d", order, token, rec.Code, want)
			}
		}
		if got := f.accessReviews.Load(); got != int32(len(order)) {
			t.Errorf("order %v: %d access reviews, want one per user", order, got)
		}
	}
}

// TestReviewsCoalesced: concurrent requests with one token wait for one
// TokenReview and one SubjectAccessReview.
func TestReviewsCoalesced(t *testing.T) {
	f := &fakeReviewer{users: map[string]authenticationv1.UserInfo{"held-good": {Username: "scraper"}}, allow: allowScraper,
		release: make(chan struct{})}
	_, call := f.protected(t)
	const n = 20
	codes := make(chan int, n)
	for range n {
		go func() { codes <- call(http.MethodGet, "/metrics", "Bearer held-good").Code }()
	}
	// Every request in, waiting: the one review is held until released.
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return f.tokenReviews.Load() == 1, nil }); err != nil {
		t.Fatal("no TokenReview sent")
	}
	time.Sleep(100 * time.Millisecond) // the other requests join it
	close(f.release)
	for range n {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a request: %d, want 200", code)
		}
	}
	if tr, ar := f.tokenReviews.Load(), f.accessReviews.Load(); tr != 1 || ar != 1 {
		t.Errorf("%d TokenReviews and %d SubjectAccessReviews for %d requests with one token, want 1 and 1", tr, ar, n)
	}
}

// TestReviewReadsCacheInFlight: a caller that missed the cache just before
// the last flight cached its answer and ended starts a flight of its own;
// that flight finds the answer in the cache and sends nothing (under the
// race detector, TestReviewsCoalesced saw a second SubjectAccessReview
// when it did not).
func TestReviewReadsCacheInFlight(t *testing.T) {
	rv := newReviews(nil, nil, time.Minute)
	sent := 0
	send := func(context.Context) (any, error) { sent++; return false, nil }
	got, err := rv.review(context.Background(), "k", rv.known, func() (any, bool) { return true, true }, send)
	if err != nil || got != true || sent != 0 {
		t.Errorf("cached in the meantime: %v, %v, %d reviews sent; want true, no error, none", got, err, sent)
	}
	got, err = rv.review(context.Background(), "k", rv.known, func() (any, bool) { return nil, false }, send)
	if err != nil || got != false || sent != 1 {
		t.Errorf("not cached: %v, %v, %d reviews sent; want false, no error, one", got, err, sent)
	}
}

// TestReviewsBudget: with every review slot of unknown tokens taken, a
// request that needs another is answered 429 at once, sends nothing and
// closes its connection, while a scraper known before is reviewed again;
// a review that hangs ends at the timeout and frees its slot.
func TestReviewsBudget(t *testing.T) {
	f := &fakeReviewer{users: map[string]authenticationv1.UserInfo{"good": {Username: "scraper"}}, allow: allowScraper,
		release: make(chan struct{})}
	rv, call := f.protected(t)
	rv.ttl = 200 * time.Millisecond
	if rec := call(http.MethodGet, "/metrics", "Bearer good"); rec.Code != http.StatusOK {
		t.Fatalf("a scraper: %d, want 200", rec.Code)
	}
	rv.timeout = 2 * time.Second
	rv.backoff.Steps = 1
	held := make(chan int, reviewsInFlight)
	for i := range reviewsInFlight {
		go func() { held <- call(http.MethodGet, "/metrics", fmt.Sprintf("Bearer held-%d", i)).Code }()
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return f.tokenReviews.Load() == reviewsInFlight+1, nil }); err != nil {
		t.Fatalf("%d TokenReviews in flight, want %d", f.tokenReviews.Load()-1, reviewsInFlight)
	}
	time.Sleep(rv.ttl) // the scraper's answers expire
	if rec := call(http.MethodGet, "/metrics", "Bearer good"); rec.Code != http.StatusOK || f.tokenReviews.Load() != reviewsInFlight+2 {
		t.Errorf("a scraper known before, its answers expired, every slot of unknown tokens taken: %d after %d TokenReviews, "+
			"want 200 after its own review", rec.Code, f.tokenReviews.Load())
	}
	rec := call(http.MethodGet, "/metrics", "Bearer held-one-more")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || rec.Header().Get("Connection") != "close" {
		t.Errorf("past the budget: %d %v, want 429 with Retry-After, closing the connection", rec.Code, rec.Header())
	}
	if got := f.tokenReviews.Load(); got != reviewsInFlight+2 {
		t.Errorf("%d TokenReviews, want %d: the request past the budget sent one", got, reviewsInFlight+2)
	}
	// The API server never answers: each review gives up at the timeout
	// (401, not cached), and the slots are free again.
	for range reviewsInFlight {
		if code := <-held; code != http.StatusUnauthorized {
			t.Errorf("a review that timed out: %d, want 401", code)
		}
	}
	close(f.release)
	if rec := call(http.MethodGet, "/metrics", "Bearer held-one-more"); rec.Code != http.StatusUnauthorized || f.tokenReviews.Load() != reviewsInFlight+3 {
		t.Errorf("after the timeouts: %d after %d TokenReviews, want 401 after its own review", rec.Code, f.tokenReviews.Load())
	}
}

// TestRefusedBeforeReview: a path or method the server does not serve,
// however long, is refused before any review, and the refusal closes the
// connection.
func TestRefusedBeforeReview(t *testing.T) {
	f := &fakeReviewer{users: map[string]authenticationv1.UserInfo{"good": {Username: "scraper"}}, allow: allowScraper}
	_, call := f.protected(t)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/metrics/" + strings.Repeat("x", 8000), http.StatusNotFound},
		{http.MethodGet, "/metrics/", http.StatusNotFound},
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/debug/pprof/not-a-profile", http.StatusNotFound},
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed},
		{"PROPFIND", "/metrics", http.StatusMethodNotAllowed},
		{http.MethodPut, "/debug/pprof/symbol", http.StatusMethodNotAllowed},
	} {
		rec := call(tc.method, tc.path, "Bearer good")
		if rec.Code != tc.want || rec.Header().Get("Connection") != "close" {
			t.Errorf("%s %.40s: %d %v, want %d closing the connection", tc.method, tc.path, rec.Code, rec.Header(), tc.want)
		}
	}
	if f.tokenReviews.Load() != 0 || f.accessReviews.Load() != 0 {
		t.Errorf("%d TokenReviews and %d SubjectAccessReviews, want none", f.tokenReviews.Load(), f.accessReviews.Load())
	}
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine", "/debug/pprof/profile"} {
		if rec := call(http.MethodGet, path, "Bearer good"); rec.Code == http.StatusNotFound {
			t.Errorf("GET %s: 404, want it served", path)
		}
	}
}

// TestRandomTokensEvictNoScraper: more unknown tokens than the cache holds
// leave a scraper's cached answer in place: no review again.
func TestRandomTokensEvictNoScraper(t *testing.T) {
	f := &fakeReviewer{users: map[string]authenticationv1.UserInfo{"good": {Username: "scraper"}}, allow: allowScraper}
	_, call := f.protected(t)
	if rec := call(http.MethodGet, "/metrics", "Bearer good"); rec.Code != http.StatusOK {
		t.Fatalf("a scraper: %d, want 200", rec.Code)
	}
	for i := range 1100 {
		if rec := call(http.MethodGet, "/metrics", fmt.Sprintf("Bearer random-%d", i)); rec.Code != http.StatusUnauthorized {
			t.Fatalf("a random token: %d, want 401", rec.Code)
		}
	}
	before := f.tokenReviews.Load()
	if rec := call(http.MethodGet, "/metrics", "Bearer good"); rec.Code != http.StatusOK || f.tokenReviews.Load() != before {
		t.Errorf("the scraper after 1100 random tokens: %d after %d more TokenReviews, want 200 from the cache",
			rec.Code, f.tokenReviews.Load()-before)
	}
}
