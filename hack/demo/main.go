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

// Command demo is `make demo`: a narrated tour of the controller with
// kubectl. Each step says what it shows, runs its kubectl commands, prints
// their output and then checks that the cluster ended as the narration
// said; a step that does not is a failure (exit status 1), so the tour
// cannot silently stop telling the truth.
//
//	demo [-kubectl PATH] [-controller BIN] [-lang en|zh]
//
// It talks to the cluster of $KUBECONFIG. With -controller it runs that
// controller binary itself for the length of the tour (`make demo` on a
// local control plane); without, a controller must already be running there
// (`make run`, `make deploy`). In a terminal it waits for Enter between
// steps; otherwise (CI) it runs straight through. -lang (default
// $DEMO_LANG, else en) chooses the narration's language.
//
// With -controller it also runs what the canary's analysis measures: a
// real Prometheus ($APPSERVICE_PROMETHEUS, from hack/ensure-prometheus.sh)
// that the controller queries (-prometheus-url), scraping every second an
// exporter of the requests a gateway would count per Service; the tour sets
// their rates. The local control plane has no gateway: the exporter stands
// in for its metrics.
//
// The release steps run the kubectl plugin (kubectl appservice): make demo
// puts the folder make build builds it in on the PATH, where kubectl finds
// it.
//
// Of this repository it imports only internal/promtest (that Prometheus and
// that exporter); the rest it drives with kubectl and the built controller,
// as a user would.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"example.com/appservice-controller/internal/promtest"
)

