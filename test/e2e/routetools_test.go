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
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestCanaryRouteTools: the route's other tools, asserted from what the
// route's watch recorded through whole releases:
//   - mirror-sticky: a mirror step of weight 0 copies half the requests to
//     the canary before anyone is served by it, and ends with its step;
//     sticky users' rule and cookie hold from the canary's first Pod to
//     the promotion; a rule and a filter someone else added to the route
//     before the release are kept through it, and the controller writes
//     nothing more once it is over.
//   - abort: an abort at a gate removes the weight, the mirror, the cookie
//     and the sticky rule in one write.
//   - unsupported: a mirror step on a Gateway whose class lists its
//     supportedFeatures without the mirror's holds the canary at its
//     start (Stalled, RouteFeatureUnsupported, one Warning Event, no
//     canary Pod); once the class lists them, the release goes through.
//   - grpc: a canary on a GRPCRoute beside the HTTPRoute (testGRPCRoute).
func TestCanaryRouteTools(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	t.Run("mirror-sticky", func(t *testing.T) { t.Parallel(); testMirrorSticky(t) })
	t.Run("abort", func(t *testing.T) { t.Parallel(); testRouteToolsAbort(t) })
	t.Run("unsupported", func(t *testing.T) { t.Parallel(); testRouteFeatureUnsupported(t) })
	t.Run("grpc", func(t *testing.T) { t.Parallel(); testGRPCRoute(t) })
}

func testMirrorSticky(t *testing.T) {
	ns := newNamespace(t)
	const name = "shadow"
	spec := canarySpec(appv1.CanaryStep{Weight: 0, Mirror: 50, PauseSeconds: 4}, appv1.CanaryStep{Weight: 20, PauseSeconds: 4}, appv1.CanaryStep{Weight: 100})
	spec.Canary.Sticky = &appv1.CanarySticky{CookieName: "canary", MaxAgeSeconds: 600}
	spec.HTTPRoute.Rules = []appv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{appHeader()}}}
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	othersEdit(t, ns, name)

	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	waitCanaryDone(t, ns, name)
	rec.waitDone(t)

	rec.checkEdges(t, "the canary", "0@0%", "0@0%+m50", "1@0%", "1@20%", "2@20%", "2@100%", "3@100%")
	routes := rec.route.wait(t, time.Minute, func(vs []version[*gatewayv1.HTTPRoute]) error {
		if s := routeState(vs[len(vs)-1].obj); s != "0%" {
			return fmt.Errorf("the route is at %s, want 0%%", s)
		}
		return nil
	})
	hash := ""
	for _, v := range rec.app.snapshot() {
		if c := v.obj.Status.Canary; c != nil && c.CanaryTemplateHash != "" {
			hash = c.CanaryTemplateHash
		}
	}
	for _, v := range routes {
		checkOthersKept(t, v)
		checkRouteTools(t, v, name, hash)
	}
	states := routeStates(routes)
	t.Logf("the route's states: %v", states)
	wantStates := []string{"0%", "0% mirror 50% sticky", "20% sticky", "100% sticky", "100%", "0%"}
	if !slices.Equal(states, wantStates) {
		t.Errorf("the route's states went %v, want %v", states, wantStates)
	}
	// Nothing more once the release is over, others' rule and filter
	// kept: the route's last version holds past a resync (10 s).
	last := routes[len(routes)-1].rv
	time.Sleep(12 * time.Second) // the assertion is on what the watch records over the wait
	for _, v := range rec.route.snapshot() {
		if v.rv > last {
			t.Errorf("the route was written again after the release (resourceVersion %d): %s", v.rv, routeState(v.obj))
		}
	}
}

