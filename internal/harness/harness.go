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

// Package harness runs the built controller binary as a user would, for the
// end-to-end tests (test/e2e) and the benchmark (test/bench): one process
// with its own metrics and probe ports and its log in a file, started,
// probed, measured and stopped by signal, and, when asked, started again
// after it exits on losing its Lease, as a kubelet would. Only tests and
// the benchmark import it.
//
// It may import the generated clientset (pkg/generated) and
// internal/localcluster (a process's CPU time, read as for the control
// plane's), and nothing else of this repository.
package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/localcluster"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
)

// Controller is one controller process. It can be started again after it
// stopped; its log gathers every run, each after a "===== starting" line.
type Controller struct {
	Name string
	Log  string
	// MetricsAddr and ProbeAddr are the process's ports. Start picks new
	// ones when another process took one while this one was stopped.
	MetricsAddr string
	ProbeAddr   string
	// Env is added to this process's environment for the controller's
	// (KEY=VALUE each).
	Env []string

	bin  string
	args []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	logFile *os.File
	// runStart is where the running process's part of the log begins.
	runStart int64
	// done is closed when the process has exited for good: not when it
	// is restarted after losing its Lease.
	done    chan struct{}
	err     error
	started time.Time
	// stop is closed by Stop, which ends any restart.
	stop               chan struct{}
	stopping           bool
	restartOnLostLease bool
	restarts           int
}

// NewController returns a controller process that runs bin with args,
// logging to log, with metrics and probes served on free local ports.
func NewController(name, bin, log string, args ...string) (*Controller, error) {
	p := &Controller{Name: name, Log: log, bin: bin, args: args}
	if err := p.pickPorts(); err != nil {
		return nil, err
	}
	return p, nil
}

// pickPorts picks two free local ports for the metrics and the probes.
func (p *Controller) pickPorts() error {
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		return err
	}
	p.MetricsAddr, p.ProbeAddr = "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	return nil
}

// portsTaken reports whether something else listens on one of the
// process's ports now. A port is picked once, when free, and kept while
// the process runs; while it is stopped another process, of a test run
// beside, may pick the same one.
func (p *Controller) portsTaken() bool {
	for _, addr := range []string{p.MetricsAddr, p.ProbeAddr} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return true
		}
		_ = l.Close()
	}
	return false
}

// Start starts the process. It dies with the test binary (SIGKILL on the
// parent's death), so that no controller outlives a crashed test. When
// another process took one of its ports while it was stopped, it gets new
// ones (MetricsAddr, ProbeAddr): read them after Start.
func (p *Controller) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.portsTaken() {
		if err := p.pickPorts(); err != nil {
			return err
		}
	}
	if err := p.startLocked(); err != nil {
		return err
	}
	done := make(chan struct{})
	p.done, p.err, p.stop, p.stopping = done, nil, make(chan struct{}), false
	go p.supervise(done, p.stop)
	return nil
}

func (p *Controller) startLocked() error {
	logFile, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	runStart, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		logFile.Close()
		return err
	}
	fmt.Fprintf(logFile, "\n===== starting %s at %s\n", p.bin, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, append([]string{
		"-metrics-bind-address=" + p.MetricsAddr,
		"-health-probe-bind-address=" + p.ProbeAddr,
	}, p.args...)...)
	if len(p.Env) > 0 {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	p.cmd, p.logFile, p.runStart, p.started = cmd, logFile, runStart, time.Now()
	return nil
}

// RestartOnLostLease makes the process be started again when it exits
// after losing its Lease, as the kubelet restarts a Deployment's container
// (restartPolicy Always) whose controller exits so that no two replicas
// write. The first restart is at once, each next one after twice the wait
// of the one before, from 10 s, as the kubelet's back-off. Any other exit
// is final, as is one after Stop. Off by default: a test of the lost Lease
// itself watches the process exit.
func (p *Controller) RestartOnLostLease(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.restartOnLostLease = on
}

