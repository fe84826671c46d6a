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

// Package localcluster runs a real Kubernetes control plane on loopback from
// binaries built by hack/ensure-binaries.sh: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok, whose fake nodes make the
// Pods of a Deployment Running and Ready without a container runtime.
//
// The API server runs with RBAC authorization, a client-certificate CA
// (MintUser makes a kubeconfig for any user and groups), service-account
// tokens, and an audit log of every write, which is how tests count what a
// controller writes. Everything (certificates, data, logs, kubeconfigs) lives
// in one folder; Restart stops and starts one process in place (an etcd or
// API server restart, for fault tests); Stop ends every process the cluster
// started.
//
// It imports nothing of this repository; only tests, the benchmark and
// hack/localcluster import it.
package localcluster

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options say what to run.
type Options struct {
	// BinDir holds the binaries (see hack/ensure-binaries.sh).
	BinDir string
	// Dir is the cluster's folder; it is created if missing.
	Dir string
	// ControllerManager runs kube-controller-manager (garbage collector,
	// deployment and replicaset controllers, node lifecycle, ...).
	ControllerManager bool
	// Scheduler runs kube-scheduler.
	Scheduler bool
	// Nodes is the number of kwok nodes; 0 runs no kwok.
	Nodes int
	// Output, when set, receives the processes' output as well as their
	// log files.
	Output io.Writer
	// Profiling serves kube-apiserver's pprof profiles (/debug/pprof/),
	// for benchmarks that look into the API server's work.
	Profiling bool
}

// Cluster is a running control plane.
type Cluster struct {
	opts Options
	ca   *ca

	// URL is the API server's address.
	URL string
	// Kubeconfig is the path of an admin kubeconfig (group system:masters).
	Kubeconfig string
	// AuditLog is the path of the audit log of every write (JSON lines),
	// and of the reads of AuditReadsGroup's users.
	AuditLog string
	// LogDir holds one log file per process.
	LogDir string

	etcdURL string
	mu      sync.Mutex
	procs   []*process
}

type process struct {
	name   string
	binary string
	args   []string
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
}

// Start brings up the control plane and returns when the API server is ready
// and, with Nodes > 0, every node is Ready. On error everything started is
// stopped again.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Dir == "" {
		return nil, errors.New("localcluster: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	c = &Cluster{
		opts:     opts,
		LogDir:   filepath.Join(dir, "logs"),
		AuditLog: filepath.Join(dir, "audit.log"),
	}
	for _, d := range []string{c.LogDir, c.path("pki")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			c.Stop()
			err = fmt.Errorf("%w (logs in %s)", err, c.LogDir)
		}
	}()

	if err := c.startEtcd(ctx); err != nil {
		return c, err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return c, err
	}
	if opts.ControllerManager {
		if err := c.startControllerManager(); err != nil {
			return c, err
		}
	}
	if opts.Scheduler {
		if err := c.startScheduler(); err != nil {
			return c, err
		}
	}
	if opts.Nodes > 0 {
		if err := c.startKwok(ctx); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.opts.Dir}, elem...)...)
}

func (c *Cluster) bin(name string) string { return filepath.Join(c.opts.BinDir, name) }

// FreePorts returns n distinct loopback ports that nothing listens on now,
// for processes to bind later. They are picked below the kernel's range of
// ephemeral ports: a port the kernel hands out for ":0" comes from that
// range, and between the pick and the process's bind any outgoing
// connection of the machine may take it as its source port (etcd failed to
// start so under make test's load). Below the range only another picker
// can take it, which is rarer, and which onFreePorts covers for the control
// plane. Where the range starts too low to leave room, the kernel picks.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	low := ephemeralLow()
	for tries := 0; len(ports) < n; tries++ {
		port := 0
		if low > minPickedPort && tries < 100*n {
			port = minPickedPort + rand.IntN(low-minPickedPort)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			if port == 0 {
				return nil, err
			}
			continue // taken: pick another
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// minPickedPort is the lowest port FreePorts picks: above the ports
// services commonly listen on.
const minPickedPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range, 0 when
// it cannot be read.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0
	}
	low, _ := strconv.Atoi(fields[0])
	return low
}

