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
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The HTTPRoute's pure part. The controller owns our label, the parents,
// the hostnames, and the rules it names (OwnRuleName), each rule's backend
// being the AppService's Service: of those, every field but the filters
// others add to them, which are kept, as are the rules others add
// (mergeRules). Its CRD's defaults inside the parents, matches
// and filters are the AppService's too (the same Gateway API types, the same
// markers), so the spec arrives with them; what the builder adds itself (a
// rule's default match, the backend reference) it writes as the HTTPRoute's
// CRD would default it. The status is the Gateway controllers'.

// HTTPRouteGroupVersion is the Gateway API version the controller writes.
var HTTPRouteGroupVersion = gatewayv1.GroupVersion

// NewHTTPRoute returns the HTTPRoute an AppService asks for, or nil when it
// asks for none (or has no Service to route to).
func NewHTTPRoute(as *appv1.AppService) *gatewayv1.HTTPRoute {
	r := as.Spec.HTTPRoute
	if r == nil || len(as.Spec.Ports) == 0 {
		return nil
	}
	r = r.DeepCopy()
	out := &gatewayv1.HTTPRoute{
		ObjectMeta: routeMeta(as),
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: defaultParents(r.ParentRefs)},
			Hostnames:       r.Hostnames,
		},
	}
	rules := r.Rules
	if len(rules) == 0 {
		rules = []appv1.HTTPRouteRule{{}}
	}
	for i, rule := range rules {
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gatewayv1.HTTPRouteMatch{{}}
		}
		for i := range matches {
			if matches[i].Path == nil {
				matches[i].Path = &gatewayv1.HTTPPathMatch{}
			}
			if matches[i].Path.Type == nil {
				matches[i].Path.Type = new(gatewayv1.PathMatchPathPrefix)
			}
			if matches[i].Path.Value == nil {
				matches[i].Path.Value = new("/")
			}
		}
		out.Spec.Rules = append(out.Spec.Rules, gatewayv1.HTTPRouteRule{
			Name:     new(gatewayv1.SectionName(RuleName(i, ""))),
			Matches:  matches,
			Filters:  rule.Filters,
			Timeouts: rule.Timeouts,
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
				BackendObjectReference: serviceBackend(as.Name, routePort(as, rule.Port)),
				Weight:                 new(int32(1)),
			}}},
		})
	}
	setRecord(&out.Annotations, appv1.AnnotationRouteFilters, RouteFiltersRecord(out.Spec.Rules))
	return out
}

// httpRules is how mergeRules reads an HTTPRoute's rules.
var httpRules = ruleAccess[gatewayv1.HTTPRouteRule, gatewayv1.HTTPRouteFilter]{
	name:    func(r *gatewayv1.HTTPRouteRule) *gatewayv1.SectionName { return r.Name },
	filters: func(r *gatewayv1.HTTPRouteRule) *[]gatewayv1.HTTPRouteFilter { return &r.Filters },
	copy:    (*gatewayv1.HTTPRouteRule).DeepCopy,
}

// RouteFiltersRecord is the record (AnnotationRouteFilters) of an
// HTTPRoute the controller creates with rules: their filters are its own.
func RouteFiltersRecord(rules []gatewayv1.HTTPRouteRule) string {
	return filtersRecord(httpRules, rules)
}

// routeMeta is the metadata of the AppService's routes: its name, our
// label, and it as their controller.
func routeMeta(as *appv1.AppService) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            as.Name,
		Namespace:       as.Namespace,
		Labels:          SelectorLabels(as),
		OwnerReferences: []metav1.OwnerReference{*NewControllerRef(as)},
	}
}

// defaultParents are the spec's parents with the group and kind a
// route's CRD defaults: the Gateway API's Gateway.
func defaultParents(parents []gatewayv1.ParentReference) []gatewayv1.ParentReference {
	for i := range parents {
		p := &parents[i]
		if p.Group == nil {
			p.Group = new(gatewayv1.Group(gatewayv1.GroupName))
		}
		if p.Kind == nil {
			p.Kind = new(gatewayv1.Kind("Gateway"))
		}
	}
	return parents
}

// serviceBackend is a route's reference to port of the Service name, as
// the route's CRD defaults it.
func serviceBackend(name string, port gatewayv1.PortNumber) gatewayv1.BackendObjectReference {
	return gatewayv1.BackendObjectReference{
		Group: new(gatewayv1.Group("")),
		Kind:  new(gatewayv1.Kind("Service")),
		Name:  gatewayv1.ObjectName(name),
		Port:  new(port),
	}
}

// routePort is the number of the Service port a rule names, by number or
// name (a Gateway API backend names its port by number); the first of the
// spec's ports when it names none or a name the spec does not have.
func routePort(as *appv1.AppService, port *intstr.IntOrString) gatewayv1.PortNumber {
	switch {
	case port == nil:
	case port.Type == intstr.Int:
		return port.IntVal
	default:
		for _, p := range as.Spec.Ports {
			if p.Name == port.StrVal {
				return p.Port
			}
		}
	}
	return as.Spec.Ports[0].Port
}

// UpdateHTTPRoute returns a copy of live with the fields the controller
// owns set as in desired, and the names of those that changed; nil when
// nothing needs to change. live is never modified. Of the rules, those
// others add are kept (mergeRules).
func UpdateHTTPRoute(live, desired *gatewayv1.HTTPRoute) (*gatewayv1.HTTPRoute, []string) {
	out := live.DeepCopy()
	changed := ownedLabels(&out.ObjectMeta, desired.Labels)
	setOwned(&changed, "parentRefs", &out.Spec.ParentRefs, desired.Spec.ParentRefs)
	setOwned(&changed, "hostnames", &out.Spec.Hostnames, desired.Spec.Hostnames)
	rules, record := mergeRules(httpRules, live.Spec.Rules, desired.Spec.Rules, live.Annotations[appv1.AnnotationRouteFilters])
	setOwned(&changed, "rules", &out.Spec.Rules, rules)
	if setRecord(&out.Annotations, appv1.AnnotationRouteFilters, record) {
		changed = append(changed, "filters' record")
	}
	return updated(out, changed)
}

// HTTPRouteURL is where an HTTPRoute takes a browser: its first hostname
// that is not a wildcard, at the first rule's first path when that is a
// prefix or an exact path. Plain http: whether the Gateway's listener
// terminates TLS is the Gateway's business. "" without such a hostname.
func HTTPRouteURL(r *gatewayv1.HTTPRoute) string {
	for _, h := range r.Spec.Hostnames {
		if strings.HasPrefix(string(h), "*") {
			continue
		}
		path := "/"
		if len(r.Spec.Rules) > 0 && len(r.Spec.Rules[0].Matches) > 0 {
			if m := r.Spec.Rules[0].Matches[0].Path; m != nil && m.Value != nil && m.Type != nil &&
				(*m.Type == gatewayv1.PathMatchPathPrefix || *m.Type == gatewayv1.PathMatchExact) {
				path = *m.Value
			}
		}
		return "http://" + string(h) + path
	}
	return ""
}
