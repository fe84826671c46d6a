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

package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestProbes: /readyz fails until the caches have synced; /healthz fails
// only when leader election's renewal check does.
func TestProbes(t *testing.T) {
	stuck := func(*http.Request) error { return errors.New("lease not renewed") }
	tests := []struct {
		name        string
		synced      bool
		leaderCheck func(*http.Request) error
		path        string
		want        int
	}{
		{name: "not synced", path: "/readyz", want: http.StatusServiceUnavailable},
		{name: "synced", synced: true, path: "/readyz", want: http.StatusOK},
		{name: "healthy before sync", path: "/healthz", want: http.StatusOK},
		{name: "renewal stuck", synced: true, leaderCheck: stuck, path: "/healthz", want: http.StatusInternalServerError},
		{name: "renewal stuck, still ready", synced: true, leaderCheck: stuck, path: "/readyz", want: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &probes{leaderCheck: tc.leaderCheck}
			p.cachesSynced.Store(tc.synced)
			rec := httptest.NewRecorder()
			probesHandler(p).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.want {
				t.Errorf("GET %s = %d %q, want %d", tc.path, rec.Code, rec.Body.String(), tc.want)
			}
		})
	}
}

// TestServe: "0" turns a server off; a port in use is an error at start-up;
// otherwise it serves until stopped.
func TestServe(t *testing.T) {
	ctx := context.Background()
	stop, err := serve(ctx, "off", "0", http.NotFoundHandler())
	if err != nil {
		t.Fatalf("serve(\"0\"): %v", err)
	}
	stop()

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if _, err := serve(ctx, "taken", taken.Addr().String(), http.NotFoundHandler()); err == nil {
		t.Error("serve on a port in use: no error")
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := &probes{}
	p.cachesSynced.Store(true)
	stop, err = serve(ctx, "probes", addr, probesHandler(p))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz = %d, want 200", resp.StatusCode)
	}
	stop()
	if _, err := http.Get("http://" + addr + "/readyz"); err == nil {
		t.Error("still serving after stop")
	}
}
