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

package analysis

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// templates is a fake cluster's templates, by TemplateKey.
type templates map[string]*appv1.AnalysisTemplateSpec

func (ts templates) lookup(kind appv1.AnalysisTemplateKind, namespace, name string) (*appv1.AnalysisTemplateSpec, bool, error) {
	spec, ok := ts[TemplateKey(kind, namespace, name)]
	return spec, ok, nil
}

func successRate() *appv1.AnalysisTemplateSpec {
	return &appv1.AnalysisTemplateSpec{
		Args: []appv1.AnalysisArg{{Name: "service"}, {Name: "quantile", Value: new("0.99")}},
		Metrics: []appv1.AnalysisMetric{
			{Name: "success-rate", Query: `sum(rate(ok{service="{{ args.service }}",ns="{{ namespace }}"}[{{interval}}]))`, Min: new("0.99")},
			{Name: "p99", Query: `histogram_quantile({{args.quantile}}, x{service="{{ args.service }}"})`, Max: new("0.5"), DryRun: true},
		},
	}
}

// TestResolve: arguments (given, defaulted, missing, undeclared), each
// reference's own arguments, clashes of metric names, missing templates,
// and pins kept over what the templates became.
func TestResolve(t *testing.T) {
	cluster := templates{
		"ClusterAnalysisTemplate/success": successRate(),
		"AnalysisTemplate/shop/latency": {
			Args:    []appv1.AnalysisArg{{Name: "service"}},
			Metrics: []appv1.AnalysisMetric{{Name: "latency", Query: `lat{service="{{ args.service }}"}`, Max: new("1")}},
		},
		"AnalysisTemplate/shop/clash": {Metrics: []appv1.AnalysisMetric{{Name: "success-rate", Query: "1", Min: new("1")}}},
	}
	inline := appv1.AnalysisMetric{Name: "errors", Query: "sum(errors)", Max: new("0")}
	ref := func(kind appv1.AnalysisTemplateKind, name string, args map[string]string) appv1.AnalysisTemplateRef {
		return appv1.AnalysisTemplateRef{Kind: kind, Name: name, Args: args}
	}
	for _, tc := range []struct {
		name    string
		refs    []appv1.AnalysisTemplateRef
		pinned  []appv1.PinnedTemplate
		queries map[string]string
		why     string
	}{
		{name: "arguments given and defaulted, other placeholders left for each round",
			refs: []appv1.AnalysisTemplateRef{ref(appv1.KindClusterAnalysisTemplate, "success", map[string]string{"service": "cart"})},
			queries: map[string]string{
				"errors":       "sum(errors)",
				"success-rate": `sum(rate(ok{service="cart",ns="{{ namespace }}"}[{{interval}}]))`,
				"p99":          `histogram_quantile(0.99, x{service="cart"})`,
			}},
		{name: "two templates, an argument of the same name, each its own value",
			refs: []appv1.AnalysisTemplateRef{
				ref(appv1.KindClusterAnalysisTemplate, "success", map[string]string{"service": "cart", "quantile": "0.9"}),
				ref("", "latency", map[string]string{"service": "checkout"}),
			},
			queries: map[string]string{
				"errors":       "sum(errors)",
				"success-rate": `sum(rate(ok{service="cart",ns="{{ namespace }}"}[{{interval}}]))`,
				"p99":          `histogram_quantile(0.9, x{service="cart"})`,
				"latency":      `lat{service="checkout"}`,
			}},
		{name: "a template that does not exist",
			refs: []appv1.AnalysisTemplateRef{ref("", "nope", nil)},
			why:  "AnalysisTemplate shop/nope does not exist"},
		{name: "a cluster template is not a namespace's",
			refs: []appv1.AnalysisTemplateRef{ref(appv1.KindClusterAnalysisTemplate, "latency", nil)},
			why:  "ClusterAnalysisTemplate latency does not exist"},
		{name: "an argument with no value",
			refs: []appv1.AnalysisTemplateRef{ref(appv1.KindClusterAnalysisTemplate, "success", nil)},
			why:  "argument service of ClusterAnalysisTemplate success has no value"},
		{name: "an argument the template does not declare",
			refs: []appv1.AnalysisTemplateRef{ref(appv1.KindClusterAnalysisTemplate, "success", map[string]string{"service": "a", "servce": "b"})},
			why:  "the reference gives argument servce, which ClusterAnalysisTemplate success does not declare"},
		{name: "two metrics of one name across the references",
			refs: []appv1.AnalysisTemplateRef{
				ref(appv1.KindClusterAnalysisTemplate, "success", map[string]string{"service": "cart"}),
				ref("", "clash", nil),
			},
			why: "metric success-rate is both in ClusterAnalysisTemplate success and in AnalysisTemplate clash"},
		{name: "pinned: the pin runs, whatever the template is now, even gone",
			refs: []appv1.AnalysisTemplateRef{ref("", "gone", nil), ref("", "latency", map[string]string{"service": "checkout"})},
			pinned: []appv1.PinnedTemplate{{Kind: appv1.KindAnalysisTemplate, Name: "gone", Digest: "d",
				Metrics: []appv1.PinnedMetric{{Name: "old", Query: "old_query", Min: new("1")}}}},
			queries: map[string]string{"errors": "sum(errors)", "old": "old_query", "latency": `lat{service="checkout"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &appv1.CanaryAnalysis{Metrics: []appv1.AnalysisMetric{inline}, Templates: tc.refs, IntervalSeconds: 30}
			before := a.DeepCopy()
			got, err := Resolve("shop", a, tc.pinned, cluster.lookup)
			if !cmp.Equal(a, before) {
				t.Errorf("Resolve changed its input: %s", cmp.Diff(before, a))
			}
			if tc.why != "" {
				var u *Unresolved
				if !errors.As(err, &u) || !strings.Contains(u.Why, tc.why) {
					t.Fatalf("error %v, want Unresolved saying %q", err, tc.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			queries := map[string]string{}
			for _, m := range got.Analysis.Metrics {
				queries[m.Name] = m.Query
			}
			if diff := cmp.Diff(tc.queries, queries); diff != "" {
				t.Errorf("queries (-want +got):\n%s", diff)
			}
			if len(got.Analysis.Templates) != 0 || got.Analysis.IntervalSeconds != 30 {
				t.Errorf("resolved analysis %+v: want no templates, the spec's interval", got.Analysis)
			}
			if len(got.Pins) != len(tc.refs) {
				t.Fatalf("%d pins for %d references", len(got.Pins), len(tc.refs))
			}
			for i, p := range got.Pins {
				if p.Name != tc.refs[i].Name || p.Kind != Kind(tc.refs[i]) {
					t.Errorf("pin %d is %s %s, want the reference's", i, p.Kind, p.Name)
				}
				if _, pinned := Pinned(tc.pinned, p.Kind, p.Name); !pinned && p.Digest != Digest(p.Metrics) {
					t.Errorf("pin %s's digest %s is not its metrics'", p.Name, p.Digest)
				}
			}
		})
	}
}

// TestResolveNoTemplates: an analysis without templates is returned as it
// is, and the lookup never asked.
func TestResolveNoTemplates(t *testing.T) {
	a := &appv1.CanaryAnalysis{Metrics: []appv1.AnalysisMetric{{Name: "m", Query: "q", Min: new("1")}}}
	got, err := Resolve("ns", a, nil, func(appv1.AnalysisTemplateKind, string, string) (*appv1.AnalysisTemplateSpec, bool, error) {
		t.Error("lookup called")
		return nil, false, nil
	})
	if err != nil || got.Analysis != a || got.Pins != nil {
		t.Errorf("Resolve = %+v, %v", got, err)
	}
}

// TestDigest: what a canary runs decides the digest, and nothing else.
func TestDigest(t *testing.T) {
	base := []appv1.PinnedMetric{{Name: "m", Query: "q", Min: new("1")}}
	d := Digest(base)
	if len(d) != 16 || d != Digest([]appv1.PinnedMetric{{Name: "m", Query: "q", Min: new("1")}}) {
		t.Fatalf("digest %q: want 16 hexadecimal digits, the same for equal metrics", d)
	}
	for name, change := range map[string]func(m *appv1.PinnedMetric){
		"query":   func(m *appv1.PinnedMetric) { m.Query = "q2" },
		"min":     func(m *appv1.PinnedMetric) { m.Min = new("2") },
		"max":     func(m *appv1.PinnedMetric) { m.Max = new("1") },
		"dry run": func(m *appv1.PinnedMetric) { m.DryRun = true },
		"name":    func(m *appv1.PinnedMetric) { m.Name = "n" },
	} {
		changed := []appv1.PinnedMetric{*base[0].DeepCopy()}
		change(&changed[0])
		if Digest(changed) == d {
			t.Errorf("a change of its %s leaves the digest", name)
		}
	}
}

// TestRenderArgs: each {{ args.NAME }}, spaced or not, and the first
// argument without a value.
func TestRenderArgs(t *testing.T) {
	got, unknown := RenderArgs(`a{x="{{args.x}}",y="{{ args.y }}"} {{ name }} {{ args.z }}`, map[string]string{"x": "1", "y": "2"})
	if got != `a{x="1",y="2"} {{ name }} {{ args.z }}` || unknown != "z" {
		t.Errorf("RenderArgs = %q, %q", got, unknown)
	}
}

// TestTemplateKeys: the index's keys, a namespace's templates in the
// AppService's namespace.
func TestTemplateKeys(t *testing.T) {
	as := &appv1.AppService{}
	as.Namespace = "shop"
	if keys := TemplateKeys(as); keys != nil {
		t.Errorf("no canary: keys %v", keys)
	}
	as.Spec.Canary = &appv1.Canary{Analysis: &appv1.CanaryAnalysis{Templates: []appv1.AnalysisTemplateRef{
		{Name: "a"}, {Name: "b", Kind: appv1.KindClusterAnalysisTemplate}, {Name: "c", Kind: appv1.KindAnalysisTemplate},
	}}}
	want := []string{"AnalysisTemplate/shop/a", "ClusterAnalysisTemplate/b", "AnalysisTemplate/shop/c"}
	if diff := cmp.Diff(want, TemplateKeys(as)); diff != "" {
		t.Error(diff)
	}
}
