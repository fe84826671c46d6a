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
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The HorizontalPodAutoscaler's pure part. The controller owns our label and
// the whole spec: the target (the AppService's Deployment), the replica
// bounds, the metrics and the behavior, each with the API server's defaults
// filled in, so that the defaulted live object compares equal. The status is
// the autoscaler's.

// Autoscaled reports whether a HorizontalPodAutoscaler owns the replica
// count of the AppService's Deployment: it asks for autoscaling and is not
// suspended (an autoscaler cannot hold zero replicas).
func Autoscaled(as *appv1.AppService) bool {
	return as.Spec.Autoscaling != nil && !Suspended(as)
}

// Suspended reports whether the AppService asks to be suspended: its
// Deployment at 0 replicas and no autoscaler, everything else kept.
func Suspended(as *appv1.AppService) bool {
	return as.Spec.Suspend != nil && *as.Spec.Suspend
}

// AutoscaledReplicas is the replica count of an autoscaled Deployment: the
// live one, the autoscaler's, unless it is 0. An autoscaler does not scale
// a Deployment at 0 (it reads that as scaling turned off), which is where
// a suspension leaves it: on resuming, the Deployment starts again from the
// autoscaler's minimum.
func AutoscaledReplicas(as *appv1.AppService, live *int32) *int32 {
	if live == nil || *live == 0 {
		return DesiredReplicas(as)
	}
	return new(*live)
}

// NewAutoscaler returns the HorizontalPodAutoscaler an AppService asks for,
// or nil when it asks for none, or is suspended.
func NewAutoscaler(as *appv1.AppService) *autoscalingv2.HorizontalPodAutoscaler {
	if !Autoscaled(as) {
		return nil
	}
	a := as.Spec.Autoscaling.DeepCopy()
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Name:            as.Name,
			Namespace:       as.Namespace,
			Labels:          SelectorLabels(as),
			OwnerReferences: []metav1.OwnerReference{*NewControllerRef(as)},
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: appsv1.SchemeGroupVersion.String(),
				Kind:       "Deployment",
				Name:       as.Name,
			},
			MinReplicas: new(orDefault(a.MinReplicas, 1)),
			MaxReplicas: a.MaxReplicas,
			Metrics:     metrics(a),
			Behavior:    normalizeBehavior(a.Behavior),
		},
	}
}

// defaultCPUUtilization is the target the API server sets on an autoscaler
// given no metrics.
const defaultCPUUtilization = 80

// metrics are the utilization targets asked for: CPU then memory, or the
// API server's default, 80% CPU, when neither is given.
func metrics(a *appv1.Autoscaling) []autoscalingv2.MetricSpec {
	cpu := a.TargetCPUUtilizationPercentage
	if cpu == nil && a.TargetMemoryUtilizationPercentage == nil {
		cpu = new(int32(defaultCPUUtilization))
	}
	var out []autoscalingv2.MetricSpec
	for _, t := range []struct {
		name   corev1.ResourceName
		target *int32
	}{{corev1.ResourceCPU, cpu}, {corev1.ResourceMemory, a.TargetMemoryUtilizationPercentage}} {
		if t.target == nil {
			continue
		}
		out = append(out, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name: t.name,
				Target: autoscalingv2.MetricTarget{
					Type:               autoscalingv2.UtilizationMetricType,
					AverageUtilization: t.target,
				},
			},
		})
	}
	return out
}

// normalizeBehavior fills in the API server's defaults (autoscaling/v2): a
// behavior given at all gets both directions' rules, and each rule the
// fields it leaves out. Scaling up: no stabilization window, the larger of
// 4 Pods and 100% per 15 s. Scaling down: the window left unset (the
// autoscaler's --horizontal-pod-autoscaler-downscale-stabilization flag
// applies), 100% per 15 s. The policies are replaced as a whole.
func normalizeBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if b == nil {
		return nil
	}
	max := autoscalingv2.MaxChangePolicySelect
	up := &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: new(int32(0)),
		SelectPolicy:               &max,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
	down := &autoscalingv2.HPAScalingRules{
		SelectPolicy: new(max),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   withRules(up, b.ScaleUp),
		ScaleDown: withRules(down, b.ScaleDown),
	}
}

// withRules sets in defaults every field given in rules.
func withRules(defaults, rules *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if rules == nil {
		return defaults
	}
	if rules.StabilizationWindowSeconds != nil {
		defaults.StabilizationWindowSeconds = new(*rules.StabilizationWindowSeconds)
	}
	if rules.SelectPolicy != nil {
		defaults.SelectPolicy = new(*rules.SelectPolicy)
	}
	if len(rules.Policies) > 0 {
		defaults.Policies = append([]autoscalingv2.HPAScalingPolicy(nil), rules.Policies...)
	}
	if rules.Tolerance != nil {
		defaults.Tolerance = new(rules.Tolerance.DeepCopy())
	}
	return defaults
}

// UpdateAutoscaler returns a copy of live with the fields the controller
// owns set as in desired, and the names of those that changed; nil when
// nothing needs to change. live is never modified.
func UpdateAutoscaler(live, desired *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, []string) {
	out := live.DeepCopy()
	changed := ownedLabels(&out.ObjectMeta, desired.Labels)
	setOwned(&changed, "scaleTargetRef", &out.Spec.ScaleTargetRef, desired.Spec.ScaleTargetRef)
	setOwned(&changed, "minReplicas", &out.Spec.MinReplicas, desired.Spec.MinReplicas)
	setOwned(&changed, "maxReplicas", &out.Spec.MaxReplicas, desired.Spec.MaxReplicas)
	setOwned(&changed, "metrics", &out.Spec.Metrics, desired.Spec.Metrics)
	setOwned(&changed, "behavior", &out.Spec.Behavior, desired.Spec.Behavior)
	return updated(out, changed)
}
