//go:build e2e

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

package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"example.com/appservice-controller/internal/localcluster"
)

// What each test costs the machine: a serial test runs alone on its
// group's control plane, so the CPU its processes used while it ran is its
// own. cpuReport logs it when the test ends, one line that
// hack/test-e2e.sh sums up ("e2e: the serial tests' CPU"):
//
//	cpu: 12.3 s (kube-apiserver 6.1, etcd 1.2, kube-controller-manager 0.8, controller 2.0, test 2.2)
//
// A test of the parallel group shares its control plane with the others:
// its own CPU is not told apart. A control plane of a test's own is, when
// the test ends (ownCPUReport): "own control plane cpu: ...".

// cpuProcesses are the group's processes a test's CPU is read from, by the
// name the line gives them.
var cpuProcesses = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}

// cpuNow reads the CPU seconds of the group's processes, the controller's
// and the test binary's own; a process not running reads as absent.
func cpuNow() map[string]float64 {
	out := map[string]float64{}
	if cluster != nil {
		for _, name := range cpuProcesses {
			if s, err := cluster.CPUSeconds(name); err == nil {
				out[name] = s
			}
		}
	}
	if ctrl != nil {
		if _, s, err := ctrl.Usage(); err == nil {
			out["controller"] = s
		}
	}
	if s, err := localcluster.ProcessCPUSeconds(os.Getpid()); err == nil {
		out["test"] = s
	}
	return out
}

// cpuReport logs, when t ends, the CPU the group's processes used since
// now. A process restarted meanwhile (a fault test's) counts from its
// restart.
func cpuReport(t *testing.T) {
	before := cpuNow()
	t.Cleanup(func() {
		used := cpuNow()
		for name, a := range used {
			if b, ok := before[name]; ok && a >= b {
				used[name] = a - b
			}
		}
		total, parts := cpuSummary(used, cpuNames, "%.1f")
		t.Logf("cpu: %.1f s (%s)", total, parts)
	})
}

// ownCPUReport logs, when t ends (before c stops: cleanups run last
// first), the CPU the processes of c, a control plane of t's own, used.
func ownCPUReport(t *testing.T, c *localcluster.Cluster) {
	t.Cleanup(func() {
		used := map[string]float64{}
		for _, name := range cpuProcesses {
			if s, err := c.CPUSeconds(name); err == nil {
				used[name] = s
			}
		}
		total, parts := cpuSummary(used, cpuProcesses, "%.1f")
		t.Logf("own control plane cpu: %.1f s (%s)", total, parts)
	})
}

// groupCPU is a line of the CPU each of the group's processes used since it
// (last) started, for hack/test-e2e.sh's summary: where a group's CPU
// goes.
func groupCPU() string {
	_, parts := cpuSummary(cpuNow(), cpuNames, "%.0f")
	return "e2e group cpu: " + parts
}

// cpuNames are the processes cpuNow reads, in the order the lines give
// them.
var cpuNames = append(slices.Clone(cpuProcesses), "controller", "test")

// cpuSummary sums seconds and lists them as "name S, ..." in the order of
// names, each with format, leaving out those that read as 0.
func cpuSummary(seconds map[string]float64, names []string, format string) (float64, string) {
	total := 0.0
	var parts []string
	for _, name := range names {
		s, ok := seconds[name]
		if !ok {
			continue
		}
		total += s
		if v := fmt.Sprintf(format, s); strings.Trim(v, "0.") != "" {
			parts = append(parts, name+" "+v)
		}
	}
	return total, strings.Join(parts, ", ")
}
