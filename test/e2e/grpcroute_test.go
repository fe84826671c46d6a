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

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// testGRPCRoute (in TestCanaryRouteTools): a canary on a GRPCRoute beside
// the HTTPRoute, asserted from what both routes' watches recorded through
// the release: the same weights and mirror on both, edge for edge; on the
// GRPCRoute, the testers' twin of its rule from the canary's first
// available Pod to the end of the promotion, matching the rule's method
// and the testers' header; the spec's filter on the controller's rules;
// and a rule and a filter someone else added before the release kept
// through it.
func testGRPCRoute(t *testing.T) {
	ns := newNamespace(t)
	const name = "grpc"
	spec := canarySpec(appv1.CanaryStep{Weight: 0, Mirror: 50, PauseSeconds: 4}, appv1.CanaryStep{Weight: 20, PauseSeconds: 4}, appv1.CanaryStep{Weight: 100})
	spec.Canary.TesterHeaders = []appv1.TesterHeader{{Name: "x-canary", Value: "qa"}}
	spec.GRPCRoute = &appv1.GRPCRoute{ParentRefs: spec.HTTPRoute.ParentRefs, Hostnames: []gatewayv1.Hostname{"grpc.example.com"},
		Rules: []appv1.GRPCRouteRule{{
			Matches: []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Service: new("shop.Cart")}}},
			Filters: []gatewayv1.GRPCRouteFilter{grpcAppHeader()},
		}}}
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	othersEditGRPC(t, ns, name)

	rec := recordCanary(t, ns, name)
	grpc := record[*gatewayv1.GRPCRoute](t, gatewayAPI(t).GatewayV1().GRPCRoutes(ns).Watch, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	waitCanaryDone(t, ns, name)
	rec.waitDone(t)
	rec.checkEdges(t, "the canary", "0@0%", "0@0%+m50", "1@0%", "1@20%", "2@20%", "2@100%", "3@100%")

	routes := grpc.wait(t, time.Minute, func(vs []version[*gatewayv1.GRPCRoute]) error {
		if s := grpcRouteState(vs[len(vs)-1].obj); s != "0%" {
			return fmt.Errorf("the GRPCRoute is at %s, want 0%%", s)
		}
		return nil
	})
	for _, v := range routes {
		checkGRPCRoute(t, v, name)
	}
	states := grpcRouteStates(routes, true)
	splits := grpcRouteStates(routes, false)
	t.Logf("the GRPCRoute's states: %v", states)
	// The mirror goes at its step's end, before the next step's weight
	// is routed (its Pods asked for): 0% between them.
	want := []string{"0%", "0% mirror 50%", "0%", "20%", "100%", "0%"}
	if !slices.Equal(splits, want) {
		t.Errorf("the GRPCRoute's weights and mirror went %v, want %v", splits, want)
	}
	var httpSplits []string
	for _, s := range routeStates(rec.route.snapshot()) {
		if len(httpSplits) == 0 || httpSplits[len(httpSplits)-1] != s {
			httpSplits = append(httpSplits, s)
		}
	}
	if !slices.Equal(httpSplits, want) {
		t.Errorf("the HTTPRoute's weights and mirror went %v, want %v, as the GRPCRoute's", httpSplits, want)
	}
	// The testers' twin: from before the mirror (the canary's first
	// available Pod) to the last 100%, gone at the end.
	if i := slices.Index(states, "0% mirror 50% testers"); i < 0 || !slices.Contains(states, "100% testers") || states[len(states)-1] != "0%" {
		t.Errorf("the GRPCRoute's states went %v: want the testers' twin beside the mirror and the 100%% step, and none at the end", states)
	}
}

// grpcAppHeader is the spec's filter on its GRPCRoute rule.
func grpcAppHeader() gatewayv1.GRPCRouteFilter {
	return gatewayv1.GRPCRouteFilter{Type: gatewayv1.GRPCRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "X-App", Value: "grpc"}}}}
}

// othersEditGRPC adds, as someone else would, a rule of their own at the
// end of the AppService's GRPCRoute ("debug") and a filter to the
// controller's rule, and waits until the route has both.
func othersEditGRPC(t *testing.T, ns, name string) {
	t.Helper()
	routes := gatewayAPI(t).GatewayV1().GRPCRoutes(ns)
	editLive(t, name, routes.Get, routes.Update, func(r *gatewayv1.GRPCRoute) {
		r.Spec.Rules[0].Filters = append(r.Spec.Rules[0].Filters, gatewayv1.GRPCRouteFilter{Type: gatewayv1.GRPCRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{Name: "X-Served-By", Value: "edge"}}}})
		r.Spec.Rules = append(r.Spec.Rules, gatewayv1.GRPCRouteRule{Name: new(gatewayv1.SectionName("debug")),
			Matches:     []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Service: new("debug.Debug")}}},
			BackendRefs: r.Spec.Rules[0].BackendRefs})
	})
}

