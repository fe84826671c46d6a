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
	"reflect"
	"slices"
	"strings"
	"testing"
)

const english = "# Title\n\nSee `syncHandler()` in `controller.go` and [the design](docs/design.md).\n\n" +
	"## Run it\n\n```sh\nmake run    # runs it\nkubectl apply -f artifacts/examples \\\n  --server-side\n" +
	"NAME   AGE\n```\n\n### Diagram\n\n```\nReflector -> DeltaFIFO\n```\n"

func TestParse(t *testing.T) {
	d := Parse(english)
	want := []Heading{{1, "Title"}, {2, "Run it"}, {3, "Diagram"}}
	if !reflect.DeepEqual(d.Headings, want) {
		t.Errorf("headings %v, want %v", d.Headings, want)
	}
	if len(d.Blocks) != 2 || d.Blocks[0].Lang != "sh" || d.Blocks[1].Lang != "" {
		t.Fatalf("blocks %+v", d.Blocks)
	}
	if got := d.Blocks[0].Code(); !reflect.DeepEqual(got, []string{"make run", `kubectl apply -f artifacts/examples \`, "--server-side", "NAME   AGE"}) {
		t.Errorf("code %q", got)
	}
	if !reflect.DeepEqual(d.Spans, []string{"syncHandler()", "controller.go"}) {
		t.Errorf("spans %q", d.Spans)
	}
	if !reflect.DeepEqual(d.Links, []string{"docs/design.md"}) {
		t.Errorf("links %q", d.Links)
	}
	if got := Commands(d.Blocks[0]); !reflect.DeepEqual(got, [][]string{{"make", "run"}, {"kubectl", "apply", "-f", "artifacts/examples", "--server-side"}}) {
		t.Errorf("commands %q", got)
	}
}

func TestCompareTranslation(t *testing.T) {
	orig := Parse(english)
	good := Parse(strings.NewReplacer("# Title", "# 标题", "# runs it", "# 运行", "Reflector -> DeltaFIFO", "Reflector（反射器）-> DeltaFIFO").Replace(english))
	if p := CompareTranslation(orig, good); len(p) != 0 {
		t.Errorf("a faithful translation: %q", p)
	}
	for name, bad := range map[string]string{
		"a heading's level":  strings.Replace(english, "### Diagram", "## Diagram", 1),
		"a heading missing":  strings.Replace(english, "## Run it\n", "", 1),
		"a command changed":  strings.Replace(english, "make run", "make test", 1),
		"a flag translated":  strings.Replace(english, "--server-side", "--服务端", 1),
		"output dropped":     strings.Replace(english, "NAME   AGE\n", "", 1),
		"a code block fewer": strings.Replace(english, "```\nReflector -> DeltaFIFO\n```\n", "", 1),
	} {
		if p := CompareTranslation(orig, Parse(bad)); len(p) == 0 {
			t.Errorf("%s: not found", name)
		}
	}
}

func TestClassify(t *testing.T) {
	root := "../.." // the repository
	for span, want := range map[string]Name{
		"syncHandler()":                    {Kind: Func, Parts: []string{"", "syncHandler"}},
		"Controller.Run()":                 {Kind: Func, Parts: []string{"Controller", "Run"}},
		"cache.DeltaFIFO":                  {Kind: Ident, Parts: []string{"cache", "DeltaFIFO", ""}},
		"meta.SetStatusCondition()":        {Kind: Ident, Parts: []string{"meta", "SetStatusCondition", ""}},
		"equality.Semantic.DeepEqual()":    {Kind: Ident, Parts: []string{"equality", "Semantic", "DeepEqual"}},
		"-workers":                         {Kind: Flag, Parts: []string{"workers"}},
		"-install-crd=false":               {Kind: Flag, Parts: []string{"install-crd"}},
		"--leader-elect":                   {Kind: Flag, Parts: []string{"leader-elect"}},
		"workqueue_depth":                  {Kind: Metric, Parts: []string{"workqueue_depth"}},
		"rest_client_requests_total{code}": {Kind: Metric, Parts: []string{"rest_client_requests_total"}},
		"_adds_total":                      {Kind: Metric, Parts: []string{"_adds_total"}},
		"make test-e2e":                    {Kind: Make, Parts: []string{"test-e2e"}},
		"make image image-push IMG=x":      {Kind: Make, Parts: []string{"image", "image-push"}},
		"kubectl get appsvc":               {Kind: Kubectl, Parts: []string{"get", "appsvc"}},
		"controller.go":                    {Kind: File, Parts: []string{"controller.go"}},
		"internal/children":                {Kind: File, Parts: []string{"internal/children"}},
		"hack/ensure-binaries.sh":          {Kind: File, Parts: []string{"hack/ensure-binaries.sh"}},
		"apps/v1":                          {Kind: Other},
		"app.example.com/appservice":       {Kind: Other},
		"_output/e2e/<time>/":              {Kind: Other},
		"dist/install.yaml":                {Kind: Other},
		"spec.ports":                       {Kind: Other},
		"Available=True":                   {Kind: Other},
		"ControllerRefManager":             {Kind: Other},
	} {
		got := Classify(span, root)
		want.Span = span
		if got.Kind != want.Kind || (want.Parts != nil && !reflect.DeepEqual(got.Parts, want.Parts)) {
			t.Errorf("Classify(%q) = %+v, want %+v", span, got, want)
		}
	}
}

func TestShellFields(t *testing.T) {
	for in, want := range map[string][]string{
		`kubectl get deploy x`: {"kubectl", "get", "deploy", "x"},
		`kubectl patch appsvc x --type=merge -p '{"spec":{"image":"nginx:1.27"}}'`: {"kubectl", "patch", "appsvc", "x", "--type=merge", "-p", `{"spec":{"image":"nginx:1.27"}}`},
		`kubectl get svc x -o jsonpath='{.spec.type} {.spec.ports[0].nodePort}'`:   {"kubectl", "get", "svc", "x", "-o", "jsonpath={.spec.type} {.spec.ports[0].nodePort}"},
		`echo "a \"b\" c" d\ e ''`: {"echo", `a "b" c`, "d e", ""},
	} {
		if got := ShellFields(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ShellFields(%s) = %q, want %q", in, got, want)
		}
	}
}

// TestMetricNames: the metric names of the monitoring artifacts' queries,
// without functions, keywords, label names or durations.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`max by (namespace, name, reason) (appservice_info{state="Stalled"}) == 1`:                                                                     {"appservice_info"},
		`sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m])) > 0`:                                                                {"controller_runtime_reconcile_errors_total"},
		`histogram_quantile(0.99, sum by (le, name) (rate(workqueue_queue_duration_seconds_bucket{name=~"a|b"}[5m])))`:                                 {"workqueue_queue_duration_seconds_bucket"},
		`(max(leader_election_master_status{name="x"}) or vector(0)) < 1 and on() (count(up{job=~".*x.*"} == 1) > 0)`:                                  {"leader_election_master_status", "up"},
		`max by (namespace, name) (activity_exit_code) * on (namespace, name) group_left () max by (namespace, name) (activity_info{prosta="Failed"})`: {"activity_exit_code", "activity_info"},
		`absent(up{job=~".*appservice-controller.*"} == 1)`:                                                                                            {"up"},
	} {
		fixtureEqual(t, expr, want, MetricNames(expr))
	}
	queries, err := MonitoringQueries("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) < 10 {
		t.Errorf("%d queries in artifacts/monitoring, want the rules' and the dashboard's", len(queries))
	}
	for _, q := range queries {
		if strings.Contains(q.Expr, "$") || len(MetricNames(q.Expr)) == 0 {
			t.Errorf("%s: %q: a Grafana variable left, or no metric read", q.Where, q.Expr)
		}
	}
}

func fixtureEqual(t *testing.T, what string, want, got []string) {
	t.Helper()
	if !slices.Equal(want, got) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}
