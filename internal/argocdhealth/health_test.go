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

package argocdhealth

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// The scripts and their cases, from this package's folder: the
// AppService's and the Activity's.
const dir = "../../artifacts/argocd"

var scripts = []string{dir, filepath.Join(dir, "activity")}

// TestHealthCheck runs artifacts/argocd/health.lua (the AppService's) and
// artifacts/argocd/activity/health.lua on every case of their
// health_test.yaml, as Argo CD tests its own health checks.
func TestHealthCheck(t *testing.T) {
	for _, dir := range scripts {
		t.Run(filepath.Base(dir), func(t *testing.T) { testHealthCheck(t, dir) })
	}
}

func testHealthCheck(t *testing.T, dir string) {
	script, err := os.ReadFile(filepath.Join(dir, "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	var cases struct {
		Tests []struct {
			HealthStatus Status `json:"healthStatus"`
			InputPath    string `json:"inputPath"`
		} `json:"tests"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases.Tests) == 0 {
		t.Fatal("no cases in health_test.yaml")
	}
	for _, tc := range cases.Tests {
		t.Run(tc.InputPath, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, tc.InputPath))
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := yaml.Unmarshal(data, &obj); err != nil {
				t.Fatal(err)
			}
			got, err := Evaluate(string(script), obj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.HealthStatus {
				t.Errorf("health %+v, want %+v", got, tc.HealthStatus)
			}
		})
	}
}

// TestEvaluateRefuses: a script that fails, returns no table, or returns a
// status Argo CD does not know is an error, not a health.
func TestEvaluateRefuses(t *testing.T) {
	for _, script := range []string{
		`error("boom")`,
		`return "Healthy"`,
		`return {status = "Fine"}`,
		`local os = require("os"); os.exit(1)`, // no os library in the sandbox
		`while true do end`,                    // stopped after a second
	} {
		if got, err := Evaluate(script, map[string]any{}); err == nil {
			t.Errorf("%s: %+v, want an error", script, got)
		}
	}
}
