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
	"fmt"
	"regexp"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestCanarySelectors: the selector trap. The canary's Pods are selected
// by its own Deployment and Service, and by none of the stable
// Deployment, Service and PodDisruptionBudget; the stable Pods, by none of
// the canary's. The stable objects are what they are without a canary.
func TestCanarySelectors(t *testing.T) {
	as := fixtures.AppService()
	as.Spec.PodLabels = map[string]string{"team": "web"}
	as.Spec.DisruptionBudget = &appv1.DisruptionBudget{}
	stable := NewDeployment(as)
	canary := NewCanaryDeployment(as, stable, 2, false)
	service, canaryService := NewService(as), NewCanaryService(as)
	budget := NewDisruptionBudget(as)

	stablePods, canaryPods := labels.Set(stable.Spec.Template.Labels), labels.Set(canary.Spec.Template.Labels)
	if canaryPods["team"] != "web" {
		t.Errorf("the canary's Pods lost the spec's podLabels: %v", canaryPods)
	}
	for _, tc := range []struct {
		what     string
		selector map[string]string
		stable   bool
	}{
		{"the Deployment", stable.Spec.Selector.MatchLabels, true},
		{"the Service", service.Spec.Selector, true},
		{"the PodDisruptionBudget", budget.Spec.Selector.MatchLabels, true},
		{"the canary's Deployment", canary.Spec.Selector.MatchLabels, false},
		{"the canary's Service", canaryService.Spec.Selector, false},
	} {
		sel := labels.SelectorFromSet(tc.selector)
		if sel.Matches(stablePods) != tc.stable || sel.Matches(canaryPods) == tc.stable {
			t.Errorf("%s (selector %s) selects the stable Pods: %t, the canary's: %t; want only the %s",
				tc.what, sel, sel.Matches(stablePods), sel.Matches(canaryPods), map[bool]string{true: "stable ones", false: "canary's"}[tc.stable])
		}
	}
	if canary.Name != fixtures.Name+"-canary" || canaryService.Name != fixtures.Name+"-canary" {
		t.Errorf("the canary's objects are named %s and %s", canary.Name, canaryService.Name)
	}
	// Listed and claimed as the AppService's children.
	for _, l := range []map[string]string{canary.Labels, canaryService.Labels} {
		if l[appv1.LabelAppService] != fixtures.Name || l[appv1.LabelCanary] != fixtures.Name {
			t.Errorf("the canary's object labels %v, want both %s and %s", l, appv1.LabelAppService, appv1.LabelCanary)
		}
	}
	if *canary.Spec.Replicas != 2 || canaryService.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("the canary at %d replicas behind a %s Service, want 2 and ClusterIP", *canary.Spec.Replicas, canaryService.Spec.Type)
	}
	// The canary's template is the spec's but for the selector label.
	fixtures.CheckEqual(t, "the canary's containers", stable.Spec.Template.Spec, canary.Spec.Template.Spec)
	if got := NewDeployment(as); got.Spec.Template.Labels[appv1.LabelAppService] != fixtures.Name {
		t.Errorf("building the canary changed the stable Deployment's template labels: %v", got.Spec.Template.Labels)
	}
}

func TestSplitHTTPRoute(t *testing.T) {
	as := fixtures.AppService()
	withRoute(&as.Spec)
	plain := NewHTTPRoute(as)
	r := NewHTTPRoute(as)
	SplitHTTPRoute(r, as, RouteSplit{})
	fixtures.CheckEqual(t, "the route at weight 0", plain, r)

	SplitHTTPRoute(r, as, RouteSplit{Weight: 30})
	for i, rule := range r.Spec.Rules {
		want := plain.Spec.Rules[i].BackendRefs[0]
		if len(rule.BackendRefs) != 2 {
			t.Fatalf("rule %d: backends %+v, want the Service and the canary's", i, rule.BackendRefs)
		}
		stable, canary := rule.BackendRefs[0], rule.BackendRefs[1]
		if stable.Name != want.Name || *stable.Weight != 70 || canary.Name != gatewayv1.ObjectName(CanaryName(as)) || *canary.Weight != 30 ||
			*canary.Port != *want.Port {
			t.Errorf("rule %d: backends %s:%d weight %d and %s:%d weight %d; want %s 70 and %s 30 on port %d",
				i, stable.Name, *stable.Port, *stable.Weight, canary.Name, *canary.Port, *canary.Weight, want.Name, CanaryName(as), *want.Port)
		}
	}
}