// freePort is one of FreePorts.
func freePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// run starts a process of the cluster, its output going to LogDir/name.log.
func (c *Cluster) run(name, binary string, args ...string) error {
	p, err := c.spawn(name, binary, args...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return nil
}

func (c *Cluster) spawn(name, binary string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(filepath.Join(c.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "\n===== starting %s at %s\n", name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(binary, args...)
	var out io.Writer = logFile
	if c.opts.Output != nil {
		out = io.MultiWriter(logFile, c.opts.Output)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group, so a Ctrl-C in the terminal reaches only us and we
	// stop the cluster in order; and killed with us if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, binary: binary, args: args, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Restart stops a process of the cluster ("etcd", "kube-apiserver", ...)
// with sig (SIGKILL for a crash), leaves it down for the given time, starts
// it again with the same flags and data, and returns once it serves again.
// The other processes, and clients such as a controller under test, are left
// to find their way back on their own.
func (c *Cluster) Restart(ctx context.Context, name string, sig syscall.Signal, down time.Duration) error {
	c.mu.Lock()
	var old *process
	index := -1
	for i, p := range c.procs {
		if p.name == name {
			old, index = p, i
		}
	}
	c.mu.Unlock()
	if old == nil {
		return fmt.Errorf("localcluster: no process %q", name)
	}
	stopProcess(old, sig)
	select {
	case <-time.After(down):
	case <-ctx.Done():
		return ctx.Err()
	}
	p, err := c.spawn(name, old.binary, old.args...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if index >= len(c.procs) || c.procs[index] != old {
		c.mu.Unlock()
		stopProcess(p, syscall.SIGKILL)
		return fmt.Errorf("localcluster: the cluster was stopped while %s restarted", name)
	}
	c.procs[index] = p
	c.mu.Unlock()
	switch name {
	case "etcd":
		return c.waitFor(ctx, name, 30*time.Second, c.etcdHealthy)
	case "kube-apiserver":
		return c.waitFor(ctx, name, 90*time.Second, func() error { return c.apiServerReady(ctx) })
	}
	return nil
}

// stopProcess sends sig to the process's group and waits for it to exit,
// with SIGKILL after a grace period.
func stopProcess(p *process, sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// CPUSeconds is the CPU time, user and system, the named process of the
// cluster ("etcd", "kube-apiserver", ...) has used since it started.
func (c *Cluster) CPUSeconds(name string) (float64, error) {
	c.mu.Lock()
	var pid int
	for _, p := range c.procs {
		if p.name == name {
			pid = p.cmd.Process.Pid
		}
	}
	c.mu.Unlock()
	if pid == 0 {
		return 0, fmt.Errorf("localcluster: no process %q", name)
	}
	return ProcessCPUSeconds(pid)
}

// ProcessCPUSeconds reads a process's CPU time, user and system, from
// /proc/<pid>/stat.
func ProcessCPUSeconds(pid int) (float64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces; utime and stime are the 14th and 15th of the whole line.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, fields[11], fields[12])
	}
	return (utime + stime) / 100, nil // USER_HZ is 100 on Linux
}

// exited returns an error if the named process has already exited.
func (c *Cluster) exited(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.name != name {
			continue
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v", name, p.err)
		default:
		}
	}
	return nil
}

// waitFor polls cond until it holds, the named process dies, or the timeout.
func (c *Cluster) waitFor(ctx context.Context, name string, timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if perr := c.exited(name); perr != nil {
			return perr
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// portAttempts is how many times a process is started on new ports when
// the ones freePort found were taken before it bound them.
const portAttempts = 5

// onFreePorts starts a process with start, which picks its ports with
// freePort, and waits until ready holds. A port freePort found free is free
// only until another process takes it (every outgoing connection of the
// machine takes one from the same range), and a process that cannot bind
// exits at once: then it is started again, on ports picked anew, after
// clean, which undoes what the failed start left behind.
func (c *Cluster) onFreePorts(ctx context.Context, name string, timeout time.Duration, start, ready, clean func() error) error {
	for attempt := 1; ; attempt++ {
		logFile := filepath.Join(c.LogDir, name+".log")
		var logStart int64
		if info, err := os.Stat(logFile); err == nil {
			logStart = info.Size()
		}
		if err := start(); err != nil {
			return err
		}
		err := c.waitFor(ctx, name, timeout, ready)
		if err == nil || attempt == portAttempts || c.exited(name) == nil || !portTaken(logFile, logStart) {
			return err
		}
		c.forget(name)
		if err := clean(); err != nil {
			return err
		}
	}
}

// portTaken tells whether a process's log, from offset on, says it could
// not bind its address.
func portTaken(logFile string, offset int64) bool {
	data, err := os.ReadFile(logFile)
	if err != nil || int64(len(data)) < offset {
		return false
	}
	return strings.Contains(string(data[offset:]), "address already in use")
}

// forget drops the named processes, which have exited, from the cluster.
func (c *Cluster) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.procs[:0]
	for _, p := range c.procs {
		if p.name != name {
			kept = append(kept, p)
		}
	}
	c.procs = kept
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	return c.onFreePorts(ctx, "etcd", 30*time.Second, c.runEtcd, c.etcdHealthy,
		// etcd may have written its data folder, with the old peer URL
		// as its member's, before it failed to bind.
		func() error { return os.RemoveAll(c.path("etcd")) })
}

func (c *Cluster) runEtcd() error {
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	clientPort, peerPort := ports[0], ports[1]
	c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	return c.run("etcd", c.bin("etcd"),
		"--name=local",
		"--data-dir="+c.path("etcd"),
		"--listen-client-urls="+c.etcdURL,
		"--advertise-client-urls="+c.etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=local="+peerURL,
		// A throw-away cluster: durability is not worth the fsyncs.
		"--unsafe-no-fsync",
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	)
}

func (c *Cluster) etcdHealthy() error {
	resp, err := http.Get(c.etcdURL + "/health")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd /health: %s", resp.Status)
	}
	return nil
}

// AuditReadsGroup: the audit log records the reads (get, list, watch, and
// of non-resource URLs) of the users in this group too, as it records
// everyone's writes: a test proves with them that a client watches rather
// than polls. MintUser gives a user the group.
const AuditReadsGroup = "localcluster:audit-reads"

// auditPolicy records every request that is not a read, with the user and
// the response code: enough to count a controller's writes; and every
// request of the users in AuditReadsGroup.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  userGroups: ["` + AuditReadsGroup + `"]
- level: None
  verbs: ["get", "list", "watch"]
- level: None
  nonResourceURLs: ["/*"]
- level: Metadata
`

func (c *Cluster) startAPIServer(ctx context.Context) error {
	var err error
	if c.ca, err = newCA(); err != nil {
		return err
	}
	pki := c.path("pki")
	if err := os.WriteFile(filepath.Join(pki, "ca.crt"), c.ca.certPEM, 0o644); err != nil {
		return err
	}
	servingCert, servingKey, err := c.ca.issue("kube-apiserver", nil,
		[]string{"127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"})
	if err != nil {
		return err
	}
	if err := writeKeyPair(filepath.Join(pki, "apiserver.crt"), filepath.Join(pki, "apiserver.key"), servingCert, servingKey); err != nil {
		return err
	}
	saKey := filepath.Join(pki, "sa.key")
	if err := newServiceAccountKey(saKey); err != nil {
		return err
	}
	policy := c.path("audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	return c.onFreePorts(ctx, "kube-apiserver", 90*time.Second,
		func() error { return c.runAPIServer(pki, saKey, policy) },
		func() error { return c.apiServerReady(ctx) },
		func() error { return nil })
}

// runAPIServer starts kube-apiserver on a free port, and writes the admin
// kubeconfig for its address.
func (c *Cluster) runAPIServer(pki, saKey, policy string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	if err := c.run("kube-apiserver", c.bin("kube-apiserver"),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The "kubernetes" Service's endpoints would be this loopback
		// address, which the endpoint reconciler refuses; nothing here
		// reaches the API server through that Service.
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(port),
		"--etcd-servers="+c.etcdURL,
		"--tls-cert-file="+filepath.Join(pki, "apiserver.crt"),
		"--tls-private-key-file="+filepath.Join(pki, "apiserver.key"),
		"--client-ca-file="+filepath.Join(pki, "ca.crt"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--audit-policy-file="+policy,
		"--audit-log-path="+c.AuditLog,
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=0",
		// Benchmarks create thousands of objects at once: do not let the
		// default in-flight limits be what they measure.
		"--max-requests-inflight=2000",
		"--max-mutating-requests-inflight=1000",
		"--profiling="+strconv.FormatBool(c.opts.Profiling),
		"--v=1",
	); err != nil {
		return err
	}

	admin, err := c.MintUser("admin", "system:masters")
	if err != nil {
		return err
	}
	c.Kubeconfig = admin
	return nil
}

func (c *Cluster) apiServerReady(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s", err, body)
	}
	// The default namespace and the bootstrap RBAC roles come from
	// post-start hooks; /readyz covers them, but be sure of the namespace,
	// which every test uses.
	_, err = client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
	return err
}

// MintUser writes a kubeconfig for a user with the given groups,
// authenticated by a client certificate from the cluster's CA, and returns
// its path. What the user may do is up to RBAC.
func (c *Cluster) MintUser(user string, groups ...string) (string, error) {
	certPEM, keyPEM, err := c.ca.issue(user, groups, nil)
	if err != nil {
		return "", err
	}
	name := "kubeconfig-" + sanitize(user)
	if user == "admin" {
		name = "kubeconfig"
	}
	return c.writeKubeconfig(name, &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM})
}

// KubeconfigForToken writes a kubeconfig that authenticates with a bearer
// token, such as a service account's from the TokenRequest API, and returns
// its path.
func (c *Cluster) KubeconfigForToken(name, token string) (string, error) {
	return c.writeKubeconfig("kubeconfig-"+sanitize(name), &clientcmdapi.AuthInfo{Token: token})
}

func (c *Cluster) writeKubeconfig(name string, auth *clientcmdapi.AuthInfo) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.ca.certPEM}
	cfg.AuthInfos["user"] = auth
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	cfg.CurrentContext = "local"
	path := c.path(name)
	return path, clientcmd.WriteToFile(*cfg, path)
}

// RESTConfig returns a client configuration for a kubeconfig MintUser wrote.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ':' || r == '/' {
			return '-'
		}
		return r
	}, s)
}

func (c *Cluster) startControllerManager() error {
	kubeconfig, err := c.MintUser("system:kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	return c.run("kube-controller-manager", c.bin("kube-controller-manager"),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--controllers=*",
		"--service-account-private-key-file="+c.path("pki", "sa.key"),
		"--root-ca-file="+c.path("pki", "ca.crt"),
		"--use-service-account-credentials=false",
		// Sync quickly: tests wait on Deployments becoming Available.
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		"--concurrent-gc-syncs=40",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--v=1",
	)
}

func (c *Cluster) startScheduler() error {
	kubeconfig, err := c.MintUser("system:kube-scheduler", "system:masters")
	if err != nil {
		return err
	}
	return c.run("kube-scheduler", c.bin("kube-scheduler"),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--v=1",
	)
}

// kwokStages are the stages this project adds to kwok's own (see each
// file): the fake nodes end a Job Pod whose command is `exit 3` or `exit 7`
// with that exit code, end one running `sleep 8` with 0 after 8 seconds,
// keep one running `sleep 3600`, end a Job Pod deleted while
// it runs in a terminal phase first, as a kubelet does, and never make a
// Pod of the image example.com/never-ready:1 ready.
//
//go:embed kwok-stages/*.yaml
var kwokStages embed.FS

// kwokNodeAnnotation marks the nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

func (c *Cluster) startKwok(ctx context.Context) error {
	kubeconfig, err := c.MintUser("system:kwok", "system:masters")
	if err != nil {
		return err
	}
	stages, err := filepath.Glob(filepath.Join(c.opts.BinDir, "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("no kwok stages in %s (run hack/ensure-binaries.sh)", c.opts.BinDir)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		"--cidr=10.244.0.0/16",
		"--node-ip=127.0.0.1",
	}
	for _, s := range stages {
		args = append(args, "--config="+s)
	}
	// Ours, after kwok's: Job Pods whose command fails or keeps running.
	ours, err := fs.Glob(kwokStages, "kwok-stages/*.yaml")
	if err != nil {
		return err
	}
	for _, name := range ours {
		data, err := kwokStages.ReadFile(name)
		if err != nil {
			return err
		}
		path := filepath.Join(c.opts.Dir, filepath.Base(name))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
		args = append(args, "--config="+path)
	}
	if err := c.run("kwok", c.bin("kwok"), args...); err != nil {
		return err
	}

	cfg, err := RESTConfig(c.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for i := range c.opts.Nodes {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("kwok-node-%d", i),
				Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{
					"type":                   "kwok",
					"kubernetes.io/hostname": fmt.Sprintf("kwok-node-%d", i),
					"kubernetes.io/os":       "linux",
				},
			},
			Status: corev1.NodeStatus{
				Allocatable: nodeResources(),
				Capacity:    nodeResources(),
			},
		}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
	}
	// Ready, and (with the node lifecycle controller running) rid of the
	// not-ready taint every new node starts with: before that nothing
	// schedules onto it.
	return c.waitFor(ctx, "kwok", 60*time.Second, func() error {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			if !nodeReady(&n) {
				return fmt.Errorf("node %s is not ready", n.Name)
			}
			if c.opts.ControllerManager {
				for _, t := range n.Spec.Taints {
					if t.Key == corev1.TaintNodeNotReady {
						return fmt.Errorf("node %s still has taint %s", n.Name, t.Key)
					}
				}
			}
		}
		return nil
	})
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("4Ti"),
		corev1.ResourcePods:   resource.MustParse("10000"),
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Stop ends every process, newest first (SIGTERM, then SIGKILL after a
// grace period), and waits for them. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		stopProcess(procs[i], syscall.SIGTERM)
	}
}
