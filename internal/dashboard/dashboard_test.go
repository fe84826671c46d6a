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

package dashboard

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSource is a Source of fixed views whose requests are recorded.
type fakeSource struct {
	mu      sync.Mutex
	views   map[string]any
	acted   []string
	actErr  error
	changed chan struct{}
}

func newFakeSource() *fakeSource {
	return &fakeSource{views: map[string]any{}, changed: make(chan struct{}, 1)}
}

func (f *fakeSource) View(ns, name string) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.views[ns+"/"+name]
	if !ok {
		return nil, &StatusError{Status: http.StatusNotFound, Err: errors.New("not found")}
	}
	return v, nil
}

func (f *fakeSource) Act(_ context.Context, ns, name, action string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acted = append(f.acted, ns+"/"+name+" "+action)
	if f.actErr != nil {
		return "", f.actErr
	}
	return "appservice/" + name + ": done", nil
}

func (f *fakeSource) Changed() <-chan struct{} { return f.changed }

func (f *fakeSource) set(key string, v any) {
	f.mu.Lock()
	f.views[key] = v
	f.mu.Unlock()
	f.changed <- struct{}{}
}

func (f *fakeSource) actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.acted...)
}

// serve runs a dashboard on a loopback port; it returns its base URL and
// its token's cookie.
func serve(t *testing.T, src Source) (*Server, string, *http.Cookie) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(src, l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	s.Coalesce = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, "http://" + l.Addr().String(), &http.Cookie{Name: s.cookie, Value: s.token}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, method, url string, header map[string]string, cookie *http.Cookie) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestTokenOpensThePage(t *testing.T) {
	src := newFakeSource()
	s, base, cookie := serve(t, src)

	// The printed URL: the cookie, and the same page without the token.
	resp, _ := do(t, "GET", base+"/appservices/shop/web?token="+s.Token(), nil, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/appservices/shop/web" {
		t.Fatalf("GET with the token: %d, Location %q; want 303 to /appservices/shop/web", resp.StatusCode, resp.Header.Get("Location"))
	}
	set := resp.Cookies()
	if len(set) != 1 || set[0].Value != s.Token() || !set[0].HttpOnly || set[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies set: %+v; want one, the token, HttpOnly, SameSite=Strict", set)
	}

	for _, c := range []struct {
		name   string
		url    string
		cookie *http.Cookie
		want   int
	}{
		{"no token", "/", nil, http.StatusForbidden},
		{"a wrong token in the URL", "/?token=nope", nil, http.StatusForbidden},
		{"a wrong cookie", "/", &http.Cookie{Name: s.cookie, Value: "nope"}, http.StatusForbidden},
		{"the cookie", "/", cookie, http.StatusOK},
		{"the view without the cookie", "/api/view", nil, http.StatusForbidden},
		{"the stream without the cookie", "/api/stream", nil, http.StatusForbidden},
		{"an asset, which holds no data", "/app.js", nil, http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := do(t, "GET", base+c.url, nil, c.cookie)
			if resp.StatusCode != c.want {
				t.Errorf("GET %s: %d %s; want %d", c.url, resp.StatusCode, body, c.want)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
				t.Errorf("GET %s: Content-Security-Policy %q", c.url, csp)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: no X-Content-Type-Options: nosniff", c.url)
			}
		})
	}
}

// A name that resolves to 127.0.0.1 (DNS rebinding) reads nothing.
func TestOtherHostRefused(t *testing.T) {
	_, base, cookie := serve(t, newFakeSource())
	port := base[strings.LastIndex(base, ":")+1:]
	for host, want := range map[string]int{
		"evil.example:" + port: http.StatusMisdirectedRequest,
		"127.0.0.1:1":          http.StatusMisdirectedRequest,
		"localhost:" + port:    http.StatusOK,
		"127.0.0.1:" + port:    http.StatusOK,
	} {
		if resp, body := do(t, "GET", base+"/", map[string]string{"Host": host}, cookie); resp.StatusCode != want {
			t.Errorf("Host %s: %d %s; want %d", host, resp.StatusCode, body, want)
		}
	}
}

// Listening on every address, it answers whatever name reaches it; the
// token still guards it.
func TestEveryAddressAnswersAnyHost(t *testing.T) {
	s, err := New(newFakeSource(), &net.TCPAddr{IP: net.IPv4zero, Port: 3100})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	for _, c := range []struct {
		cookie bool
		want   int
	}{{true, http.StatusOK}, {false, http.StatusForbidden}} {
		req, _ := http.NewRequest("GET", "http://build-box.lan:3100/", nil)
		if c.cookie {
			req.AddCookie(&http.Cookie{Name: s.cookie, Value: s.token})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("Host build-box.lan:3100, cookie %v: %d; want %d", c.cookie, rec.Code, c.want)
		}
	}
}

