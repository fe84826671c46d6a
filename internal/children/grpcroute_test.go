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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// withGRPCRoute attaches the seed's gRPC to Gateway gw: every call to port
// 80, the Admin service's to the admin port by name, with a header set.
func withGRPCRoute(s *appv1.AppServiceSpec) {
	s.Ports = append(s.Ports, corev1.ServicePort{Name: "admin", Port: 9000})
	s.Ports[0].Name = "grpc"
	s.GRPCRoute = &appv1.GRPCRoute{
		ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}},
		Hostnames:  []gatewayv1.Hostname{"grpc.example.com"},
		Rules: []appv1.GRPCRouteRule{
			{},
			{
				Matches: []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Type: new(gatewayv1.GRPCMethodMatchExact), Service: new("shop.Admin")}}},
				Filters: []gatewayv1.GRPCRouteFilter{grpcHeader("X-Admin")},
				Port:    new(intstr.FromString("admin")),
			},
		},
	}
}

func grpcHeader(name string) gatewayv1.GRPCRouteFilter {
	return gatewayv1.GRPCRouteFilter{Type: gatewayv1.GRPCRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: gatewayv1.HTTPHeaderName(name), Value: "1"}}}}
}

func grpcBackend(name string, port, weight int32) gatewayv1.GRPCBackendRef {
	return gatewayv1.GRPCBackendRef{BackendRef: gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{
			Group: new(gatewayv1.Group("")), Kind: new(gatewayv1.Kind("Service")), Name: gatewayv1.ObjectName(name), Port: new(port),
		},
		Weight: new(weight),
	}}
}

// TestNewGRPCRoute: the spec's rules, named, each to its port of the
// Service; the parents defaulted as the GRPCRoute's CRD would; a rule
// without matches left so.
func TestNewGRPCRoute(t *testing.T) {
	as := fixtures.AppService()
	withGRPCRoute(&as.Spec)
	r := NewGRPCRoute(as)
	if r == nil {
		t.Fatal("no GRPCRoute for a spec that asks for one")
	}
	if p := r.Spec.ParentRefs[0]; *p.Group != gatewayv1.GroupName || *p.Kind != "Gateway" {
		t.Errorf("parent %+v, want the defaults", p)
	}
	want := []gatewayv1.GRPCRouteRule{
		{Name: new(gatewayv1.SectionName("appservice-0")), BackendRefs: []gatewayv1.GRPCBackendRef{grpcBackend(fixtures.Name, 80, 1)}},
		{Name: new(gatewayv1.SectionName("appservice-1")), Matches: as.Spec.GRPCRoute.Rules[1].Matches,
			Filters: []gatewayv1.GRPCRouteFilter{grpcHeader("X-Admin")}, BackendRefs: []gatewayv1.GRPCBackendRef{grpcBackend(fixtures.Name, 9000, 1)}},
	}
	if !equality.Semantic.DeepEqual(r.Spec.Rules, want) {
		t.Errorf("rules: %s", diff.Diff(want, r.Spec.Rules))
	}
	if got := r.Annotations[appv1.AnnotationRouteFilters]; got != "appservice-1/"+filterHash(grpcHeader("X-Admin")) {
		t.Errorf("filters' record %q", got)
	}
	as.Spec.Ports = nil
	if NewGRPCRoute(as) != nil {
		t.Error("a GRPCRoute without ports to route to")
	}
}

