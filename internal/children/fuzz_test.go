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

package children

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// FuzzBuilders feeds the builders any spec that decodes, admitted by the
// CRD or not (the controller may meet objects written before a validation
// rule existed): they never panic, and what they build is already in line
// with itself, so that a child just created is never updated again (no
// write loop). The checks against a real API server are in
// test/admission; FuzzStatus (status_test.go at the top) feeds the same
// seeds to the status.
//
//	go test -run '^$' -fuzz FuzzBuilders -fuzztime 1m ./internal/children
//
// Inputs that fail are kept in testdata/fuzz/FuzzBuilders and run by every
// go test.
func FuzzBuilders(f *testing.F) {
	fixtures.FuzzSpecs(f, func(t *testing.T, as *appv1.AppService) {

		d := NewDeployment(as)
		if d == nil || len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.Containers[0].Name != as.Name {
			t.Fatalf("NewDeployment: want one container named %q, got %+v", as.Name, d)
		}
		if updated, changed := UpdateDeployment(d, NewDeployment(as)); updated != nil {
			t.Errorf("a Deployment just built differs from itself in %v", changed)
		}
		if s := NewService(as); s != nil {
			if updated, changed := UpdateService(s, NewService(as)); updated != nil {
				t.Errorf("a Service just built differs from itself in %v", changed)
			}
		} else if len(as.Spec.Ports) > 0 {
			t.Errorf("no Service for %d ports", len(as.Spec.Ports))
		}
		checkConfigDigest(t, as, d)
		checkBuiltInLine(t, "ServiceAccount", NewServiceAccount(as), NewServiceAccount(as), UpdateServiceAccount)
		checkBuiltInLine(t, "Ingress", NewIngress(as), NewIngress(as), UpdateIngress)
		if in := NewIngress(as); in != nil {
			IngressURL(in)
		}
		checkBuiltInLine(t, "HTTPRoute", NewHTTPRoute(as), NewHTTPRoute(as), UpdateHTTPRoute)
		if r := NewHTTPRoute(as); r != nil {
			HTTPRouteURL(r)
		}
		checkBuiltInLine(t, "PodDisruptionBudget", NewDisruptionBudget(as), NewDisruptionBudget(as), UpdateDisruptionBudget)
		checkBuiltInLine(t, "HorizontalPodAutoscaler", NewAutoscaler(as), NewAutoscaler(as), UpdateAutoscaler)
	})
}

// checkBuiltInLine fails when a child just built (two builds of it, a and
// b; none when nil) differs from itself.
func checkBuiltInLine[T comparable](t *testing.T, kind string, a, b T, diff func(live, desired T) (T, []string)) {
	t.Helper()
	var none T
	if a == none {
		return
	}
	if updated, changed := diff(a, b); updated != none {
		t.Errorf("a %s just built differs from itself in %v", kind, changed)
	}
}

// checkConfigDigest: the ConfigMaps and Secrets an AppService reads come
// once each, sorted, named; a digest annotation of them, put on the
// Deployment, reads back as written and is in line after one update.
func checkConfigDigest(t *testing.T, as *appv1.AppService, d *appsv1.Deployment) {
	t.Helper()
	refs := ConfigRefs(as)
	digests := map[string]string{}
	for i, r := range refs {
		if r.Name == "" || (r.Kind != ConfigMapRef && r.Kind != SecretRef) || (i > 0 && refs[i-1].Key() >= r.Key()) {
			t.Fatalf("ConfigRefs: %v: want named configmap and secret references, each once, sorted", refs)
		}
		digests[r.Key()] = MissingDigest
	}
	if len(refs) > 0 && !as.Spec.RolloutOnConfigChange {
		t.Fatalf("ConfigRefs with rolloutOnConfigChange off: %v", refs)
	}
	value := FormatConfigDigest(digests)
	if got := ParseConfigDigest(value); len(got) != len(digests) {
		t.Errorf("ParseConfigDigest(%q): %v, want %v", value, got, digests)
	}
	desired := NewDeployment(as)
	SetConfigDigest(desired, value)
	updated, _ := UpdateDeployment(d, desired)
	if updated == nil {
		updated = d
	}
	if ConfigDigestOf(updated) != value {
		t.Errorf("the config digest after an update: %q, want %q", ConfigDigestOf(updated), value)
	}
	if again, changed := UpdateDeployment(updated, desired); again != nil {
		t.Errorf("a second update with the config digest: %v", changed)
	}
}