func main() {
	kubectl := flag.String("kubectl", "kubectl", "The kubectl to run.")
	controller := flag.String("controller", "", "A controller binary to run for the tour (default: one already runs in the cluster).")
	lang := flag.String("lang", envOr("DEMO_LANG", "en"), "Narration language: en or zh (default $DEMO_LANG).")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	interactive := term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd()))
	t, err := newTour(*kubectl, *lang, os.Stdout, interactive)
	if err == nil {
		err = run(ctx, t, *controller)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// run starts the controller when asked, then walks the tour.
func run(ctx context.Context, t *tour, controller string) error {
	if os.Getenv("KUBECONFIG") == "" {
		return errors.New("KUBECONFIG is not set: `make demo` sets it to a local control plane's, or give yours")
	}
	if controller != "" {
		dir, err := os.MkdirTemp("", "appservice-demo-")
		if err != nil {
			return err
		}
		// What the canary's analysis measures, stopped after the
		// controller (deferred calls run last first).
		gateway, prometheusURL, stopPrometheus, err := startPrometheus(ctx, dir)
		if err != nil {
			return err
		}
		defer stopPrometheus()
		addr, err := freeLoopbackAddr()
		if err != nil {
			return err
		}
		stopController, err := startController(controller, dir, addr,
			"-prometheus-url="+prometheusURL, "-prometheus-timeout=2s")
		if err != nil {
			return err
		}
		defer stopController()
		t.metrics, t.gateway = addr, gateway
		// The first step waits for the CRD to be established; it must
		// exist for kubectl wait to wait on it.
		if err := t.eventually(ctx, func() (bool, string, error) {
			name, err := t.get(ctx, "crd/appservices.app.example.com", "{.metadata.name}")
			return name != "", "no CRD appservices.app.example.com yet", err
		}); err != nil {
			return fmt.Errorf("the controller did not install its CRD: %w", err)
		}
	}
	return t.walk(ctx, tourSteps())
}

// freeLoopbackAddr is a loopback address with a port free now.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startPrometheus serves the stand-in gateway's metrics on loopback and
// starts a real Prometheus, its storage and log in dir/prometheus, that
// scrapes them every second. It returns the exporter, whose rates the tour
// sets, Prometheus's URL and the function that stops both.
func startPrometheus(ctx context.Context, dir string) (*promtest.Exporter, string, func(), error) {
	gateway := promtest.NewExporter()
	exporter := httptest.NewServer(gateway)
	promDir := filepath.Join(dir, "prometheus")
	if err := os.MkdirAll(promDir, 0o755); err != nil {
		exporter.Close()
		return nil, "", nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	prom, err := promtest.Start(ctx, promtest.Options{Dir: promDir, Targets: []string{exporter.Listener.Addr().String()}})
	if err != nil {
		exporter.Close()
		return nil, "", nil, fmt.Errorf("starting Prometheus for the canary's analysis: %w", err)
	}
	fmt.Fprintf(os.Stderr, "(Prometheus runs at %s with its log in %s; it scrapes the stand-in gateway's metrics at %s)\n",
		prom.URL, prom.Log, exporter.URL)
	return gateway, prom.URL, func() {
		if err := prom.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
		exporter.Close()
	}, nil
}

// startController runs the controller binary against $KUBECONFIG, its log
// in dir, its /metrics on metricsAddr, with the extra flags, and returns
// the function that stops it with SIGTERM.
func startController(bin, dir, metricsAddr string, flags ...string) (func(), error) {
	logFile := filepath.Join(dir, "controller.log")
	out, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	// Probes off: the tour does not need their port. Metrics on a free
	// loopback port, in plain HTTP: the tour shows a few series.
	args := append([]string{"-kubeconfig", os.Getenv("KUBECONFIG"),
		"-metrics-bind-address=" + metricsAddr, "-metrics-secure=false", "-health-probe-bind-address=0", "-v=2"}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: Ctrl-C reaches the tour, which stops it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "(the controller runs with its log in %s)\n", logFile)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
		out.Close()
	}, nil
}

// text is one thing said, in each language the tour speaks.
type text struct{ en, zh string }

// step is one stop of the tour: what it shows, the commands a reader would
// type, and the check that they did what the narration says.
type step struct {
	title text
	say   text
	// before records what check compares with, before the commands run.
	before func(ctx context.Context, t *tour) error
	// ownController, when set, says what the step needs of the tour's own
	// controller (its /metrics, the Prometheus it queries): the step is
	// skipped, saying why, when the tour uses one already running.
	ownController *text
	cmds          []command
	// expect is what check asserts, said after it passed.
	expect text
	check  func(ctx context.Context, t *tour) error
}

// command is a kubectl command as shown to the reader; fails marks one that
// must be refused (its output is then checked by the step).
type command struct {
	args  []string
	fails bool
	// series, instead of kubectl: the lines of these series in the
	// controller's /metrics (the tour's own controller serves it on
	// loopback).
	series []string
	// first and until, for a command that runs until interrupted (a
	// watch): the step's next commands wait until its output contains
	// first, and run beside it; it stops once its output contains until.
	// Its first and last frames are shown at the step's end.
	first, until string
}

// kubectlWatch runs a watching kubectl command beside the step's next
// commands, once it drew first, until it draws until.
func kubectlWatch(first, until string, args ...string) command {
	return command{args: args, first: first, until: until}
}

func kubectl(args ...string) command      { return command{args: args} }
func kubectlFails(args ...string) command { return command{args: args, fails: true} }

// scrape shows the series of these names in the controller's /metrics.
func scrape(names ...string) command { return command{series: names} }

func (c command) String() string {
	if c.series != nil {
		return "curl -s http://127.0.0.1:PORT/metrics | grep -E '^(" + strings.Join(c.series, "|") + "){'"
	}
	return "kubectl " + shellJoin(c.args)
}

func (x text) in(lang string) string {
	if lang == "zh" {
		return x.zh
	}
	return x.en
}

// tour runs steps with one kubectl and prints to out.
type tour struct {
	kubectl     string
	lang        string
	out         io.Writer
	interactive bool
	stdin       *bufio.Reader
	// last holds each command's output of the current step, for its check.
	last []string
	// marks keeps what a step records before its commands for its check.
	marks map[string]string
	// metrics is the /metrics address of the tour's own controller ("":
	// it uses one already running).
	metrics string
	// gateway is the stand-in gateway's metrics, which the Prometheus of
	// the tour's own controller scrapes (nil: it uses one already running).
	gateway *promtest.Exporter
	// receiver is the notifications step's webhook (receiver.go).
	receiver *receiver
}

func newTour(kubectlPath, lang string, out io.Writer, interactive bool) (*tour, error) {
	if lang != "en" && lang != "zh" {
		return nil, fmt.Errorf("-lang (DEMO_LANG) is %q: en or zh", lang)
	}
	return &tour{kubectl: kubectlPath, lang: lang, out: out, interactive: interactive,
		stdin: bufio.NewReader(os.Stdin), marks: map[string]string{}}, nil
}

func (t *tour) say(x text) string { return x.in(t.lang) }

// Terminal styles, used only in a terminal: a CI log gets plain text.
const (
	bold  = "1"
	green = "32"
	cyan  = "36"
)

func (t *tour) style(sgr, s string) string {
	if !t.interactive {
		return s
	}
	return "\033[" + sgr + "m" + s + "\033[0m"
}

// walk runs every step in order and stops at the first that fails.
func (t *tour) walk(ctx context.Context, steps []step) error {
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(t.out, "\n%s\n%s\n", t.style(bold, fmt.Sprintf("== %d/%d %s", i+1, len(steps), t.say(s.title))), t.say(s.say))
		if s.ownController != nil && t.metrics == "" {
			fmt.Fprintln(t.out, t.say(text{"(skipped: " + s.ownController.en + ")", "（跳过：" + s.ownController.zh + "）"}))
			continue
		}
		if err := t.runStep(ctx, s); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, s.title.en, err)
		}
		fmt.Fprintln(t.out, t.style(green, "✓ "+t.say(s.expect)))
		if t.interactive && i < len(steps)-1 {
			fmt.Fprint(t.out, t.say(text{"[Enter: next step] ", "[回车：下一步] "}))
			if _, err := t.stdin.ReadString('\n'); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(t.out, "\n"+t.say(text{
		"That was the tour. docs/how-it-works.md explains what happened inside.",
		"演示结束。控制器内部每一步发生了什么，见 docs/zh-CN/how-it-works.md。",
	}))
	return nil
}

