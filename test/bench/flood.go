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
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
)

// The metrics endpoint under a flood from strangers (issue 46): requests
// with random bearer tokens kept in flight at the secured metrics
// endpoint of a controller leading its Lease, this one and the peer
// (whose endpoint is controller-runtime's, with its authentication and
// authorization filters), each on a control plane of its own.

// Flood is one controller under one flood: floodAppServices created on a
// quiet endpoint (a control plane of their own), then as many while
// InFlight requests with random tokens are kept in flight (another), the
// flood lasting floodFor at least. The Lease's longest gap between
// renewals during the flood, from the audit log; Lost: the process exited
// (both exit when their Lease is lost). Reviews: the TokenReviews and
// SubjectAccessReviews the controller sent during the flood.
type Flood struct {
	Controller        string  `json:"controller"`
	InFlight          int     `json:"inFlight"`
	N                 int     `json:"n"`
	QuietSeconds      float64 `json:"quietSeconds"`
	FloodedSeconds    float64 `json:"floodedSeconds"`
	Ratio             float64 `json:"ratio"`
	LongestGapSeconds float64 `json:"longestRenewalGapSeconds"`
	Lost              bool    `json:"lostLease"`
	FloodSeconds      float64 `json:"floodSeconds"`
	// Converged: how many of the N converged, within floodWithin under the
	// flood (FloodedSeconds 0 when not all).
	Converged          int            `json:"converged"`
	Reviews            int            `json:"reviews"`
	Answered           int            `json:"answered"`
	ControllerCPUQuiet float64        `json:"controllerCpuSecondsQuiet"`
	ControllerCPU      float64        `json:"controllerCpuSecondsFlooded"`
	Answers            map[string]int `json:"answers,omitempty"`
}

const (
	floodAppServices = 200
	floodFor         = 30 * time.Second
	floodWithin      = 2 * time.Minute
)

// floodInFlight: 3000, which the measurements showed enough to
// take this controller's Lease before its fix, and 6000, enough to take
// the peer's.
var floodInFlight = []int{3000, 6000}

func measureFloods(o options, res *Results) error {
	if o.skip["flood"] {
		return nil
	}
	for _, which := range o.sides {
		logf("flood: %s, %d AppServices on a quiet endpoint", which, floodAppServices)
		quiet, quietCPU, err := floodRun(o, which, 0, nil)
		if err != nil {
			return err
		}
		for _, n := range floodInFlight {
			logf("flood: %s, %d requests in flight", which, n)
			f := Flood{Controller: which, InFlight: n, N: floodAppServices, QuietSeconds: quiet, ControllerCPUQuiet: quietCPU}
			if _, _, err := floodRun(o, which, n, &f); err != nil {
				return err
			}
			logf("flood: %s at %d: %d of %d converged in %.2f s (%.2f× %.2f s), longest renewal gap %.1f s, lost %v, %d reviews",
				which, n, f.Converged, f.N, f.FloodedSeconds, f.Ratio, quiet, f.LongestGapSeconds, f.Lost, f.Reviews)
			res.Floods = append(res.Floods, f)
		}
	}
	return nil
}

