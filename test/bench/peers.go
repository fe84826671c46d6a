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
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"example.com/appservice-controller/internal/harness"
)

// The peer: the same AppServices converged by this controller and by a
// controller-runtime one (test/bench/peer), their CPU and memory side by
// side (measurePeers).

// PeerRun is one controller's run of measurePeer over N AppServices:
// Controller is "appservice-controller" or "peer".
type PeerRun struct {
	Controller            string  `json:"controller"`
	Spec                  string  `json:"spec"`
	N                     int     `json:"n"`
	ConvergenceSeconds    float64 `json:"convergenceSeconds"`
	WritesPerAppService   float64 `json:"writesPerAppService"`
	IdleRSSBytes          int64   `json:"idleRssBytes"`
	RSSBytes              int64   `json:"rssBytes"`
	RSSPerAppServiceBytes float64 `json:"rssPerAppServiceBytes"`
	// The Go heap (runtime.MemStats, after a collection): in use while
	// idle and after convergence; allocated after convergence.
	IdleHeapInuseBytes int64   `json:"idleHeapInuseBytes"`
	HeapInuseBytes     int64   `json:"heapInuseBytes"`
	HeapAllocBytes     int64   `json:"heapAllocBytes"`
	CPUSeconds         float64 `json:"cpuSeconds"`
	BinaryBytes        int64   `json:"binaryBytes"`
}

// measurePeers runs measurePeer for each spec of -peer-specs, each N of
// -peer-sizes and each controller of -sides, into res.
func measurePeers(o options, res *Results) error {
	// Each spec of -peer-specs in turn: appService(i) and newEnv read
	// specKind.
	defer func(saved string) { specKind = saved }(specKind)
	for _, spec := range o.peerSpecs {
		specKind = spec
		for _, n := range o.peerSizes {
			for _, which := range o.sides {
				logf("%s, %s, n=%d, side by side", which, spec, n)
				p, err := measurePeer(o, n, which)
				if err != nil {
					return err
				}
				res.Peer = append(res.Peer, p)
				logf("%s, %s, n=%d: convergence %.2fs, %.2f writes/AppService, idle RSS %s, RSS %s (%.1f KiB/AppService), "+
					"heap in use %s idle, %s after, CPU %.1fs",
					which, spec, n, p.ConvergenceSeconds, p.WritesPerAppService, mib(p.IdleRSSBytes), mib(p.RSSBytes),
					p.RSSPerAppServiceBytes/1024, mib(p.IdleHeapInuseBytes), mib(p.HeapInuseBytes), p.CPUSeconds)
			}
		}
	}
	return nil
}

// measurePeer runs one controller, which is "appservice-controller" (this
// one) or "peer" (test/bench/peer: the controller kubebuilder's scaffold
// and controller-runtime give a user who writes their own, for the same
// CRD), over n AppServices created live, as measureConvergence does, so
// that the two can be set side by side: what this controller's own
// machinery (its trimmed caches, its writes) buys against the usual way
// of writing one. Each gets a fresh control plane, the same identity and
// the same flags for its metrics and profiles; this one also gets
// -controller-args and -controller-env, the peer nothing more. The peer
// does not install the CRD: this controller does, first, and is stopped.
//
// It reads, 10 s after the controller is ready and again 10 s after
// convergence, the RSS and the Go heap in use (from the heap profile,
// after a collection), and at the end the CPU time; the convergence time
// from the first create and the writes per AppService from the audit log,
// as measureConvergence does. It saves the heap profile after convergence
// (heap-<spec>-<N>-<which>.pb.gz), and reports the binary's size.
func measurePeer(o options, n int, which string) (PeerRun, error) {
	r := PeerRun{Controller: which, Spec: specKind, N: n}
	bin := o.controller
	if which == sidePeer {
		bin = o.peer
	} else if which != sideOurs {
		return r, fmt.Errorf("measurePeer: unknown controller %q", which)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return r, err
	}
	r.BinaryBytes = fi.Size()
	e, err := newEnv(o, fmt.Sprintf("peer-%s-%d", which, n))
	if err != nil {
		return r, err
	}
	defer e.cluster.Stop()
	var ctrl *harness.Controller
	if which == sidePeer {
		ctrl, err = startPeer(o, e)
	} else {
		ctrl, err = startController(o, e)
	}
	if err != nil {
		return r, err
	}
	defer stop(ctrl)
	if _, err := waitReady(ctrl); err != nil {
		return r, err
	}
	time.Sleep(settle)
	if r.IdleRSSBytes, _, err = ctrl.Usage(); err != nil {
		return r, err
	}
	if r.IdleHeapInuseBytes, _, err = heapStats(ctrl); err != nil {
		return r, err
	}
	if r.ConvergenceSeconds, r.WritesPerAppService, err = createAndConverge(e, n, 15*time.Minute); err != nil {
		return r, err
	}
	time.Sleep(settle)
	if r.RSSBytes, r.CPUSeconds, err = ctrl.Usage(); err != nil {
		return r, err
	}
	r.RSSPerAppServiceBytes = float64(r.RSSBytes-r.IdleRSSBytes) / float64(n)
	if r.HeapInuseBytes, r.HeapAllocBytes, err = heapStats(ctrl); err != nil {
		return r, err
	}
	return r, saveHeapProfile(ctrl, filepath.Join(o.out, fmt.Sprintf("heap-%s-%d-%s.pb.gz", specKind, n, which)))
}

// startPeer installs the CRD (with this controller, stopped again) and
// starts the peer as startController starts this controller: the same
// identity, the same flags for its metrics and profiles, and no other flag
// or environment.
func startPeer(o options, e *env, extra ...string) (*harness.Controller, error) {
	if err := installCRD(o, e); err != nil {
		return nil, err
	}
	kubeconfig, err := e.cluster.MintUser(controllerUser, "system:masters")
	if err != nil {
		return nil, err
	}
	p, err := harness.NewController("peer", o.peer, filepath.Join(e.cluster.LogDir, "peer.log"),
		append([]string{"-kubeconfig", kubeconfig, "-profiling", "-metrics-secure=false"}, extra...)...)
	if err != nil {
		return nil, err
	}
	return p, p.Start()
}

// heapStats reads the Go heap in use and allocated (runtime.MemStats'
// HeapInuse and HeapAlloc) from the controller's heap profile in text,
// after a collection.
func heapStats(p *harness.Controller) (inuse, alloc int64, err error) {
	code, body, err := p.Get(p.MetricsAddr, "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, 0, err
	}
	if code != http.StatusOK {
		return 0, 0, fmt.Errorf("heap profile: %d %s", code, body)
	}
	var foundInuse, foundAlloc bool
	for line := range strings.Lines(body) {
		name, value, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), " = ")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "HeapInuse":
			dst, foundInuse = &inuse, true
		case "HeapAlloc":
			dst, foundAlloc = &alloc, true
		default:
			continue
		}
		if *dst, err = strconv.ParseInt(strings.TrimSpace(value), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("heap profile: %q: %v", strings.TrimSpace(line), err)
		}
	}
	if !foundInuse || !foundAlloc {
		return 0, 0, fmt.Errorf("heap profile: no HeapInuse or HeapAlloc")
	}
	return inuse, alloc, nil
}
