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
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Every client shares one rate limiter, so --kube-api-qps bounds the
// process; and only the built-in kinds' client speaks protobuf.
func TestClientConfigs(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443"}
	cfg, kubeCfg := clientConfigs(base, options{qps: 500, burst: 1000}, "host_1234")
	if cfg.RateLimiter == nil || cfg.RateLimiter != kubeCfg.RateLimiter {
		t.Errorf("clients do not share one rate limiter: %v, %v", cfg.RateLimiter, kubeCfg.RateLimiter)
	}
	if qps := cfg.RateLimiter.QPS(); qps != 500 {
		t.Errorf("rate limiter QPS %v, want 500", qps)
	}
	if base.RateLimiter != nil || base.UserAgent != "" {
		t.Error("the base configuration was modified")
	}
	if cfg.ContentType != "" || kubeCfg.ContentType != "application/vnd.kubernetes.protobuf" {
		t.Errorf("content types %q and %q", cfg.ContentType, kubeCfg.ContentType)
	}
	if !strings.HasSuffix(kubeCfg.UserAgent, "(host_1234)") {
		t.Errorf("user agent %q does not carry the identity", kubeCfg.UserAgent)
	}
	if !cfg.DisableCompression || !kubeCfg.DisableCompression {
		t.Error("the clients ask for compressed responses by default")
	}
	if cfg, kubeCfg := clientConfigs(base, options{qps: 500, burst: 1000, compression: true}, "host_1234"); cfg.DisableCompression || kubeCfg.DisableCompression {
		t.Error("-kube-api-compression: the clients do not ask for compressed responses")
	}
}

// The Lease's and the reviews' clients have token buckets of their own:
// what the syncs spend does not delay a renewal, and what callers of the
// metrics endpoint make the reviews spend is not the syncs'.
func TestOwnBucket(t *testing.T) {
	_, kubeCfg := clientConfigs(&rest.Config{Host: "https://127.0.0.1:6443"}, options{qps: 500, burst: 1000}, "host_1234")
	leases, reviews := ownBucket(kubeCfg, leaseQPS, leaseBurst), ownBucket(kubeCfg, reviewQPS, reviewBurst)
	for name, c := range map[string]*rest.Config{"leases": leases, "reviews": reviews} {
		if c.RateLimiter == nil || c.RateLimiter == kubeCfg.RateLimiter {
			t.Errorf("%s: the syncs' rate limiter, or none", name)
		}
		if c.ContentType != kubeCfg.ContentType || c.UserAgent != kubeCfg.UserAgent {
			t.Errorf("%s: content type %q and user agent %q, want the built-in kinds' client's", name, c.ContentType, c.UserAgent)
		}
	}
	if leases.RateLimiter == reviews.RateLimiter || reviews.RateLimiter.QPS() != reviewQPS {
		t.Errorf("reviews: rate limiter %v at %v QPS, want one of their own at %v", reviews.RateLimiter, reviews.RateLimiter.QPS(), reviewQPS)
	}
}

func TestStoppedBySignal(t *testing.T) {
	stopped, stop := context.WithCancel(context.Background())
	stop()
	running := context.Background()
	canceled := fmt.Errorf("installing the AppService CRD: %w", context.Canceled)
	other := errors.New("installing the AppService CRD: forbidden")
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"signal, then the step saw the cancellation", stopped, canceled, true},
		{"signal, but the step failed for another reason", stopped, other, false},
		{"no signal: a cancellation from elsewhere is a failure", running, canceled, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := stoppedBySignal(tc.ctx, tc.err); got != tc.want {
				t.Errorf("stoppedBySignal = %v, want %v", got, tc.want)
			}
		})
	}
}

// The soft memory limit follows the container's limit at the ratio, and
// leaves Go's default alone when told to, when the environment says, or
// when there is no limit or it cannot be read.
func TestSetMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	unreadable := func() (uint64, error) { return 0, errors.New("no cgroup here") }
	tests := []struct {
		name   string
		env    map[string]string
		ratio  float64
		limits memlimit.Provider
		want   int64
	}{
		{"90% of the container's 256 MiB", nil, 0.9, memlimit.Limit(256 * mib), 256 * mib * 9 / 10},
		{"the whole limit", nil, 1, memlimit.Limit(256 * mib), 256 * mib},
		{"off", nil, 0, memlimit.Limit(256 * mib), math.MaxInt64},
		{"no limit", nil, 0.9, func() (uint64, error) { return 0, memlimit.ErrNoLimit }, math.MaxInt64},
		{"the limit cannot be read", nil, 0.9, unreadable, math.MaxInt64},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "100MiB"}, 0.9, memlimit.Limit(256 * mib), math.MaxInt64},
		{"AUTOMEMLIMIT's ratio wins", map[string]string{"AUTOMEMLIMIT": "0.5"}, 0.9, memlimit.Limit(256 * mib), 128 * mib},
		{"AUTOMEMLIMIT=off", map[string]string{"AUTOMEMLIMIT": "off"}, 0.9, memlimit.Limit(256 * mib), math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// GOMEMLIMIT is read by the runtime at start: setting it here
			// changes no limit, only what setMemoryLimit sees.
			t.Setenv("GOMEMLIMIT", "")
			os.Unsetenv("GOMEMLIMIT")
			t.Setenv("AUTOMEMLIMIT", "")
			os.Unsetenv("AUTOMEMLIMIT")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			previous := debug.SetMemoryLimit(math.MaxInt64)
			defer debug.SetMemoryLimit(previous)
			setMemoryLimit(klog.Background(), tc.ratio, tc.limits)
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("soft memory limit %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMemoryLimitRatioIsChecked(t *testing.T) {
	for _, ratio := range []float64{-0.1, 1.5} {
		o := options{workers: 1, actWorkers: 1, memoryLimitRatio: ratio}
		if err := o.complete(); err == nil || !strings.Contains(err.Error(), "--memory-limit-ratio") {
			t.Errorf("ratio %v: %v, want an error naming --memory-limit-ratio", ratio, err)
		}
	}
}
