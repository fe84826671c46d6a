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
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
		// The patch from the cache, both ways between this spec and the
		// seed's, on a Deployment others have added to.
		// (Not for a Pod template the API server refuses: one with two
		// containers or volumes of one name, which no patch can merge.)
		if seed := NewDeployment(fixtures.AppService()); uniqueNames(d) {
			checkPatchFromCache(t, asServed(seed), d, UpdateDeployment)
			checkPatchFromCache(t, asServed(d), seed, UpdateDeployment)
		}
		if s := NewService(as); s != nil {
			checkPatchFromCache(t, asServed(NewService(fixtures.AppService())), s, UpdateService)
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

// asServed is a child as the API server would hold it after others wrote
// to it too: a label and annotations of theirs and a resourceVersion and,
// in a Deployment's Pod template, an injected init container, container
// and volume, and a defaulted field in each container.
func asServed[T interface {
	runtime.Object
	metav1.Object
}](obj T) T {
	out := obj.DeepCopyObject().(T)
	out.SetResourceVersion("7")
	out.SetLabels(mergeLabels(out.GetLabels(), map[string]string{"team": "web"}))
	out.SetAnnotations(mergeLabels(out.GetAnnotations(), map[string]string{"example.com/owner": "platform"}))
	if d, ok := any(out).(*appsv1.Deployment); ok {
		tmpl := &d.Spec.Template
		tmpl.Annotations = mergeLabels(tmpl.Annotations, map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-25T00:00:00Z"})
		pod := &tmpl.Spec
		pod.InitContainers = slices.Insert(pod.InitContainers, 0, corev1.Container{Name: "istio-init", Image: "proxyv2"})
		pod.Containers = append(pod.Containers, corev1.Container{
			Name: "istio-proxy", Image: "proxyv2", Ports: []corev1.ContainerPort{{ContainerPort: 15090, Protocol: corev1.ProtocolTCP}},
		})
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "istio-envoy", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		for _, list := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
			for i := range list {
				list[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
			}
		}
		pod.DNSPolicy = corev1.DNSClusterFirst
	}
	return out
}

// uniqueNames reports whether a Deployment's containers (init containers
// among them) have names of their own, and its volumes too, none empty,
// as the API server requires.
func uniqueNames(d *appsv1.Deployment) bool {
	pod := &d.Spec.Template.Spec
	var containers, volumes []string
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		containers = append(containers, c.Name)
	}
	for _, v := range pod.Volumes {
		volumes = append(volumes, v.Name)
	}
	for _, names := range [][]string{containers, volumes} {
		if slices.Contains(names, "") || len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
			return false
		}
	}
	return true
}
