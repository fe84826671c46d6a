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

package version

import (
	"runtime"
	"strings"
	"testing"
)

// A test binary is not stamped (no -ldflags -X): Get falls back to what the
// toolchain recorded, and says "unknown" where it recorded nothing, never
// component-base's unexpanded "$Format" placeholders.
func TestUnstamped(t *testing.T) {
	v := Get()
	for name, value := range map[string]string{"gitVersion": v.GitVersion, "gitCommit": v.GitCommit, "buildDate": v.BuildDate} {
		if value == "" || strings.Contains(value, "$Format") {
			t.Errorf("%s = %q, want a value or \"unknown\"", name, value)
		}
	}
	if v.GoVersion != runtime.Version() {
		t.Errorf("goVersion = %q, want %q", v.GoVersion, runtime.Version())
	}
	var out strings.Builder
	Print(&out)
	if line := out.String(); !strings.HasPrefix(line, "appservice-controller "+v.GitVersion+" (commit "+v.GitCommit) || strings.Count(line, "\n") != 1 {
		t.Errorf("Print wrote %q", line)
	}
}
