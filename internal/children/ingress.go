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
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The Ingress's pure part. The controller owns our label, the annotations
// from spec.ingress (the keys recorded in AnnotationAnnotations), the rules,
// the TLS list and, when the spec names one, the class; unset, the class
// the API server filled in from the cluster's default is kept. The status
// is the ingress controller's.

// NewIngress returns the Ingress an AppService asks for, or nil when it asks
// for none (or has no Service to route to).
func NewIngress(as *appv1.AppService) *networkingv1.Ingress {
	in := as.Spec.Ingress
	if in == nil || len(as.Spec.Ports) == 0 {
		return nil
	}
	in = in.DeepCopy()
	out := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Name:            as.Name,
			Namespace:       as.Namespace,
			Labels:          SelectorLabels(as),
			Annotations:     withRecord(in.Annotations),
			OwnerReferences: []metav1.OwnerReference{*NewControllerRef(as)},
		},
		Spec: networkingv1.IngressSpec{TLS: in.TLS},
	}
	if in.ClassName != "" {
		out.Spec.IngressClassName = &in.ClassName
	}
	for _, h := range in.Hosts {
		rule := networkingv1.IngressRule{
			Host:             h.Host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{}},
		}
		for _, p := range h.Paths {
			rule.HTTP.Paths = append(rule.HTTP.Paths, networkingv1.HTTPIngressPath{
				Path:     orString(p.Path, "/"),
				PathType: new(networkingv1.PathType(orString(string(p.PathType), string(networkingv1.PathTypePrefix)))),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: as.Name,
					Port: backendPort(as, p.Port),
				}},
			})
		}
		out.Spec.Rules = append(out.Spec.Rules, rule)
	}
	return out
}

// backendPort is the Service port a path names, by number or name; the
// first of the spec's ports when it names none.
func backendPort(as *appv1.AppService, port *intstr.IntOrString) networkingv1.ServiceBackendPort {
	switch {
	case port == nil:
		return networkingv1.ServiceBackendPort{Number: as.Spec.Ports[0].Port}
	case port.Type == intstr.String:
		return networkingv1.ServiceBackendPort{Name: port.StrVal}
	}
	return networkingv1.ServiceBackendPort{Number: port.IntVal}
}

func orString(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// UpdateIngress returns a copy of live with the fields the controller owns
// set as in desired, and the names of those that changed; nil when nothing
// needs to change. live is never modified.
func UpdateIngress(live, desired *networkingv1.Ingress) (*networkingv1.Ingress, []string) {
	out := live.DeepCopy()
	changed := ownedLabels(&out.ObjectMeta, desired.Labels)
	if updateAnnotations(&out.ObjectMeta, live.Annotations, desired.Annotations) {
		changed = append(changed, "annotations")
	}
	if desired.Spec.IngressClassName != nil {
		setOwned(&changed, "ingressClassName", &out.Spec.IngressClassName, desired.Spec.IngressClassName)
	}
	setOwned(&changed, "rules", &out.Spec.Rules, desired.Spec.Rules)
	setOwned(&changed, "tls", &out.Spec.TLS, desired.Spec.TLS)
	return updated(out, changed)
}

// IngressURL is where an Ingress takes a browser: its first rule with a
// host that is not a wildcard, over https when the Ingress terminates TLS
// for that host, at the rule's first path. "" when no rule has such a host.
func IngressURL(in *networkingv1.Ingress) string {
	for _, rule := range in.Spec.Rules {
		if rule.Host == "" || strings.HasPrefix(rule.Host, "*") {
			continue
		}
		scheme := "http"
		for _, tls := range in.Spec.TLS {
			if slices.ContainsFunc(tls.Hosts, func(h string) bool { return coversHost(h, rule.Host) }) {
				scheme = "https"
			}
		}
		path := "/"
		if rule.HTTP != nil && len(rule.HTTP.Paths) > 0 && rule.HTTP.Paths[0].Path != "" {
			path = rule.HTTP.Paths[0].Path
		}
		return scheme + "://" + rule.Host + path
	}
	return ""
}

// coversHost reports whether a TLS host, perhaps a wildcard of one label
// (*.example.com), covers host.
func coversHost(tlsHost, host string) bool {
	if suffix, ok := strings.CutPrefix(tlsHost, "*."); ok {
		_, rest, found := strings.Cut(host, ".")
		return found && rest == suffix
	}
	return tlsHost == host
}
