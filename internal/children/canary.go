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
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The canary's children (spec.canary; docs/design.md, "Canary"): a second
// Deployment, NAME-canary, running the new Pod template, and, by route, a
// ClusterIP Service of the same name in front of it, which the HTTPRoute
// weighs against the AppService's Service. By route, their Pods carry
// LabelCanary instead of LabelAppService: the stable Deployment, the
// Service and the PodDisruptionBudget, which select LabelAppService, never
// see them. By Pods (no httpRoute), they carry both, and the Service sends
// them their share of the Pods. Either way none of those changes when a
// canary is turned on. What "differs" means for them is UpdateDeployment's
// and UpdateService's.

// CanaryName is the name of an AppService's canary Deployment and Service:
// NAME-canary, or NAME-preview for a blue-green release
// (spec.canary.blueGreen).
func CanaryName(as *appv1.AppService) string {
	if BlueGreen(as) {
		return as.Name + "-preview"
	}
	return as.Name + "-canary"
}

// BlueGreen reports whether the AppService releases by blue-green.
func BlueGreen(as *appv1.AppService) bool {
	return as.Spec.Canary != nil && as.Spec.Canary.BlueGreen != nil
}

// SwitchedSelector is the AppService's Service's selector once a blue-green
// release without a route has switched: the preview's Pods of the
// template hash names, and no other.
func SwitchedSelector(as *appv1.AppService, hash string) map[string]string {
	return mergeLabels(CanarySelectorLabels(as), map[string]string{appv1.LabelTemplate: hash})
}

// CanarySelectorLabels are the labels that tie the canary's Pods to its
// Deployment and Service.
func CanarySelectorLabels(as *appv1.AppService) map[string]string {
	return map[string]string{appv1.LabelCanary: as.Name}
}

// canaryObjectLabels are the labels on the canary's Deployment and
// Service: LabelAppService, which the controller lists its children by and
// claims them with, and LabelCanary, for `kubectl get -l`.
func canaryObjectLabels(as *appv1.AppService) map[string]string {
	return mergeLabels(SelectorLabels(as), CanarySelectorLabels(as))
}

// NewCanaryDeployment returns the canary's Deployment: stable, the
// Deployment the spec asks for (NewDeployment, with its config digest),
// renamed, at replicas, its selector LabelCanary. Its Pods are labelled
// LabelCanary instead of LabelAppService, out of the AppService's Service
// (a canary by route, which has a Service of its own); byPods, they keep
// LabelAppService too, and serve behind the AppService's Service beside
// the stable Pods (a canary by Pods). The stable Deployment's selector
// then matches them too; it leaves them alone, for they and their
// ReplicaSet are controlled by the canary's Deployment, and its
// ReplicaSets' selectors add the pod-template-hash, which differs.
func NewCanaryDeployment(as *appv1.AppService, stable *appsv1.Deployment, replicas int32, byPods bool) *appsv1.Deployment {
	d := stable.DeepCopy()
	d.Name = CanaryName(as)
	d.Labels = canaryObjectLabels(as)
	d.Spec.Replicas = &replicas
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: CanarySelectorLabels(as)}
	if !byPods {
		delete(d.Spec.Template.Labels, appv1.LabelAppService)
	}
	d.Spec.Template.Labels = mergeLabels(d.Spec.Template.Labels, CanarySelectorLabels(as))
	if BlueGreen(as) {
		// Named by its template, for the Service's selector at the switch.
		d.Spec.Template.Labels[appv1.LabelTemplate] = TemplateHash(stable)
		if as.Spec.Canary.BlueGreen.AntiAffinity {
			d.Spec.Template.Spec.Affinity = previewAntiAffinity(as, d.Spec.Template.Spec.Affinity)
		}
	}
	return d
}

// NewPreviewHTTPRoute returns the HTTPRoute of a blue-green release's
// preview hostname (spec.canary.blueGreen.previewHostname): NAME-preview,
// on the httpRoute's parents, sending all of that host's requests to the
// preview's Service. Nil without a hostname, an httpRoute or ports.
func NewPreviewHTTPRoute(as *appv1.AppService) *gatewayv1.HTTPRoute {
	if !BlueGreen(as) || as.Spec.Canary.BlueGreen.PreviewHostname == "" || as.Spec.HTTPRoute == nil {
		return nil
	}
	host := &appv1.AppService{ObjectMeta: as.ObjectMeta, Spec: appv1.AppServiceSpec{Ports: as.Spec.Ports, HTTPRoute: &appv1.HTTPRoute{
		ParentRefs: as.Spec.HTTPRoute.ParentRefs, Hostnames: []gatewayv1.Hostname{as.Spec.Canary.BlueGreen.PreviewHostname},
	}}}
	r := NewHTTPRoute(host)
	if r == nil {
		return nil
	}
	r.Name, r.Labels = CanaryName(as), canaryObjectLabels(as)
	r.Spec.Rules[0].BackendRefs[0].Name = gatewayv1.ObjectName(CanaryName(as))
	return r
}