// testRouteToolsAbort: aborted at the gate of a step that carries a weight
// and a mirror, with sticky users: one write takes all of them off.
func testRouteToolsAbort(t *testing.T) {
	ns := newNamespace(t)
	const name = "shadow-abort"
	spec := canarySpec(appv1.CanaryStep{Weight: 10, Mirror: 30, Gate: true}, appv1.CanaryStep{Weight: 100})
	spec.Canary.Sticky = &appv1.CanarySticky{CookieName: "canary"}
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	rec.waitAtGate(t, 0)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Canary.Abort = true })
	rec.route.wait(t, 2*time.Minute, func(vs []version[*gatewayv1.HTTPRoute]) error {
		if s := routeState(vs[len(vs)-1].obj); s != "0%" {
			return fmt.Errorf("the route is at %s, want 0%%", s)
		}
		return nil
	})
	var states []string
	for _, v := range rec.route.snapshot() {
		if s := routeState(v.obj); len(states) == 0 || states[len(states)-1] != s {
			states = append(states, s)
		}
	}
	t.Logf("the route's states: %v", states)
	if n := len(states); n < 2 || states[n-2] != "10% mirror 30% sticky" || states[n-1] != "0%" {
		t.Errorf("the route's states went %v, want 10%% mirror 30%% sticky, then 0%% in one write", states)
	}
}

func testRouteFeatureUnsupported(t *testing.T) {
	ns := newNamespace(t)
	const name = "shadow-held"
	ctx := context.Background()
	gw := gatewayAPI(t).GatewayV1()
	// A class of this test's own (classes are cluster-wide), listing only
	// HTTPRoute, as its controller would; and a Gateway of it.
	className := "limited-" + ns
	if _, err := gw.GatewayClasses().Create(ctx, &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/no-controller"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.GatewayClasses().Delete(context.Background(), className, metav1.DeleteOptions{}) })
	setFeatures := func(features ...string) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			gc, err := gw.GatewayClasses().Get(ctx, className, metav1.GetOptions{})
			if err != nil {
				return err
			}
			gc.Status.SupportedFeatures = nil
			for _, f := range features {
				gc.Status.SupportedFeatures = append(gc.Status.SupportedFeatures, gatewayv1.SupportedFeature{Name: gatewayv1.FeatureName(f)})
			}
			_, err = gw.GatewayClasses().UpdateStatus(ctx, gc, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("setting the class's supportedFeatures: %v", err)
		}
	}
	setFeatures("HTTPRoute")
	if _, err := gw.Gateways(ns).Create(ctx, &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "limited"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: gatewayv1.ObjectName(className),
			Listeners: []gatewayv1.Listener{{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec := canarySpec(appv1.CanaryStep{Weight: 0, Mirror: 50, PauseSeconds: 2}, appv1.CanaryStep{Weight: 100})
	spec.HTTPRoute.ParentRefs = []gatewayv1.ParentReference{{Name: "limited"}}
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	events := recordEvents(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })

	want := "does not list HTTPRouteRequestMirror among its supportedFeatures, which spec.canary.steps[0].mirror needs"
	held := rec.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		c := condition(vs[len(vs)-1].obj, appv1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != appv1.ReasonRouteFeatureUnsupported || !strings.Contains(c.Message, want) {
			return fmt.Errorf("Stalled %+v, want True, %s: ...%s", c, appv1.ReasonRouteFeatureUnsupported, want)
		}
		return nil
	})
	events.wait(t, time.Minute, func(es []*corev1.Event) error {
		for _, e := range es {
			if e.Type == corev1.EventTypeWarning && e.Reason == appv1.ReasonRouteFeatureUnsupported && strings.Contains(e.Message, want) {
				return nil
			}
		}
		return fmt.Errorf("no Warning Event %s yet", appv1.ReasonRouteFeatureUnsupported)
	})
	// Held past a recheck (30 s, and 15 s of the class kept): no step, no
	// canary Pod, the Event once.
	rec.holds(t, 35*time.Second)
	if st := held[len(held)-1].obj.Status.Canary; st == nil || st.Step != nil {
		t.Errorf("held with status.canary %s, want no step", canaryString(st))
	}
	if vs := rec.canary.snapshot(); len(vs) > 0 {
		t.Errorf("the canary's Deployment was made while the release was held (%d versions)", len(vs))
	}
	n := 0
	for _, e := range events.snapshot() {
		if e.Reason == appv1.ReasonRouteFeatureUnsupported {
			n = max(n, int(e.Count))
		}
	}
	if n != 1 {
		t.Errorf("the Warning Event %s was recorded %d times, want once", appv1.ReasonRouteFeatureUnsupported, n)
	}

	setFeatures("HTTPRoute", "HTTPRouteRequestMirror", "HTTPRouteRequestPercentageMirror")
	waitCanaryDone(t, ns, name)
	rec.waitDone(t)
	rec.checkEdges(t, "once the class listed the features, the canary", "0@0%", "0@0%+m50", "1@0%", "1@100%", "2@100%")
}

// appHeader is the spec's filter on its rule, in the tests of the route's
// tools.
func appHeader() gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "X-App", Value: "shadow"}}}}
}

