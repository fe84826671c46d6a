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
	"fmt"
	"os"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The init containers and sidecars (appv1.Container) share the app
// container's fields: each has the schema and the rules of its namesake in
// the spec, which the patches in config/crd give the app container's
// fields only. shareContainerSchemas copies them over, so that a rule is
// written once and a sidecar's probe is refused whenever the app's would
// be. The copy keeps the generated field's own description and its own
// bounds (the containers' lists are shorter than the app's, to keep the
// CEL cost of the rules inside them within the API server's budget).

// sharedFields are the fields of appv1.Container that have a namesake in
// appv1.AppServiceSpec (specName).
var sharedFields = []string{
	"image", "imagePullPolicy", "command", "args", "workingDir", "env", "envFrom",
	"resources", "volumeMounts", "securityContext",
	"livenessProbe", "readinessProbe", "startupProbe", "lifecycle",
}

// specName is the name of a container field's namesake in the spec: the
// same, but for the app container's envs.
func specName(field string) string {
	if field == "env" {
		return "envs"
	}
	return field
}

// sidecarOnly are the fields of appv1.Container that the API server
// refuses in an init container that is not a sidecar. In
// spec.initContainers their schema is an opaque object with a rule that
// refuses it: admission names the field, and the CRD does not carry a
// second copy of the probes' rules that could never admit anything.
var sidecarOnly = []string{"ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"}

// containerLists are the spec's lists of appv1.Container, and whether
// their containers are sidecars.
var containerLists = []struct {
	name     string
	sidecars bool
}{{"initContainers", false}, {"sidecars", true}}

// keepBounds gives a shared field the bounds of its own markers.
func keepBounds(from, to *apiextensionsv1.JSONSchemaProps) {
	if from.MaxItems != nil {
		to.MaxItems = from.MaxItems
	}
	if from.MaxLength != nil {
		to.MaxLength = from.MaxLength
	}
	if from.MaxProperties != nil {
		to.MaxProperties = from.MaxProperties
	}
}

func shareContainerSchemas(spec *apiextensionsv1.JSONSchemaProps) error {
	for _, list := range containerLists {
		prop, ok := spec.Properties[list.name]
		if !ok || prop.Items == nil || prop.Items.Schema == nil {
			return fmt.Errorf("spec.%s is not a list in the schema", list.name)
		}
		item := prop.Items.Schema
		for _, f := range sharedFields {
			generated, ok := item.Properties[f]
			if !ok {
				return fmt.Errorf("spec.%s[].%s is not in the schema", list.name, f)
			}
			app, ok := spec.Properties[specName(f)]
			if !ok {
				return fmt.Errorf("spec.%s is not in the schema", specName(f))
			}
			shared := *app.DeepCopy()
			if a, b := shape(&generated), shape(&shared); a != b {
				return fmt.Errorf("spec.%s[].%s and spec.%s differ in shape:\n%s\n%s", list.name, f, specName(f), a, b)
			}
			trimNested(&shared)
			shared.Description = generated.Description
			keepBounds(&generated, &shared)
			item.Properties[f] = shared
		}
		if list.sidecars {
			continue
		}
		for _, f := range sidecarOnly {
			p, ok := item.Properties[f]
			if !ok {
				return fmt.Errorf("spec.%s[].%s is not in the schema", list.name, f)
			}
			stub := apiextensionsv1.JSONSchemaProps{Type: p.Type, XPreserveUnknownFields: new(true)}
			if p.Type == "array" {
				stub.XPreserveUnknownFields = nil
				stub.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: new(true)}}
			}
			item.Properties[f] = stub
			item.XValidations = append(item.XValidations, apiextensionsv1.ValidationRule{
				Rule:      "!has(self." + f + ")",
				Message:   "is for sidecars only: an init container runs to completion",
				FieldPath: "." + f,
			})
		}
		spec.Properties[list.name] = prop
	}
	return nil
}

// shape is the skeleton of a schema: its types and property names, all
// the way down; what the copy may change (descriptions, bounds, rules)
// is not in it.
func shape(s *apiextensionsv1.JSONSchemaProps) string {
	out := s.Type
	if s.XIntOrString {
		out += "int-or-string"
	}
	if len(s.Properties) > 0 {
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out += "{"
		for _, k := range keys {
			p := s.Properties[k]
			out += k + ":" + shape(&p) + ","
		}
		out += "}"
	}
	if s.Items != nil && s.Items.Schema != nil {
		out += "[" + shape(s.Items.Schema) + "]"
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out += "map[" + shape(s.AdditionalProperties.Schema) + "]"
	}
	return out
}

// activityShared are the fields of appv1.ActivitySpec that have a namesake
// in appv1.AppServiceSpec, with its rules: a request above its limit is
// refused in an Activity as in an AppService.
var activityShared = []string{"resources"}

// shareWithActivity gives the Activity's spec (schema spec) the schema and
// rules of the AppService's namesakes (appService, the AppService CRD's
// spec as installed), keeping the generated fields' own descriptions.
func shareWithActivity(spec, appService *apiextensionsv1.JSONSchemaProps) error {
	for _, f := range activityShared {
		generated, ok := spec.Properties[f]
		if !ok {
			return fmt.Errorf("the Activity's spec.%s is not in the schema", f)
		}
		from, ok := appService.Properties[f]
		if !ok {
			return fmt.Errorf("the AppService's spec.%s is not in its CRD", f)
		}
		shared := *from.DeepCopy()
		if a, b := shape(&generated), shape(&shared); a != b {
			return fmt.Errorf("spec.%s differs in shape between the Activity and the AppService:\n%s\n%s", f, a, b)
		}
		shared.Description = generated.Description
		spec.Properties[f] = shared
	}
	return nil
}

// readSpecSchema reads the spec's schema of the (first version of the)
// CRD in file.
func readSpecSchema(file string) (*apiextensionsv1.JSONSchemaProps, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil || crd.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("%s: no schema", file)
	}
	spec, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if !ok {
		return nil, fmt.Errorf("%s: no spec in the schema", file)
	}
	return &spec, nil
}

// shareWithTests gives a canary's tests (spec.canary.steps[].tests[]) the
// schema and rules of the spec's resources: a test's Activity, and its
// Job, would refuse what the AppService's Pods would.
func shareWithTests(spec *apiextensionsv1.JSONSchemaProps) error {
	item := spec
	for _, f := range []string{"canary", "steps", "tests"} {
		p, ok := item.Properties[f]
		if !ok {
			return fmt.Errorf("spec.canary.steps[].tests[] is not in the schema (no %s)", f)
		}
		item = &p
		if item.Items != nil && item.Items.Schema != nil {
			item = item.Items.Schema
		}
	}
	generated, ok := item.Properties["resources"]
	from, found := spec.Properties["resources"]
	if !ok || !found {
		return fmt.Errorf("spec.resources or spec.canary.steps[].tests[].resources is not in the schema")
	}
	shared := *from.DeepCopy()
	if a, b := shape(&generated), shape(&shared); a != b {
		return fmt.Errorf("a test's resources and spec.resources differ in shape:\n%s\n%s", a, b)
	}
	trimNested(&shared)
	shared.Description = generated.Description
	item.Properties["resources"] = shared
	return nil
}