// previewAntiAffinity is affinity (the spec's, never modified) with a
// preference against the nodes of the stable Pods: the two stacks share as
// few nodes as the scheduler can manage, and a node lost takes at most one
// of them. Preferred, not required: a cluster of fewer nodes still runs the
// preview.
func previewAntiAffinity(as *appv1.AppService, affinity *corev1.Affinity) *corev1.Affinity {
	out := affinity.DeepCopy()
	if out == nil {
		out = &corev1.Affinity{}
	}
	if out.PodAntiAffinity == nil {
		out.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	out.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(out.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: SelectorLabels(as)},
			TopologyKey:   corev1.LabelHostname,
		}})
	return out
}

// NewCanaryService returns the canary's Service: the AppService's ports
// (without node ports: only the HTTPRoute reaches it), selecting the
// canary's Pods. Nil when the AppService has no ports.
func NewCanaryService(as *appv1.AppService) *corev1.Service {
	s := NewService(as)
	if s == nil {
		return nil
	}
	s.Name = CanaryName(as)
	s.Labels = canaryObjectLabels(as)
	s.Spec.Type = corev1.ServiceTypeClusterIP
	s.Spec.Selector = CanarySelectorLabels(as)
	for i := range s.Spec.Ports {
		s.Spec.Ports[i].NodePort = 0
	}
	return s
}

// RouteSplit is what a canary asks of the AppService's HTTPRoute
// (SplitHTTPRoute).
type RouteSplit struct {
	// Weight is the percentage of each rule's traffic the canary's Service
	// gets.
	Weight int32
	// Mirror is the percentage of each rule's requests copied to the
	// canary's Service (a RequestMirror filter).
	Mirror int32
	// Testers: the requests with spec.canary's testerHeaders go to the
	// canary.
	Testers bool
	// Sticky is the value of spec.canary.sticky's cookie ("": none): the
	// canary's answers set it, and the requests carrying it go to the
	// canary.
	Sticky string
}

// SplitHTTPRoute sends split.Weight percent of every rule's traffic to the
// canary's Service, and the rest to the AppService's, on the same port,
// and copies split.Mirror percent of its requests to the canary's. With
// testers, each rule also gets a twin after the rules, whose matches also
// require spec.canary's testerHeaders and whose traffic all goes to the
// canary (a Gateway prefers the match with more headers); sticky, a twin
// whose matches also require the cookie, and the canary's answers by the
// weight set it. The twins carry the rule's filters, not the mirror. No
// weight, mirror, testers nor cookie leave the route as NewHTTPRoute made
// it: one backend.
func SplitHTTPRoute(r *gatewayv1.HTTPRoute, as *appv1.AppService, split RouteSplit) {
	if r == nil {
		return
	}
	c := as.Spec.Canary
	canaryName := gatewayv1.ObjectName(CanaryName(as))
	var twins []gatewayv1.HTTPRouteRule
	twin := func(i int, kind string, headers []gatewayv1.HTTPHeaderMatch) {
		t := *r.Spec.Rules[i].DeepCopy()
		t.Name = new(gatewayv1.SectionName(RuleName(i, kind)))
		for j := range t.Matches {
			t.Matches[j].Headers = append(t.Matches[j].Headers, headers...)
		}
		for j := range t.BackendRefs {
			t.BackendRefs[j].Name = canaryName
		}
		twins = append(twins, t)
	}
	if split.Testers && c != nil {
		var headers []gatewayv1.HTTPHeaderMatch
		for _, h := range c.TesterHeaders {
			headers = append(headers, gatewayv1.HTTPHeaderMatch{Type: new(gatewayv1.HeaderMatchExact), Name: h.Name, Value: h.Value})
		}
		for i := range r.Spec.Rules {
			twin(i, "testers", headers)
		}
	}
	sticky := split.Sticky != "" && c != nil && c.Sticky != nil
	if sticky {
		cookie := []gatewayv1.HTTPHeaderMatch{{
			Type: new(gatewayv1.HeaderMatchRegularExpression), Name: "Cookie",
			Value: `(^|;\s*)` + c.Sticky.CookieName + `=` + split.Sticky + `(;|$)`,
		}}
		for i := range r.Spec.Rules {
			twin(i, "sticky", cookie)
		}
	}
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		if split.Mirror > 0 && len(rule.BackendRefs) == 1 {
			rule.Filters = append(rule.Filters, gatewayv1.HTTPRouteFilter{
				Type: gatewayv1.HTTPRouteFilterRequestMirror, RequestMirror: canaryMirror(rule.BackendRefs[0].BackendRef, canaryName, split.Mirror),
			})
		}
		if len(rule.BackendRefs) != 1 || split.Weight <= 0 {
			continue
		}
		stable, canary := rule.BackendRefs[0], gatewayv1.HTTPBackendRef{}
		stable.BackendRef, canary.BackendRef = splitBackend(stable.BackendRef, canaryName, split.Weight)
		if sticky {
			canary.Filters = []gatewayv1.HTTPRouteFilter{{
				Type: gatewayv1.HTTPRouteFilterResponseHeaderModifier,
				ResponseHeaderModifier: &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{
					Name: "Set-Cookie", Value: stickyCookie(c.Sticky, split.Sticky),
				}}},
			}}
		}
		rule.BackendRefs = []gatewayv1.HTTPBackendRef{stable, canary}
	}
	r.Spec.Rules = append(r.Spec.Rules, twins...)
	setRecord(&r.Annotations, appv1.AnnotationRouteFilters, RouteFiltersRecord(r.Spec.Rules))
}