// TestSplitGRPCRoute: a step's weight on each rule, a mirror on each, and
// the testers' twins, whose matches require their headers (one match of
// them alone for a rule without matches).
func TestSplitGRPCRoute(t *testing.T) {
	as := fixtures.AppService()
	withGRPCRoute(&as.Spec)
	as.Spec.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10}}, TesterHeaders: []appv1.TesterHeader{{Name: "X-Canary", Value: "yes"}}}
	r := NewGRPCRoute(as)
	SplitGRPCRoute(r, as, RouteSplit{Weight: 10, Mirror: 30, Testers: true, Sticky: "ignored"})
	canary := CanaryName(as)
	if len(r.Spec.Rules) != 4 {
		t.Fatalf("%d rules, want 2 and their testers' twins", len(r.Spec.Rules))
	}
	for i, port := range []int32{80, 9000} {
		rule := r.Spec.Rules[i]
		if want := []gatewayv1.GRPCBackendRef{grpcBackend(fixtures.Name, port, 90), grpcBackend(canary, port, 10)}; !equality.Semantic.DeepEqual(rule.BackendRefs, want) {
			t.Errorf("rule %d's backends: %s", i, diff.Diff(want, rule.BackendRefs))
		}
		m := rule.Filters[len(rule.Filters)-1]
		if m.Type != gatewayv1.GRPCRouteFilterRequestMirror || string(m.RequestMirror.BackendRef.Name) != canary ||
			*m.RequestMirror.BackendRef.Port != port || *m.RequestMirror.Percent != 30 {
			t.Errorf("rule %d's last filter %+v, want a 30%% mirror to %s:%d", i, m, canary, port)
		}
		twin := r.Spec.Rules[2+i]
		if *twin.Name != gatewayv1.SectionName(RuleName(i, "testers")) || len(twin.Matches) != 1 {
			t.Fatalf("twin %d: %s, %d matches", i, *twin.Name, len(twin.Matches))
		}
		h := twin.Matches[0].Headers
		if len(h) != 1 || h[0].Name != "X-Canary" || h[0].Value != "yes" || *h[0].Type != gatewayv1.GRPCHeaderMatchExact {
			t.Errorf("twin %d's headers %+v", i, h)
		}
		if len(twin.BackendRefs) != 1 || string(twin.BackendRefs[0].Name) != canary {
			t.Errorf("twin %d's backends %+v, want the canary alone", i, twin.BackendRefs)
		}
		for _, f := range twin.Filters {
			if f.Type == gatewayv1.GRPCRouteFilterRequestMirror {
				t.Errorf("twin %d mirrors", i)
			}
		}
	}
	if r.Spec.Rules[3].Matches[0].Method == nil {
		t.Error("the Admin rule's twin lost its method match")
	}
	if got, want := r.Annotations[appv1.AnnotationRouteFilters], filtersRecord(grpcRules, r.Spec.Rules); got != want {
		t.Errorf("filters' record %q, want %q", got, want)
	}
	plain := NewGRPCRoute(as)
	SplitGRPCRoute(plain, as, RouteSplit{})
	if !equality.Semantic.DeepEqual(plain, NewGRPCRoute(as)) {
		t.Error("no weight, mirror nor testers changed the route")
	}
}

// TestUpdateGRPCRoute: the rules others add to the route, and the filters
// others add to the controller's, are kept; a filter the controller wrote
// and the spec no longer has goes; the same route changes nothing.
func TestUpdateGRPCRoute(t *testing.T) {
	as := fixtures.AppService()
	withGRPCRoute(&as.Spec)
	desired := NewGRPCRoute(as)
	if u, changed := UpdateGRPCRoute(desired, desired); u != nil {
		t.Fatalf("the same route changes %v", changed)
	}
	live := desired.DeepCopy()
	theirs := gatewayv1.GRPCRouteRule{Name: new(gatewayv1.SectionName("debug")),
		Matches:     []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Type: new(gatewayv1.GRPCMethodMatchExact), Service: new("debug.Debug")}}},
		BackendRefs: []gatewayv1.GRPCBackendRef{grpcBackend("debugger", 80, 1)}}
	live.Spec.Rules = append([]gatewayv1.GRPCRouteRule{theirs}, live.Spec.Rules...)
	live.Spec.Rules[1].Filters = append(live.Spec.Rules[1].Filters, grpcHeader("X-Theirs"))
	if u, changed := UpdateGRPCRoute(live, desired); u != nil {
		t.Errorf("others' rule and filter change %v", changed)
	}
	// The spec drops the Admin rule's filter: it goes, theirs stay.
	as.Spec.GRPCRoute.Rules[1].Filters = nil
	as.Spec.GRPCRoute.Rules[0].Filters = []gatewayv1.GRPCRouteFilter{grpcHeader("X-New")}
	u, changed := UpdateGRPCRoute(live, NewGRPCRoute(as))
	if u == nil {
		t.Fatal("a filter removed from the spec, and nothing changed")
	}
	if !equality.Semantic.DeepEqual(u.Spec.Rules[0], theirs) {
		t.Errorf("their rule: %s", diff.Diff(theirs, u.Spec.Rules[0]))
	}
	if want := []gatewayv1.GRPCRouteFilter{grpcHeader("X-New"), grpcHeader("X-Theirs")}; !equality.Semantic.DeepEqual(u.Spec.Rules[1].Filters, want) {
		t.Errorf("rule appservice-0's filters: %s (changed %v)", diff.Diff(want, u.Spec.Rules[1].Filters), changed)
	}
	if len(u.Spec.Rules[2].Filters) != 0 {
		t.Errorf("rule appservice-1 keeps %+v, which the controller wrote and the spec dropped", u.Spec.Rules[2].Filters)
	}
}