// othersEdit adds, as someone else would, a rule of their own at the end
// of the AppService's route ("maintenance") and a filter to the
// controller's rule, and waits until the route has both.
func othersEdit(t *testing.T, ns, name string) {
	t.Helper()
	routes := gatewayAPI(t).GatewayV1().HTTPRoutes(ns)
	editLive(t, name, routes.Get, routes.Update, func(r *gatewayv1.HTTPRoute) {
		r.Spec.Rules[0].Filters = append(r.Spec.Rules[0].Filters, edgeHeader())
		r.Spec.Rules = append(r.Spec.Rules, gatewayv1.HTTPRouteRule{Name: new(gatewayv1.SectionName("maintenance")),
			Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchExact), Value: new("/down")}}},
			BackendRefs: r.Spec.Rules[0].BackendRefs})
	})
}

// editLive changes the object name as someone else would (mutate) and
// updates it, once it exists, again after a conflict (the controller may
// write it meanwhile), until the update succeeds.
func editLive[T any](t *testing.T, name string, get func(context.Context, string, metav1.GetOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error), mutate func(T)) {
	t.Helper()
	eventually(t, time.Minute, func() error {
		obj, err := get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(obj)
		_, err = update(context.Background(), obj, metav1.UpdateOptions{})
		return err
	})
}

// edgeHeader is the filter someone else adds to the controller's rule.
func edgeHeader() gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterResponseHeaderModifier,
		ResponseHeaderModifier: &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{Name: "X-Served-By", Value: "edge"}}}}
}

// checkOthersKept: a version of the route keeps someone else's rule, last,
// and their filter on the controller's rule.
func checkOthersKept(t *testing.T, v version[*gatewayv1.HTTPRoute]) {
	t.Helper()
	rules := v.obj.Spec.Rules
	if n := len(rules); n == 0 || rules[n-1].Name == nil || *rules[n-1].Name != "maintenance" {
		t.Errorf("resourceVersion %d: someone else's rule is not last: %s", v.rv, ruleNames(rules))
	}
	if i := ruleIndex(rules, children.RuleName(0, "")); i < 0 || !slices.ContainsFunc(rules[i].Filters, func(f gatewayv1.HTTPRouteFilter) bool {
		return f.ResponseHeaderModifier != nil && len(f.ResponseHeaderModifier.Add) == 1 && f.ResponseHeaderModifier.Add[0].Name == "X-Served-By"
	}) {
		t.Errorf("resourceVersion %d: someone else's filter on the controller's rule is gone: %s", v.rv, ruleNames(rules))
	}
}

