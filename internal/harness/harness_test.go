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

package harness

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeController writes a shell script that stands in for the controller:
// each run counts itself in a file, then does what body says. It returns
// the process and a function that reads the count.
func fakeController(t *testing.T, body string) (*Controller, func() int) {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	script := filepath.Join(dir, "controller.sh")
	// The flags NewController adds are ignored.
	text := "#!/bin/sh\nn=$(cat " + count + " 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > " + count + "\n" + body + "\n"
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := NewController("fake", script, filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Stop(syscall.SIGKILL) })
	return p, func() int {
		data, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return n
	}
}

// As internal/leader logs it (klog's text format) before exiting 1.
const lostLease = `echo 'E1128 00:00:00.000000 1 leader.go:94] "Lost the lease: not renewed within the renew deadline; exiting so that no two replicas write"'`

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRestartOnLostLease(t *testing.T) {
	// The first run loses its Lease; the second runs on.
	p, runs := fakeController(t, `if [ $n = 1 ]; then `+lostLease+`; exit 1; fi
exec sleep 600`)
	p.RestartOnLostLease(true)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no second run", func() bool { return runs() == 2 })
	if err := p.Exited(); err != nil {
		t.Errorf("Exited after a restart: %v", err)
	}
	if got := p.Restarts(); got != 1 {
		t.Errorf("Restarts() = %d, want 1", got)
	}
	if _, err := p.Stop(syscall.SIGKILL); err == nil {
		t.Error("a killed process exited cleanly?")
	}
	if p.Exited() == nil {
		t.Error("Exited() = nil after Stop")
	}
}

func TestRestartOnLostLeaseNotAfterStop(t *testing.T) {
	// Every run says it lost the Lease: after Stop, none starts again,
	// whether the process was running or waiting out the back-off.
	t.Run("running", func(t *testing.T) {
		p, runs := fakeController(t, lostLease+"\nexec sleep 600")
		p.RestartOnLostLease(true)
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "no first run", func() bool { return runs() == 1 && p.LogContains("Lost the lease") })
		_, _ = p.Stop(syscall.SIGKILL)
		if p.Exited() == nil || p.Restarts() != 0 || runs() != 1 {
			t.Errorf("after Stop: Exited() = %v, Restarts() = %d, runs = %d; want an exit, 0 restarts, 1 run", p.Exited(), p.Restarts(), runs())
		}
	})
	t.Run("backing off", func(t *testing.T) {
		p, runs := fakeController(t, lostLease+"\nexit 1")
		p.RestartOnLostLease(true)
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		// The first restart is at once, the second after 10 s.
		waitFor(t, "no second restart", func() bool { return p.Restarts() == 2 })
		start := time.Now()
		_, _ = p.Stop(syscall.SIGKILL)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("Stop took %s: it waited out the back-off", took)
		}
		if p.Exited() == nil || runs() != 2 {
			t.Errorf("after Stop: Exited() = %v, runs = %d; want an exit, 2 runs", p.Exited(), runs())
		}
	})
}

func TestExitsThatAreFinal(t *testing.T) {
	for name, c := range map[string]struct {
		restart bool
		body    string
	}{
		"another exit":        {true, "echo 'E1128 something else'; exit 2"},
		"restarts turned off": {false, lostLease + "; exit 1"},
	} {
		t.Run(name, func(t *testing.T) {
			p, runs := fakeController(t, c.body)
			p.RestartOnLostLease(c.restart)
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			exited, err := p.Wait(30 * time.Second)
			if !exited || err == nil {
				t.Fatalf("Wait = %v, %v; want an exit with an error", exited, err)
			}
			if p.Exited() == nil || p.Restarts() != 0 || runs() != 1 {
				t.Errorf("Exited() = %v, Restarts() = %d, runs = %d; want an exit, 0 restarts, 1 run", p.Exited(), p.Restarts(), runs())
			}
		})
	}
}

// TestLogTime reads the time of a line of the running process's log from
// its klog header, and not from an earlier run's part of the log: each run
// logs the line with its number as the seconds' last digit.
func TestLogTime(t *testing.T) {
	p, _ := fakeController(t, `echo "I1128 14:48:2$n.557426    3735 queue.go:133] \"Starting workers\" controller=\"appservice\" count=32"; exec sleep 60`)
	for run := 1; run <= 2; run++ {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the log line", func() bool { return p.LogContains(fmt.Sprintf("14:48:2%d", run)) })
		got, err := p.LogTime(`"Starting workers" controller="appservice"`)
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Date(p.Started().Year(), 11, 28, 14, 48, 20+run, 557426000, time.Local); !got.Equal(want) {
			t.Errorf("run %d: LogTime %v, want %v", run, got, want)
		}
		if _, err := p.LogTime("no such line"); err == nil {
			t.Errorf("run %d: LogTime found a line the log does not hold", run)
		}
		_, _ = p.Stop(syscall.SIGKILL)
	}
}

// TestStartAfterPortTaken: a port another process took while the
// controller was stopped is replaced at the next Start, and the process is
// given the new one. The fake controller logs its flags.
func TestStartAfterPortTaken(t *testing.T) {
	p, _ := fakeController(t, `echo "flags: $*"; exec sleep 60`)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = p.Stop(syscall.SIGKILL) // exits with "signal: killed"
	taken := p.MetricsAddr
	l, err := net.Listen("tcp", taken)
	if err != nil {
		t.Fatalf("taking the stopped controller's metrics port: %v", err)
	}
	defer l.Close()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if p.MetricsAddr == taken {
		t.Fatalf("MetricsAddr is still %s, which another listener holds", taken)
	}
	want := "-metrics-bind-address=" + p.MetricsAddr
	waitFor(t, "the new port in the flags", func() bool { return p.LogContains(want) })
}
