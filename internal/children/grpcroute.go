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
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The GRPCRoute's pure part, as the HTTPRoute's (httproute.go): the
// controller owns our label, the parents, the hostnames and the rules it
// names, each rule's backend being the AppService's Service, and keeps the
// rules others add and the filters others add to its own. A rule without
// matches matches every call, and stays so (the GRPCRoute's CRD defaults
// none); a twin of it (the testers') gets one match of its headers.

// GRPCRouteGroupVersion is the Gateway API version of the GRPCRoutes the
// controller writes.
var GRPCRouteGroupVersion = gatewayv1.GroupVersion

// NewGRPCRoute returns the GRPCRoute an AppService asks for, or nil when it
// asks for none (or has no Service to route to).
func NewGRPCRoute(as *appv1.AppService) *gatewayv1.GRPCRoute {
	r := as.Spec.GRPCRoute
	if r == nil || len(as.Spec.Ports) == 0 {
		return nil
	}
	r = r.DeepCopy()
	out := &gatewayv1.GRPCRoute{
		ObjectMeta: routeMeta(as),
		Spec: gatewayv1.GRPCRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: defaultParents(r.ParentRefs)},
			Hostnames:       r.Hostnames,
		},
	}
	rules := r.Rules
	if len(rules) == 0 {
		rules = []appv1.GRPCRouteRule{{}}
	}
	for i, rule := range rules {
		out.Spec.Rules = append(out.Spec.Rules, gatewayv1.GRPCRouteRule{
			Name:    new(gatewayv1.SectionName(RuleName(i, ""))),
			Matches: rule.Matches,
			Filters: rule.Filters,
			BackendRefs: []gatewayv1.GRPCBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: serviceBackend(as.Name, routePort(as, rule.Port)),
				Weight:                 new(int32(1)),
			}}},
		})
	}
	setRecord(&out.Annotations, appv1.AnnotationRouteFilters, filtersRecord(grpcRules, out.Spec.Rules))
	return out
}

// grpcRules is how mergeRules reads a GRPCRoute's rules.
var grpcRules = ruleAccess[gatewayv1.GRPCRouteRule, gatewayv1.GRPCRouteFilter]{
	name:    func(r *gatewayv1.GRPCRouteRule) *gatewayv1.SectionName { return r.Name },
	filters: func(r *gatewayv1.GRPCRouteRule) *[]gatewayv1.GRPCRouteFilter { return &r.Filters },
	copy:    (*gatewayv1.GRPCRouteRule).DeepCopy,
}

// UpdateGRPCRoute returns a copy of live with the fields the controller
// owns set as in desired, and the names of those that changed; nil when
// nothing needs to change. live is never modified. Of the rules, those
// others add are kept (mergeRules).
func UpdateGRPCRoute(live, desired *gatewayv1.GRPCRoute) (*gatewayv1.GRPCRoute, []string) {
	out := live.DeepCopy()
	changed := ownedLabels(&out.ObjectMeta, desired.Labels)
	setOwned(&changed, "parentRefs", &out.Spec.ParentRefs, desired.Spec.ParentRefs)
	setOwned(&changed, "hostnames", &out.Spec.Hostnames, desired.Spec.Hostnames)
	rules, record := mergeRules(grpcRules, live.Spec.Rules, desired.Spec.Rules, live.Annotations[appv1.AnnotationRouteFilters])
	setOwned(&changed, "rules", &out.Spec.Rules, rules)
	if setRecord(&out.Annotations, appv1.AnnotationRouteFilters, record) {
		changed = append(changed, "filters' record")
	}
	return updated(out, changed)
}

// SplitGRPCRoute is SplitHTTPRoute for the GRPCRoute: split.Weight percent
// of every rule's calls to the canary's Service, split.Mirror percent of
// them copied to it, and with testers a twin of each rule whose matches
// also require spec.canary's testerHeaders (a rule without matches gets
// one of them alone) and whose calls all go to the canary. Sticky users
// are the HTTPRoute's only: gRPC clients keep no cookies.
func SplitGRPCRoute(r *gatewayv1.GRPCRoute, as *appv1.AppService, split RouteSplit) {
	if r == nil {
		return
	}
	c := as.Spec.Canary
	canaryName := gatewayv1.ObjectName(CanaryName(as))
	var twins []gatewayv1.GRPCRouteRule
	if split.Testers && c != nil {
		var headers []gatewayv1.GRPCHeaderMatch
		for _, h := range c.TesterHeaders {
			headers = append(headers, gatewayv1.GRPCHeaderMatch{Type: new(gatewayv1.GRPCHeaderMatchExact), Name: gatewayv1.GRPCHeaderName(h.Name), Value: h.Value})
		}
		for i := range r.Spec.Rules {
			t := *r.Spec.Rules[i].DeepCopy()
			t.Name = new(gatewayv1.SectionName(RuleName(i, "testers")))
			if len(t.Matches) == 0 {
				t.Matches = []gatewayv1.GRPCRouteMatch{{}}
			}
			for j := range t.Matches {
				t.Matches[j].Headers = append(t.Matches[j].Headers, headers...)
			}
			for j := range t.BackendRefs {
				t.BackendRefs[j].Name = canaryName
			}
			twins = append(twins, t)
		}
	}
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		if split.Mirror > 0 && len(rule.BackendRefs) == 1 {
			rule.Filters = append(rule.Filters, gatewayv1.GRPCRouteFilter{
				Type: gatewayv1.GRPCRouteFilterRequestMirror, RequestMirror: canaryMirror(rule.BackendRefs[0].BackendRef, canaryName, split.Mirror),
			})
		}
		if len(rule.BackendRefs) != 1 || split.Weight <= 0 {
			continue
		}
		stable, canary := rule.BackendRefs[0], gatewayv1.GRPCBackendRef{}
		stable.BackendRef, canary.BackendRef = splitBackend(stable.BackendRef, canaryName, split.Weight)
		rule.BackendRefs = []gatewayv1.GRPCBackendRef{stable, canary}
	}
	r.Spec.Rules = append(r.Spec.Rules, twins...)
	setRecord(&r.Annotations, appv1.AnnotationRouteFilters, filtersRecord(grpcRules, r.Spec.Rules))
}
