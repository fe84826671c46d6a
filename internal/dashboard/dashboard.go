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

// Package dashboard is the web server of kubectl appservice dashboard
// (docs/plugin.md, "The dashboard"): a page of a namespace's AppServices
// and of one AppService's canary, live, with promote, abort and retry
// buttons. The plugin gives it a Source (its informers' caches and its
// requests, made as the user); this package is the HTTP side only: the
// page and its assets, embedded (no CDN), the views pushed as server-sent
// events, and the checks that keep another site from using it.
//
// What it trusts nothing of:
//   - The Host header: only the address it listens on (and localhost for
//     a loopback one), so that a DNS name rebound to 127.0.0.1 reads
//     nothing.
//   - The caller: every request but the static assets carries the token
//     it printed (a cookie set from the URL's ?token=, SameSite=Strict,
//     HttpOnly), and every POST an Origin header equal to its own.
//   - The data: the views are JSON, which the page turns into text nodes
//     (never markup), under a Content-Security-Policy that allows no
//     inline script and no other origin.
//
// Why not html/template: its execution reaches a reflect method call
// (text/template's evalField), which turns off the linker's dead-method
// elimination: measured, the plugin grew from 42.3 to 60.8 MB
// (test/binsize refuses it). The page is static, its data JSON, and the
// escaping the DOM's own (textContent).
package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Source is what the dashboard shows and does, from the plugin.
type Source interface {
	// View is the JSON view of the namespace's AppServices (name "") or
	// of one AppService, from the caches: no request to the API server.
	View(namespace, name string) (any, error)
	// Act sends a canary request (promote, promote-full, abort, retry)
	// as the user, and returns what it did; an action it does not know
	// is a StatusError 404.
	Act(ctx context.Context, namespace, name, action string) (string, error)
	// Changed fires after a change in the caches (a send may stand for
	// many).
	Changed() <-chan struct{}
}

// StatusError is an error and the HTTP status it answers with.
type StatusError struct {
	Status int
	Err    error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return e.Err }

//go:embed assets
var assets embed.FS

// contentSecurityPolicy allows the page's own script, style and requests
// only: no inline script, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Server serves the dashboard.
type Server struct {
	src   Source
	token string
	// hosts are the Host headers it answers (nil: any, when it listens
	// on every address).
	hosts map[string]bool
	// cookie is the token's cookie's name, with the port: two dashboards
	// on one host keep theirs apart.
	cookie string
	// Coalesce is the least time between two views pushed to a page.
	Coalesce time.Duration
	// Heartbeat is how often an idle stream sends a comment, so that a
	// proxy or the browser does not close it.
	Heartbeat time.Duration

	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// New is a server for the listener's address, with a new random token.
func New(src Source, addr net.Addr) (*Server, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("dashboard: not a TCP address: %v", addr)
	}
	port := strconv.Itoa(tcp.Port)
	hosts := map[string]bool{net.JoinHostPort(tcp.IP.String(), port): true}
	switch {
	case tcp.IP.IsLoopback():
		hosts[net.JoinHostPort("localhost", port)] = true
	case tcp.IP.IsUnspecified():
		// Every address of the machine, under whatever name reaches it:
		// the token alone guards it (a name rebound to it never got the
		// cookie).
		hosts = nil
	}
	return &Server{
		src: src, token: base64.RawURLEncoding.EncodeToString(b), hosts: hosts,
		cookie: "appservice-dashboard-" + port, Coalesce: 200 * time.Millisecond, Heartbeat: 25 * time.Second,
		subs: map[chan struct{}]struct{}{},
	}, nil
}

// Token is the secret of the URL it prints.
func (s *Server) Token() string { return s.token }

// Run fans the source's changes out to the open pages until ctx ends.
func (s *Server) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.src.Changed():
		}
		s.mu.Lock()
		for ch := range s.subs {
			select {
			case ch <- struct{}{}:
			default: // a push is due already
			}
		}
		s.mu.Unlock()
	}
}

