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
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The generators of affinity and topology spread constraints: node
// selector terms with every operator and value counts around what each
// needs, node fields, pod affinity terms with label selectors, namespaces,
// matchLabelKeys colliding with the selector or with mismatchLabelKeys,
// weights around 1 and 100; spread constraints repeating a key, with
// minDomains against whenUnsatisfiable and the node policies.

func genScheduling(r *specRand, s *appv1.AppServiceSpec) {
	if r.IntN(4) == 0 {
		s.Affinity = &corev1.Affinity{}
		if r.IntN(2) == 0 {
			s.Affinity.NodeAffinity = genNodeAffinity(r)
		}
		if r.IntN(2) == 0 {
			s.Affinity.PodAffinity = &corev1.PodAffinity{}
			s.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, s.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = genPodAffinityTerms(r)
		}
		if r.IntN(2) == 0 {
			s.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
			s.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, s.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = genPodAffinityTerms(r)
		}
	}
	if r.IntN(4) == 0 {
		for range 1 + r.IntN(3) {
			c := genSpreadConstraint(r)
			if hasSpreadConstraint(s.TopologySpreadConstraints, c) && !bad(r) {
				continue
			}
			s.TopologySpreadConstraints = append(s.TopologySpreadConstraints, c)
		}
	}
}

func hasSpreadConstraint(cs []corev1.TopologySpreadConstraint, c corev1.TopologySpreadConstraint) bool {
	for _, d := range cs {
		if d.TopologyKey == c.TopologyKey && d.WhenUnsatisfiable == c.WhenUnsatisfiable {
			return true
		}
	}
	return false
}

func genLabelKey(r *specRand) string {
	k := pick(r, "app", "topology.kubernetes.io/zone", "kubernetes.io/hostname", "example.com/tier", strings.Repeat("k", 63))
	if bad(r) {
		k = pick(r, "", "-a", "a/", "UPPER.example.com/x", strings.Repeat("k", 64), "a b")
	}
	return k
}

func genLabelValues(r *specRand, n int) []string {
	var out []string
	for range n {
		v := pick(r, "web", "eu-west-1a", "", "a.b_c-D", strings.Repeat("v", 63))
		if bad(r) {
			v = pick(r, "-a", "a b", strings.Repeat("v", 64))
		}
		out = append(out, v)
	}
	return out
}

func genNodeSelectorTerm(r *specRand) corev1.NodeSelectorTerm {
	var t corev1.NodeSelectorTerm
	for range r.IntN(3) {
		e := corev1.NodeSelectorRequirement{Key: genLabelKey(r), Operator: pick(r, corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt)}
		switch e.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			e.Values = genLabelValues(r, 1+r.IntN(2))
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			e.Values = []string{pick(r, "5", "100")}
		}
		if bad(r) {
			switch r.IntN(3) {
			case 0:
				e.Values = nil
			case 1:
				e.Values = []string{"1", "2"}
			case 2:
				e.Operator = pick[corev1.NodeSelectorOperator](r, "in", "Equals")
			}
		}
		t.MatchExpressions = append(t.MatchExpressions, e)
	}
	if r.IntN(4) == 0 {
		f := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: pick(r, corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn), Values: []string{pick(r, "node-1", "a.b.example.com")}}
		if bad(r) {
			switch r.IntN(3) {
			case 0:
				f.Key = "metadata.namespace"
			case 1:
				f.Operator = corev1.NodeSelectorOpExists
			case 2:
				f.Values = []string{"Node_1"}
			}
		}
		t.MatchFields = append(t.MatchFields, f)
	}
	return t
}

func genNodeAffinity(r *specRand) *corev1.NodeAffinity {
	na := &corev1.NodeAffinity{}
	if r.IntN(2) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
		n := 1 + r.IntN(2)
		if bad(r) {
			n = 0
		}
		for range n {
			na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, genNodeSelectorTerm(r))
		}
	}
	for range r.IntN(3) {
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: genWeight(r), Preference: genNodeSelectorTerm(r)})
	}
	return na
}

func genWeight(r *specRand) int32 {
	if bad(r) {
		return pick(r, int32(0), 101, -1)
	}
	return pick(r, int32(1), 50, 100)
}

