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

package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/version"
)

// The version is stamped at link time into k8s.io/component-base/version,
// as for the Kubernetes components (the Makefile's LDFLAGS: gitVersion,
// gitCommit, gitTreeState, buildDate). A binary built without them (go run,
// go install) reports what the Go toolchain recorded of the commit instead.

// buildVersion is this binary's version.
func buildVersion() apimachineryversion.Info {
	info := version.Get()
	if !strings.HasPrefix(info.GitCommit, "$Format") { // stamped
		return info
	}
	const unknown = "unknown"
	info.GitVersion, info.GitCommit, info.BuildDate = unknown, unknown, unknown
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.GitVersion = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.GitCommit = s.Value
		case "vcs.time":
			info.BuildDate = s.Value
		case "vcs.modified":
			info.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
		}
	}
	return info
}

func printVersion(w io.Writer) {
	v := buildVersion()
	fmt.Fprintf(w, "appservice-controller %s (commit %s, tree %s, built %s, %s, %s)\n",
		v.GitVersion, v.GitCommit, v.GitTreeState, v.BuildDate, v.GoVersion, v.Platform)
}

// buildInfo is the constant 1, labelled with the version: join it to other
// series to see which build produced them (as kubernetes_build_info does for
// the Kubernetes components).
var buildInfo = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Name: "appservice_controller_build_info",
	Help: "A metric with a constant '1' value labelled by the version, commit, tree state, build date, Go version and platform " +
		"of the running appservice-controller.",
}, []string{"git_version", "git_commit", "git_tree_state", "build_date", "go_version", "platform"})

func init() {
	legacyregistry.MustRegister(buildInfo)
	v := buildVersion()
	buildInfo.WithLabelValues(v.GitVersion, v.GitCommit, v.GitTreeState, v.BuildDate, v.GoVersion, v.Platform).Set(1)
}