// Only the dashboard's own page may send a request: another site's form
// or script (another port of 127.0.0.1 among them) names its origin.
func TestRequestsFromAnotherOriginRefused(t *testing.T) {
	src := newFakeSource()
	_, base, cookie := serve(t, src)
	url := base + "/api/appservices/shop/web/promote"
	for _, c := range []struct {
		name   string
		header map[string]string
		cookie *http.Cookie
		want   int
		says   string
	}{
		{"another port", map[string]string{"Origin": "http://127.0.0.1:1"}, cookie, http.StatusForbidden, "came from http://127.0.0.1:1"},
		{"another site", map[string]string{"Origin": "https://evil.example"}, cookie, http.StatusForbidden, "came from https://evil.example"},
		{"no origin", nil, cookie, http.StatusForbidden, "came from no origin"},
		{"a cross-site fetch", map[string]string{"Origin": base, "Sec-Fetch-Site": "cross-site"}, cookie, http.StatusForbidden, "cross-site page"},
		{"no cookie", map[string]string{"Origin": base}, nil, http.StatusForbidden, "the URL kubectl appservice dashboard printed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := do(t, "POST", url, c.header, c.cookie)
			if resp.StatusCode != c.want || !strings.Contains(body, c.says) {
				t.Errorf("POST: %d %q; want %d saying %q", resp.StatusCode, body, c.want, c.says)
			}
		})
	}
	if got := src.actions(); len(got) != 0 {
		t.Fatalf("refused requests were sent: %v", got)
	}

	resp, body := do(t, "POST", url, map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}, cookie)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"message":"appservice/web: done"`) {
		t.Errorf("POST from the page: %d %s", resp.StatusCode, body)
	}
	src.actErr = &StatusError{Status: http.StatusForbidden, Err: errors.New("forbidden: cannot patch appservices/status: the ClusterRole appservice-releaser grants it")}
	resp, body = do(t, "POST", base+"/api/appservices/shop/web/abort", map[string]string{"Origin": base}, cookie)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "appservice-releaser grants it") {
		t.Errorf("POST refused by RBAC: %d %s; want 403 with the plugin's message", resp.StatusCode, body)
	}
	if got := src.actions(); strings.Join(got, ",") != "shop/web promote,shop/web abort" {
		t.Errorf("requests sent: %v", got)
	}
}

// hostile is data as a cluster may hold it: markup, a script.
const hostile = `<img src=x onerror=alert(1)></td><script>alert(2)</script>`

// The views are JSON whose strings cannot close a tag or open one.
func TestViewEscapesMarkup(t *testing.T) {
	src := newFakeSource()
	src.views["shop/"] = map[string]string{"name": hostile}
	_, base, cookie := serve(t, src)
	resp, body := do(t, "GET", base+"/api/view?namespace=shop", nil, cookie)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/view: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if strings.ContainsAny(body, "<>") || !strings.Contains(body, `\u003cimg src=x onerror=alert(1)\u003e`) {
		t.Errorf("the view holds markup: %s", body)
	}
	resp, body = do(t, "GET", base+"/api/view?namespace=other", nil, cookie)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `"error":"not found"`) {
		t.Errorf("a view the source refuses: %d %s", resp.StatusCode, body)
	}
}

// The page's script makes text of data: it never parses a string as
// markup or code, and the page has no inline script or handler.
func TestPageMakesNoMarkupOfData(t *testing.T) {
	js, err := assets.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile(`(?m)^\s*//.*$`).ReplaceAllString(string(js), "")
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setTimeout(\"", "srcdoc"} {
		if strings.Contains(code, sink) {
			t.Errorf("app.js uses %s, which parses a string as markup or code", sink)
		}
	}
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`<script(\s[^>]*)?>`).FindAllStringSubmatch(string(page), -1); len(m) != 1 || !strings.Contains(m[0][1], `src="/app.js"`) {
		t.Errorf("index.html's scripts: %v; want one, /app.js", m)
	}
	if regexp.MustCompile(`\son[a-z]+=`).MatchString(string(page)) || strings.Contains(string(page), "style=") {
		t.Error("index.html has an inline handler or style, which the Content-Security-Policy refuses")
	}
}

// The stream pushes the view at once, then each change of it, and not a
// view that did not change.
func TestStreamPushesChanges(t *testing.T) {
	src := newFakeSource()
	src.views["shop/web"] = map[string]int{"step": 1}
	_, base, cookie := serve(t, src)
	req, _ := http.NewRequest("GET", base+"/api/stream?namespace=shop&name=web", nil)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				events <- strings.TrimPrefix(sc.Text(), "data: ")
			}
		}
		close(events)
	}()
	next := func() string {
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10 s")
		}
		return ""
	}
	if e := next(); e != `{"step":1}` {
		t.Fatalf("first event %s", e)
	}
	src.set("shop/other", 1) // a change that leaves this view alone
	src.set("shop/web", map[string]int{"step": 2})
	if e := next(); e != `{"step":2}` {
		t.Fatalf("after the change: %s; want step 2 and nothing before it", e)
	}
}
