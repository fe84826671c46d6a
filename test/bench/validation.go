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
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// crdFile is the CRD the controller installs (embedded in its binary from
// this file); the benchmark runs from the repository's root.
const crdFile = "artifacts/examples/crd.yaml"

// Validation is what validating one AppService of the spec costs the API
// server, measured offline with the API server's own code: the OpenAPI
// schema's validation, then the CEL rules, as a create runs them.
type Validation struct {
	SchemaMicros float64 `json:"schemaMicroseconds"`
	CELMicros    float64 `json:"celMicroseconds"`
	// CEL's own cost units, which the API server bounds per object.
	CELCost  int64 `json:"celCost"`
	CELRules int   `json:"celRulesEvaluated"`
	// The CEL rules' allocations per validation, and their bytes: unlike
	// the time, the same on any machine, however busy. Most are the copies
	// of the schema the API server makes on each read of a field (see
	// BENCHMARKS.md), so they count what a change to the rules saves.
	CELAllocs     float64 `json:"celAllocs"`
	CELAllocBytes float64 `json:"celAllocBytes"`
	// The rules that take longest, each alone on this object.
	TopRules []RuleCost `json:"topRules"`
}

// RuleCost is one CEL rule's cost on one AppService, alone: in CEL's
// cost units, and in time.
type RuleCost struct {
	Path   string  `json:"path"`
	Rule   string  `json:"rule"`
	Cost   int64   `json:"cost"`
	Micros float64 `json:"microseconds"`
}

// measureValidation validates as (defaulted first, as the API server does)
// against the CRD's schema and rules, each many times, and then each rule
// alone, to rank them by time.
func measureValidation(as *appv1.AppService) (Validation, error) {
	var v Validation
	props, s, err := loadSchema()
	if err != nil {
		return v, err
	}
	obj, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(as)
	if err != nil {
		return v, err
	}
	obj["apiVersion"], obj["kind"] = appv1.SchemeGroupVersion.String(), "AppService"
	structuraldefaulting.Default(obj, s)

	schemaValidator, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return v, err
	}
	const rounds = 500
	start := time.Now()
	for range rounds {
		if res := schemaValidator.Validate(obj); !res.IsValid() {
			return v, fmt.Errorf("the schema refuses the %s AppService: %v", specKind, res.Errors)
		}
	}
	v.SchemaMicros = float64(time.Since(start).Microseconds()) / rounds

	if v.CELCost, err = celCost(cel.NewValidator(s, true, celconfig.PerCallLimit), s, obj); err != nil {
		return v, err
	}
	if v.CELMicros, err = celMicros(s, obj, rounds); err != nil {
		return v, err
	}
	if v.CELAllocs, v.CELAllocBytes, err = celAllocs(s, obj); err != nil {
		return v, err
	}

	// Each rule alone: its cost, and its time over that of a validator
	// with no rule at all (walking the object).
	none := s.DeepCopy()
	keepOnlyRule(none, -1, new(int))
	base, err := celMicros(none, obj, rounds)
	if err != nil {
		return v, err
	}
	for i, r := range collectRules(s, "") {
		only := s.DeepCopy()
		keepOnlyRule(only, i, new(int))
		if r.Cost, err = celCost(cel.NewValidator(only, true, celconfig.PerCallLimit), only, obj); err != nil {
			return v, err
		}
		if r.Cost == 0 {
			continue // not evaluated: the field it is on is not set
		}
		v.CELRules++
		if r.Micros, err = celMicros(only, obj, rounds); err != nil {
			return v, err
		}
		r.Micros -= base
		v.TopRules = append(v.TopRules, r)
	}
	slices.SortStableFunc(v.TopRules, func(a, b RuleCost) int { return cmp.Compare(b.Micros, a.Micros) })
	v.TopRules = v.TopRules[:min(len(v.TopRules), 10)]
	return v, nil
}

// celMicros is the mean time of s's CEL rules on obj.
func celMicros(s *structuralschema.Structural, obj map[string]any, rounds int) (float64, error) {
	validator := cel.NewValidator(s, true, celconfig.PerCallLimit)
	start := time.Now()
	for range rounds {
		if _, err := celCost(validator, s, obj); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(start).Microseconds()) / float64(rounds), nil
}

// celAllocs is the allocations, and their bytes, of one run of s's CEL
// rules on obj (a mean, as testing.AllocsPerRun takes it).
func celAllocs(s *structuralschema.Structural, obj map[string]any) (allocs, bytes float64, err error) {
	validator := cel.NewValidator(s, true, celconfig.PerCallLimit)
	if _, err := celCost(validator, s, obj); err != nil { // warm up
		return 0, 0, err
	}
	const rounds = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range rounds {
		if _, err := celCost(validator, s, obj); err != nil {
			return 0, 0, err
		}
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / rounds, float64(after.TotalAlloc-before.TotalAlloc) / rounds, nil
}

// celCost runs a CEL validator on obj and returns the cost it took.
func celCost(validator *cel.Validator, s *structuralschema.Structural, obj map[string]any) (int64, error) {
	errs, remaining := validator.Validate(context.Background(), field.NewPath(""), s, obj, nil, celconfig.RuntimeCELCostBudget)
	if len(errs) > 0 {
		return 0, fmt.Errorf("the CEL rules refuse the %s AppService: %v", specKind, errs.ToAggregate())
	}
	return celconfig.RuntimeCELCostBudget - remaining, nil
}

// loadSchema reads the CRD's schema, as the API server holds it.
func loadSchema() (*apiextensions.JSONSchemaProps, *structuralschema.Structural, error) {
	data, err := os.ReadFile(crdFile)
	if err != nil {
		return nil, nil, err
	}
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &v1); err != nil {
		return nil, nil, err
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1)
	var crd apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &crd, nil); err != nil {
		return nil, nil, err
	}
	// One version: the internal form holds its schema at the top.
	props := crd.Spec.Validation.OpenAPIV3Schema
	s, err := structuralschema.NewStructural(props)
	return props, s, err
}

// collectRules lists the schema's CEL rules in the order keepOnlyRule
// counts them: a node's own, then its properties' (by name), its items',
// its additional properties'.
func collectRules(s *structuralschema.Structural, path string) []RuleCost {
	var out []RuleCost
	for _, r := range s.XValidations {
		out = append(out, RuleCost{Path: path, Rule: r.Rule})
	}
	for _, name := range sortedKeys(s.Properties) {
		p := s.Properties[name]
		out = append(out, collectRules(&p, path+"."+name)...)
	}
	if s.Items != nil {
		out = append(out, collectRules(s.Items, path+"[*]")...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		out = append(out, collectRules(s.AdditionalProperties.Structural, path+"{*}")...)
	}
	return out
}

// keepOnlyRule removes every rule from s but the keep-th (in
// collectRules' order); seen counts the rules passed.
func keepOnlyRule(s *structuralschema.Structural, keep int, seen *int) {
	var kept apiextensionsv1.ValidationRules
	for _, r := range s.XValidations {
		if *seen == keep {
			kept = append(kept, r)
		}
		*seen++
	}
	s.XValidations = kept
	for _, name := range sortedKeys(s.Properties) {
		p := s.Properties[name]
		keepOnlyRule(&p, keep, seen)
		s.Properties[name] = p
	}
	if s.Items != nil {
		keepOnlyRule(s.Items, keep, seen)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		keepOnlyRule(s.AdditionalProperties.Structural, keep, seen)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