// floodRun starts the controller (which) on a fresh control plane as the
// manifests run it (leader election, secured metrics) and creates
// floodAppServices; with inFlight > 0, under a flood of that many,
// recorded in f. It returns the seconds they took to converge and the
// controller's CPU seconds meanwhile.
func floodRun(o options, which string, inFlight int, f *Flood) (float64, float64, error) {
	e, err := newEnv(o, fmt.Sprintf("flood-%s-%d", which, inFlight))
	if err != nil {
		return 0, 0, err
	}
	defer e.cluster.Stop()
	secured := []string{"-metrics-secure=true", "-leader-elect", "-leader-election-namespace=default"}
	var ctrl *harness.Controller
	if which == sidePeer {
		ctrl, err = startPeer(o, e, secured...)
	} else {
		ctrl, err = startController(o, e, secured...)
	}
	if err != nil {
		return 0, 0, err
	}
	defer stop(ctrl)
	if _, err := waitReady(ctrl); err != nil {
		return 0, 0, err
	}
	if err := waitRenewed(e, time.Minute); err != nil {
		return 0, 0, err
	}
	_, cpu0, err := ctrl.Usage()
	if err != nil {
		return 0, 0, err
	}
	if inFlight == 0 {
		seconds, _, err := createAndConverge(e, floodAppServices, 5*time.Minute)
		_, cpu1, _ := ctrl.Usage()
		return seconds, cpu1 - cpu0, err
	}
	flood := harness.StartFlood(ctrl.MetricsAddr, inFlight+inFlight/10)
	start := time.Now()
	if err := flood.WaitInFlight(inFlight, 2*time.Minute); err != nil {
		flood.Stop()
		return 0, 0, err
	}
	_, cpu0, _ = ctrl.Usage()
	tr, err := newTracker(e)
	if err != nil {
		flood.Stop()
		return 0, 0, err
	}
	defer tr.close()
	created := time.Now()
	if err := inParallel(floodAppServices, func(i int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Create(context.Background(), appService(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		flood.Stop()
		return 0, 0, err
	}
	convErr := tr.waitAll(floodAppServices, floodWithin)
	seconds := time.Since(created).Seconds()
	if _, cpu1, err := ctrl.Usage(); err == nil {
		f.ControllerCPU = cpu1 - cpu0
	}
	f.Converged = int(min(tr.deployments.Load(), tr.services.Load(), tr.statuses.Load()))
	time.Sleep(time.Until(start.Add(floodFor)))
	flood.Stop()
	end := time.Now()
	f.FloodSeconds = end.Sub(start).Seconds()
	f.Answered = flood.Answered()
	f.Lost = ctrl.Exited() != nil
	if convErr == nil {
		f.FloodedSeconds, f.Ratio = seconds, seconds/f.QuietSeconds
	}
	gap, err := e.cluster.LongestRenewalGap(controllerUser, start, end)
	if err != nil {
		return 0, 0, err
	}
	f.LongestGapSeconds = gap.Seconds()
	writes, err := e.cluster.Writes(controllerUser, start)
	if err != nil {
		return 0, 0, err
	}
	f.Reviews = localcluster.Reviews(writes, end)
	return seconds, f.ControllerCPU, nil
}

// waitRenewed waits until the controller has renewed its Lease once: it
// leads.
func waitRenewed(e *env, timeout time.Duration) error {
	start := time.Now()
	for time.Since(start) < timeout {
		writes, err := e.cluster.Writes(controllerUser, start.Add(-time.Minute))
		if err != nil {
			return err
		}
		for _, w := range writes {
			if w.ObjectRef != nil && w.ObjectRef.Resource == "leases" && w.ResponseStatus != nil && w.ResponseStatus.Code < 300 {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the controller did not take its Lease within %s", timeout)
}

// floodMarkdown is the section of measureFloods' runs: a row per
// controller and flood.
func (r *Results) floodMarkdown() string {
	if len(r.Floods) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n### The metrics endpoint under a flood\n\n"+
		"%d AppServices created on a quiet endpoint, then as many while requests with random bearer tokens are kept in flight at the "+
		"secured metrics endpoint (each controller leading its Lease, on control planes of its own; the flood lasts %.0f s at least). "+
		"The peer's endpoint is controller-runtime's, with its authentication and authorization filters.\n\n",
		floodAppServices, floodFor.Seconds())
	b.WriteString("| controller | in flight | converged: quiet → flooded | longest gap between Lease renewals | Lease | " +
		"reviews sent (per s) | requests answered | controller CPU s: quiet → flooded |\n")
	b.WriteString("|---|---:|---|---:|---|---|---:|---|\n")
	for _, f := range r.Floods {
		converged, lease := fmt.Sprintf("%.2f s → %.2f s (%.2f×)", f.QuietSeconds, f.FloodedSeconds, f.Ratio), "kept"
		if f.Lost {
			lease = "lost: the process exited"
		}
		if f.FloodedSeconds == 0 {
			converged = fmt.Sprintf("%.2f s → %d of %d in %.0f s", f.QuietSeconds, f.Converged, f.N, floodWithin.Seconds())
		}
		cpu := fmt.Sprintf("%.2f → %.2f", f.ControllerCPUQuiet, f.ControllerCPU)
		if f.Lost {
			cpu = fmt.Sprintf("%.2f → (exited)", f.ControllerCPUQuiet)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f s | %s | %d (%.0f) | %d | %s |\n",
			f.Controller, f.InFlight, converged, f.LongestGapSeconds, lease, f.Reviews, float64(f.Reviews)/f.FloodSeconds,
			f.Answered, cpu)
	}
	return b.String()
}