// Handler is the dashboard's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	for _, f := range []string{"/app.js", "/app.css", "/favicon.svg"} {
		mux.Handle("GET "+f, files)
	}
	mux.Handle("GET /{$}", s.authorized(http.HandlerFunc(s.page)))
	mux.Handle("GET /appservices/{namespace}/{name}", s.authorized(http.HandlerFunc(s.page)))
	mux.Handle("GET /api/view", s.authorized(http.HandlerFunc(s.view)))
	mux.Handle("GET /api/stream", s.authorized(http.HandlerFunc(s.stream)))
	mux.Handle("POST /api/appservices/{namespace}/{name}/{action}", s.authorized(s.sameOrigin(http.HandlerFunc(s.act))))
	return s.headers(mux)
}

// headers sets what every answer carries, and refuses a Host it does not
// serve (DNS rebinding: another name that resolves to this address).
func (s *Server) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if s.hosts != nil && !s.hosts[r.Host] {
			refuse(w, http.StatusMisdirectedRequest, fmt.Sprintf("refused: this dashboard does not serve the host %q", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized lets through a request with the token's cookie. A page
// loaded with ?token= gets the cookie and is sent to its URL without it,
// so that the token stays out of the history and of Referer headers.
func (s *Server) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && s.valid(t) {
			http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if c, err := r.Cookie(s.cookie); err != nil || !s.valid(c.Value) {
			refuse(w, http.StatusForbidden, "refused: open the dashboard from the URL kubectl appservice dashboard printed (it holds the token)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) valid(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

// sameOrigin lets through a request sent by the dashboard's own page: its
// Origin is the dashboard's. A browser sends Origin with every POST; a
// form or script of another site (another port of 127.0.0.1 among them,
// which the SameSite cookie does not tell apart) names its own.
func (s *Server) sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "http://"+r.Host {
			from := origin
			if from == "" {
				from = "no origin"
			}
			refuse(w, http.StatusForbidden, fmt.Sprintf("refused: the request came from %s, not from this dashboard", from))
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
			refuse(w, http.StatusForbidden, fmt.Sprintf("refused: the request came from a %s page, not from this dashboard", site))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers with a message in plain text: never markup.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// page is the page itself: the same for every view (the script reads the
// URL's path and draws the view it names).
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page)
}

// viewOf is the view a request names: ?namespace=&name= (the list when
// name is empty).
func (s *Server) viewOf(r *http.Request) ([]byte, error) {
	v, err := s.src.View(r.URL.Query().Get("namespace"), r.URL.Query().Get("name"))
	if err != nil {
		return nil, err
	}
	// encoding/json writes <, > and & as \u003c, \u003e and \u0026: the
	// data cannot close a tag wherever it lands.
	return json.Marshal(v)
}

func (s *Server) view(w http.ResponseWriter, r *http.Request) {
	b, err := s.viewOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// stream pushes the view as server-sent events: at once, then after each
// change that changes it, at most every Coalesce. It reads the caches
// only: ten pages open cost the API server what none does.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	var last []byte
	heartbeat := time.NewTicker(s.Heartbeat)
	defer heartbeat.Stop()
	for {
		b, err := s.viewOf(r)
		event := "view"
		if err != nil {
			event = "problem"
			b, _ = json.Marshal(err.Error())
		}
		if string(b) != string(last) {
			last = b
			// JSON holds no newline: one data line.
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
				return
			}
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": idle\n\n"); err != nil {
				return
			}
			flusher.Flush()
			continue
		case <-ch:
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(s.Coalesce):
		}
	}
}

// act sends a button's request.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	msg, err := s.src.Act(r.Context(), r.PathValue("namespace"), r.PathValue("name"), r.PathValue("action"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": msg})
}

// writeError answers with the error's message as JSON, and its status
// (a StatusError's, else 500).
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var se *StatusError
	if errors.As(err, &se) {
		status = se.Status
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Serve serves the handler on the listener until ctx ends, then shuts
// down (open streams end with it).
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go s.Run(ctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return nil
}
