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

// Command kubectl-appservice is the kubectl plugin for AppServices:
// kubectl appservice get, list, promote, abort, retry, suspend, resume,
// restart (docs/plugin.md). Installed on the PATH, kubectl runs it as
// `kubectl appservice`:
//
//	go install ./cmd/kubectl-appservice
//
// It only wires standard streams, signals and the exit code to
// internal/plugin, where the commands are.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"example.com/appservice-controller/internal/plugin"
)

func main() {
	// client-go's own logs (a watch retried) would tear get --watch's
	// frames; the plugin says what failed itself. Process-wide, so set
	// here, once, before any client runs, and not by each command (the
	// tests make many, while earlier ones' informers still log).
	klog.SetLogger(logr.Discard())
	// An interrupt ends get --watch, which then exits 0.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := plugin.Main(ctx, os.Args[1:], plugin.Options{
		IOStreams: genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
	})
	stop()
	os.Exit(code)
}
