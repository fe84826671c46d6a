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

// Package children holds the pure part of an AppService's children: the
// objects its spec asks for (NewDeployment, NewService), the labels that tie
// them to it, and which of a live child's fields differ from the desired ones
// (UpdateDeployment, UpdateService). Nothing here talks to the API server.
//
// The controller (package main) writes what these functions return; the
// tests and the benchmark build their expected objects with them too, so
// that what they expect cannot drift from what the controller writes.
//
// It may import only the API's types (pkg/apis/app/v1) of this repository:
// it is pure, and the controllers, the tests and the benchmark import it.
package children

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// ControllerKind is the group, version and kind of the objects that own
// children.
var ControllerKind = appv1.SchemeGroupVersion.WithKind("AppService")

// NewControllerRef is the owner reference every child carries: it makes the
// garbage collector delete the child with its AppService.
func NewControllerRef(as *appv1.AppService) *metav1.OwnerReference {
	return metav1.NewControllerRef(as, ControllerKind)
}

// setOwned makes *live, a field the controller owns, equal to want unless
// it already is, and then adds name to *changed. Equal is semantic equality:
// quantities compare by value, and a nil slice or map equals an empty one,
// as the API server does not tell them apart. It reports whether it set the
// field.
func setOwned[T any](changed *[]string, name string, live *T, want T) bool {
	if equality.Semantic.DeepEqual(*live, want) {
		return false
	}
	*live = want
	*changed = append(*changed, name)
	return true
}

// ownedLabels starts the list of changed fields of an update: "labels" when
// one of want's labels was missing or different on meta (and is now set).
func ownedLabels(meta *metav1.ObjectMeta, want map[string]string) []string {
	if addLabels(meta, want) {
		return []string{"labels"}
	}
	return nil
}

// updated ends an update: out and the names of the fields that changed, or
// nil when none did.
func updated[T any](out *T, changed []string) (*T, []string) {
	if len(changed) == 0 {
		return nil, nil
	}
	return out, changed
}