// checkRouteTools: in a version of the route, the spec's filter is on the
// controller's rule and its twins; the mirror goes to the canary's Service
// only while no weight does; the cookie the canary's weighted backend sets
// is the one the sticky rule matches, of the canary's template's hash.
func checkRouteTools(t *testing.T, v version[*gatewayv1.HTTPRoute], name, hash string) {
	t.Helper()
	canary := gatewayv1.ObjectName(name + "-canary")
	for _, rule := range v.obj.Spec.Rules {
		if rule.Name != nil && *rule.Name == "maintenance" {
			continue
		}
		if !slices.ContainsFunc(rule.Filters, func(f gatewayv1.HTTPRouteFilter) bool { return f.RequestHeaderModifier != nil }) {
			t.Errorf("resourceVersion %d: rule %s lost the spec's filter", v.rv, ruleName(rule))
		}
	}
	main := v.obj.Spec.Rules[ruleIndex(v.obj.Spec.Rules, children.RuleName(0, ""))]
	if m := mirrorOf(main); m != nil && (m.BackendRef.Name != canary || routeWeight(v.obj) != 0) {
		t.Errorf("resourceVersion %d: a mirror to %s beside a weight of %d%%", v.rv, m.BackendRef.Name, routeWeight(v.obj))
	}
	if cookie := setCookie(main); cookie != "" && !strings.HasPrefix(cookie, "canary="+hash+";") {
		t.Errorf("resourceVersion %d: the canary sets the cookie %q, want canary=%s", v.rv, cookie, hash)
	}
	if i := ruleIndex(v.obj.Spec.Rules, children.RuleName(0, "sticky")); i >= 0 {
		headers := v.obj.Spec.Rules[i].Matches[0].Headers
		if h := headers[len(headers)-1]; h.Name != "Cookie" || !strings.Contains(h.Value, "canary="+hash) {
			t.Errorf("resourceVersion %d: the sticky rule matches %s: %q, want the cookie canary=%s", v.rv, h.Name, h.Value, hash)
		}
	}
}

// routeStates are the route's states (routeState) through its versions,
// each once, in order; a state of no weight, no mirror and the sticky rule
// (the canary's Pod available before the mirror is routed, or between the
// steps), which may come between any two, is left out.
func routeStates(versions []version[*gatewayv1.HTTPRoute]) []string {
	var states []string
	for _, v := range versions {
		if s := routeState(v.obj); s != "0% sticky" && (len(states) == 0 || states[len(states)-1] != s) {
			states = append(states, s)
		}
	}
	return states
}

// routeState is what a version of the route carries for the canary: its
// weight, its mirror, and whether its sticky rule and cookie are there
// (both or neither: otherwise "sticky rule without cookie" and the like),
// as "20% mirror 10% sticky".
func routeState(r *gatewayv1.HTTPRoute) string {
	i := ruleIndex(r.Spec.Rules, children.RuleName(0, ""))
	if i < 0 {
		return "no rule " + children.RuleName(0, "")
	}
	s := fmt.Sprintf("%d%%", routeWeight(r))
	if m := mirrorOf(r.Spec.Rules[i]); m != nil {
		s += fmt.Sprintf(" mirror %d%%", *m.Percent)
	}
	rule, cookie := ruleIndex(r.Spec.Rules, children.RuleName(0, "sticky")) >= 0, setCookie(r.Spec.Rules[i]) != ""
	switch {
	case rule && (cookie || routeWeight(r) == 0):
		s += " sticky"
	case rule:
		s += " sticky rule without cookie"
	case cookie:
		s += " cookie without sticky rule"
	}
	return s
}

func mirrorOf(rule gatewayv1.HTTPRouteRule) *gatewayv1.HTTPRequestMirrorFilter {
	for _, f := range rule.Filters {
		if f.Type == gatewayv1.HTTPRouteFilterRequestMirror {
			return f.RequestMirror
		}
	}
	return nil
}

// setCookie is the Set-Cookie header the rule's weighted canary backend
// adds ("" for none).
func setCookie(rule gatewayv1.HTTPRouteRule) string {
	if len(rule.BackendRefs) != 2 {
		return ""
	}
	for _, f := range rule.BackendRefs[1].Filters {
		if h := f.ResponseHeaderModifier; h != nil {
			for _, a := range h.Add {
				if a.Name == "Set-Cookie" {
					return a.Value
				}
			}
		}
	}
	return ""
}

func ruleIndex(rules []gatewayv1.HTTPRouteRule, name string) int {
	return slices.IndexFunc(rules, func(r gatewayv1.HTTPRouteRule) bool { return r.Name != nil && string(*r.Name) == name })
}

func ruleName(r gatewayv1.HTTPRouteRule) string {
	if r.Name == nil {
		return "(no name)"
	}
	return string(*r.Name)
}

func ruleNames(rules []gatewayv1.HTTPRouteRule) string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = ruleName(r)
	}
	return strings.Join(names, ", ")
}