func (t *tour) runStep(ctx context.Context, s step) error {
	t.last = t.last[:0]
	if s.before != nil {
		if err := s.before(ctx, t); err != nil {
			return err
		}
	}
	var watches []*watch
	defer func() {
		for _, w := range watches {
			w.stop()
		}
	}()
	for _, c := range s.cmds {
		shown := c.String()
		if c.series != nil {
			shown = strings.Replace(shown, "127.0.0.1:PORT", t.metrics, 1)
		}
		if c.until != "" {
			fmt.Fprintf(t.out, "\n%s\n", t.style(cyan, "$ "+shown+" &"))
			w, err := t.watch(ctx, c)
			if err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
			watches = append(watches, w)
			if err := w.waitFor(c.first, time.Minute); err != nil {
				return fmt.Errorf("%s: %w", c, err)
			}
			continue
		}
		fmt.Fprintf(t.out, "\n%s\n", t.style(cyan, "$ "+shown))
		out, err := t.run(ctx, c.args...)
		if c.series != nil {
			out, err = t.scrape(ctx, c.series)
		}
		if out != "" {
			fmt.Fprint(t.out, indent(out))
		}
		switch {
		case c.fails && err == nil:
			return fmt.Errorf("%s: succeeded; it should have been refused", c)
		case !c.fails && err != nil:
			return fmt.Errorf("%s: %w", c, err)
		}
		t.last = append(t.last, out)
	}
	for _, w := range watches {
		frames, err := w.wait(2 * time.Minute)
		shown := text{"(what `" + w.c.String() + "` printed)", "（`" + w.c.String() + "` 输出的内容）"}
		if len(frames) > 1 {
			shown = text{"(what `" + w.c.String() + "` drew: its first and last frames)",
				"（`" + w.c.String() + "` 画出的内容：第一帧和最后一帧）"}
		}
		fmt.Fprintf(t.out, "\n%s\n", t.style(cyan, t.say(shown)))
		switch {
		case len(frames) > 1:
			fmt.Fprint(t.out, indent(frames[0]+"\n"))
			fmt.Fprint(t.out, indent(t.say(text{fmt.Sprintf("... %d frames ...\n", len(frames)-2), fmt.Sprintf("……中间 %d 帧……\n", len(frames)-2)})))
			fmt.Fprint(t.out, indent(frames[len(frames)-1]+"\n"))
		case len(frames) == 1:
			fmt.Fprint(t.out, indent(frames[0]+"\n"))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", w.c, err)
		}
		t.last = append(t.last, strings.Join(frames, "\n\n"))
	}
	if s.check == nil {
		return nil
	}
	return s.check(ctx, t)
}

