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

package docscheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// The monitoring artifacts (artifacts/monitoring) as their checks read
// them: every PromQL query of the alert rules and of the dashboard, and
// the metric names a query reads. test/monitoring has Prometheus parse the
// queries; test/e2e checks that the running controller serves every metric
// they read.

// Query is one PromQL expression of the monitoring artifacts.
type Query struct {
	// Where names it: "alert AppServiceStalled", "panel 2 (AppServices not
	// Ready) A".
	Where string
	Expr  string
}

// MonitoringQueries returns the queries of the alert rules and the
// dashboard under root (the repository), the dashboard's Grafana macros
// ($__rate_interval, $__interval, $__range) replaced by a duration, as
// Grafana replaces them before it sends a query.
func MonitoringQueries(root string) ([]Query, error) {
	var out []Query
	data, err := os.ReadFile(filepath.Join(root, "artifacts", "monitoring", "alerts.yaml"))
	if err != nil {
		return nil, err
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	if err := yaml.UnmarshalStrict(data, &rules); err != nil {
		// Strict on the fields it reads only: the rules' other fields
		// (for, labels, annotations) are promtool's to check.
		if err := yaml.Unmarshal(data, &rules); err != nil {
			return nil, fmt.Errorf("alerts.yaml: %w", err)
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out = append(out, Query{Where: "alert " + r.Alert + r.Record, Expr: r.Expr})
		}
	}
	data, err = os.ReadFile(filepath.Join(root, "artifacts", "monitoring", "dashboard.json"))
	if err != nil {
		return nil, err
	}
	var dash struct {
		Panels []struct {
			ID      int
			Title   string
			Targets []struct {
				RefID string
				Expr  string
			}
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		return nil, fmt.Errorf("dashboard.json: %w", err)
	}
	macros := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h")
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			out = append(out, Query{Where: fmt.Sprintf("panel %d (%s) %s", p.ID, p.Title, t.RefID), Expr: macros.Replace(t.Expr)})
		}
	}
	return out, nil
}

var (
	// What a query's metric names are not: label matchers and string
	// literals, grouping clauses' label lists, range and offset durations,
	// numbers.
	matchers  = regexp.MustCompile(`\{[^}]*\}`)
	strs      = regexp.MustCompile(`"[^"]*"`)
	groupings = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	ranges    = regexp.MustCompile(`\[[^\]]*\]`)
	words     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	keywords  = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// MetricNames returns the metric names a query reads, sorted, each once:
// its identifiers but for function calls, keywords, label names and
// durations. It reads the queries of this repository, not any PromQL.
func MetricNames(expr string) []string {
	s := strs.ReplaceAllString(expr, "")
	s = matchers.ReplaceAllString(s, "")
	s = groupings.ReplaceAllString(s, "")
	s = ranges.ReplaceAllString(s, "")
	var names []string
	for _, w := range words.FindAllString(s, -1) {
		if strings.HasSuffix(w, "(") || slices.Contains(keywords, strings.ToLower(w)) {
			continue // a function, or a keyword
		}
		if !slices.Contains(names, w) {
			names = append(names, w)
		}
	}
	slices.Sort(names)
	return names
}
