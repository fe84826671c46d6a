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

package promtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// EnvBinary names the environment variable with the path of the prometheus
// binary (the output of hack/ensure-prometheus.sh).
const EnvBinary = "APPSERVICE_PROMETHEUS"

// Options configure a Server.
type Options struct {
	// Dir holds the configuration, the storage (Dir/data) and the log
	// (Dir/prometheus.log); the caller owns it, e.g. t.TempDir(). Required.
	Dir string
	// Targets are the host:port addresses one static job scrapes at
	// /metrics every second.
	Targets []string
	// Job is the scrape job's name, the job label of its series; "gateway"
	// if empty.
	Job string
	// Binary is the prometheus binary; $APPSERVICE_PROMETHEUS if empty.
	Binary string
	// ReadyTimeout bounds the wait for /-/ready after each start; 60 s if
	// zero.
	ReadyTimeout time.Duration
}

// Server is one prometheus process listening on 127.0.0.1. It can be
// stopped and started again on the same port and storage, as a Prometheus
// that goes away mid-canary and comes back; its log gathers every run, each
// after a "===== starting" line.
type Server struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:41234, the
	// address client_golang's api.Config takes.
	URL string
	// Log is the path of the process's log.
	Log string

	bin, addr string
	args      []string
	timeout   time.Duration
	api       promv1.API

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start writes the configuration (scrape and evaluation every second), starts
// prometheus on a free port of 127.0.0.1 and waits until it answers /-/ready.
// ctx bounds only that wait: the process runs until Stop.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("promtest: Options.Dir is required")
	}
	bin := opts.Binary
	if bin == "" {
		bin = os.Getenv(EnvBinary)
	}
	if bin == "" {
		return nil, fmt.Errorf("promtest: %s is not set: run hack/ensure-prometheus.sh and set it to the path it prints, "+
			"e.g. %s=$(./hack/ensure-prometheus.sh)", EnvBinary, EnvBinary)
	}
	job := opts.Job
	if job == "" {
		job = "gateway"
	}
	config := filepath.Join(opts.Dir, "prometheus.yml")
	if err := os.WriteFile(config, configYAML(job, opts.Targets), 0o644); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL: "http://" + addr,
		Log: filepath.Join(opts.Dir, "prometheus.log"),
		bin: bin, addr: addr,
		args: []string{
			"--config.file=" + config,
			"--storage.tsdb.path=" + filepath.Join(opts.Dir, "data"),
			"--web.listen-address=" + addr,
			// The scrape manager takes up the static targets after this
			// throttle (5 s by default), at each start: the first samples
			// come a second after ready, not five.
			"--scrape.discovery-reload-interval=500ms",
		},
		timeout: opts.ReadyTimeout,
	}
	if s.timeout == 0 {
		s.timeout = time.Minute
	}
	client, err := api.NewClient(api.Config{Address: s.URL})
	if err != nil {
		return nil, err
	}
	s.api = promv1.NewAPI(client)
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// configYAML is Prometheus's configuration: every second, one static job.
// The targets are written as JSON strings, which YAML reads as they are.
func configYAML(job string, targets []string) []byte {
	quoted := make([]string, len(targets))
	for i, t := range targets {
		quoted[i] = strconv.Quote(t)
	}
	return fmt.Appendf(nil, `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
- job_name: %s
  static_configs:
  - targets: [%s]
`, strconv.Quote(job), strings.Join(quoted, ", "))
}

// freeAddr is a port of 127.0.0.1 that nothing listens on now; the server
// keeps it across restarts.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// API is a client of the server's HTTP API (client_golang), as the
// controller's analysis queries it.
func (s *Server) API() promv1.API { return s.api }

// Restart starts the server again after Stop, on the same port and storage
// (the samples scraped before are still there), and waits until it is
// ready. A running server is stopped first.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start(ctx)
}

// start starts the process and waits until it answers /-/ready. It dies with
// the test binary (SIGKILL on the parent's death), so that no prometheus
// outlives a crashed test.
func (s *Server) start(ctx context.Context) error {
	logFile, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "\n===== starting %s at %s\n", s.bin, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("promtest: starting %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.done, s.err = cmd, done, nil
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logFile.Close()
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(done)
	}()
	if err := s.waitReady(ctx, done); err != nil {
		_ = s.Stop()
		return err
	}
	return nil
}

// waitReady polls /-/ready until it answers 200, the process exits, ctx
// ends or the ready timeout passes. Polling is the way here: a process is
// starting, there is nothing to watch.
func (s *Server) waitReady(ctx context.Context, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		select {
		case <-done:
			s.mu.Lock()
			exitErr := s.err
			s.mu.Unlock()
			return fmt.Errorf("promtest: prometheus exited before it was ready: %v (log: %s)", exitErr, s.Log)
		case <-ctx.Done():
			return fmt.Errorf("promtest: prometheus not ready at %s after %s (last answer: %s; log: %s)", s.URL, s.timeout, last, s.Log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM and waits for the process to exit (killing it after
// 30 s). Stopping a stopped server does nothing. It returns an error only
// when the process had to be killed or exited by itself before.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("promtest: prometheus had exited: %v (log: %s)", s.err, s.Log)
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("promtest: prometheus did not stop within 30 s of SIGTERM and was killed (log: %s)", s.Log)
	}
}

// WaitForSeries queries the server until query returns a non-empty result:
// at least one series or sample (a scalar or a string counts). It polls
// every 250 ms until ctx ends, which the caller bounds; the error then says
// what the last query returned.
func (s *Server) WaitForSeries(ctx context.Context, query string) error {
	var last string
	for {
		v, _, err := s.api.Query(ctx, query, time.Now())
		switch {
		case err != nil:
			last = err.Error()
		case !empty(v):
			return nil
		default:
			last = "an empty result"
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("promtest: %q had no result before %v; the last query returned %s", query, context.Cause(ctx), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func empty(v model.Value) bool {
	switch v := v.(type) {
	case model.Vector:
		return len(v) == 0
	case model.Matrix:
		return len(v) == 0
	case nil:
		return true
	default:
		return false
	}
}
