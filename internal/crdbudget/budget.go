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

// Package crdbudget is the CRDs' budget of bytes. A client-side `kubectl
// apply` (the design card's `kubectl apply -f artifacts/examples`, Argo
// CD's default sync, and the controller's own install, which records what
// kubectl would) keeps the whole CRD, as JSON, in the
// kubectl.kubernetes.io/last-applied-configuration annotation, and the API
// server refuses an object whose annotations pass 256 KiB, keys and values
// together. Of every path that installs the CRD, that is the tightest
// limit: server-side applies keep no copy, and their limit, the stored
// object's size, is 1.5 MiB. test/e2e's TestCRDInstallPaths measures each
// path on a real API server and holds it to Reserve; crd_test.go's
// TestCRDRoom holds the CRDs to Room; docs/design.md ("The CRD's room")
// has the table.
//
// It imports nothing of this repository.
package crdbudget

import (
	"encoding/json"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"sigs.k8s.io/yaml"
)

const (
	// AnnotationLimit is the API server's limit on an object's
	// annotations, keys and values together.
	AnnotationLimit = apivalidation.TotalAnnotationSizeLimitB
	// Reserve is what the paths that keep the CRD in the annotation put
	// there besides its JSON. Measured (TestCRDInstallPaths), the most is
	// Argo CD's client-side sync: 815 bytes, its tracking annotation on
	// the object and in the copy, with an application name of 253
	// characters; kubectl's own mark adds 93, the controller's 183, a
	// conversion webhook with cert-manager's annotation 453. 4 KiB, five
	// times the most, leaves room for annotations a user or a tool of
	// theirs adds to the manifest (they count twice too, on the object and
	// in the copy).
	Reserve = 4 << 10
	// MinRoom is the least room TestCRDRoom accepts: about two fields the
	// size of spec.canary's analysis.
	MinRoom = 20_000
	// ObjectLimit is the most a stored object may be: etcd's default
	// request limit (--max-request-bytes), the server-side paths' limit.
	ObjectLimit = 3 << 19
)

// Size is the CRD's size as the annotation holds it: its JSON with the
// keys sorted and <, > and & escaped, as kubectl writes it (Go's
// encoding/json, as json.Marshal here).
func Size(manifest []byte) (int, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(manifest, &obj); err != nil {
		return 0, err
	}
	data, err := json.Marshal(obj)
	return len(data), err
}

// Room is what a CRD of size bytes leaves for new fields under the
// tightest limit: AnnotationLimit, less Reserve, less its size.
func Room(size int) int {
	return AnnotationLimit - Reserve - size
}
