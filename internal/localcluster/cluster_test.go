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

package localcluster

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A process that exits because its port was taken is started again; one
// that exits for another reason is not.
func TestOnFreePorts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failure    string // what the failing starts print
		failures   int    // how many starts fail
		wantStarts int
		wantErr    bool
	}{
		{name: "taken once", failure: "listen tcp 127.0.0.1:4001: bind: address already in use", failures: 1, wantStarts: 2},
		{name: "taken every time", failure: "bind: address already in use", failures: 99, wantStarts: portAttempts, wantErr: true},
		{name: "other failure", failure: "member has already been bootstrapped", failures: 1, wantStarts: 1, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := &Cluster{LogDir: dir}
			t.Cleanup(c.Stop)
			starts, cleans := 0, 0
			start := func() error {
				starts++
				if starts <= tc.failures {
					return c.run("fake", "/bin/sh", "-c", "echo '"+tc.failure+"'; exit 1")
				}
				return c.run("fake", "/bin/sh", "-c", "exec sleep 60")
			}
			ready := func() error {
				if starts <= tc.failures {
					return errors.New("not serving")
				}
				return nil
			}
			clean := func() error { cleans++; return nil }
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := c.onFreePorts(ctx, "fake", 10*time.Second, start, ready, clean)
			if (err != nil) != tc.wantErr {
				t.Fatalf("onFreePorts: %v, want an error: %v", err, tc.wantErr)
			}
			if starts != tc.wantStarts || cleans != min(starts, portAttempts)-1 {
				t.Errorf("%d starts and %d cleans, want %d and %d", starts, cleans, tc.wantStarts, tc.wantStarts-1)
			}
			// Only the running process, or the last failed one, is kept.
			if len(c.procs) != 1 {
				t.Errorf("%d processes kept, want 1", len(c.procs))
			}
			log, err := os.ReadFile(dir + "/fake.log")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(string(log), "===== starting fake"); got != tc.wantStarts {
				t.Errorf("the log shows %d starts, want %d", got, tc.wantStarts)
			}
		})
	}
}

// TestFreePorts: distinct ports nothing listens on, below the kernel's
// ephemeral range, where no outgoing connection takes them before the
// process that is given them binds them.
func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 20 || len(slices.Compact(slices.Sorted(slices.Values(ports)))) != 20 {
		t.Errorf("ports %v: want 20 distinct", ports)
	}
	low := ephemeralLow()
	for _, port := range ports {
		if low > minPickedPort && (port < minPickedPort || port >= low) {
			t.Errorf("port %d: outside [%d, %d), below the ephemeral range", port, minPickedPort, low)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Errorf("port %d: %v", port, err)
			continue
		}
		_ = l.Close()
	}
}
