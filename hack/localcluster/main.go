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

// Command localcluster runs a local Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok with fake
// nodes, and the Gateway API's CRDs) until interrupted, optionally with a
// command that uses it:
//
//	localcluster -bin-dir DIR [-dir DIR] [-nodes N] [-- command args...]
//
// The command runs with KUBECONFIG pointing at the cluster's admin
// kubeconfig. When it exits, or on Ctrl-C (passed on to it first), the
// cluster stops and nothing it started keeps running. `make run` uses it to
// run the controller when no cluster is given.
//
// It may import internal/localcluster of this repository, and nothing else
// of it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"example.com/appservice-controller/internal/localcluster"
)

func main() {
	binDir := flag.String("bin-dir", os.Getenv("APPSERVICE_BIN_DIR"), "Folder with the control plane's binaries (the output of hack/ensure-binaries.sh).")
	dir := flag.String("dir", "", "Folder for the cluster's data, logs and kubeconfig (default: a new temporary folder, removed on exit).")
	nodes := flag.Int("nodes", 1, "Number of kwok nodes.")
	flag.Parse()
	os.Exit(run(*binDir, *dir, *nodes, flag.Args()))
}

func run(binDir, dir string, nodes int, command []string) int {
	if binDir == "" {
		fmt.Fprintln(os.Stderr, "localcluster: -bin-dir (or APPSERVICE_BIN_DIR) is required; see hack/ensure-binaries.sh")
		return 2
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "appservice-localcluster-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "localcluster:", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}

	// Ctrl-C reaches the whole foreground process group, so a command
	// started below gets it too and shuts down by itself; we wait for it,
	// then stop the cluster.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	fmt.Fprintln(os.Stderr, "Starting the local control plane in", dir)
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, Dir: dir, ControllerManager: true, Scheduler: true, Nodes: nodes,
	})
	if err == nil {
		// The Gateway API's CRDs, as many clusters have them: an
		// AppService's httpRoute, and a canary through it, work here too.
		err = installGatewayAPI(ctx, cluster)
		if err != nil {
			cluster.Stop()
		}
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		return 1
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "Stopping the local control plane")
		cluster.Stop()
	}()

	fmt.Fprintf(os.Stderr, "\nThe local cluster is up (logs: %s). In another terminal, point kubectl at it:\n\n"+
		"    export KUBECONFIG=%s\n\n", cluster.LogDir, cluster.Kubeconfig)
	fmt.Fprintf(os.Stderr, "(a kubectl of the cluster's version is %s)\n\n", filepath.Join(binDir, "kubectl"))

	if len(command) == 0 {
		<-signals
		return 0
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case sig := <-signals:
		// Passed on in case it came from kill rather than the terminal.
		_ = cmd.Process.Signal(sig)
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			err = <-done
		}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		return 1
	}
	return 0
}

// installGatewayAPI installs the Gateway API's standard CRDs, from the
// module go.mod pins, on the cluster.
func installGatewayAPI(ctx context.Context, cluster *localcluster.Cluster) error {
	cfg, err := localcluster.RESTConfig(cluster.Kubeconfig)
	if err != nil {
		return err
	}
	if err := localcluster.InstallGatewayAPI(ctx, cfg); err != nil {
		return fmt.Errorf("installing the Gateway API's CRDs: %w", err)
	}
	return nil
}