// TestSplitHTTPRouteTesters: with testers, each rule gets a twin after the
// rules, its matches requiring the tester headers too, all its traffic to
// the canary; the weighted rules are as without.
func TestSplitHTTPRouteTesters(t *testing.T) {
	as := fixtures.AppService()
	withRoute(&as.Spec)
	as.Spec.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10}},
		TesterHeaders: []appv1.TesterHeader{{Name: "x-canary", Value: "always"}, {Name: "X-Team", Value: "qa"}}}
	weighted := NewHTTPRoute(as)
	SplitHTTPRoute(weighted, as, RouteSplit{Weight: 30})
	r := NewHTTPRoute(as)
	SplitHTTPRoute(r, as, RouteSplit{Weight: 30, Testers: true})
	n := len(weighted.Spec.Rules)
	if len(r.Spec.Rules) != 2*n {
		t.Fatalf("%d rules, want %d and their %d twins", len(r.Spec.Rules), n, n)
	}
	fixtures.CheckEqual(t, "the weighted rules", weighted.Spec.Rules, r.Spec.Rules[:n])
	plain := NewHTTPRoute(as)
	for i, twin := range r.Spec.Rules[n:] {
		want := plain.Spec.Rules[i].DeepCopy()
		for j := range want.Matches {
			want.Matches[j].Headers = append(want.Matches[j].Headers,
				gatewayv1.HTTPHeaderMatch{Type: new(gatewayv1.HeaderMatchExact), Name: "x-canary", Value: "always"},
				gatewayv1.HTTPHeaderMatch{Type: new(gatewayv1.HeaderMatchExact), Name: "X-Team", Value: "qa"})
		}
		want.BackendRefs[0].Name = gatewayv1.ObjectName(CanaryName(as))
		want.Name = new(gatewayv1.SectionName(RuleName(i, "testers")))
		fixtures.CheckEqual(t, fmt.Sprintf("the twin of rule %d", i), *want, twin)
	}

	idle := NewHTTPRoute(as)
	SplitHTTPRoute(idle, as, RouteSplit{Testers: true})
	if len(idle.Spec.Rules) != 2*n || len(idle.Spec.Rules[0].BackendRefs) != 1 {
		t.Errorf("at weight 0 with testers: %d rules, the first with %d backends; want the twins and one backend", len(idle.Spec.Rules), len(idle.Spec.Rules[0].BackendRefs))
	}
}

// TestSplitHTTPRouteMirror: a mirror step's rules each copy its percentage
// of their requests to the canary's Service, on the rule's port, after the
// spec's filters; the testers' twins do not.
func TestSplitHTTPRouteMirror(t *testing.T) {
	as := fixtures.AppService()
	withRoute(&as.Spec)
	as.Spec.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{Mirror: 20}},
		TesterHeaders: []appv1.TesterHeader{{Name: "x-canary", Value: "always"}}}
	plain := NewHTTPRoute(as)
	for _, weight := range []int32{0, 10} {
		r := NewHTTPRoute(as)
		SplitHTTPRoute(r, as, RouteSplit{Weight: weight, Mirror: 20, Testers: true})
		n := len(plain.Spec.Rules)
		for i, rule := range r.Spec.Rules[:n] {
			want := append(plain.Spec.Rules[i].DeepCopy().Filters, gatewayv1.HTTPRouteFilter{
				Type: gatewayv1.HTTPRouteFilterRequestMirror,
				RequestMirror: &gatewayv1.HTTPRequestMirrorFilter{BackendRef: gatewayv1.BackendObjectReference{
					Group: new(gatewayv1.Group("")), Kind: new(gatewayv1.Kind("Service")),
					Name: gatewayv1.ObjectName(CanaryName(as)), Port: plain.Spec.Rules[i].BackendRefs[0].Port,
				}, Percent: new(int32(20))},
			})
			fixtures.CheckEqual(t, fmt.Sprintf("weight %d: rule %d's filters", weight, i), want, rule.Filters)
			if backends := int32(len(rule.BackendRefs)); (weight == 0) != (backends == 1) {
				t.Errorf("weight %d: rule %d has %d backends", weight, i, backends)
			}
		}
		for i, twin := range r.Spec.Rules[n:] {
			fixtures.CheckEqual(t, fmt.Sprintf("weight %d: twin %d's filters", weight, i), plain.Spec.Rules[i].Filters, twin.Filters)
		}
		if got, want := r.Annotations[appv1.AnnotationRouteFilters], RouteFiltersRecord(r.Spec.Rules); got != want || want == "" {
			t.Errorf("weight %d: the filters' record is %q, want %q", weight, got, want)
		}
	}
}

