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

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// withIngress routes app.example.com to the seed's port 80 (its only one)
// and /admin to a second port by name, with TLS.
func withIngress(s *appv1.AppServiceSpec) {
	s.Ports = append(s.Ports, corev1.ServicePort{Name: "admin", Port: 9000})
	s.Ports[0].Name = "http"
	s.Ingress = &appv1.Ingress{
		Annotations: map[string]string{"cert-manager.io/cluster-issuer": "letsencrypt"},
		Hosts: []appv1.IngressHost{{Host: "app.example.com", Paths: []appv1.IngressPath{
			{},
			{Path: "/admin", PathType: networkingv1.PathTypeExact, Port: new(intstr.FromString("admin"))},
		}}},
		TLS: []networkingv1.IngressTLS{{Hosts: []string{"app.example.com"}, SecretName: "app-tls"}},
	}
}

func desiredIngress() *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fixtures.Name,
			Namespace: fixtures.Namespace,
			Labels:    map[string]string{appv1.LabelAppService: fixtures.Name},
			Annotations: map[string]string{
				"cert-manager.io/cluster-issuer": "letsencrypt",
				appv1.AnnotationAnnotations:      "cert-manager.io/cluster-issuer",
			},
			OwnerReferences: []metav1.OwnerReference{fixtures.OwnerRef()},
		},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: "app.example.com",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
					{Path: "/", PathType: new(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: fixtures.Name, Port: networkingv1.ServiceBackendPort{Number: 80},
					}}},
					{Path: "/admin", PathType: new(networkingv1.PathTypeExact), Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: fixtures.Name, Port: networkingv1.ServiceBackendPort{Name: "admin"},
					}}},
				}}},
			}},
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"app.example.com"}, SecretName: "app-tls"}},
		},
	}
}

func TestNewIngress(t *testing.T) {
	as := fixtures.AppService()
	if in := NewIngress(as); in != nil {
		t.Errorf("no ingress: got %v, want none", in)
	}
	withIngress(&as.Spec)
	fixtures.CheckEqual(t, "Ingress", desiredIngress(), NewIngress(as))

	as.Spec.Ingress.ClassName = "nginx"
	if got := NewIngress(as).Spec.IngressClassName; got == nil || *got != "nginx" {
		t.Errorf("ingressClassName = %v, want nginx", got)
	}
	as.Spec.Ports = nil
	if in := NewIngress(as); in != nil {
		t.Errorf("no ports: got %v, want no Ingress (there is no Service)", in)
	}
}

func TestUpdateIngress(t *testing.T) {
	runUpdateCases(t, "Ingress", desiredIngress, NewIngress, UpdateIngress, []updateCase[*networkingv1.Ingress]{
		{name: "in line", spec: withIngress},
		{
			name: "the class the API server defaulted, others' annotations and the status are kept",
			spec: withIngress,
			live: func(in *networkingv1.Ingress) {
				in.Spec.IngressClassName = new("default-class")
				in.Annotations["theirs"] = "x"
				in.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}
			},
		},
		{
			name:        "a class in the spec is the controller's",
			spec:        func(s *appv1.AppServiceSpec) { withIngress(s); s.Ingress.ClassName = "nginx" },
			live:        func(in *networkingv1.Ingress) { in.Spec.IngressClassName = new("default-class") },
			want:        func(in *networkingv1.Ingress) { in.Spec.IngressClassName = new("nginx") },
			wantChanged: []string{"ingressClassName"},
		},
		{
			name: "hosts and TLS changed",
			spec: func(s *appv1.AppServiceSpec) {
				withIngress(s)
				s.Ingress.Hosts[0].Host = "www.example.com"
				s.Ingress.TLS = nil
			},
			want: func(in *networkingv1.Ingress) {
				in.Spec.Rules[0].Host = "www.example.com"
				in.Spec.TLS = nil
			},
			wantChanged: []string{"rules", "tls"},
		},
	})
}

func TestIngressURL(t *testing.T) {
	tests := []struct {
		name string
		edit func(*networkingv1.Ingress)
		want string
	}{
		{name: "TLS for the host", want: "https://app.example.com/"},
		{name: "no TLS", edit: func(in *networkingv1.Ingress) { in.Spec.TLS = nil }, want: "http://app.example.com/"},
		{name: "a wildcard certificate", edit: func(in *networkingv1.Ingress) { in.Spec.TLS[0].Hosts = []string{"*.example.com"} }, want: "https://app.example.com/"},
		{name: "a wildcard of another domain", edit: func(in *networkingv1.Ingress) { in.Spec.TLS[0].Hosts = []string{"*.app.example.com"} }, want: "http://app.example.com/"},
		{name: "the first path", edit: func(in *networkingv1.Ingress) { in.Spec.Rules[0].HTTP.Paths[0].Path = "/shop" }, want: "https://app.example.com/shop"},
		{
			name: "hosts without a name are skipped",
			edit: func(in *networkingv1.Ingress) {
				in.Spec.Rules[0].Host = "*.example.com"
				in.Spec.Rules = append([]networkingv1.IngressRule{{}}, append(in.Spec.Rules, networkingv1.IngressRule{Host: "b.example.com"})...)
			},
			want: "http://b.example.com/",
		},
		{name: "no host at all", edit: func(in *networkingv1.Ingress) { in.Spec.Rules[0].Host = "" }, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := desiredIngress()
			fixtures.Tweak(tc.edit, in)
			if got := IngressURL(in); got != tc.want {
				t.Errorf("IngressURL = %q, want %q", got, tc.want)
			}
		})
	}
}
