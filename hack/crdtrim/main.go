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

// Command crdtrim removes from the AppService CRD the descriptions nested
// inside the spec fields whose types are the Kubernetes API's (probes,
// security contexts, env, resources, ports, strategy, an autoscaler's
// behavior, ...) or the Gateway API's (an HTTPRoute's parents, matches and
// filters), keeping each such field's own description. controller-gen
// copies those APIs' whole documentation into every one of them, which made
// the CRD too large for `kubectl apply`: the last-applied annotation holds
// the whole object, and annotations are limited to 256 KiB. Those
// descriptions are a `kubectl explain pod.spec.containers` (or
// `httproute.spec.rules`) away, and each field's own description names the
// type it is.
//
// Then it gives the init containers and sidecars the schema and rules of the
// app container's fields (share.go).
//
// It reads the CRD on stdin and writes it on stdout; hack/update-codegen.sh
// runs it on kustomize's output. With -activity-from APPSERVICE-CRD it reads
// the Activity's CRD instead, and gives its fields that have a namesake in
// the AppService's spec (resources) that field's schema and rules from the
// AppService's CRD as installed (share.go).
//
// It may import the API's types (pkg/apis/app/v1) of this repository.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func main() {
	activityFrom := flag.String("activity-from", "", "Trim the Activity's CRD, giving its resources the schema of the AppService's in this CRD file.")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *activityFrom); err != nil {
		fmt.Fprintln(os.Stderr, "crdtrim:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, activityFrom string) error {
	if activityFrom == "" {
		return process(in, out, reflect.TypeFor[appv1.AppService](), func(spec *apiextensionsv1.JSONSchemaProps) error {
			return errors.Join(shareContainerSchemas(spec), shareWithTests(spec))
		})
	}
	appServiceSpec, err := readSpecSchema(activityFrom)
	if err != nil {
		return err
	}
	return process(in, out, reflect.TypeFor[appv1.Activity](), func(spec *apiextensionsv1.JSONSchemaProps) error {
		return shareWithActivity(spec, appServiceSpec)
	})
}

// process trims the CRD read from in, whose objects are of the type
// objType (its spec and, when the schema has one, its status), then gives
// the spec's schema to share (shareContainerSchemas; nil in a test of the
// trimming alone), and writes the CRD to out.
func process(in io.Reader, out io.Writer, objType reflect.Type, share func(spec *apiextensionsv1.JSONSchemaProps) error) error {
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return err
	}
	specType, _ := objType.FieldByName("Spec")
	statusType, _ := objType.FieldByName("Status")
	fields, statusFields := apiTypedFields(specType.Type), apiTypedFields(statusType.Type)
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
		if !ok {
			return fmt.Errorf("version %s has no spec", v.Name)
		}
		for _, path := range fields {
			if err := trimAt(&spec, path); err != nil {
				return fmt.Errorf("version %s: spec.%s: %w", v.Name, strings.Join(path, "."), err)
			}
		}
		if share != nil {
			if err := share(&spec); err != nil {
				return fmt.Errorf("version %s: %w", v.Name, err)
			}
		}
		v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
		// The status's conditions are metav1.Condition's: the same.
		if status, ok := v.Schema.OpenAPIV3Schema.Properties["status"]; ok {
			for _, path := range statusFields {
				if err := trimAt(&status, path); err != nil {
					return fmt.Errorf("version %s: status.%s: %w", v.Name, strings.Join(path, "."), err)
				}
			}
			v.Schema.OpenAPIV3Schema.Properties["status"] = status
		}
	}
	// Through a map, to drop what the Go type always writes and the input
	// never had: the empty status and metadata.creationTimestamp.
	asJSON, err := json.Marshal(&crd)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(asJSON, &obj); err != nil {
		return err
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	trimmed, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = out.Write(append([]byte("---\n"), trimmed...))
	return err
}

// apiTypedFields are the JSON paths, below t, of the fields whose types (or
// element types) come from the Kubernetes API packages, k8s.io/api/... and
// metav1 (Condition), or the Gateway API's,
// sigs.k8s.io/gateway-api/... (a struct, or a list of a named string such
// as Hostname, whose items' description is the Gateway API's); the fields
// of our own struct types (appv1's) are searched in turn.
func apiTypedFields(t reflect.Type) [][]string {
	var paths [][]string
	for f := range t.Fields() {
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case ft.Kind() != reflect.Struct && f.Type.Kind() != reflect.Slice:
			continue
		case strings.HasPrefix(ft.PkgPath(), "k8s.io/api/") || ft.PkgPath() == "k8s.io/apimachinery/pkg/apis/meta/v1" ||
			strings.HasPrefix(ft.PkgPath(), "sigs.k8s.io/gateway-api/"):
			paths = append(paths, []string{name})
		case ft.PkgPath() == t.PkgPath():
			for _, below := range apiTypedFields(ft) {
				paths = append(paths, append([]string{name}, below...))
			}
		}
	}
	return paths
}

// trimAt trims the nested descriptions of the field at path below s (list
// items and map values are passed through: a path names fields only).
func trimAt(s *apiextensionsv1.JSONSchemaProps, path []string) error {
	for s.Items != nil && s.Items.Schema != nil {
		s = s.Items.Schema
	}
	for s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		s = s.AdditionalProperties.Schema
	}
	field, ok := s.Properties[path[0]]
	if !ok {
		return fmt.Errorf("%s is not in the schema", path[0])
	}
	if len(path) == 1 {
		trimNested(&field)
	} else if err := trimAt(&field, path[1:]); err != nil {
		return err
	}
	s.Properties[path[0]] = field
	return nil
}

// trimNested drops the descriptions of everything below s, not s's own.
func trimNested(s *apiextensionsv1.JSONSchemaProps) {
	for k, p := range s.Properties {
		trimAll(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		trimAll(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		trimAll(s.AdditionalProperties.Schema)
	}
}

func trimAll(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = ""
	trimNested(s)
}
