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

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func utilization(name corev1.ResourceName, percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   name,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: new(percent)},
		},
	}
}

// desiredAutoscaler is the HorizontalPodAutoscaler of the seed with
// autoscaling from 2 to 10 replicas and no target: the API server's 80% CPU.
func desiredAutoscaler() *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Name:            fixtures.Name,
			Namespace:       fixtures.Namespace,
			Labels:          map[string]string{appv1.LabelAppService: fixtures.Name},
			OwnerReferences: []metav1.OwnerReference{fixtures.OwnerRef()},
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: fixtures.Name},
			MinReplicas:    new(int32(2)),
			MaxReplicas:    10,
			Metrics:        []autoscalingv2.MetricSpec{utilization(corev1.ResourceCPU, 80)},
		},
	}
}

func withAutoscaling(s *appv1.AppServiceSpec) {
	s.Autoscaling = &appv1.Autoscaling{MinReplicas: new(int32(2)), MaxReplicas: 10}
}

func TestNewAutoscaler(t *testing.T) {
	max, min := autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect
	tests := []struct {
		name string
		spec func(*appv1.Autoscaling)
		want func(*autoscalingv2.HorizontalPodAutoscaler) // applied to desiredAutoscaler
	}{
		{name: "bounds only: 80% CPU"},
		{
			name: "minReplicas unset: 1",
			spec: func(a *appv1.Autoscaling) { a.MinReplicas = nil },
			want: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = new(int32(1)) },
		},
		{
			name: "memory only",
			spec: func(a *appv1.Autoscaling) { a.TargetMemoryUtilizationPercentage = new(int32(70)) },
			want: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Metrics = []autoscalingv2.MetricSpec{utilization(corev1.ResourceMemory, 70)}
			},
		},
		{
			name: "CPU and memory",
			spec: func(a *appv1.Autoscaling) {
				a.TargetCPUUtilizationPercentage, a.TargetMemoryUtilizationPercentage = new(int32(60)), new(int32(70))
			},
			want: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Metrics = []autoscalingv2.MetricSpec{utilization(corev1.ResourceCPU, 60), utilization(corev1.ResourceMemory, 70)}
			},
		},
		{
			// As the API server defaults it: both directions, every field.
			name: "behavior: a scale-down window only",
			spec: func(a *appv1.Autoscaling) {
				a.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
					ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: new(int32(60)), Tolerance: new(resource.MustParse("0.05"))},
				}
			},
			want: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
					ScaleUp: &autoscalingv2.HPAScalingRules{
						StabilizationWindowSeconds: new(int32(0)),
						SelectPolicy:               &max,
						Policies: []autoscalingv2.HPAScalingPolicy{
							{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
							{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
						},
					},
					ScaleDown: &autoscalingv2.HPAScalingRules{
						StabilizationWindowSeconds: new(int32(60)),
						SelectPolicy:               &max,
						Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
						Tolerance:                  new(resource.MustParse("50m")),
					},
				}
			},
		},
		{
			name: "behavior: policies replace the defaults",
			spec: func(a *appv1.Autoscaling) {
				a.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
					SelectPolicy: &min,
					Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}},
				}}
			},
			want: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
					ScaleUp: &autoscalingv2.HPAScalingRules{
						StabilizationWindowSeconds: new(int32(0)),
						SelectPolicy:               &min,
						Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}},
					},
					ScaleDown: &autoscalingv2.HPAScalingRules{
						SelectPolicy: &max,
						Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
					},
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService()
			withAutoscaling(&as.Spec)
			fixtures.Tweak(tc.spec, as.Spec.Autoscaling)
			want := desiredAutoscaler()
			fixtures.Tweak(tc.want, want)
			fixtures.CheckEqual(t, "HorizontalPodAutoscaler", want, NewAutoscaler(as))
		})
	}
	if h := NewAutoscaler(fixtures.AppService()); h != nil {
		t.Errorf("no autoscaling: got %v, want none", h)
	}
	suspended := fixtures.AppService()
	withAutoscaling(&suspended.Spec)
	suspended.Spec.Suspend = new(true)
	if h := NewAutoscaler(suspended); h != nil {
		t.Errorf("suspended: got %v, want none (an autoscaler cannot hold zero replicas)", h)
	}
}

// TestAutoscaledReplicas: the Deployment starts at minReplicas, whatever
// the size.
func TestAutoscaledReplicas(t *testing.T) {
	as := fixtures.AppService()
	as.Spec.Size = new(int32(7))
	withAutoscaling(&as.Spec)
	if got := *NewDeployment(as).Spec.Replicas; got != 2 {
		t.Errorf("replicas = %d, want minReplicas, 2", got)
	}
	if !Autoscaled(as) || Autoscaled(fixtures.AppService()) {
		t.Error("Autoscaled does not follow spec.autoscaling")
	}
	suspended := as.DeepCopy()
	suspended.Spec.Suspend = new(true)
	if Autoscaled(suspended) || !Suspended(suspended) {
		t.Error("a suspended AppService is autoscaled, or not suspended")
	}
	// The live count is the autoscaler's and kept, but for 0: where a
	// suspension left it, and where an autoscaler would not scale it from.
	for _, tc := range []struct {
		live *int32
		want int32
	}{{new(int32(5)), 5}, {new(int32(1)), 1}, {new(int32(0)), 2}, {nil, 2}} {
		if got := *AutoscaledReplicas(as, tc.live); got != tc.want {
			t.Errorf("AutoscaledReplicas(live %v) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

func TestUpdateAutoscaler(t *testing.T) {
	runUpdateCases(t, "HorizontalPodAutoscaler", desiredAutoscaler, NewAutoscaler, UpdateAutoscaler, []updateCase[*autoscalingv2.HorizontalPodAutoscaler]{
		{name: "in line", spec: withAutoscaling},
		{
			name: "the status is the autoscaler's",
			spec: withAutoscaling,
			live: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Status.CurrentReplicas, h.Status.DesiredReplicas = 4, 5
				h.Labels["team"] = "a"
			},
		},
		{
			name: "bounds and target changed",
			spec: func(s *appv1.AppServiceSpec) {
				withAutoscaling(s)
				s.Autoscaling.MaxReplicas = 20
				s.Autoscaling.TargetCPUUtilizationPercentage = new(int32(50))
			},
			want: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.MaxReplicas = 20
				h.Spec.Metrics = []autoscalingv2.MetricSpec{utilization(corev1.ResourceCPU, 50)}
			},
			wantChanged: []string{"maxReplicas", "metrics"},
		},
		{
			name:        "drift: the target",
			spec:        withAutoscaling,
			live:        func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = "other" },
			want:        func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = fixtures.Name },
			wantChanged: []string{"scaleTargetRef"},
		},
	})
}
