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

package main

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/configrollout"
	"example.com/appservice-controller/internal/owner"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The kinds of child, as the sync of one AppService sees them: for each,
// its name, client and cache, what "differs" means (internal/children), and
// why one goes when the spec asks for none. Creating, claiming, updating
// and deleting them is the same for every kind and every owner kind:
// owner.ChildKind's Sync and Ensure (internal/owner). The HTTPRoute, which
// the cluster may not serve, is in routes.go.

func (s *appSync) serviceAccounts() owner.ChildKind[*corev1.ServiceAccount] {
	return owner.ChildKind[*corev1.ServiceAccount]{
		Name: "ServiceAccount", Client: s.c.kubeClient.CoreV1().ServiceAccounts(s.as.Namespace),
		Cache: s.c.serviceAccounts, Diff: children.UpdateServiceAccount, Unwanted: "the spec creates none",
	}
}

// deployments: while autoscaling, the live replica count is the
// autoscaler's, and kept (but for 0, where a suspension left it: see
// children.AutoscaledReplicas). Suspended, it is 0, whoever scaled it.
// A config rollout held (throttleConfigRollout) keeps the config digest of
// live, the Deployment the update is made from.
// While a canary runs a new template, the Deployment keeps the one its
// Pods run (children.HoldTemplate), at the canary decision's count when it
// gives Pods up to it (shrinkStable). A template change is marked with why
// it happens (configrollout.Mark). The canary's own Deployment is
// canaryDeployments'.
func (s *appSync) deployments() owner.ChildKind[*appsv1.Deployment] {
	autoscaled := children.Autoscaled(s.as)
	return owner.ChildKind[*appsv1.Deployment]{
		Name: "Deployment", Client: s.c.kubeClient.AppsV1().Deployments(s.as.Namespace),
		Cache: s.c.deployments,
		Diff: func(live, desired *appsv1.Deployment) (*appsv1.Deployment, []string) {
			if autoscaled || s.configHeld || s.canary.StableReplicas != nil {
				desired = desired.DeepCopy()
			}
			if autoscaled {
				desired.Spec.Replicas = children.AutoscaledReplicas(s.as, live.Spec.Replicas)
			}
			if r := s.canary.StableReplicas; r != nil {
				// A canary by Pods holds the Pods it took (shrinkStable).
				desired.Spec.Replicas = new(*r)
			}
			if s.configHeld {
				delete(desired.Spec.Template.Annotations, appv1.AnnotationConfigDigest)
				children.SetConfigDigest(desired, children.ConfigDigestOf(live))
			}
			updated, changed := children.UpdateDeployment(live, desired)
			if s.canary.HoldStable {
				updated, changed = children.HoldTemplate(live, updated, changed)
			}
			configrollout.Mark(live, updated, s.configRollout)
			return updated, changed
		},
	}
}

// canaryDeployments: the canary's Deployment (canary.go), a Deployment of
// the same cache whose replica count is the canary decision's, and whose
// template is the spec's, as written.
func (s *appSync) canaryDeployments() owner.ChildKind[*appsv1.Deployment] {
	k := s.deployments()
	k.Diff = children.UpdateDeployment
	return k
}

func (s *appSync) services() owner.ChildKind[*corev1.Service] {
	return owner.ChildKind[*corev1.Service]{
		Name: "Service", Client: s.c.kubeClient.CoreV1().Services(s.as.Namespace),
		Cache: s.c.services, Diff: children.UpdateService, Unwanted: "the spec has no ports",
	}
}

func (s *appSync) ingresses() owner.ChildKind[*networkingv1.Ingress] {
	return owner.ChildKind[*networkingv1.Ingress]{
		Name: "Ingress", Client: s.c.kubeClient.NetworkingV1().Ingresses(s.as.Namespace),
		Cache: s.c.ingresses, Diff: children.UpdateIngress, Unwanted: "the spec has no ingress (or no ports)",
	}
}

func (s *appSync) disruptionBudgets() owner.ChildKind[*policyv1.PodDisruptionBudget] {
	return owner.ChildKind[*policyv1.PodDisruptionBudget]{
		Name: "PodDisruptionBudget", Client: s.c.kubeClient.PolicyV1().PodDisruptionBudgets(s.as.Namespace),
		Cache: s.c.disruptionBudgets, Diff: children.UpdateDisruptionBudget, Unwanted: "the spec has no disruptionBudget",
	}
}

// autoscalers: none while suspended, as an autoscaler cannot hold zero
// replicas.
func (s *appSync) autoscalers() owner.ChildKind[*autoscalingv2.HorizontalPodAutoscaler] {
	unwanted := "the spec has no autoscaling"
	if children.Suspended(s.as) {
		unwanted = "the AppService is suspended"
	}
	return owner.ChildKind[*autoscalingv2.HorizontalPodAutoscaler]{
		Name: "HorizontalPodAutoscaler", Client: s.c.kubeClient.AutoscalingV2().HorizontalPodAutoscalers(s.as.Namespace),
		Cache: s.c.autoscalers, Diff: children.UpdateAutoscaler, Unwanted: unwanted,
	}
}

// activities are a canary's tests (canary.go): Activities the AppService
// owns, one per test run.
func (s *appSync) activities() owner.ChildKind[*appv1.Activity] {
	return owner.ChildKind[*appv1.Activity]{
		Name: "Activity", Client: s.c.appClient.AppV1().Activities(s.as.Namespace),
		Cache: s.c.activities, Diff: children.UpdateActivity, Unwanted: "its canary's tests are over",
	}
}