// Restarts is how many times the process was started again after losing
// its Lease.
func (p *Controller) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// supervise waits for the running process, and for each one started in
// its place after a lost Lease, until one exits for good.
func (p *Controller) supervise(done, stop chan struct{}) {
	for {
		p.mu.Lock()
		cmd, logFile := p.cmd, p.logFile
		p.mu.Unlock()
		err := cmd.Wait()
		logFile.Close()

		p.mu.Lock()
		if p.restartOnLostLease && !p.stopping && p.lostLeaseLocked() {
			p.restarts++
			wait := time.Duration(0)
			if p.restarts > 1 {
				wait = min(10*time.Second<<(p.restarts-2), 5*time.Minute)
			}
			fmt.Fprintf(os.Stderr, "harness: controller %s lost its Lease and exited (%v); starting it again in %s, as a kubelet would (restart %d; log: %s)\n",
				p.Name, err, wait, p.restarts, p.Log)
			p.mu.Unlock()
			select {
			case <-time.After(wait):
			case <-stop:
			}
			p.mu.Lock()
			if !p.stopping {
				startErr := p.startLocked()
				if startErr == nil {
					p.mu.Unlock()
					continue
				}
				err = fmt.Errorf("starting again after a lost Lease: %w", startErr)
			}
		}
		p.err = err
		p.mu.Unlock()
		close(done)
		return
	}
}

// lostLeaseLocked reports whether the log of the process that just exited
// says it lost its Lease (internal/leader's exit).
func (p *Controller) lostLeaseLocked() bool {
	f, err := os.Open(p.Log)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, p.runStart, 1<<62))
	return err == nil && bytes.Contains(data, []byte(`"Lost the lease`))
}

// Started is when the running process was started.
func (p *Controller) Started() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Exited returns an error when the process is no longer running.
func (p *Controller) Exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return fmt.Errorf("the controller exited: %v (log: %s)", p.err, p.Log)
	default:
		return nil
	}
}

// Wait waits up to timeout for the process to exit on its own. It reports
// whether it did, and how.
func (p *Controller) Wait(timeout time.Duration) (exited bool, err error) {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false, nil
	}
	select {
	case <-done:
	case <-time.After(timeout):
		return false, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return true, p.err
}

// Stop sends sig and waits for the process to exit (killing it after a
// minute), returning how long that took and how it exited.
func (p *Controller) Stop(sig syscall.Signal) (time.Duration, error) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	if cmd != nil && !p.stopping {
		p.stopping = true
		close(p.stop)
	}
	p.mu.Unlock()
	if cmd == nil {
		return 0, nil
	}
	if sig != syscall.SIGKILL {
		// A process signalled in its first milliseconds dies before it
		// handles signals; once its probe server answers, it handles them.
		p.waitAnswering(done, 5*time.Second)
	}
	start := time.Now()
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(start), p.err
}

func (p *Controller) waitAnswering(done <-chan struct{}, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return
		default:
		}
		if _, _, err := p.Get(p.ProbeAddr, "/healthz"); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Identity is the leader-election identity of the running process, from its
// log; the API server's audit log carries it in the user agent.
func (p *Controller) Identity() (string, error) {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return "", err
	}
	runs := bytes.Split(data, []byte("===== starting"))
	m := identityRE.FindSubmatch(runs[len(runs)-1])
	if m == nil {
		return "", fmt.Errorf("no identity in %s yet", p.Log)
	}
	return string(m[1]), nil
}

var identityRE = regexp.MustCompile(`"Waiting to acquire the lease".* identity="([^"]+)"`)

// Get fetches a path from the process's probe server (ProbeAddr).
func (p *Controller) Get(addr, path string) (int, string, error) {
	return fetch(http.DefaultClient, "http://"+addr+path, "")
}

// Metrics fetches /metrics, served over HTTPS by default, with a bearer
// token ("" for none). The certificate is the process's self-signed one.
func (p *Controller) Metrics(token string) (int, string, error) {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return fetch(c, "https://"+p.MetricsAddr+"/metrics", token)
}

