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

// Package crd validates the CRDs offline, as the API server would. It is a
// package of its own, outside the packages make test runs under the race
// detector: the API server's validation brings about 220 packages (CEL,
// gRPC, OpenTelemetry) that their race build would otherwise compile once
// more, and this test starts no goroutine. The root's
// TestEmbeddedCRDsAreTheFiles says that these files are the CRDs the
// binary embeds and installs.
package crd

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"
)

// TestCRDIsValid runs the API server's own validation of a
// CustomResourceDefinition on each CRD file (artifacts/examples/crd*.yaml),
// offline: a structural schema, rules that compile, and rules whose
// estimated CEL cost stays within the API server's budget, per rule and
// for the whole schema. The e2e tests and the admission property test
// install them in a real API server too; this says so in a second, and
// names the rules that cost too much.
func TestCRDIsValid(t *testing.T) {
	files, err := filepath.Glob("../../artifacts/examples/crd*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no CRD file in artifacts/examples")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var v1 apiextensionsv1.CustomResourceDefinition
			if err := yaml.UnmarshalStrict(data, &v1); err != nil {
				t.Fatal(err)
			}
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1)
			var crd apiextensions.CustomResourceDefinition
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &crd, nil); err != nil {
				t.Fatal(err)
			}
			for _, err := range apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), &crd) {
				t.Error(err)
			}
		})
	}
}
