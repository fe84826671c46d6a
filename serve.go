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
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// probes answers the kubelet: /readyz once the informer caches have synced
// (a replica that is not the leader is ready too: it is a warm standby), and
// /healthz unless leader election's renewal is stuck.
type probes struct {
	cachesSynced atomic.Bool
	// leaderCheck fails when this replica leads but has not renewed its
	// lease in time; nil without leader election.
	leaderCheck func(*http.Request) error
}

func (p *probes) readyz(w http.ResponseWriter, _ *http.Request) {
	if !p.cachesSynced.Load() {
		http.Error(w, "informer caches have not synced yet", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (p *probes) healthz(w http.ResponseWriter, r *http.Request) {
	if p.leaderCheck != nil {
		if err := p.leaderCheck(r); err != nil {
			http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	fmt.Fprintln(w, "ok")
}

// serve starts an HTTP server on addr ("0" or "" turns it off) and returns a
// function that shuts it down. The listener is opened before returning, so a
// port already in use is an error at start-up, not a log line later.
func serve(ctx context.Context, name, addr string, handler http.Handler) (func(), error) {
	if addr == "" || addr == "0" {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	logger := klog.FromContext(ctx)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Server failed", "server", name)
		}
	}()
	logger.Info("Serving", "server", name, "address", l.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

func metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	return mux
}

func probesHandler(p *probes) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", p.readyz)
	mux.HandleFunc("/healthz", p.healthz)
	return mux
}
