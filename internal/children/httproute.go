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
	"encoding/json"
	"hash/fnv"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
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
		ObjectMeta: metav1.ObjectMeta{
			Name:            as.Name,
			Namespace:       as.Namespace,
			Labels:          SelectorLabels(as),
			OwnerReferences: []metav1.OwnerReference{*NewControllerRef(as)},
		},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: r.ParentRefs},
			Hostnames:       r.Hostnames,
		},
	}
	for i := range out.Spec.ParentRefs {
		p := &out.Spec.ParentRefs[i]
		if p.Group == nil {
			p.Group = new(gatewayv1.Group(gatewayv1.GroupName))
		}
		if p.Kind == nil {
			p.Kind = new(gatewayv1.Kind("Gateway"))
		}
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
				BackendObjectReference: gatewayv1.BackendObjectReference{
					Group: new(gatewayv1.Group("")),
					Kind:  new(gatewayv1.Kind("Service")),
					Name:  gatewayv1.ObjectName(as.Name),
					Port:  new(routePort(as, rule.Port)),
				},
				Weight: new(int32(1)),
			}}},
		})
	}
	setRecord(&out.Annotations, appv1.AnnotationRouteFilters, RouteFiltersRecord(out.Spec.Rules))
	return out
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

// RuleName is the name the controller gives the rule made of the spec's
// rule i ("appservice-0"), and its twin of kind ("testers", "sticky"):
// GEP-995's rule names, by which it tells its rules from others'.
func RuleName(i int, kind string) string {
	name := ruleNamePrefix + strconv.Itoa(i)
	if kind != "" {
		name += "-" + kind
	}
	return name
}

const ruleNamePrefix = "appservice-"

// OwnRuleName reports whether a rule's name is one the controller gives
// (RuleName).
func OwnRuleName(name *gatewayv1.SectionName) bool {
	return name != nil && ownRuleName.MatchString(string(*name))
}

var ownRuleName = regexp.MustCompile(`^` + ruleNamePrefix + `(0|[1-9][0-9]{0,2})(-testers|-sticky)?$`)

// UpdateHTTPRoute returns a copy of live with the fields the controller
// owns set as in desired, and the names of those that changed; nil when
// nothing needs to change. live is never modified. Of the rules, those
// others add are kept (mergeRules).
func UpdateHTTPRoute(live, desired *gatewayv1.HTTPRoute) (*gatewayv1.HTTPRoute, []string) {
	out := live.DeepCopy()
	changed := ownedLabels(&out.ObjectMeta, desired.Labels)
	setOwned(&changed, "parentRefs", &out.Spec.ParentRefs, desired.Spec.ParentRefs)
	setOwned(&changed, "hostnames", &out.Spec.Hostnames, desired.Spec.Hostnames)
	rules, record := mergeRules(live.Spec.Rules, desired.Spec.Rules, live.Annotations[appv1.AnnotationRouteFilters])
	setOwned(&changed, "rules", &out.Spec.Rules, rules)
	if setRecord(&out.Annotations, appv1.AnnotationRouteFilters, record) {
		changed = append(changed, "filters' record")
	}
	return updated(out, changed)
}

// RouteFiltersRecord is the record (AnnotationRouteFilters) of a route the
// controller creates with rules: their filters are its own.
func RouteFiltersRecord(rules []gatewayv1.HTTPRouteRule) string {
	var entries []string
	for _, r := range rules {
		for _, f := range r.Filters {
			entries = append(entries, string(*r.Name)+"/"+filterHash(f))
		}
	}
	slices.Sort(entries)
	return strings.Join(slices.Compact(entries), ",")
}

// filterHash is a short hash of a filter's JSON: the same filter, the same
// hash.
func filterHash(f gatewayv1.HTTPRouteFilter) string {
	data, err := json.Marshal(f)
	if err != nil {
		return "" // a filter always encodes
	}
	h := fnv.New32a()
	h.Write(data)
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}

// mergeRules is the route's rules with the controller's as desired says,
// and the record of its filters in them: live's rules of others (not named
// by RuleName) are kept where they are, and so are the controller's that
// desired has too (by name); its new ones go after the last of those (or
// where its first was, or first); a filter of live's rule by a
// name desired has too is kept when it is neither one the controller wrote
// last time (record) nor one desired has: someone else added it. A route
// written before the controller named its rules (none named so) was all
// the controller's: its rules without a name are taken as its own, and
// their filters too, so that an upgrade writes each route once.
func mergeRules(live, desired []gatewayv1.HTTPRouteRule, record string) ([]gatewayv1.HTTPRouteRule, string) {
	named := slices.ContainsFunc(live, func(r gatewayv1.HTTPRouteRule) bool { return OwnRuleName(r.Name) })
	ours := func(r gatewayv1.HTTPRouteRule) bool {
		if named {
			return OwnRuleName(r.Name)
		}
		return r.Name == nil
	}
	wrote := map[string]bool{}
	for _, e := range recordedKeys(record) {
		wrote[e] = true
	}
	rules := make([]gatewayv1.HTTPRouteRule, 0, len(desired))
	for _, d := range desired {
		d = *d.DeepCopy()
		i := slices.IndexFunc(live, func(r gatewayv1.HTTPRouteRule) bool {
			return named && r.Name != nil && d.Name != nil && *r.Name == *d.Name
		})
		if i >= 0 {
			mine := map[string]bool{}
			for _, f := range d.Filters {
				mine[filterHash(f)] = true
			}
			var kept, same []gatewayv1.HTTPRouteFilter
			for _, f := range live[i].Filters {
				if h := filterHash(f); mine[h] {
					same = append(same, f)
				} else if !wrote[string(*d.Name)+"/"+h] {
					kept = append(kept, f)
				}
			}
			if len(kept) > 0 && len(same)+len(kept) == len(live[i].Filters) && equality.Semantic.DeepEqual(same, d.Filters) {
				// Ours are as desired, in order, and only others'
				// are among them: where they are.
				d.Filters = live[i].DeepCopy().Filters
			} else {
				d.Filters = append(d.Filters, kept...)
			}
		}
		rules = append(rules, d)
	}
	// Each of ours that live has by name stays where it is; the others'
	// too. The rest of ours go after the last of ours kept, or where the
	// first of ours was, or first.
	out := make([]gatewayv1.HTTPRouteRule, 0, len(live)+len(desired))
	placed := make([]bool, len(rules))
	at := -1
	for _, r := range live {
		if !ours(r) {
			out = append(out, r)
			continue
		}
		if at < 0 {
			at = len(out)
		}
		if i := slices.IndexFunc(rules, func(d gatewayv1.HTTPRouteRule) bool {
			return named && r.Name != nil && *d.Name == *r.Name
		}); i >= 0 && !placed[i] {
			out, placed[i] = append(out, rules[i]), true
			at = len(out)
		}
	}
	var rest []gatewayv1.HTTPRouteRule
	for i, d := range rules {
		if !placed[i] {
			rest = append(rest, d)
		}
	}
	out = slices.Insert(out, max(at, 0), rest...)
	// The record is of the filters the controller wrote: desired's, not
	// the others' kept beside them.
	return out, RouteFiltersRecord(desired)
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