// watch is a command of the tour that runs until its output contains its
// command's until.
type watch struct {
	c    command
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// lockedBuffer is a bytes.Buffer a process writes while the tour reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (t *tour) watch(ctx context.Context, c command) (*watch, error) {
	w := &watch{c: c, cmd: exec.CommandContext(ctx, t.kubectl, c.args...), out: &lockedBuffer{}, done: make(chan struct{})}
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	return w, nil
}

// waitFor waits until the output contains s (or the command ends, or
// timeout), and the frame that shows it is whole.
func (w *watch) waitFor(s string, timeout time.Duration) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(w.out.String(), s) {
		select {
		case <-w.done:
			return fmt.Errorf("it ended before it showed %q", s)
		case <-deadline:
			return fmt.Errorf("it did not show %q within %s", s, timeout)
		case <-tick.C:
		}
	}
	time.Sleep(300 * time.Millisecond)
	return nil
}

// wait waits until the output contains the command's until, stops it, and
// returns its frames: the watch's redraws, separated by a blank line when
// not on a terminal.
func (w *watch) wait(timeout time.Duration) ([]string, error) {
	err := w.waitFor(w.c.until, timeout)
	w.stop()
	var frames []string
	for f := range strings.SplitSeq(strings.TrimSpace(w.out.String()), "\n\n") {
		if f = strings.TrimSpace(f); f != "" {
			frames = append(frames, f)
		}
	}
	return frames, err
}

// stop interrupts the command, as Ctrl-C would, and waits for its end.
func (w *watch) stop() {
	select {
	case <-w.done:
		return
	default:
	}
	_ = w.cmd.Process.Signal(os.Interrupt)
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		_ = w.cmd.Process.Kill()
		<-w.done
	}
}

// run runs kubectl and returns its output, stdout and stderr together.
func (t *tour) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, t.kubectl, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// scrape returns the lines of these series in the controller's /metrics.
func (t *tour) scrape(ctx context.Context, names []string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+t.metrics+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/metrics: %d %v", resp.StatusCode, err)
	}
	var b strings.Builder
	for line := range strings.SplitSeq(string(body), "\n") {
		for _, n := range names {
			if strings.HasPrefix(line, n+"{") {
				b.WriteString(line + "\n")
			}
		}
	}
	return b.String(), nil
}

// get returns a jsonpath of one object, "" if it does not exist.
func (t *tour) get(ctx context.Context, object, jsonpath string) (string, error) {
	out, err := t.run(ctx, "get", object, "--ignore-not-found", "-o", "jsonpath="+jsonpath)
	if err != nil {
		return "", fmt.Errorf("kubectl get %s: %v: %s", object, err, out)
	}
	return strings.TrimSpace(out), nil
}

// eventually polls cond until it holds, for up to two minutes; the error
// names what was last seen.
func (t *tour) eventually(ctx context.Context, cond func() (ok bool, seen string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var seen string
	for {
		ok, s, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		seen = s
		select {
		case <-ctx.Done():
			return fmt.Errorf("not after 2m; last seen: %s", seen)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// equals waits until a jsonpath of an object has the value.
func (t *tour) equals(ctx context.Context, object, jsonpath, want string) error {
	return t.eventually(ctx, func() (bool, string, error) {
		got, err := t.get(ctx, object, jsonpath)
		return got == want, fmt.Sprintf("%s %s = %q, want %q", object, jsonpath, got, want), err
	})
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// shellJoin quotes what a shell would split, so a shown command can be
// pasted as it is.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " '\"{}[]$*?;&|<>()\\") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		quoted[i] = a
	}
	return strings.Join(quoted, " ")
}