// TestSplitHTTPRouteSticky: a sticky canary's weighted backend sets the
// cookie, and each rule's twin sends the requests carrying it (whatever
// else they carry in the Cookie header) to the canary.
func TestSplitHTTPRouteSticky(t *testing.T) {
	as := fixtures.AppService()
	withRoute(&as.Spec)
	as.Spec.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10}},
		Sticky: &appv1.CanarySticky{CookieName: "canary_user", MaxAgeSeconds: 3600}}
	plain := NewHTTPRoute(as)
	n := len(plain.Spec.Rules)
	r := NewHTTPRoute(as)
	SplitHTTPRoute(r, as, RouteSplit{Weight: 10, Sticky: "abc12"})
	if len(r.Spec.Rules) != 2*n {
		t.Fatalf("%d rules, want %d and their sticky twins", len(r.Spec.Rules), n)
	}
	for i, rule := range r.Spec.Rules[:n] {
		canary := rule.BackendRefs[1]
		want := []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{
				Name: "Set-Cookie", Value: "canary_user=abc12; Path=/; HttpOnly; Max-Age=3600"}}}}}
		fixtures.CheckEqual(t, fmt.Sprintf("rule %d's canary backend's filters", i), want, canary.Filters)
		if len(rule.BackendRefs[0].Filters) != 0 {
			t.Errorf("rule %d's stable backend sets a cookie: %+v", i, rule.BackendRefs[0].Filters)
		}
	}
	re := regexp.MustCompile(r.Spec.Rules[n].Matches[0].Headers[len(r.Spec.Rules[n].Matches[0].Headers)-1].Value)
	for cookie, match := range map[string]bool{
		"canary_user=abc12": true, "a=1; canary_user=abc12": true, "canary_user=abc12; b=2": true,
		"canary_user=abc123": false, "xcanary_user=abc12": false, "canary_user=old": false, "": false,
	} {
		if re.MatchString(cookie) != match {
			t.Errorf("the sticky rule's match of Cookie: %q: %v, want %v", cookie, !match, match)
		}
	}
	for i, twin := range r.Spec.Rules[n:] {
		if *twin.Name != gatewayv1.SectionName(RuleName(i, "sticky")) || len(twin.BackendRefs) != 1 ||
			twin.BackendRefs[0].Name != gatewayv1.ObjectName(CanaryName(as)) {
			t.Errorf("twin %d: %s to %+v; want %s to the canary", i, *twin.Name, twin.BackendRefs, RuleName(i, "sticky"))
		}
		for _, m := range twin.Matches {
			if h := m.Headers[len(m.Headers)-1]; h.Name != "Cookie" || *h.Type != gatewayv1.HeaderMatchRegularExpression {
				t.Errorf("twin %d's match's last header: %+v, want the cookie's", i, h)
			}
		}
	}
	session := as.DeepCopy()
	session.Spec.Canary.Sticky.MaxAgeSeconds = 0
	if got := stickyCookie(session.Spec.Canary.Sticky, "abc12"); got != "canary_user=abc12; Path=/; HttpOnly" {
		t.Errorf("a session cookie: %q", got)
	}
}

// TestTemplateChanges: what starts a canary is a change of what the Pods
// run, not of the replica count or the strategy; HoldTemplate keeps the
// latter and undoes the former.
func TestTemplateChanges(t *testing.T) {
	live := fixtures.LiveDeployment()
	as := fixtures.AppService()
	if TemplateChanges(live, NewDeployment(as)) {
		t.Fatal("the fixture's live Deployment differs from its spec's template")
	}
	scaled := fixtures.AppService()
	scaled.Spec.Size = new(int32(7))
	if TemplateChanges(live, NewDeployment(scaled)) {
		t.Error("a new size counts as a template change")
	}
	if TemplateHash(NewDeployment(scaled)) != TemplateHash(NewDeployment(as)) {
		t.Error("a new size changes the template's hash")
	}

	changed := fixtures.AppService()
	changed.Spec.Size = new(int32(7))
	changed.Spec.Image = "nginx:1.28"
	changed.Spec.PodLabels = map[string]string{"team": "web"}
	desired := NewDeployment(changed)
	if !TemplateChanges(live, desired) {
		t.Fatal("a new image and pod labels do not count as a template change")
	}
	if TemplateHash(desired) == TemplateHash(NewDeployment(as)) || TemplateHash(desired) != TemplateHash(NewDeployment(changed)) {
		t.Error("the template's hash does not follow the template")
	}
	updated, fields := UpdateDeployment(live, desired)
	held, kept := HoldTemplate(live, updated, fields)
	if held == nil {
		t.Fatal("HoldTemplate dropped the new replica count")
	}
	fixtures.CheckEqual(t, "the fields kept", []string{"replicas"}, kept)
	fixtures.CheckEqual(t, "the held template", live.Spec.Template, held.Spec.Template)
	if *held.Spec.Replicas != 7 || held.Annotations[appv1.AnnotationPodLabels] != live.Annotations[appv1.AnnotationPodLabels] {
		t.Errorf("held: %d replicas, pod-labels record %q; want 7 and the live record", *held.Spec.Replicas, held.Annotations[appv1.AnnotationPodLabels])
	}

	imageOnly := fixtures.AppService()
	imageOnly.Spec.Image = "nginx:1.28"
	updated, fields = UpdateDeployment(live, NewDeployment(imageOnly))
	if held, kept := HoldTemplate(live, updated, fields); held != nil {
		t.Errorf("HoldTemplate of a template change alone: %v, want no update", kept)
	}
}

