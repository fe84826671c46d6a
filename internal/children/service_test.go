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
	"k8s.io/apimachinery/pkg/util/intstr"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestNewService(t *testing.T) {
	tests := []struct {
		name string
		spec func(*appv1.AppServiceSpec)
		want func(*corev1.Service) // applied to desiredService
		none bool
	}{
		{name: "seed: NodePort by default"},
		{name: "no ports: no Service", spec: func(s *appv1.AppServiceSpec) { s.Ports = nil }, none: true},
		{name: "empty ports: no Service", spec: func(s *appv1.AppServiceSpec) { s.Ports = []corev1.ServicePort{} }, none: true},
		{
			name: "ClusterIP",
			spec: func(s *appv1.AppServiceSpec) { s.ServiceType = corev1.ServiceTypeClusterIP; s.Ports[0].NodePort = 0 },
			want: func(svc *corev1.Service) { svc.Spec.Type = corev1.ServiceTypeClusterIP; svc.Spec.Ports[0].NodePort = 0 },
		},
		{
			name: "LoadBalancer",
			spec: func(s *appv1.AppServiceSpec) { s.ServiceType = corev1.ServiceTypeLoadBalancer },
			want: func(svc *corev1.Service) { svc.Spec.Type = corev1.ServiceTypeLoadBalancer },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService()
			fixtures.Tweak(tc.spec, &as.Spec)
			got := NewService(as)
			if tc.none {
				if got != nil {
					t.Errorf("NewService = %v, want nil", got)
				}
				return
			}
			want := fixtures.DesiredService()
			fixtures.Tweak(tc.want, want)
			fixtures.CheckEqual(t, "Service", want, got)
			got.Labels["x"] = "y"
			if got.Spec.Selector["x"] != "" {
				t.Error("the Service's labels and selector share a map")
			}
		})
	}
}

func TestServicePorts(t *testing.T) {
	in := []corev1.ServicePort{
		{Name: "a", Port: 80},
		{Name: "b", Port: 81, TargetPort: intstr.FromString("")},
		{Name: "c", Port: 82, TargetPort: intstr.FromInt32(8082), NodePort: 30082},
		{Name: "d", Port: 83, TargetPort: intstr.FromString("web")},
		{Name: "e", Port: 53, Protocol: corev1.ProtocolUDP},
		{Name: "f", Port: 84, Protocol: corev1.ProtocolSCTP, AppProtocol: new("h2c")},
	}
	want := []corev1.ServicePort{
		{Name: "a", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)},
		{Name: "b", Port: 81, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(81)},
		{Name: "c", Port: 82, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8082), NodePort: 30082},
		{Name: "d", Port: 83, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")},
		{Name: "e", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
		{Name: "f", Port: 84, Protocol: corev1.ProtocolSCTP, TargetPort: intstr.FromInt32(84), AppProtocol: new("h2c")},
	}
	before := make([]corev1.ServicePort, len(in))
	for i := range in {
		in[i].DeepCopyInto(&before[i])
	}
	fixtures.CheckEqual(t, "service ports", want, servicePorts(in))
	fixtures.CheckEqual(t, "input after servicePorts", before, in)
}

