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

// Package monitoring tests the monitoring artifacts (artifacts/monitoring)
// with Prometheus's own promtool (APPSERVICE_PROMTOOL, which make
// test-monitoring builds from its Go module): the alert rules' unit tests,
// and every query of the rules and of the Grafana dashboard parsed by
// Prometheus's parser. test/e2e checks that the running controller serves
// every metric the queries read.
//
// It may import internal/docscheck of this repository.
package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"example.com/appservice-controller/internal/docscheck"
)

const root = "../.."

// promtool runs promtool in dir and fails the test with its output if it
// fails.
func promtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	bin := os.Getenv("APPSERVICE_PROMTOOL")
	if bin == "" {
		t.Fatal("APPSERVICE_PROMTOOL is not set: run make test-monitoring, which builds promtool (hack/ensure-promtool.sh)")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestAlertRules: the rules are valid, and each fires on what it should and
// not on what it should not (alerts_test.yaml, promtool's unit tests).
func TestAlertRules(t *testing.T) {
	dir := filepath.Join(root, "artifacts", "monitoring")
	promtool(t, dir, "check", "rules", "alerts.yaml")
	out := promtool(t, dir, "test", "rules", "alerts_test.yaml")
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules:\n%s", out)
	}
	// Every alert has a test.
	var rules, tests struct {
		Groups []struct{ Rules []struct{ Alert string } }
		Tests  []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
			} `json:"alert_rule_test"`
		}
	}
	for file, into := range map[string]any{"alerts.yaml": &rules, "alerts_test.yaml": &tests} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	tested := map[string]bool{}
	for _, c := range tests.Tests {
		for _, a := range c.AlertRuleTest {
			tested[a.Alertname] = true
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if !tested[r.Alert] {
				t.Errorf("alert %s has no test in alerts_test.yaml", r.Alert)
			}
		}
	}
}

// TestQueriesParse: every query of the rules and of the dashboard, as
// Grafana sends it, parsed by Prometheus (as recording rules in a rule
// file, which promtool checks with Prometheus's own parser).
func TestQueriesParse(t *testing.T) {
	queries, err := docscheck.MonitoringQueries(root)
	if err != nil {
		t.Fatal(err)
	}
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for i, q := range queries {
		rules = append(rules, rule{Record: fmt.Sprintf("query:%d", i), Expr: q.Expr})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "queries", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "queries.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, dir, "check", "rules", "queries.yaml")
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(queries)); !strings.Contains(out, want) {
		t.Errorf("promtool check rules of the %d queries did not say %q:\n%s", len(queries), want, out)
	}
}

// TestDashboard: every panel says what it shows, has a query, and reads
// the dashboard's Prometheus data source.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "artifacts", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct{ Name, Type string }
		}
		Panels []struct {
			ID          int
			Title       string
			Description string
			Datasource  struct{ UID string }
			Targets     []struct {
				Expr       string
				Datasource struct{ UID string }
			}
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	if dash.UID == "" || len(dash.Templating.List) != 1 || dash.Templating.List[0].Type != "datasource" {
		t.Errorf("dashboard uid %q, variables %+v: want a uid and one Prometheus data source variable", dash.UID, dash.Templating.List)
	}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] || p.Title == "" || p.Description == "" || len(p.Targets) == 0 || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %d (%s): a unique id, a title, a description, a query and the data source variable, each", p.ID, p.Title)
		}
		ids[p.ID] = true
		for _, q := range p.Targets {
			if q.Datasource.UID != "${datasource}" {
				t.Errorf("panel %d (%s): a query on data source %q", p.ID, p.Title, q.Datasource.UID)
			}
		}
	}
}
