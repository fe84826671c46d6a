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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metadatafake "k8s.io/client-go/metadata/fake"
	"sigs.k8s.io/yaml"

	"example.com/appservice-controller/internal/crdbudget"
	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// ensureCRD writes the CRD only when the embedded one differs from the
// installed one (by its hash annotation), or kubectl's last-applied
// annotation is missing, then waits for Established. A current CRD is
// read as metadata only, and found served by discovery: the whole CRD is
// not read.
func TestEnsureCRD(t *testing.T) {
	sum := sha256.Sum256(crdYAML)
	current := hex.EncodeToString(sum[:])
	applied := lastAppliedYAML(t, crdYAML)
	tests := []struct {
		name        string
		hash        string
		lastApplied string
		served      bool
		wantWrites  []string
		wantReads   int
	}{
		{name: "current and served: nothing written or read whole", hash: current, lastApplied: applied, served: true},
		{name: "current, last applied by a user's kubectl: theirs kept", hash: current, lastApplied: `{"a user's":"apply"}` + "\n",
			served: true},
		{name: "current, not served yet: read whole until Established", hash: current, lastApplied: applied, wantReads: 1},
		{name: "current, without kubectl's annotation (an earlier version's install): updated once", hash: current,
			served: true, wantWrites: []string{"update"}, wantReads: 1},
		{name: "stale: updated", hash: "an-older-binary", lastApplied: `{"a user's":"apply"}` + "\n", served: true,
			wantWrites: []string{"update"}, wantReads: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			installed := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(crdYAML, installed); err != nil {
				t.Fatal(err)
			}
			installed.Annotations = map[string]string{crdHashAnnotation: tc.hash, "someone/else": "kept"}
			if tc.lastApplied != "" {
				installed.Annotations[corev1.LastAppliedConfigAnnotation] = tc.lastApplied
			}
			installed.Spec.Versions[0].Served = false // drift the update must undo
			installed.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
			}
			client := apiextensionsfake.NewClientset(installed)
			if tc.served {
				client.Resources = []*metav1.APIResourceList{{GroupVersion: appv1.SchemeGroupVersion.String(),
					APIResources: []metav1.APIResource{{Name: "appservices"}}}}
			}
			scheme := metadatafake.NewTestScheme()
			if err := metav1.AddMetaToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			md := metadatafake.NewSimpleMetadataClient(scheme, &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
				ObjectMeta: installed.ObjectMeta,
			})

			if err := ensureCRD(context.Background(), client, md, ourCRDs[0], 5*time.Second); err != nil {
				t.Fatal(err)
			}
			var writes []string
			reads := 0
			for _, a := range client.Actions() {
				switch {
				case a.GetVerb() == "get" && a.GetResource().Resource == "customresourcedefinitions":
					reads++
				case a.GetVerb() != "get":
					writes = append(writes, a.GetVerb())
					checkFieldManager(t, a)
				}
			}
			fixtures.CheckEqual(t, "writes", tc.wantWrites, writes)
			if reads != tc.wantReads {
				t.Errorf("the whole CRD read %d times, want %d", reads, tc.wantReads)
			}
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), installed.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Annotations["someone/else"] != "kept" {
				t.Errorf("an annotation someone else set was lost: %v", got.Annotations)
			}
			if tc.wantWrites != nil && (got.Annotations[crdHashAnnotation] != current || !got.Spec.Versions[0].Served ||
				got.Annotations[corev1.LastAppliedConfigAnnotation] != applied) {
				t.Errorf("the CRD was not brought up to the embedded one: %v, served %v", got.Annotations, got.Spec.Versions[0].Served)
			}
			if tc.wantWrites == nil && got.Annotations[corev1.LastAppliedConfigAnnotation] != tc.lastApplied {
				t.Errorf("last-applied annotation changed without a write: %q", got.Annotations[corev1.LastAppliedConfigAnnotation])
			}
		})
	}
}

// TestEnsureCRDNamesNotAccepted: a CRD whose names the API server did not
// accept is an error at once, not a wait until the timeout.
func TestEnsureCRDNamesNotAccepted(t *testing.T) {
	installed := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(crdYAML, installed); err != nil {
		t.Fatal(err)
	}
	installed.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Message: "the plural is taken"},
	}
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := ensureCRD(context.Background(), apiextensionsfake.NewClientset(installed),
		metadatafake.NewSimpleMetadataClient(scheme), ourCRDs[0], time.Minute)
	if err == nil || !strings.Contains(err.Error(), "names not accepted: the plural is taken") || time.Since(start) > 10*time.Second {
		t.Errorf("ensureCRD = %v after %s, want the names not accepted at once", err, time.Since(start))
	}
}

// TestOurCRDs: the names ensureCRD reads a CRD by, and asks discovery
// for, are the embedded CRDs' own.
func TestOurCRDs(t *testing.T) {
	for _, c := range ourCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(c.yaml, crd); err != nil {
			t.Fatal(err)
		}
		if crd.Name != c.name() || crd.Spec.Group != c.resource.Group || crd.Spec.Names.Plural != c.resource.Resource ||
			len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != c.resource.Version {
			t.Errorf("%s: ensureCRD knows it as %s (%v)", crd.Name, c.name(), c.resource)
		}
	}
}

