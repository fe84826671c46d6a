//go:build e2e

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

package admission

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestAdmissionPropertyFindsMissingRules: the property test is only as good
// as its generator. For each rule that spans the init containers and
// sidecars (and one copied into them from the app container), and each
// that keeps a sticky canary's or the testers' rules within what a route holds, the CRD is
// installed without it, and the property test's own specs (its regression
// cases, and the same seed and number) must then include one that is
// admitted but whose Deployment (or HTTPRoute) the API server refuses; so
// too for the bound on a blue-green AppService's name, whose preview's
// Service is NAME-preview. A canary spec that only the rule refuses says when the
// API server serves the changed CRD.
//
// Two of the containers' rules refuse more than the API server does, so
// this cannot check them, and TestAdmission does: ports that clash (the
// API server only warns) and a resourceFieldRef to another container (the
// kubelet fails to start the Pod).
func TestAdmissionPropertyFindsMissingRules(t *testing.T) {
	ctx := context.Background()
	kube, apps := startAPIServer(t)
	const ns = "mutation"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crds := apiextensionsclient.NewForConfigOrDie(restConfig).ApiextensionsV1().CustomResourceDefinitions()
	original, err := crds.Get(ctx, "appservices.app.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	schema := func(crd *apiextensionsv1.CustomResourceDefinition) (root, spec *apiextensionsv1.JSONSchemaProps) {
		root = crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		s := root.Properties["spec"]
		return root, &s
	}
	item := func(spec *apiextensionsv1.JSONSchemaProps, list string) *apiextensionsv1.JSONSchemaProps {
		return spec.Properties[list].Items.Schema
	}
	byMessage := func(part string) func(apiextensionsv1.ValidationRule) bool {
		return func(r apiextensionsv1.ValidationRule) bool { return strings.Contains(r.Message, part) }
	}
	busybox := func(name string) appv1.Container { return appv1.Container{Name: name, Image: "busybox:1.36"} }
	remove := func(rules *apiextensionsv1.ValidationRules, match func(apiextensionsv1.ValidationRule) bool) int {
		n := len(*rules)
		*rules = slices.DeleteFunc(*rules, match)
		return n - len(*rules)
	}
	mutations := []struct {
		name   string
		drop   func(root, spec *apiextensionsv1.JSONSchemaProps) int
		canary appv1.AppServiceSpec
	}{
		{
			"an init container named after the AppService",
			func(root, _ *apiextensionsv1.JSONSchemaProps) int {
				return remove(&root.XValidations, byMessage("spec.initContainers: a container may not be named after"))
			},
			appv1.AppServiceSpec{InitContainers: []appv1.Container{busybox("canary")}},
		},
		{
			"a sidecar with an init container's name",
			func(_, spec *apiextensionsv1.JSONSchemaProps) int {
				return remove(&spec.XValidations, byMessage("name of an init container"))
			},
			appv1.AppServiceSpec{InitContainers: []appv1.Container{busybox("a")}, Sidecars: []appv1.Container{busybox("a")}},
		},
		{
			"an init container's mount of no volume",
			func(_, spec *apiextensionsv1.JSONSchemaProps) int {
				return remove(&spec.XValidations, func(r apiextensionsv1.ValidationRule) bool {
					return r.FieldPath == ".initContainers" && strings.Contains(r.Message, "volumeMount")
				})
			},
			appv1.AppServiceSpec{InitContainers: []appv1.Container{{Name: "a", Image: "busybox", VolumeMounts: []appv1.VolumeMount{{Name: "none", MountPath: "/none"}}}}},
		},
		{
			"a probe on an init container",
			func(_, spec *apiextensionsv1.JSONSchemaProps) int {
				return remove(&item(spec, "initContainers").XValidations, func(r apiextensionsv1.ValidationRule) bool { return r.FieldPath == ".livenessProbe" })
			},
			appv1.AppServiceSpec{InitContainers: []appv1.Container{{Name: "a", Image: "busybox",
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}}}},
		},
		{
			"a sidecar's sleep beyond the grace period",
			func(_, spec *apiextensionsv1.JSONSchemaProps) int {
				return remove(&spec.XValidations, byMessage("a sidecar's sleep handler"))
			},
			appv1.AppServiceSpec{TerminationGracePeriodSeconds: new(int64(10)), Sidecars: []appv1.Container{{Name: "a", Image: "busybox",
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 20}}}}}},
		},
		{
			"a sidecar's request above its limit (a rule copied from the app container)",
			func(_, spec *apiextensionsv1.JSONSchemaProps) int {
				sidecar := item(spec, "sidecars")
				resources := sidecar.Properties["resources"]
				n := remove(&resources.XValidations, byMessage("less than or equal to its limit"))
				sidecar.Properties["resources"] = resources
				return n
			},
			appv1.AppServiceSpec{Sidecars: []appv1.Container{{Name: "a", Image: "busybox", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}}}},
		},
	}
	// A sticky canary's twins: more rules than the route holds, a second
	// Cookie header in a match.
	sticky := func(rules []appv1.HTTPRouteRule, testers []appv1.TesterHeader) appv1.AppServiceSpec {
		return appv1.AppServiceSpec{Ports: []corev1.ServicePort{{Port: 80}},
			HTTPRoute: &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}, Rules: rules},
			Canary: &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10}}, TesterHeaders: testers,
				Sticky: &appv1.CanarySticky{CookieName: "canary"}}}
	}
	mutations = append(mutations, []struct {
		name   string
		drop   func(root, spec *apiextensionsv1.JSONSchemaProps) int
		canary appv1.AppServiceSpec
	}{
		{
			"a sticky canary's and its testers' twins of six rules",
			func(_, spec *apiextensionsv1.JSONSchemaProps) int {
				return remove(&spec.XValidations, byMessage("at most 5 rules"))
			},
			sticky(make([]appv1.HTTPRouteRule, 6), []appv1.TesterHeader{{Name: "x-qa", Value: "1"}}),
		},
		{
			"a sticky canary beside a match on the Cookie header",
			func(_, spec *apiextensionsv1.JSONSchemaProps) int {
				return remove(&spec.XValidations, byMessage("none of them Cookie"))
			},
			sticky([]appv1.HTTPRouteRule{{Matches: []gatewayv1.HTTPRouteMatch{{Headers: []gatewayv1.HTTPHeaderMatch{{Name: "Cookie", Value: "a=1"}}}}}}, nil),
		},
		{
			"the testers' twin of a GRPCRoute rule that matches their header",
			func(_, spec *apiextensionsv1.JSONSchemaProps) int {
				return remove(&spec.XValidations, byMessage("each match of grpcRoute.rules"))
			},
			appv1.AppServiceSpec{Ports: []corev1.ServicePort{{Port: 50051}},
				GRPCRoute: &appv1.GRPCRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}, Rules: []appv1.GRPCRouteRule{{
					Matches: []gatewayv1.GRPCRouteMatch{{Headers: []gatewayv1.GRPCHeaderMatch{{Name: "x-canary", Value: "1"}}}},
				}}},
				Canary: &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10}}, TesterHeaders: []appv1.TesterHeader{{Name: "x-canary", Value: "qa"}}}},
		},
		{
			"a blue-green name of 56 characters (its preview's Service of 64)",
			func(root, _ *apiextensionsv1.JSONSchemaProps) int {
				// Back to the canary's bound, as before blueGreen.
				n := 0
				for i, r := range root.XValidations {
					if strings.Contains(r.Message, "55 with blueGreen") {
						root.XValidations[i].Rule, n = "!has(self.spec.canary) || size(self.metadata.name) <= 56", n+1
					}
				}
				return n
			},
			appv1.AppServiceSpec{Ports: []corev1.ServicePort{{Port: 80}},
				Canary: &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 0}}, BlueGreen: &appv1.BlueGreen{}}},
		},
	}...)
	// The probe's name: "canary", but where the rule is about the name.
	probeNames := map[string]string{"a blue-green name of 56 characters (its preview's Service of 64)": strings.Repeat("a", 56)}
	install := func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, name string, canary appv1.AppServiceSpec, admitted bool) {
		t.Helper()
		live, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		crd.ResourceVersion = live.ResourceVersion
		if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		canary.Image = "nginx"
		as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: canary}
		deadline := time.Now().Add(time.Minute)
		for {
			_, err := apps.AppV1().AppServices(ns).Create(ctx, as, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if (err == nil) == admitted {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the canary is still %s a minute after the CRD's update: %v", map[bool]string{true: "refused", false: "admitted"}[admitted], err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			mutated := original.DeepCopy()
			mutated.ResourceVersion = ""
			root, spec := schema(mutated)
			if n := m.drop(root, spec); n != 1 {
				t.Fatalf("%d rules match, want 1", n)
			}
			root.Properties["spec"] = *spec
			probe := cmp.Or(probeNames[m.name], "canary")
			install(t, mutated, probe, m.canary, true)
			defer install(t, original.DeepCopy(), probe, m.canary, false)

			// The regression cases first, as the property test checks
			// them.
			for _, c := range regressionCases(t) {
				if _, err := checkSpec(ctx, kube, apps, ns, c.corpusCase); err != nil {
					t.Logf("%s finds it: %v", c.file, err)
					return
				}
			}
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range 1500 {
				c := generate(rng)
				if _, err := checkSpec(ctx, kube, apps, ns, c); err != nil {
					t.Logf("case %d finds it: %v", i, err)
					return
				}
			}
			t.Error("without the rule, none of the property test's regression cases and 1500 specs breaks the property: the generator does not draw what the rule refuses")
		})
	}
}