func TestMergeNodePorts(t *testing.T) {
	port := func(p int32, proto corev1.Protocol, nodePort int32) corev1.ServicePort {
		return corev1.ServicePort{Port: p, Protocol: proto, TargetPort: intstr.FromInt32(p), NodePort: nodePort}
	}
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	tests := []struct {
		name          string
		typ           corev1.ServiceType
		desired, live []corev1.ServicePort
		want          []corev1.ServicePort
	}{
		{
			name:    "NodePort keeps the live nodePort of the same port and protocol",
			typ:     corev1.ServiceTypeNodePort,
			desired: []corev1.ServicePort{port(80, tcp, 0), port(53, udp, 0)},
			live:    []corev1.ServicePort{port(53, udp, 31053), port(80, tcp, 31080)},
			want:    []corev1.ServicePort{port(80, tcp, 31080), port(53, udp, 31053)},
		},
		{
			name:    "LoadBalancer keeps it too",
			typ:     corev1.ServiceTypeLoadBalancer,
			desired: []corev1.ServicePort{port(80, tcp, 0)},
			live:    []corev1.ServicePort{port(80, tcp, 31080)},
			want:    []corev1.ServicePort{port(80, tcp, 31080)},
		},
		{
			name:    "not for another protocol",
			typ:     corev1.ServiceTypeNodePort,
			desired: []corev1.ServicePort{port(53, tcp, 0)},
			live:    []corev1.ServicePort{port(53, udp, 31053)},
			want:    []corev1.ServicePort{port(53, tcp, 0)},
		},
		{
			name:    "not for another port",
			typ:     corev1.ServiceTypeNodePort,
			desired: []corev1.ServicePort{port(8080, tcp, 0)},
			live:    []corev1.ServicePort{port(80, tcp, 31080)},
			want:    []corev1.ServicePort{port(8080, tcp, 0)},
		},
		{
			name:    "an explicit nodePort wins",
			typ:     corev1.ServiceTypeNodePort,
			desired: []corev1.ServicePort{port(80, tcp, 30002)},
			live:    []corev1.ServicePort{port(80, tcp, 31080)},
			want:    []corev1.ServicePort{port(80, tcp, 30002)},
		},
		{
			name:    "ClusterIP drops them",
			typ:     corev1.ServiceTypeClusterIP,
			desired: []corev1.ServicePort{port(80, tcp, 0)},
			live:    []corev1.ServicePort{port(80, tcp, 31080)},
			want:    []corev1.ServicePort{port(80, tcp, 0)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired := append([]corev1.ServicePort(nil), tc.desired...)
			fixtures.CheckEqual(t, "ports", tc.want, mergeNodePorts(desired, tc.live, tc.typ))
			fixtures.CheckEqual(t, "desired after mergeNodePorts", tc.desired, desired)
		})
	}
}

func TestUpdateService(t *testing.T) {
	runUpdateCases(t, "Service", fixtures.LiveService, NewService, UpdateService, []updateCase[*corev1.Service]{
		{name: "equal after defaulting"},
		{
			name: "server-assigned nodePort and fields others own kept",
			spec: func(s *appv1.AppServiceSpec) { s.Ports[0].NodePort = 0 },
			live: func(svc *corev1.Service) {
				svc.Spec.Ports[0].NodePort = 31234
				svc.Labels["team"] = "web"
				svc.Annotations = map[string]string{"a": "b"}
				svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			},
		},
		{
			name:        "to LoadBalancer, keeping clusterIP and the assigned nodePort",
			spec:        func(s *appv1.AppServiceSpec) { s.ServiceType = corev1.ServiceTypeLoadBalancer; s.Ports[0].NodePort = 0 },
			live:        func(svc *corev1.Service) { svc.Spec.Ports[0].NodePort = 31234 },
			want:        func(svc *corev1.Service) { svc.Spec.Type = corev1.ServiceTypeLoadBalancer },
			wantChanged: []string{"type"},
		},
		{
			name: "to ClusterIP, dropping the nodePort",
			spec: func(s *appv1.AppServiceSpec) { s.ServiceType = corev1.ServiceTypeClusterIP; s.Ports[0].NodePort = 0 },
			want: func(svc *corev1.Service) {
				svc.Spec.Type = corev1.ServiceTypeClusterIP
				svc.Spec.Ports[0].NodePort = 0
			},
			wantChanged: []string{"type", "ports"},
		},
		{
			name: "labels, selector and ports",
			spec: func(s *appv1.AppServiceSpec) { s.Ports[0].Port = 8080 },
			live: func(svc *corev1.Service) {
				svc.Labels = nil
				svc.Spec.Selector = map[string]string{appv1.LabelAppService: fixtures.Name, "extra": "x"}
			},
			want: func(svc *corev1.Service) {
				svc.Labels = fixtures.Labels()
				svc.Spec.Selector = fixtures.Labels()
				svc.Spec.Ports[0].Port = 8080
			},
			wantChanged: []string{"labels", "selector", "ports"},
		},
	})
}