// canaryMirror is a RequestMirror filter's copy of percent of a rule's
// requests, whose one backend is stable, to the canary's Service on the
// same port.
func canaryMirror(stable gatewayv1.BackendRef, canary gatewayv1.ObjectName, percent int32) *gatewayv1.HTTPRequestMirrorFilter {
	mirror := *stable.BackendObjectReference.DeepCopy()
	mirror.Name = canary
	return &gatewayv1.HTTPRequestMirrorFilter{BackendRef: mirror, Percent: new(percent)}
}

// splitBackend is a rule's one backend, stable, split into the stable's
// share and the canary's Service's, of weight percent, on the same port.
func splitBackend(stable gatewayv1.BackendRef, canary gatewayv1.ObjectName, weight int32) (gatewayv1.BackendRef, gatewayv1.BackendRef) {
	s, c := *stable.DeepCopy(), *stable.DeepCopy()
	s.Weight, c.Name, c.Weight = new(100-weight), canary, new(weight)
	return s, c
}

// stickyCookie is the Set-Cookie header's value of spec.canary.sticky's
// cookie of value: for the whole site, for maxAgeSeconds or the browser's
// session, out of the page's scripts' reach.
func stickyCookie(s *appv1.CanarySticky, value string) string {
	cookie := s.CookieName + "=" + value + "; Path=/; HttpOnly"
	if s.MaxAgeSeconds > 0 {
		cookie += "; Max-Age=" + strconv.Itoa(int(s.MaxAgeSeconds))
	}
	return cookie
}

// TemplateHash is a short hash of the Pod template of a Deployment the spec
// asks for (NewDeployment), which names a template in the AppService's
// status: the same spec gives the same hash.
func TemplateHash(d *appsv1.Deployment) string {
	data, err := json.Marshal(d.Spec.Template)
	if err != nil {
		// A Pod template always encodes; were it not to, every template
		// would look new, which is safe: a canary, not a lost change.
		return ""
	}
	h := fnv.New32a()
	h.Write(data)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// TemplateChanges reports whether bringing live in line with desired would
// change its Pod template (or the records of the template's keys the
// controller owns): a change of what the Pods run.
func TemplateChanges(live, desired *appsv1.Deployment) bool {
	updated, _ := UpdateDeployment(live, desired)
	return updated != nil && (!equality.Semantic.DeepEqual(updated.Spec.Template, live.Spec.Template) ||
		!equality.Semantic.DeepEqual(templateRecords(updated), templateRecords(live)))
}

// templateRecords are the Deployment's annotations recording the template's
// keys the controller owns (podMetadataRecords).
func templateRecords(d *appsv1.Deployment) map[string]string {
	out := map[string]string{}
	for _, k := range []string{appv1.AnnotationPodLabels, appv1.AnnotationPodAnnotations, appv1.AnnotationVolumes, appv1.AnnotationContainers} {
		if v, ok := d.Annotations[k]; ok {
			out[k] = v
		}
	}
	return out
}

// templateFields are the names UpdateDeployment gives the changes it makes
// outside the Pod template.
var templateFields = []string{"labels", "replicas", "strategy", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"}

// HoldTemplate undoes, in updated (UpdateDeployment's copy of live, and
// the names of the fields it changed), every change of the Pod template and
// of its records: while a canary runs a new template, the stable
// Deployment keeps the one its Pods run, and only its other fields follow
// the spec. Nil when nothing else changed.
func HoldTemplate(live, updated *appsv1.Deployment, changed []string) (*appsv1.Deployment, []string) {
	if updated == nil {
		return nil, nil
	}
	var kept []string
	for _, c := range changed {
		if slices.Contains(templateFields, c) {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	out := updated.DeepCopy()
	live.Spec.Template.DeepCopyInto(&out.Spec.Template)
	for k := range templateRecords(out) {
		delete(out.Annotations, k)
	}
	for k, v := range templateRecords(live) {
		out.Annotations = mergeLabels(out.Annotations, map[string]string{k: v})
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out, kept
}
