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
	"bytes"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestAPITypedFields(t *testing.T) {
	var got []string
	for _, path := range apiTypedFields(reflect.TypeFor[appv1.AppServiceSpec]()) {
		got = append(got, strings.Join(path, "."))
	}
	for _, want := range []string{"livenessProbe", "securityContext", "envs", "resources", "ports", "strategy", "tolerations", "autoscaling.behavior"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not among the core-typed fields %v", want, got)
		}
	}
	for _, notWant := range []string{"image", "size", "volumes", "volumeMounts", "podLabels", "autoscaling", "autoscaling.maxReplicas"} {
		if slices.Contains(got, notWant) {
			t.Errorf("%s is among the core-typed fields %v", notWant, got)
		}
	}
}

// TestRun: a field's own description stays, those below it go, and
// nothing but descriptions changes.
func TestRun(t *testing.T) {
	in := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: appservices.app.example.com
spec:
  group: app.example.com
  names: {kind: AppService, plural: appservices}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: kept
            properties:
              image: {type: string, description: kept, pattern: '^\\S+$', enum: [a, b]}
              livenessProbe:
                type: object
                description: kept
                properties:
                  exec:
                    type: object
                    description: DROPPED
                    x-kubernetes-validations:
                    - rule: has(self.command)
                      message: needs a command
                    properties:
                      command: {type: array, description: DROPPED, items: {type: string}}
              volumes:
                type: array
                description: kept
                items:
                  type: object
                  properties:
                    name: {type: string, description: kept}
`
	// Every other API-typed field of the spec, as the real CRD has them;
	// those in our own types under parents of their own (not kept: not
	// below an API-typed field, but with no description).
	paths := apiTypedFields(reflect.TypeFor[appv1.AppServiceSpec]())
	tree := map[string]any{}
	for _, path := range paths {
		if path[0] == "livenessProbe" || path[0] == "volumes" {
			continue
		}
		node := tree
		for _, parent := range path[:len(path)-1] {
			next, ok := node[parent].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[parent] = next
			}
			node = next
		}
		node[path[len(path)-1]] = nil
	}
	in += renderFields(tree, "              ")
	var out bytes.Buffer
	if err := process(strings.NewReader(in), &out, reflect.TypeFor[appv1.AppService](), nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "DROPPED") {
		t.Errorf("nested descriptions left:\n%s", out.String())
	}
	if got := strings.Count(out.String(), "description: kept"); got != 5+countOutside(paths, "livenessProbe", "volumes") {
		t.Errorf("%d descriptions kept:\n%s", got, out.String())
	}
	var before, after map[string]any
	if err := yaml.Unmarshal([]byte(in), &before); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out.Bytes(), &after); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(withoutDescriptions(before), withoutDescriptions(after)); diff != "" {
		t.Errorf("more than descriptions changed (-in +out):\n%s", diff)
	}
}

// withoutDescriptions is v with every "description" key dropped.
func withoutDescriptions(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if k != "description" {
				out[k] = withoutDescriptions(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutDescriptions(e)
		}
		return out
	}
	return v
}

// countOutside counts the paths not below any of the given fields.
func countOutside(paths [][]string, fields ...string) int {
	n := 0
	for _, path := range paths {
		if !slices.Contains(fields, path[0]) {
			n++
		}
	}
	return n
}

// renderFields writes tree as schema properties at indent: leaves as
// objects described "kept", inner nodes as objects with properties.
func renderFields(tree map[string]any, indent string) string {
	var out string
	for _, name := range slices.Sorted(maps.Keys(tree)) {
		children, _ := tree[name].(map[string]any)
		if children == nil {
			out += indent + name + ": {type: object, description: kept}\n"
			continue
		}
		out += indent + name + ":\n" + indent + "  type: object\n" + indent + "  properties:\n" + renderFields(children, indent+"    ")
	}
	return out
}

// TestShareContainerSchemas, on the CRD as generated: a sidecar's fields
// have the schema and rules of the app container's, with the sidecar's own
// description and list bounds; an init container's sidecar-only fields
// are refused.
func TestShareContainerSchemas(t *testing.T) {
	data, err := os.ReadFile("../../artifacts/examples/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	sidecar := spec.Properties["sidecars"].Items.Schema
	init := spec.Properties["initContainers"].Items.Schema
	for _, field := range sharedFields {
		app := specName(field)
		got, want := sidecar.Properties[field], spec.Properties[app]
		if got.Description == "" || got.Description == want.Description {
			t.Errorf("sidecars[].%s: description %q, want its own", field, got.Description)
		}
		got.Description, want.Description = "", ""
		got.MaxItems, want.MaxItems = nil, nil
		if diff := cmp.Diff(withoutDescriptions(toMap(t, want)), withoutDescriptions(toMap(t, got))); diff != "" {
			t.Errorf("sidecars[].%s differs from spec.%s (-app +sidecar):\n%s", field, app, diff)
		}
	}
	if got := *sidecar.Properties["env"].MaxItems; got != 64 {
		t.Errorf("sidecars[].env has maxItems %d, want the container's own 64", got)
	}
	for _, field := range sidecarOnly {
		if init.Properties[field].XPreserveUnknownFields == nil && init.Properties[field].Items == nil {
			t.Errorf("initContainers[].%s is not the opaque stub", field)
		}
		if !slices.ContainsFunc(init.XValidations, func(r apiextensionsv1.ValidationRule) bool { return r.FieldPath == "."+field }) {
			t.Errorf("initContainers[].%s has no rule refusing it", field)
		}
	}
	if _, ok := init.Properties["env"]; !ok {
		t.Error("initContainers[] has no env")
	}
}

func toMap(t *testing.T, s apiextensionsv1.JSONSchemaProps) map[string]any {
	t.Helper()
	data, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
