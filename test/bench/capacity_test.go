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
	"os"
	"path/filepath"
	"testing"
)

// TestCapacityFit: the line through the peaks, solved for 80% of the
// limit and rounded down to 500; a peak the soft limit held is left out
// while two others remain.
func TestCapacityFit(t *testing.T) {
	const mi = 1 << 20
	run := func(n int, peak int64) CapacityRun { return CapacityRun{N: n, PeakRSSBytes: peak} }
	for _, tc := range []struct {
		name       string
		runs       []CapacityRun
		documented int
		held       bool
	}{
		// 40 MiB + 15 KiB × N: 80% of 256 MiB (204.8 MiB) at 11,250.
		{"on the line", []CapacityRun{run(1000, 40*mi+15000<<10), run(10000, 40*mi+150000<<10)}, 11000, false},
		{"one size", []CapacityRun{run(1000, 60*mi)}, 0, false},
		{"the largest held by the soft limit", []CapacityRun{
			run(1000, 40*mi+15000<<10), run(5000, 40*mi+75000<<10), run(10000, 225*mi)}, 11000, true},
		// Through it when it is one of two: 72 MiB at 1000, 225 at 10,000.
		{"held, and one other", []CapacityRun{run(1000, 72*mi), run(10000, 225*mi)}, 8500, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Capacity{LimitBytes: shippedLimit, SoftLimitBytes: shippedSoftLimit, Runs: tc.runs}
			c.fit()
			if c.Documented != tc.documented || c.HeldBySoftLimit != tc.held {
				t.Errorf("fit: %d AppServices (held %v; %.0f + %.0f × N), want %d (held %v)",
					c.Documented, c.HeldBySoftLimit, c.FixedBytes, c.PerAppServiceBytes, tc.documented, tc.held)
			}
		})
	}
}

// TestGCTracePeak: the largest heap of a cycle (its start or its end), of
// the log's last run only, up to the offset asked, a trace line broken by
// a log line included.
func TestGCTracePeak(t *testing.T) {
	log := filepath.Join(t.TempDir(), "controller.log")
	earlier := "===== starting bin at 2026-11-29T11:00:00Z\n" +
		"gc 1 @1.0s 1%: 0.1+1+0.1 ms clock, 0.2+0.5/1/2+0.1 ms cpu, 900->901->100 MB, 950 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
		"===== starting bin at 2026-11-29T12:00:00Z\n" +
		"I1129 12:00:01.000000 1 main.go:1] \"Started workers\"\n" +
		"gc 1 @2.0s 1%: 0.1+1+0.1 ms clock, 0.2+0.5/1/2+0.1 ms cpu, 4->5->2 MB, 5 MB goal, 0 MB stacks, 0 MB globals, 2 P\n"
	converging := earlier +
		"gc I1129 12:00:30.000000 1 main.go:1] \"Synced\"\n" +
		"2 @30.5s 2%: 0.1+1+0.1 ms clock, 0.2+0.5/1/2+0.1 ms cpu, 120->121->60 MB, 122 MB goal, 0 MB stacks, 0 MB globals, 2 P\n"
	all := converging +
		"gc 3 @90.0s 2%: 0.1+1+0.1 ms clock, 0.2+0.5/1/2+0.1 ms cpu, 130->142->60 MB, 132 MB goal, 0 MB stacks, 0 MB globals, 2 P\n"
	if err := os.WriteFile(log, []byte(all), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		until int
		want  int64
	}{{len(earlier), 5 << 20}, {len(converging), 121 << 20}, {len(all), 142 << 20}} {
		if got, err := gcTracePeak(log, int64(tc.until)); err != nil || got != tc.want {
			t.Errorf("gcTracePeak up to byte %d: %d, %v; want %d", tc.until, got, err, tc.want)
		}
	}
}
