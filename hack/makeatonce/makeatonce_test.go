// Package makeatonce tests hack/make-at-once.sh, which runs make test's
// steps: one by one, at once, and niced from the start. Each test runs the
// script on a Makefile of its own in a temporary folder.
package makeatonce

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// run copies the script into a temporary root beside makefile and runs it
// with args there, returning the root, its output and its exit code.
func run(t *testing.T, makefile string, args ...string) (root, out string, code int) {
	t.Helper()
	root = t.TempDir()
	script, err := os.ReadFile("../make-at-once.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hack", "make-at-once.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "Makefile"), []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "hack", "make-at-once.sh")}, args...)...)
	// A process the script left behind would hold its output open: do not
	// wait for it (the tests look for it).
	cmd.WaitDelay = 5 * time.Second
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		t.Errorf("make-at-once.sh left a process that holds its output")
	case err != nil:
		t.Fatalf("make-at-once.sh: %v\n%s", err, b)
	}
	return root, string(b), code
}

// TestOrderAndReports: the niced target starts first and runs beside the
// others at nice 10; the phases run in the order of their flags: the
// targets one by one in order, then those at once, then the last once
// both have ended; each is reported, and its time and CPU recorded.
func TestOrderAndReports(t *testing.T) {
	makefile := `
niced:
	@ps -o ni= -p $$$$ > nice.txt
	@echo niced-ran
first:
	@test -e nice.txt || sleep 1
	@echo first > first.txt
second:
	@test -e first.txt
	@echo second > second.txt
a:
	@test -e second.txt
	@sleep 0.2
	@echo a-ran | tee a.txt
b:
	@test -e second.txt
	@echo b-ran | tee b.txt
last:
	@test -e a.txt && test -e b.txt
	@echo last-ran
`
	root, out, code := run(t, makefile, "--one-by-one", "first", "second", "--at-once", "a", "b", "--one-by-one", "last", "--nice", "niced")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"niced-ran", "a-ran", "b-ran", "last-ran",
		"make test: niced took", "make test: first took", "make test: second took", "make test: a took", "make test: b took", "make test: last took"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "make test: first took"), strings.Index(out, "make test: second took"); i > j {
		t.Errorf("second was reported before first:\n%s", out)
	}
	nice, err := os.ReadFile(filepath.Join(root, "nice.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.TrimSpace(string(nice)); n != "10" {
		t.Errorf("the niced target ran at nice %s, not 10", n)
	}
	cpu, err := os.ReadFile(filepath.Join(root, "_output", "make-test", "cpu"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(cpu)), "\n"); len(lines) != 6 {
		t.Errorf("_output/make-test/cpu has %d lines, not one per target:\n%s", len(lines), cpu)
	}
}

// TestFailedStepStopsTheRest: a step that fails ends the run; the steps
// after it do not start, and the niced one is stopped with all it started.
func TestFailedStepStopsTheRest(t *testing.T) {
	makefile := `
niced:
	@sh -c 'echo $$$$ > sleep.pid; exec sleep 300'
first:
	@while [ ! -s sleep.pid ]; do sleep 0.1; done
bad:
	@exit 3
after:
	@touch after.txt
later:
	@touch later.txt
`
	root, out, code := run(t, makefile, "--one-by-one", "first", "bad", "after", "--at-once", "later", "--nice", "niced")
	if code != 1 {
		t.Fatalf("exit %d, not 1:\n%s", code, out)
	}
	if !strings.Contains(out, "make test: bad failed after") {
		t.Errorf("the failure is not reported:\n%s", out)
	}
	for _, f := range []string{"after.txt", "later.txt"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s: a step after the failed one ran", f)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "sleep.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Gone, or a zombie until init reaps it: not sleeping on.
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the niced target's sleep (pid %d) still runs after the run failed: %s", pid, stat)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFailedAtOnceStopsTheNextPhase: a target at once that fails lets the
// others of its phase end and be reported, then ends the run: the next
// phase does not start.
func TestFailedAtOnceStopsTheNextPhase(t *testing.T) {
	makefile := `
bad:
	@exit 3
slow:
	@sleep 0.5
	@touch slow.txt
after:
	@touch after.txt
`
	root, out, code := run(t, makefile, "--at-once", "bad", "slow", "--one-by-one", "after")
	if code != 1 {
		t.Fatalf("exit %d, not 1:\n%s", code, out)
	}
	for _, want := range []string{"make test: bad failed after", "make test: slow took"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "slow.txt")); err != nil {
		t.Errorf("the other target of the phase did not end: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "after.txt")); err == nil {
		t.Error("the phase after the failed one ran")
	}
}