// TestLastApplied: the annotation holds the manifest as kubectl reads it,
// as one line of JSON and a newline, with its annotations but not itself
// (kubectl's GetModifiedConfiguration). That it is byte for byte what
// kubectl computes, the e2e test proves: `kubectl apply -f
// artifacts/examples` after the controller's install finds the CRDs
// unchanged (TestInstallThenKubectlApply).
func TestLastApplied(t *testing.T) {
	for name, data := range embeddedCRDs() {
		t.Run(name, func(t *testing.T) {
			got := lastAppliedYAML(t, data)
			body, found := strings.CutSuffix(got, "\n")
			if !found || strings.Contains(body, "\n") {
				t.Errorf("not one line of JSON and a newline: %.80q...", got)
			}
			var fromAnnotation, fromFile map[string]any
			if err := json.Unmarshal([]byte(body), &fromAnnotation); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &fromFile); err != nil {
				t.Fatal(err)
			}
			fixtures.CheckEqual(t, "the manifest in the annotation", fromFile, fromAnnotation)
			keys, err := json.Marshal(fromFile)
			if err != nil {
				t.Fatal(err)
			}
			if body != string(keys) {
				t.Error("the annotation is not the manifest's JSON with its keys sorted")
			}
		})
	}
	// A manifest without annotations records an empty map of them, as
	// kubectl does; one holding kubectl's annotation records it without.
	for _, tc := range []struct{ manifest, want string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{},"name":"x"}}` + "\n"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    " + corev1.LastAppliedConfigAnnotation + ": old\n    a: <b>\n",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"a":"\u003cb\u003e"},"name":"x"}}` + "\n"},
	} {
		fixtures.CheckEqual(t, "last applied", tc.want, lastAppliedYAML(t, []byte(tc.manifest)))
	}
}

// lastAppliedYAML is lastApplied of a YAML manifest.
func lastAppliedYAML(t *testing.T, manifest []byte) string {
	t.Helper()
	data, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := lastApplied(data)
	if err != nil {
		t.Fatal(err)
	}
	return applied
}

// TestCRDRoom: a client-side `kubectl apply` of the CRD (the design card's,
// the controller's own install, Argo CD's default sync) keeps it whole, as
// JSON, in the last-applied-configuration annotation, and an object's
// annotations may hold 256 KiB together: the tightest limit of every path
// that installs it (internal/crdbudget; the paths measured in test/e2e's
// TestCRDInstallPaths, the table in docs/design.md, "The CRD's room").
// Less what those paths add there (crdbudget.Reserve), what the CRD leaves
// is the room for new fields; the test fails below 20 KB of it.
func TestCRDRoom(t *testing.T) {
	for name, data := range embeddedCRDs() {
		t.Run(name, func(t *testing.T) {
			size, err := crdbudget.Size(data)
			if err != nil {
				t.Fatal(err)
			}
			room := crdbudget.Room(size)
			t.Logf("%s is %d bytes as JSON: %d bytes of room (the annotation limit %d, less %d for what the install paths add)",
				name, size, room, crdbudget.AnnotationLimit, crdbudget.Reserve)
			if room < crdbudget.MinRoom {
				t.Errorf("%s leaves %d bytes of room, below %d. Before adding fields, make room: share the messages of rules "+
					"(each is copied wherever hack/crdtrim shares a schema), shorten what this change added, or move a large "+
					"block of rules out of the per-item schemas; never drop a rule (the admission property test proves each). "+
					"See docs/design.md, \"The CRD's room\"", name, room, crdbudget.MinRoom)
			}
		})
	}
}

// embeddedCRDs are the CRDs the binary installs, by file.
func embeddedCRDs() map[string][]byte {
	return map[string][]byte{"crd.yaml": crdYAML, "crd-activity.yaml": activityCRDYAML,
		"crd-analysistemplate.yaml": analysisTemplateCRDYAML, "crd-clusteranalysistemplate.yaml": clusterAnalysisTemplateCRDYAML,
		"crd-notificationdestination.yaml": notificationDestinationCRDYAML}
}

// TestEmbeddedCRDsAreTheFiles: the binary embeds every CRD file of
// artifacts/examples (crd*.yaml), each as it is, and installs each of
// them. test/crd validates those files as the API server would; it is a
// package of its own, for the API server's validation brings about 220
// packages (CEL, gRPC, OpenTelemetry) that the race detector's build of
// this package would otherwise compile (docs/testing.md).
func TestEmbeddedCRDsAreTheFiles(t *testing.T) {
	files, err := filepath.Glob("artifacts/examples/crd*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	embedded := embeddedCRDs()
	if len(files) != len(embedded) || len(ourCRDs) != len(embedded) {
		t.Errorf("%d CRD files (%v), %d embedded, %d installed", len(files), files, len(embedded), len(ourCRDs))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, embedded[filepath.Base(f)]) {
			t.Errorf("%s: the binary does not embed it as it is", f)
		}
	}
	for _, c := range ourCRDs {
		found := false
		for _, e := range embedded {
			found = found || bytes.Equal(e, c.yaml)
		}
		if !found {
			t.Errorf("%s: installed, and not among the embedded CRD files", c.name())
		}
	}
}
