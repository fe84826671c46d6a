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

// Package version tells which build of the controller is running: -version
// prints it, and the metrics carry it (appservice_controller_build_info).
//
// It imports nothing of this repository.
package version

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	componentversion "k8s.io/component-base/version"
)

// The version is stamped at link time into k8s.io/component-base/version,
// as for the Kubernetes components (the Makefile's LDFLAGS: gitVersion,
// gitCommit, gitTreeState, buildDate). A binary built without them (go run,
// go install) reports what the Go toolchain recorded of the commit instead.

// Get returns this binary's version.
func Get() apimachineryversion.Info {
	info := componentversion.Get()
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

// Print writes the version on one line, as -version shows it.
func Print(w io.Writer) {
	v := Get()
	fmt.Fprintf(w, "appservice-controller %s (commit %s, tree %s, built %s, %s, %s)\n",
		v.GitVersion, v.GitCommit, v.GitTreeState, v.BuildDate, v.GoVersion, v.Platform)
}
