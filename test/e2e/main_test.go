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

// Package e2e tests the built controller binary, started as a user would,
// against a real control plane (internal/localcluster): etcd,
// kube-apiserver with RBAC and an audit log, kube-controller-manager,
// kube-scheduler and kwok nodes that run the Pods.
//
// The deploy manifests (artifacts/deploy) are applied as a cluster operator
// would; the controller binary runs with a token of their ServiceAccount, so
// it has exactly the rights they grant, with leader election on, and the
// audit log tells its writes apart from the tests' own.
//
//	go test -tags e2e ./test/e2e            (make test-e2e)
//
// APPSERVICE_BIN_DIR names the control plane's binaries; without it the
// tests run hack/ensure-binaries.sh, which builds them when missing.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"

	"example.com/appservice-controller/internal/localcluster"
)

// The controller's identity, from artifacts/deploy.
const (
	controllerNamespace      = "appservice-system"
	controllerServiceAccount = "appservice-controller"
	controllerUser           = "system:serviceaccount:" + controllerNamespace + ":" + controllerServiceAccount
)

var (
	repoRoot string
	binDir   string
	cluster  *localcluster.Cluster
	kube     kubernetes.Interface
	apps     clientset.Interface
	ctrl     *controllerProcess
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// runMain returns m.Run's exit code. The cluster's folder is kept after a
// failure, for its logs, and removed after a success.
func runMain(m *testing.M) (code int) {
	var err error
	if repoRoot, err = filepath.Abs("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if binDir = os.Getenv("APPSERVICE_BIN_DIR"); binDir == "" {
		out, err := exec.Command(filepath.Join(repoRoot, "hack/ensure-binaries.sh")).Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "hack/ensure-binaries.sh:", err)
			return 1
		}
		binDir = strings.TrimSpace(string(out))
	}

	// Keep the cluster's folder (logs, audit log) under _output for a
	// look after a failure.
	dir := filepath.Join(repoRoot, "_output", "e2e", time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if code == 0 {
			os.RemoveAll(dir)
			return
		}
		fmt.Fprintln(os.Stderr, "e2e: logs and audit log kept in", dir)
	}()

	controllerBin := filepath.Join(dir, "appservice-controller")
	build := exec.Command("go", "build", "-o", controllerBin, ".")
	build.Dir, build.Stdout, build.Stderr = repoRoot, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the controller:", err)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, Dir: dir, ControllerManager: true, Scheduler: true, Nodes: 1,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer cluster.Stop()

	cfg, err := localcluster.RESTConfig(cluster.Kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.QPS, cfg.Burst = 500, 1000
	kube = kubernetes.NewForConfigOrDie(cfg)
	apps = clientset.NewForConfigOrDie(cfg)

	if controllerKubeconfig, err = deployAndGetToken(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "applying artifacts/deploy:", err)
		return 1
	}
	controllerBinary = controllerBin
	if ctrl, err = newControllerProcess("a"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := ctrl.start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the controller:", err)
		return 1
	}
	defer ctrl.stop(syscall.SIGTERM)
	if err := waitForCRD(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "waiting for the controller to install its CRD:", err)
		return 1
	}
	return m.Run()
}

// deployAndGetToken applies artifacts/deploy with kubectl (namespace,
// ServiceAccount, RBAC, the controller's Deployment, whose Pods kwok runs as
// fakes, and the metrics Service) and returns a kubeconfig with a token of
// the controller's ServiceAccount.
func deployAndGetToken(ctx context.Context) (string, error) {
	if out, err := kubectl("apply", "-k", filepath.Join(repoRoot, "artifacts/deploy")); err != nil {
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	expiry := int64((2 * time.Hour).Seconds())
	tr, err := kube.CoreV1().ServiceAccounts(controllerNamespace).CreateToken(ctx, controllerServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return cluster.KubeconfigForToken(controllerServiceAccount, tr.Status.Token)
}

func waitForCRD(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := apps.AppV1().AppServices("default").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		if exitErr := ctrl.exited(); exitErr != nil {
			return exitErr
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var (
	controllerBinary     string
	controllerKubeconfig string
)

// controllerProcess is the controller binary, run as a user would run it,
// as one replica of the deployment: the ServiceAccount's token, leader
// election in the deployment's namespace, its own metrics and probe ports.
type controllerProcess struct {
	name        string
	bin         string
	args        []string
	log         string
	metricsAddr string
	probeAddr   string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func newControllerProcess(name string, extraArgs ...string) (*controllerProcess, error) {
	p := &controllerProcess{
		name: name,
		bin:  controllerBinary,
		log:  filepath.Join(cluster.LogDir, "appservice-controller-"+name+".log"),
	}
	for _, addr := range []*string{&p.metricsAddr, &p.probeAddr} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		*addr = l.Addr().String()
		l.Close()
	}
	p.args = append([]string{
		"-kubeconfig", controllerKubeconfig,
		"-v=2",
		// A short resync, so that the quiet-period tests see resyncs
		// happen and write nothing.
		"-resync-period=10s",
		"-leader-elect",
		"-leader-election-namespace=" + controllerNamespace,
		"-metrics-bind-address=" + p.metricsAddr,
		"-health-probe-bind-address=" + p.probeAddr,
	}, extraArgs...)
	return p, nil
}

func (p *controllerProcess) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "\n===== starting %s at %s\n", p.bin, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// exited returns an error when the controller is no longer running.
func (p *controllerProcess) exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return fmt.Errorf("the controller exited: %v (log: %s)", p.err, p.log)
	default:
		return nil
	}
}

// stop sends sig and waits for the process to exit, returning how long that
// took and how it exited.
func (p *controllerProcess) stop(sig syscall.Signal) (time.Duration, error) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return 0, nil
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

// identity is the leader-election identity of the running process, from its
// log; the API server's audit log carries it in the user agent.
func (p *controllerProcess) identity() (string, error) {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return "", err
	}
	runs := bytes.Split(data, []byte("===== starting"))
	m := identityRE.FindSubmatch(runs[len(runs)-1])
	if m == nil {
		return "", fmt.Errorf("no identity in %s yet", p.log)
	}
	return string(m[1]), nil
}

var identityRE = regexp.MustCompile(`"Waiting to acquire the lease".* identity="([^"]+)"`)

// get fetches a path from one of the process's servers.
func (p *controllerProcess) get(addr, path string) (int, string, error) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// waitReady waits until the process answers /readyz with 200.
func (p *controllerProcess) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		code, body, err := p.get(p.probeAddr, "/readyz")
		if err == nil && code == http.StatusOK {
			return nil
		}
		if exitErr := p.exited(); exitErr != nil {
			return exitErr
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("controller %s not ready after %s: %d %s %v", p.name, timeout, code, body, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logContains reports whether the controller's log has line.
func (p *controllerProcess) logContains(s string) bool {
	data, err := os.ReadFile(p.log)
	return err == nil && bytes.Contains(data, []byte(s))
}
