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

package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/analysis"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
)

// TestAnalysisTemplateAdmissionProperty: the property for the analyses'
// templates. For every generated template spec, the AnalysisTemplate and
// the ClusterAnalysisTemplate of that spec get the same verdict; a refusal
// names the field; and what is admitted resolves as the controller
// resolves it, every declared argument given a value: no argument a query
// uses is undeclared, and every resolved metric runs (analysisRuns:
// bounds that are numbers, min not above max, every placeholder
// rendered).
func TestAnalysisTemplateAdmissionProperty(t *testing.T) {
	ctx := context.Background()
	kube, apps := startAPIServer(t)
	const ns = "templates"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(70, 1))
	outcomes := map[string]int{}
	const n = 500
	for i := range n {
		spec := generateTemplate(rng)
		outcome, err := checkTemplate(ctx, apps, ns, fmt.Sprintf("t-%d", i), spec)
		outcomes[outcome]++
		if err != nil {
			data, _ := json.Marshal(spec)
			t.Errorf("case %d: %v\nspec: %s", i, err, data)
		}
	}
	t.Logf("%d template specs: %v", n, outcomes)
	if outcomes["admitted"] < n/5 || outcomes["refused"] < n/5 {
		t.Errorf("the generator is lopsided (%v): it must produce both kinds of template", outcomes)
	}
}

// generateTemplate draws a template's spec: arguments declared, with and
// without defaults, now and then twice or with a bad name; metrics whose
// queries use declared arguments, undeclared ones and the AppService's
// placeholders, with the inline metrics' bounds and names, good and bad.
func generateTemplate(rng *rand.Rand) appv1.AnalysisTemplateSpec {
	draw := func(n int) int { return rng.IntN(n) }
	var spec appv1.AnalysisTemplateSpec
	names := []string{"service", "quantile", "route_name", "ns2"}
	for i := range draw(4) {
		arg := appv1.AnalysisArg{Name: names[i]}
		if draw(2) == 0 {
			arg.Value = new([]string{"0.99", "checkout", `a"b`, "{{ name }}", ""}[draw(5)])
		}
		switch draw(25) {
		case 0:
			arg.Name = []string{"", "9lives", "with-dash", "a.b", strings.Repeat("a", 64)}[draw(5)]
		case 1:
			if len(spec.Args) > 0 {
				arg.Name = spec.Args[0].Name // declared twice
			}
		case 2:
			arg.Value = new(strings.Repeat("v", 1025))
		}
		if arg.Name == "" && i > 0 {
			arg.Name = names[0]
		}
		spec.Args = append(spec.Args, arg)
	}
	uses := func() string {
		switch k := draw(6); {
		case k < 3 && len(spec.Args) > 0:
			return "{{ args." + spec.Args[draw(len(spec.Args))].Name + " }}"
		case k == 3:
			return "{{args.undeclared}}"
		case k == 4:
			return "{{ target }}"
		default:
			return "{{ namespace }}"
		}
	}
	decimals := []string{"0", "0.05", "0.99", "-1.5", "100"}
	for i := range 1 + draw(3) {
		m := appv1.AnalysisMetric{Name: fmt.Sprintf("metric-%d", i),
			Query: fmt.Sprintf(`sum(rate(x{a="%s",b="%s"}[{{ interval }}]))`, uses(), uses())}
		if draw(2) == 0 {
			m.Min = new(decimals[draw(len(decimals))])
		} else {
			m.Max = new(decimals[draw(len(decimals))])
		}
		m.DryRun = draw(4) == 0
		switch draw(20) {
		case 0:
			m.Name = []string{"", "metric-0", "Bad_Name"}[draw(3)]
		case 1:
			m.Query = []string{"", "x{{ job }}", "{{ args. }}", "{{ args.9x }}"}[draw(4)]
		case 2:
			m.Min, m.Max = nil, nil
		case 3:
			m.Min = new("1e3")
		}
		spec.Metrics = append(spec.Metrics, m)
	}
	if draw(30) == 0 {
		spec.Metrics = nil
	}
	return spec
}

func checkTemplate(ctx context.Context, apps clientset.Interface, ns, name string, spec appv1.AnalysisTemplateSpec) (string, error) {
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	admitted, err := apps.AppV1().AnalysisTemplates(ns).Create(ctx,
		&appv1.AnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, dry)
	_, clusterErr := apps.AppV1().ClusterAnalysisTemplates().Create(ctx,
		&appv1.ClusterAnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, dry)
	if (err == nil) != (clusterErr == nil) {
		return "error", fmt.Errorf("the two kinds disagree: AnalysisTemplate %v, ClusterAnalysisTemplate %v", err, clusterErr)
	}
	if err != nil {
		if !apierrors.IsInvalid(err) {
			return "error", fmt.Errorf("creating the template: %w", err)
		}
		if !strings.Contains(err.Error(), "spec.") {
			return "refused", fmt.Errorf("refused without naming the field: %v", err)
		}
		return "refused", nil
	}
	// Resolved as the controller resolves it, each argument given.
	args := map[string]string{}
	for _, a := range admitted.Spec.Args {
		args[a.Name] = "v"
	}
	pin, err := analysis.ResolveRef(ns, appv1.AnalysisTemplateRef{Name: name, Args: args},
		func(appv1.AnalysisTemplateKind, string, string) (*appv1.AnalysisTemplateSpec, bool, error) {
			return &admitted.Spec, true, nil
		})
	var u *analysis.Unresolved
	if errors.As(err, &u) || err != nil {
		return "admitted", fmt.Errorf("admitted, and it does not resolve: %v", err)
	}
	var metrics []appv1.AnalysisMetric
	for _, m := range pin.Metrics {
		metrics = append(metrics, appv1.AnalysisMetric(m))
	}
	if err := analysisRuns(&appv1.CanaryAnalysis{Metrics: metrics}); err != nil {
		return "admitted", fmt.Errorf("admitted, and resolved: %w", err)
	}
	return "admitted", nil
}