func fetch(c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// WaitReady waits until the process answers /readyz with 200.
func (p *Controller) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		code, body, err := p.Get(p.ProbeAddr, "/readyz")
		if err == nil && code == http.StatusOK {
			return nil
		}
		if exitErr := p.Exited(); exitErr != nil {
			return exitErr
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("controller %s not ready after %s: %d %s %v", p.Name, timeout, code, body, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LogContains reports whether the process's log holds s.
func (p *Controller) LogContains(s string) bool {
	data, err := os.ReadFile(p.Log)
	return err == nil && bytes.Contains(data, []byte(s))
}

// LogTime is the time of the first line of the running process's log that
// holds s, from the line's klog header ("I1128 14:48:21.557426 ...").
func (p *Controller) LogTime(s string) (time.Time, error) {
	p.mu.Lock()
	runStart, started := p.runStart, p.started
	p.mu.Unlock()
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return time.Time{}, err
	}
	if int64(len(data)) < runStart {
		return time.Time{}, fmt.Errorf("%s is shorter than its running process's start", p.Log)
	}
	for line := range bytes.Lines(data[runStart:]) {
		if !bytes.Contains(line, []byte(s)) || len(line) < len("I1128 14:48:21.557426") {
			continue
		}
		t, err := time.ParseInLocation("0102 15:04:05.000000", string(line[1:len("I1128 14:48:21.557426")]), time.Local)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: %w", p.Log, err)
		}
		// klog's header has no year: the start's, or the next one's for a
		// line of January from a process started in December.
		t = t.AddDate(started.Year(), 0, 0)
		if started.Sub(t) > 180*24*time.Hour {
			t = t.AddDate(1, 0, 0)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("no line of %s holds %q", p.Log, s)
}

// Usage reads the running process's resident memory (bytes) and CPU time
// (seconds) from /proc.
func (p *Controller) Usage() (rss int64, cpu float64, err error) {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return 0, 0, fmt.Errorf("controller %s not started", p.Name)
	}
	pid := cmd.Process.Pid
	if rss, err = procStatusBytes(pid, "VmRSS"); err != nil {
		return 0, 0, err
	}
	cpu, err = localcluster.ProcessCPUSeconds(pid)
	return rss, cpu, err
}

// PeakRSS reads the running process's peak resident memory (VmHWM, bytes).
func (p *Controller) PeakRSS() (int64, error) {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return 0, fmt.Errorf("controller %s not started", p.Name)
	}
	return procStatusBytes(cmd.Process.Pid, "VmHWM")
}

// procStatusBytes reads a field in kB of /proc/PID/status, in bytes.
func procStatusBytes(pid int, field string) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, field, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// WaitForCRDs is WaitForCRD, then waits until the API server serves the
// other kinds the controller built from this tree installs after those two
// (the analysis templates, NotificationDestinations): for tests that create
// them. An earlier release's controller may not install them all.
func WaitForCRDs(ctx context.Context, apps clientset.Interface, p *Controller, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if err := WaitForCRD(ctx, apps, p, timeout); err != nil {
		return err
	}
	one := metav1.ListOptions{Limit: 1}
	for {
		_, err := apps.AppV1().AnalysisTemplates(metav1.NamespaceDefault).List(ctx, one)
		if err == nil {
			_, err = apps.AppV1().ClusterAnalysisTemplates().List(ctx, one)
		}
		if err == nil {
			_, err = apps.AppV1().NotificationDestinations(metav1.NamespaceDefault).List(ctx, one)
		}
		switch {
		case err == nil:
			return nil
		case time.Now().After(deadline):
			return err
		case p.Exited() != nil:
			return p.Exited()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitForCRD waits until the API server serves AppServices and Activities:
// the controller installs their CRDs when it starts. It gives up early when
// p exits.
func WaitForCRD(ctx context.Context, apps clientset.Interface, p *Controller, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := apps.AppV1().AppServices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			_, err = apps.AppV1().Activities(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{Limit: 1})
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		if exitErr := p.Exited(); exitErr != nil {
			return exitErr
		}
		time.Sleep(100 * time.Millisecond)
	}
}
