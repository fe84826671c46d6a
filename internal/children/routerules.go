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
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The rules of the controller's routes, HTTPRoute and GRPCRoute alike: it
// names those it writes (RuleName), owns only those, and keeps the rules
// others add and the filters others add to its own (mergeRules), with a
// record of the filters it wrote (appv1.AnnotationRouteFilters).

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

// ruleAccess is how mergeRules reads and copies the rules, of type R with
// filters of type F, of one kind of route.
type ruleAccess[R, F any] struct {
	name    func(*R) *gatewayv1.SectionName
	filters func(*R) *[]F
	copy    func(*R) *R
}

// filtersRecord is the record (AnnotationRouteFilters) of a route the
// controller creates with rules: their filters are its own.
func filtersRecord[R, F any](a ruleAccess[R, F], rules []R) string {
	var entries []string
	for i := range rules {
		for _, f := range *a.filters(&rules[i]) {
			entries = append(entries, string(*a.name(&rules[i]))+"/"+filterHash(f))
		}
	}
	slices.Sort(entries)
	return strings.Join(slices.Compact(entries), ",")
}

// filterHash is a short hash of a filter's JSON: the same filter, the same
// hash.
func filterHash(f any) string {
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
func mergeRules[R, F any](a ruleAccess[R, F], live, desired []R, record string) ([]R, string) {
	named := slices.ContainsFunc(live, func(r R) bool { return OwnRuleName(a.name(&r)) })
	ours := func(r *R) bool {
		if named {
			return OwnRuleName(a.name(r))
		}
		return a.name(r) == nil
	}
	sameName := func(r, d *R) bool {
		rn, dn := a.name(r), a.name(d)
		return named && rn != nil && dn != nil && *rn == *dn
	}
	wrote := map[string]bool{}
	for _, e := range recordedKeys(record) {
		wrote[e] = true
	}
	rules := make([]R, 0, len(desired))
	for j := range desired {
		d := a.copy(&desired[j])
		i := slices.IndexFunc(live, func(r R) bool { return sameName(&r, d) })
		if i >= 0 {
			mine := map[string]bool{}
			filters := a.filters(d)
			for _, f := range *filters {
				mine[filterHash(f)] = true
			}
			liveFilters := *a.filters(&live[i])
			var kept, same []F
			for _, f := range liveFilters {
				if h := filterHash(f); mine[h] {
					same = append(same, f)
				} else if !wrote[string(*a.name(d))+"/"+h] {
					kept = append(kept, f)
				}
			}
			if len(kept) > 0 && len(same)+len(kept) == len(liveFilters) && equality.Semantic.DeepEqual(same, *filters) {
				// Ours are as desired, in order, and only others'
				// are among them: where they are.
				*filters = *a.filters(a.copy(&live[i]))
			} else {
				*filters = append(*filters, kept...)
			}
		}
		rules = append(rules, *d)
	}
	// Each of ours that live has by name stays where it is; the others'
	// too. The rest of ours go after the last of ours kept, or where the
	// first of ours was, or first.
	out := make([]R, 0, len(live)+len(desired))
	placed := make([]bool, len(rules))
	at := -1
	for _, r := range live {
		if !ours(&r) {
			out = append(out, r)
			continue
		}
		if at < 0 {
			at = len(out)
		}
		if i := slices.IndexFunc(rules, func(d R) bool { return sameName(&r, &d) }); i >= 0 && !placed[i] {
			out, placed[i] = append(out, rules[i]), true
			at = len(out)
		}
	}
	var rest []R
	for i, d := range rules {
		if !placed[i] {
			rest = append(rest, d)
		}
	}
	out = slices.Insert(out, max(at, 0), rest...)
	// The record is of the filters the controller wrote: desired's, not
	// the others' kept beside them.
	return out, filtersRecord(a, desired)
}