func genLabelSelector(r *specRand) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{}
	if r.IntN(2) == 0 {
		sel.MatchLabels = map[string]string{}
		for range 1 + r.IntN(2) {
			sel.MatchLabels[genLabelKey(r)] = genLabelValues(r, 1)[0]
		}
	}
	for range r.IntN(3) {
		e := metav1.LabelSelectorRequirement{Key: genLabelKey(r), Operator: pick(r, metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist)}
		if e.Operator == metav1.LabelSelectorOpIn || e.Operator == metav1.LabelSelectorOpNotIn {
			e.Values = genLabelValues(r, 1+r.IntN(2))
		}
		if bad(r) {
			if len(e.Values) == 0 {
				e.Values = []string{"x"}
			} else {
				e.Values = nil
			}
		}
		sel.MatchExpressions = append(sel.MatchExpressions, e)
	}
	return sel
}

func genPodAffinityTerm(r *specRand) corev1.PodAffinityTerm {
	t := corev1.PodAffinityTerm{TopologyKey: pick(r, "kubernetes.io/hostname", "topology.kubernetes.io/zone")}
	if bad(r) {
		t.TopologyKey = pick(r, "", "a b", "-zone")
	}
	if r.IntN(4) > 0 {
		t.LabelSelector = genLabelSelector(r)
	}
	if r.IntN(4) == 0 {
		t.NamespaceSelector = genLabelSelector(r)
	}
	if r.IntN(4) == 0 {
		t.Namespaces = []string{pick(r, "default", "team-a")}
		if bad(r) {
			t.Namespaces = []string{pick(r, "Team", "a.b", strings.Repeat("n", 64))}
		}
	}
	for range r.IntN(3) {
		t.MatchLabelKeys = append(t.MatchLabelKeys, pick(r, "pod-template-hash", "app", "version"))
	}
	if r.IntN(4) == 0 {
		t.MismatchLabelKeys = []string{pick(r, "tenant", "app", "version")}
	}
	return t
}

func genPodAffinityTerms(r *specRand) ([]corev1.PodAffinityTerm, []corev1.WeightedPodAffinityTerm) {
	var required []corev1.PodAffinityTerm
	var preferred []corev1.WeightedPodAffinityTerm
	for range r.IntN(3) {
		required = append(required, genPodAffinityTerm(r))
	}
	for range r.IntN(3) {
		preferred = append(preferred, corev1.WeightedPodAffinityTerm{Weight: genWeight(r), PodAffinityTerm: genPodAffinityTerm(r)})
	}
	return required, preferred
}

func genSpreadConstraint(r *specRand) corev1.TopologySpreadConstraint {
	c := corev1.TopologySpreadConstraint{
		MaxSkew:           pick(r, int32(1), 2, 10),
		TopologyKey:       pick(r, "topology.kubernetes.io/zone", "kubernetes.io/hostname", "any key at all"),
		WhenUnsatisfiable: pick(r, corev1.DoNotSchedule, corev1.ScheduleAnyway),
	}
	if bad(r) {
		c.MaxSkew = pick(r, int32(0), -1)
	}
	if bad(r) {
		c.TopologyKey = ""
	}
	if bad(r) {
		c.WhenUnsatisfiable = "Never"
	}
	if r.IntN(3) > 0 {
		c.LabelSelector = genLabelSelector(r)
	}
	if r.IntN(3) == 0 {
		c.MinDomains = new(pick(r, int32(1), 3))
		if bad(r) {
			c.MinDomains = new(int32(0))
		}
	}
	if r.IntN(4) == 0 {
		c.NodeAffinityPolicy = new(pick(r, corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore))
		if bad(r) {
			c.NodeAffinityPolicy = new(corev1.NodeInclusionPolicy("Maybe"))
		}
	}
	if r.IntN(4) == 0 {
		c.NodeTaintsPolicy = new(pick(r, corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore))
	}
	for range r.IntN(3) {
		c.MatchLabelKeys = append(c.MatchLabelKeys, pick(r, "pod-template-hash", "app", "version"))
	}
	if len(c.MatchLabelKeys) > 0 {
		if bad(r) {
			c.MatchLabelKeys = []string{"not a key"}
		}
	}
	return c
}
