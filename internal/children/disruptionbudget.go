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
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The PodDisruptionBudget's pure part. The controller owns our label, the
// selector, minAvailable and maxUnavailable; the rest of the spec (the
// unhealthy Pod eviction policy) and the status, which the disruption
// controller writes, are someone else's.

// NewDisruptionBudget returns the PodDisruptionBudget an AppService asks
// for, or nil when it asks for none.
func NewDisruptionBudget(as *appv1.AppService) *policyv1.PodDisruptionBudget {
	b := as.Spec.DisruptionBudget
	if b == nil {
		return nil
	}
	b = b.DeepCopy()
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{
			Name:            as.Name,
			Namespace:       as.Namespace,
			Labels:          SelectorLabels(as),
			OwnerReferences: []metav1.OwnerReference{*NewControllerRef(as)},
		},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: SelectorLabels(as)},
			MinAvailable:   b.MinAvailable,
			MaxUnavailable: b.MaxUnavailable,
		},
	}
}

// UpdateDisruptionBudget returns a copy of live with the fields the
// controller owns set as in desired, and the names of those that changed;
// nil when nothing needs to change. live is never modified.
func UpdateDisruptionBudget(live, desired *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, []string) {
	out := live.DeepCopy()
	changed := ownedLabels(&out.ObjectMeta, desired.Labels)
	setOwned(&changed, "selector", &out.Spec.Selector, desired.Spec.Selector)
	setOwned(&changed, "minAvailable", &out.Spec.MinAvailable, desired.Spec.MinAvailable)
	setOwned(&changed, "maxUnavailable", &out.Spec.MaxUnavailable, desired.Spec.MaxUnavailable)
	return updated(out, changed)
}