// TestCanaryCached: the canary's children, as the caches keep them
// (Trim), still carry the canary's labels, so that a sync finds them in
// line and writes nothing.
func TestCanaryCached(t *testing.T) {
	as := fixtures.AppService()
	desired := NewCanaryDeployment(as, NewDeployment(as), 1, false)
	cached, err := Trim(desired.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	live, err := Decode[*appsv1.Deployment](cached.(*Cached))
	if err != nil {
		t.Fatal(err)
	}
	if _, changed := UpdateDeployment(live, desired); changed != nil {
		t.Errorf("the cached canary Deployment differs from the one it was made from: %v", changed)
	}
	svc := NewCanaryService(as)
	cached, err = Trim(svc.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	liveSvc, err := Decode[*corev1.Service](cached.(*Cached))
	if err != nil {
		t.Fatal(err)
	}
	if _, changed := UpdateService(liveSvc, svc); changed != nil {
		t.Errorf("the cached canary Service differs from the one it was made from: %v", changed)
	}
}

// TestNewPreviewHTTPRoute: a blue-green preview's hostname gets a route of
// its own, NAME-preview, on the httpRoute's parents, all of its requests to
// the preview's Service; none without the hostname or the httpRoute.
func TestNewPreviewHTTPRoute(t *testing.T) {
	as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "u"}, Spec: appv1.AppServiceSpec{
		Image: "nginx", Ports: []corev1.ServicePort{{Name: "http", Port: 8080}},
		HTTPRoute: &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "public"}}, Hostnames: []gatewayv1.Hostname{"shop.example.com"}},
		Canary:    &appv1.Canary{Steps: []appv1.CanaryStep{{}}, BlueGreen: &appv1.BlueGreen{PreviewHostname: "preview.shop.example.com"}},
	}}
	r := NewPreviewHTTPRoute(as)
	if r == nil || r.Name != "shop-preview" || r.Labels[appv1.LabelCanary] != "shop" || r.Labels[appv1.LabelAppService] != "shop" {
		t.Fatalf("the preview's route %+v", r)
	}
	if len(r.Spec.Hostnames) != 1 || r.Spec.Hostnames[0] != "preview.shop.example.com" || len(r.Spec.ParentRefs) != 1 || r.Spec.ParentRefs[0].Name != "public" {
		t.Errorf("hostnames %v, parents %+v: want the preview's host alone, on the httpRoute's parents", r.Spec.Hostnames, r.Spec.ParentRefs)
	}
	if len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].BackendRefs) != 1 || r.Spec.Rules[0].BackendRefs[0].Name != "shop-preview" ||
		*r.Spec.Rules[0].BackendRefs[0].Port != 8080 {
		t.Errorf("rules %+v: want one, to shop-preview:8080", r.Spec.Rules)
	}
	if !metav1.IsControlledBy(r, as) {
		t.Errorf("owner references %+v", r.OwnerReferences)
	}
	if as.Spec.HTTPRoute.Hostnames[0] != "shop.example.com" || len(as.Spec.HTTPRoute.Hostnames) != 1 {
		t.Errorf("the spec's hostnames changed: %v", as.Spec.HTTPRoute.Hostnames)
	}
	as.Spec.Canary.BlueGreen.PreviewHostname = ""
	if r := NewPreviewHTTPRoute(as); r != nil {
		t.Errorf("a route without a preview hostname: %+v", r)
	}
}
