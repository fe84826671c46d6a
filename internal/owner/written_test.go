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

package owner

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestStatusWrites: the cache is behind while it shows the version the
// last status write replaced; any other version ends the record, and so
// do the owner's deletion and a write that changed nothing (the API server
// returned the same version).
func TestStatusWrites(t *testing.T) {
	version := func(name, rv string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}
	}
	var w StatusWrites
	if w.Behind(version("a", "1")) {
		t.Error("behind before any write")
	}
	w.Wrote(version("a", "1"), version("a", "2"))
	w.Wrote(version("b", "5"), version("b", "6"))
	for _, tc := range []struct {
		obj    *metav1.ObjectMeta
		behind bool
	}{
		{version("a", "1"), true},  // the version the write replaced
		{version("a", "1"), true},  // still
		{version("b", "5"), true},  // each owner its own
		{version("a", "2"), false}, // the write, or a later version
		{version("a", "1"), false}, // the record is gone
	} {
		if got := w.Behind(tc.obj); got != tc.behind {
			t.Errorf("Behind(%s at %s) = %v, want %v", tc.obj.Name, tc.obj.ResourceVersion, got, tc.behind)
		}
	}
	w.Forget(cache.ObjectName{Namespace: "ns", Name: "b"})
	if w.Behind(version("b", "5")) {
		t.Error("behind after the owner was forgotten")
	}
	w.Wrote(version("c", "7"), version("c", "8"))
	w.Wrote(version("c", "8"), version("c", "8"))
	if w.Behind(version("c", "8")) {
		t.Error("behind after a write that changed nothing")
	}
}
