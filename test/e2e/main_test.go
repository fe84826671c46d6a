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
// APPSERVICE_PROMETHEUS names the Prometheus server each process runs for
// the canaries' analyses, scraping an exporter the tests set the rates of
// (gatewayMetrics); without it, hack/ensure-prometheus.sh builds or finds
// it.
// APPSERVICE_CONTROLLER_BIN names a controller binary built already (make
// build); without it TestMain builds one.
//
// Every test declares its group with its first statement. serial(t, lane):
// the test stops or restarts the suite's controller, its API server or
// etcd, runs a second replica on its Lease, or counts every write in the
// cluster, so it runs alone on its control plane, in one of two lanes.
// parallel(t): the test works in namespaces of its own (or on a control
// plane of its own) and runs beside the others. In one process the serial
// tests run first, one by one, then the parallel ones together. make
// test-e2e (hack/test-e2e.sh) runs each lane of serial tests and the
// parallel group at once, as three processes with a control plane each
// (APPSERVICE_E2E_GROUP=serial-1, serial-2 or parallel): the serial tests
// wait on leases and resyncs more than they compute, and one lane of them
// all would be the suite's longest path.
//
// It may import any package of this repository, the test helpers among them;
// nothing imports it.
package e2e

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"

	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
	"example.com/appservice-controller/internal/promtest"
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
	ctrl     *harness.Controller
	// gatewayMetrics is what a gateway would export of the requests to
	// each Service (gateway_requests_total), scraped every second by
	// prometheus, which the controllers' analyses query.
	gatewayMetrics *promtest.Exporter
	prometheus     *promtest.Server
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

	switch group {
	case "", "serial", "serial-1", "serial-2", "parallel", "alone":
	default:
		fmt.Fprintf(os.Stderr, "APPSERVICE_E2E_GROUP=%q: want serial (both lanes), serial-1, serial-2, parallel, alone or nothing (all)\n", group)
		return 1
	}
	// Keep the cluster's folder (logs, audit log) under _output for a
	// look after a failure; one per process, as the groups run at once.
	if err := os.MkdirAll(filepath.Join(repoRoot, "_output", "e2e"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp(filepath.Join(repoRoot, "_output", "e2e"), time.Now().Format("20060102-150405-")+group)
	if err != nil {
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

	controllerBin := os.Getenv("APPSERVICE_CONTROLLER_BIN")
	if controllerBin == "" {
		controllerBin = filepath.Join(dir, "appservice-controller")
		// As users build it: `make build` stamps the version.
		build := exec.Command("make", "--no-print-directory", "build", "BIN="+controllerBin)
		build.Dir, build.Stdout, build.Stderr = repoRoot, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the controller:", err)
			return 1
		}
	}

	// make build puts the kubectl plugin beside the controller: on the
	// PATH, kubectl finds it, as a user's kubectl does (kubectl appservice
	// in the docs' commands).
	if group == "alone" {
		// Its tests start control planes of their own: none for the
		// suite.
		controllerBinary, builtBinary = controllerBin, controllerBin
		return m.Run()
	}

	if _, err := os.Stat(filepath.Join(filepath.Dir(controllerBin), "kubectl-appservice")); err == nil {
		os.Setenv("PATH", filepath.Dir(controllerBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, Dir: dir, ControllerManager: true, Scheduler: true, Nodes: 2,
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
	// Prometheus, scraping the gateway's series that the tests set.
	if os.Getenv(promtest.EnvBinary) == "" {
		out, err := exec.Command(filepath.Join(repoRoot, "hack/ensure-prometheus.sh")).Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "hack/ensure-prometheus.sh:", err)
			return 1
		}
		os.Setenv(promtest.EnvBinary, strings.TrimSpace(string(out)))
	}
	gatewayMetrics = promtest.NewExporter()
	exporter := httptest.NewServer(gatewayMetrics)
	defer exporter.Close()
	promDir := filepath.Join(dir, "prometheus")
	if err := os.MkdirAll(promDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if prometheus, err = promtest.Start(ctx, promtest.Options{Dir: promDir, Targets: []string{exporter.Listener.Addr().String()}}); err != nil {
		fmt.Fprintln(os.Stderr, "starting Prometheus:", err)
		return 1
	}
	defer func() { _ = prometheus.Stop() }()

	controllerBinary, builtBinary = controllerBin, controllerBin
	if ctrl, err = newControllerProcess("a"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := ctrl.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the controller:", err)
		return 1
	}
	defer func() { _, _ = ctrl.Stop(syscall.SIGTERM) }()
	if err := harness.WaitForCRDs(ctx, apps, ctrl, time.Minute); err != nil {
		fmt.Fprintln(os.Stderr, "waiting for the controller to install its CRD:", err)
		return 1
	}
	exit := m.Run()
	fmt.Println(groupCPU())
	return exit
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

var (
	controllerBinary     string
	controllerKubeconfig string
	// builtBinary is the controller built from this tree (or
	// APPSERVICE_CONTROLLER_BIN).
	builtBinary string
)

// group is the group of tests this process runs: "serial" (both lanes),
// "serial-1", "serial-2", "parallel" or, when empty, all.
var group = os.Getenv("APPSERVICE_E2E_GROUP")

// serial marks a test that must run alone on the suite's control plane, in
// lane 1 or 2 (see the package comment). The lanes take about as long as
// each other: a new serial test goes in the shorter one (hack/test-e2e.sh
// prints each group's time).
func serial(t *testing.T, lane int) {
	t.Helper()
	switch mine := fmt.Sprintf("serial-%d", lane); {
	case lane != 1 && lane != 2:
		t.Fatalf("serial lane %d: there are lanes 1 and 2", lane)
	case group != "" && group != "serial" && group != mine:
		t.Skipf("in the group %s, which another process runs (hack/test-e2e.sh)", mine)
	}
	cpuReport(t)
}

// alone marks a test that runs in no group of hack/test-e2e.sh but by
// itself, in a make test step of its own before them (make
// test-crd-paths), on control planes of its own: one that writes the
// 200 KB CRD over and over costs its API server CPU the groups' timing
// tests would miss.
func alone(t *testing.T) {
	t.Helper()
	if group != "" && group != "alone" {
		t.Skip("runs alone (APPSERVICE_E2E_GROUP=alone, make test-crd-paths)")
	}
}

// parallel marks a test that runs beside the others, in namespaces of its
// own (see the package comment).
func parallel(t *testing.T) {
	t.Helper()
	if group != "" && group != "parallel" {
		t.Skip("in the parallel group, which another process runs (hack/test-e2e.sh)")
	}
	t.Parallel()
}

// newControllerProcess returns the controller binary, run as one replica of
// the deployment: the ServiceAccount's token, leader election in the
// deployment's namespace, its own metrics and probe ports.
func newControllerProcess(name string, extraArgs ...string) (*harness.Controller, error) {
	p, err := harness.NewController(name, controllerBinary,
		filepath.Join(cluster.LogDir, "appservice-controller-"+name+".log"),
		append([]string{
			"-kubeconfig", controllerKubeconfig,
			"-v=2",
			// A short resync, so that the steady-state tests see resyncs
			// happen and write nothing.
			"-resync-period=10s",
			"-leader-elect",
			"-leader-election-namespace=" + controllerNamespace,
		}, append(prometheusArgs(), extraArgs...)...)...)
	if err != nil {
		return nil, err
	}
	// A replica that loses its Lease exits so that no two write, and its
	// kubelet starts it again: so does the harness. On a loaded machine
	// (a new one's first make test) a renewal can miss the 10 s renew
	// deadline; the tests after it then meet a controller that came back,
	// not none. Every other exit fails the test that sees it.
	p.RestartOnLostLease(true)
	return p, nil
}

// prometheusArgs are the flags that give the controller the suite's
// Prometheus: for the binary built from this tree, not for the earlier
// release TestUpgradeRestartsNoApp runs (it has no such flags).
func prometheusArgs() []string {
	if controllerBinary != builtBinary {
		return nil
	}
	return []string{"-prometheus-url=" + prometheus.URL, "-prometheus-timeout=5s"}
}

// TestEveryTestHasAGroup: each test of the package starts with
// serial(t, lane) or parallel(t), so that hack/test-e2e.sh runs it in
// exactly one of its processes, and a new test says whether it may run
// beside the others.
func TestEveryTestHasAGroup(t *testing.T) {
	parallel(t)
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			grouped := false
			if len(fn.Body.List) > 0 {
				if stmt, ok := fn.Body.List[0].(*ast.ExprStmt); ok {
					if call, ok := stmt.X.(*ast.CallExpr); ok {
						if id, ok := call.Fun.(*ast.Ident); ok && (id.Name == "serial" || id.Name == "parallel" || id.Name == "alone") {
							grouped = true
						}
					}
				}
			}
			if !grouped {
				t.Errorf("%s: %s does not start with serial(t, lane), parallel(t) or alone(t)", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
}
