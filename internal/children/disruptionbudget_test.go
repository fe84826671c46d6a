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

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// desiredDisruptionBudget is the PodDisruptionBudget of the seed with
// minAvailable 50%.
func desiredDisruptionBudget() *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{
			Name:            fixtures.Name,
			Namespace:       fixtures.Namespace,
			Labels:          map[string]string{appv1.LabelAppService: fixtures.Name},
			OwnerReferences: []metav1.OwnerReference{fixtures.OwnerRef()},
		},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{appv1.LabelAppService: fixtures.Name}},
			MinAvailable: new(intstr.FromString("50%")),
		},
	}
}

func withBudget(s *appv1.AppServiceSpec) {
	s.DisruptionBudget = &appv1.DisruptionBudget{MinAvailable: new(intstr.FromString("50%"))}
}

func TestNewDisruptionBudget(t *testing.T) {
	as := fixtures.AppService()
	if b := NewDisruptionBudget(as); b != nil {
		t.Errorf("no disruptionBudget: got %v, want none", b)
	}
	withBudget(&as.Spec)
	fixtures.CheckEqual(t, "PodDisruptionBudget", desiredDisruptionBudget(), NewDisruptionBudget(as))
}

func TestUpdateDisruptionBudget(t *testing.T) {
	runUpdateCases(t, "PodDisruptionBudget", desiredDisruptionBudget, NewDisruptionBudget, UpdateDisruptionBudget, []updateCase[*policyv1.PodDisruptionBudget]{
		{name: "in line", spec: withBudget},
		{
			name: "the eviction policy and the status are others'",
			spec: withBudget,
			live: func(b *policyv1.PodDisruptionBudget) {
				b.Spec.UnhealthyPodEvictionPolicy = new(policyv1.AlwaysAllow)
				b.Status.DisruptionsAllowed = 1
			},
		},
		{
			name: "minAvailable to maxUnavailable",
			spec: func(s *appv1.AppServiceSpec) {
				s.DisruptionBudget = &appv1.DisruptionBudget{MaxUnavailable: new(intstr.FromInt32(1))}
			},
			want: func(b *policyv1.PodDisruptionBudget) {
				b.Spec.MinAvailable, b.Spec.MaxUnavailable = nil, new(intstr.FromInt32(1))
			},
			wantChanged: []string{"minAvailable", "maxUnavailable"},
		},
		{
			name:        "drift: the selector",
			spec:        withBudget,
			live:        func(b *policyv1.PodDisruptionBudget) { b.Spec.Selector = &metav1.LabelSelector{} },
			want:        func(b *policyv1.PodDisruptionBudget) { b.Spec.Selector = desiredDisruptionBudget().Spec.Selector },
			wantChanged: []string{"selector"},
		},
	})
}