// checkGRPCRoute: in a version of the GRPCRoute, someone else's rule is
// last and their filter on the controller's rule; the spec's filter and
// method match are on the controller's rule and its testers' twin; the
// twin also matches the testers' header and sends all to the canary; the
// mirror goes to the canary's Service only while no weight does.
func checkGRPCRoute(t *testing.T, v version[*gatewayv1.GRPCRoute], name string) {
	t.Helper()
	rules := v.obj.Spec.Rules
	canary := gatewayv1.ObjectName(name + "-canary")
	if n := len(rules); n == 0 || rules[n-1].Name == nil || *rules[n-1].Name != "debug" {
		t.Errorf("resourceVersion %d: someone else's rule is not last", v.rv)
	}
	i := grpcRuleIndex(rules, children.RuleName(0, ""))
	if i < 0 {
		t.Errorf("resourceVersion %d: no rule %s", v.rv, children.RuleName(0, ""))
		return
	}
	if !slices.ContainsFunc(rules[i].Filters, func(f gatewayv1.GRPCRouteFilter) bool {
		return f.ResponseHeaderModifier != nil && len(f.ResponseHeaderModifier.Add) == 1 && f.ResponseHeaderModifier.Add[0].Name == "X-Served-By"
	}) {
		t.Errorf("resourceVersion %d: someone else's filter on the controller's rule is gone", v.rv)
	}
	for _, j := range []int{i, grpcRuleIndex(rules, children.RuleName(0, "testers"))} {
		if j < 0 {
			continue
		}
		r := rules[j]
		if !slices.ContainsFunc(r.Filters, func(f gatewayv1.GRPCRouteFilter) bool { return f.RequestHeaderModifier != nil }) {
			t.Errorf("resourceVersion %d: rule %s lost the spec's filter", v.rv, *r.Name)
		}
		if len(r.Matches) != 1 || r.Matches[0].Method == nil || ptr.Deref(r.Matches[0].Method.Service, "") != "shop.Cart" {
			t.Errorf("resourceVersion %d: rule %s lost the spec's method match: %+v", v.rv, *r.Name, r.Matches)
		}
	}
	if j := grpcRuleIndex(rules, children.RuleName(0, "testers")); j >= 0 {
		twin := rules[j]
		if h := twin.Matches[0].Headers; len(h) != 1 || h[0].Name != "x-canary" || h[0].Value != "qa" {
			t.Errorf("resourceVersion %d: the testers' twin matches the headers %+v, want x-canary: qa", v.rv, h)
		}
		if len(twin.BackendRefs) != 1 || twin.BackendRefs[0].Name != canary || grpcMirrorOf(twin) != nil {
			t.Errorf("resourceVersion %d: the testers' twin sends to %+v (mirror %v), want the canary alone", v.rv, twin.BackendRefs, grpcMirrorOf(twin) != nil)
		}
	}
	if m := grpcMirrorOf(rules[i]); m != nil && (m.BackendRef.Name != canary || grpcWeight(rules[i]) != 0) {
		t.Errorf("resourceVersion %d: a mirror to %s beside a weight of %d%%", v.rv, m.BackendRef.Name, grpcWeight(rules[i]))
	}
}

// grpcRouteStates are the GRPCRoute's states (grpcRouteState) through its
// versions, each once, in order; without testers, their twin left out.
func grpcRouteStates(versions []version[*gatewayv1.GRPCRoute], testers bool) []string {
	var states []string
	for _, v := range versions {
		s := grpcRouteState(v.obj)
		if !testers {
			s = strings.TrimSuffix(s, " testers")
		}
		if len(states) == 0 || states[len(states)-1] != s {
			states = append(states, s)
		}
	}
	return states
}

// grpcRouteState is what a version of the GRPCRoute carries for the
// canary: its weight, its mirror, and whether the testers' twin is there,
// as "20% mirror 10% testers".
func grpcRouteState(r *gatewayv1.GRPCRoute) string {
	i := grpcRuleIndex(r.Spec.Rules, children.RuleName(0, ""))
	if i < 0 {
		return "no rule " + children.RuleName(0, "")
	}
	s := fmt.Sprintf("%d%%", grpcWeight(r.Spec.Rules[i]))
	if m := grpcMirrorOf(r.Spec.Rules[i]); m != nil {
		s += fmt.Sprintf(" mirror %d%%", *m.Percent)
	}
	if grpcRuleIndex(r.Spec.Rules, children.RuleName(0, "testers")) >= 0 {
		s += " testers"
	}
	return s
}

func grpcWeight(rule gatewayv1.GRPCRouteRule) int32 {
	if len(rule.BackendRefs) == 2 {
		return *rule.BackendRefs[1].Weight
	}
	return 0
}

func grpcMirrorOf(rule gatewayv1.GRPCRouteRule) *gatewayv1.HTTPRequestMirrorFilter {
	for _, f := range rule.Filters {
		if f.Type == gatewayv1.GRPCRouteFilterRequestMirror {
			return f.RequestMirror
		}
	}
	return nil
}

func grpcRuleIndex(rules []gatewayv1.GRPCRouteRule, name string) int {
	return slices.IndexFunc(rules, func(r gatewayv1.GRPCRouteRule) bool { return r.Name != nil && string(*r.Name) == name })
}
