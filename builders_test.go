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
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Tests of the pure builders in deployment.go, service.go and status.go. The
// seed objects and helpers are in controller_test.go.

func checkEqual(t *testing.T, what string, want, got interface{}) {
	t.Helper()
	if !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("%s differs (-want +got):\n%s", what, cmp.Diff(want, got))
	}
}

func TestNewDeployment(t *testing.T) {
	fieldRef := func(apiVersion string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: apiVersion, FieldPath: "metadata.name"}}
	}
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	tests := []struct {
		name string
		spec func(*appv1.AppServiceSpec)
		want func(*appsv1.Deployment) // applied to desiredDeployment
	}{
		{name: "seed"},
		{
			name: "size unset is 1",
			spec: func(s *appv1.AppServiceSpec) { s.Size = nil },
			want: func(d *appsv1.Deployment) { d.Spec.Replicas = int32Ptr(1) },
		},
		{
			name: "size 0",
			spec: func(s *appv1.AppServiceSpec) { s.Size = int32Ptr(0) },
			want: func(d *appsv1.Deployment) { d.Spec.Replicas = int32Ptr(0) },
		},
		{
			name: "env and resources",
			spec: func(s *appv1.AppServiceSpec) {
				s.Envs = []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: fieldRef("")}}
				s.Resources = resources
			},
			want: func(d *appsv1.Deployment) {
				container(d).Env = []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: fieldRef("v1")}}
				container(d).Resources = resources
			},
		},
		{
			name: "no ports",
			spec: func(s *appv1.AppServiceSpec) { s.Ports = nil },
			want: func(d *appsv1.Deployment) { container(d).Ports = nil },
		},
		{
			name: ":latest image",
			spec: func(s *appv1.AppServiceSpec) { s.Image = "nginx:latest" },
			want: func(d *appsv1.Deployment) {
				container(d).Image = "nginx:latest"
				container(d).ImagePullPolicy = corev1.PullAlways
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := seedAppService()
			apply(tc.spec, &as.Spec)
			before := as.DeepCopy()
			want := desiredDeployment()
			apply(tc.want, want)

			got := newDeployment(as)
			checkEqual(t, "Deployment", want, got)
			checkEqual(t, "AppService after newDeployment", before, as)
			// The three label maps must not be shared: a change to one
			// (say, a foreign label merged in) must not leak into another.
			got.Labels["x"] = "y"
			if _, ok := got.Spec.Template.Labels["x"]; ok || got.Spec.Selector.MatchLabels["x"] != "" {
				t.Error("the Deployment's labels share a map with its selector or template")
			}
		})
	}
}

func TestPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.7.9", corev1.PullIfNotPresent},
		{"docker.io/library/nginx:1.25", corev1.PullIfNotPresent},
		{"localhost:5000/app", corev1.PullAlways},
		{"localhost:5000/app:latest", corev1.PullAlways},
		{"localhost:5000/app:v2", corev1.PullIfNotPresent},
		{"localhost:5000/team/app", corev1.PullAlways},
		{"nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31", corev1.PullIfNotPresent},
		{"localhost:5000/app@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31", corev1.PullIfNotPresent},
	}
	for _, tc := range tests {
		if got := pullPolicy(tc.image); got != tc.want {
			t.Errorf("pullPolicy(%q) = %s, want %s", tc.image, got, tc.want)
		}
	}
}

func TestContainerPorts(t *testing.T) {
	tcp := func(port int32) corev1.ContainerPort {
		return corev1.ContainerPort{ContainerPort: port, Protocol: corev1.ProtocolTCP}
	}
	tests := []struct {
		name  string
		ports []corev1.ServicePort
		want  []corev1.ContainerPort
	}{
		{name: "none"},
		{"numeric targetPort", []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}, []corev1.ContainerPort{tcp(8080)}},
		{"no targetPort: the port", []corev1.ServicePort{{Port: 80}}, []corev1.ContainerPort{tcp(80)}},
		{"empty named targetPort: the port", []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("")}}, []corev1.ContainerPort{tcp(80)}},
		{
			"named targetPort: that name, the port's number",
			[]corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}},
			[]corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
		},
		{
			"UDP",
			[]corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}},
			[]corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
		},
		{
			"same number, TCP and UDP: both",
			[]corev1.ServicePort{{Name: "a", Port: 53}, {Name: "b", Port: 53, Protocol: corev1.ProtocolUDP}},
			[]corev1.ContainerPort{tcp(53), {ContainerPort: 53, Protocol: corev1.ProtocolUDP}},
		},
		{
			"duplicate numeric targets declared once",
			[]corev1.ServicePort{{Name: "a", Port: 80, TargetPort: intstr.FromInt32(8080)}, {Name: "b", Port: 81, TargetPort: intstr.FromInt32(8080)}, {Name: "c", Port: 8080}},
			[]corev1.ContainerPort{tcp(8080)},
		},
		{
			"duplicate named targets declared once",
			[]corev1.ServicePort{{Name: "a", Port: 80, TargetPort: intstr.FromString("web")}, {Name: "b", Port: 8080, TargetPort: intstr.FromString("web")}},
			[]corev1.ContainerPort{{Name: "web", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkEqual(t, "container ports", tc.want, containerPorts(tc.ports))
		})
	}
}

func TestNormalizeEnv(t *testing.T) {
	fieldRef := func(apiVersion string) corev1.EnvVar {
		return corev1.EnvVar{Name: "NS", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: apiVersion, FieldPath: "metadata.namespace"}}}
	}
	secret := corev1.EnvVar{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}
	tests := []struct {
		name string
		in   []corev1.EnvVar
		want []corev1.EnvVar
	}{
		{name: "nil"},
		{name: "empty is nil", in: []corev1.EnvVar{}},
		{name: "value", in: []corev1.EnvVar{{Name: "A", Value: "1"}}, want: []corev1.EnvVar{{Name: "A", Value: "1"}}},
		{name: "fieldRef apiVersion defaulted", in: []corev1.EnvVar{fieldRef("")}, want: []corev1.EnvVar{fieldRef("v1")}},
		{name: "fieldRef apiVersion kept", in: []corev1.EnvVar{fieldRef("v2")}, want: []corev1.EnvVar{fieldRef("v2")}},
		{name: "secretKeyRef as is", in: []corev1.EnvVar{secret}, want: []corev1.EnvVar{secret}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := make([]corev1.EnvVar, len(tc.in))
			for i := range tc.in {
				tc.in[i].DeepCopyInto(&in[i])
			}
			got := normalizeEnv(in)
			if tc.want == nil && got != nil {
				t.Errorf("normalizeEnv = %#v, want nil", got)
			}
			checkEqual(t, "env", tc.want, got)
			checkEqual(t, "input after normalizeEnv", tc.in, in)
		})
	}
}

func TestUpdateDeployment(t *testing.T) {
	tests := []struct {
		name        string
		spec        func(*appv1.AppServiceSpec)
		live        func(*appsv1.Deployment)
		want        func(*appsv1.Deployment) // applied to a copy of live; nil: no update
		wantChanged []string
	}{
		{name: "equal after defaulting"},
		{
			name: "equal quantities in another form",
			spec: func(s *appv1.AppServiceSpec) {
				s.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
			},
			live: func(d *appsv1.Deployment) {
				container(d).Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2000m"), corev1.ResourceMemory: resource.MustParse("1073741824")}
			},
		},
		{
			name: "fields others own are left alone",
			live: func(d *appsv1.Deployment) {
				d.Labels["team"] = "web"
				d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "3"}
				d.Spec.Template.Labels["version"] = "v1"
				d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
				d.Spec.Strategy.RollingUpdate = nil
				container(d).Command = []string{"nginx", "-g", "daemon off;"}
				d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "envoy"})
			},
		},
		{
			name:        "replicas",
			spec:        func(s *appv1.AppServiceSpec) { s.Size = int32Ptr(7) },
			want:        func(d *appsv1.Deployment) { d.Spec.Replicas = int32Ptr(7) },
			wantChanged: []string{"replicas"},
		},
		{
			name: "our label missing, foreign labels kept",
			live: func(d *appsv1.Deployment) { d.Labels = map[string]string{"team": "web"} },
			want: func(d *appsv1.Deployment) {
				d.Labels = map[string]string{"team": "web", appv1.LabelAppService: testName}
			},
			wantChanged: []string{"labels"},
		},
		{
			name: "our pod label with another value",
			live: func(d *appsv1.Deployment) {
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: "other", "v": "1"}
			},
			want: func(d *appsv1.Deployment) {
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: testName, "v": "1"}
			},
			wantChanged: []string{"pod labels"},
		},
		{
			name: "every container field, the sidecar kept",
			spec: func(s *appv1.AppServiceSpec) {
				s.Image = "nginx"
				s.Envs = []corev1.EnvVar{{Name: "A", Value: "1"}}
				s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
				s.Ports[0].TargetPort = intstr.FromString("http")
			},
			live: func(d *appsv1.Deployment) {
				sidecar := corev1.Container{Name: "sidecar", Image: "envoy"}
				d.Spec.Template.Spec.Containers = append([]corev1.Container{sidecar}, d.Spec.Template.Spec.Containers...)
			},
			want: func(d *appsv1.Deployment) {
				c := &d.Spec.Template.Spec.Containers[1]
				c.Image = "nginx"
				c.ImagePullPolicy = corev1.PullAlways
				c.Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
				c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
				c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			},
			wantChanged: []string{"image", "imagePullPolicy", "env", "resources", "ports"},
		},
		{
			name: "our container missing: appended",
			live: func(d *appsv1.Deployment) {
				d.Spec.Replicas = int32Ptr(1)
				d.Spec.Template.Spec.Containers[0].Name = "renamed"
			},
			want: func(d *appsv1.Deployment) {
				d.Spec.Replicas = int32Ptr(2)
				d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, desiredDeployment().Spec.Template.Spec.Containers[0])
			},
			wantChanged: []string{"replicas", "container nginx-app"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := seedAppService()
			apply(tc.spec, &as.Spec)
			live := liveDeployment()
			apply(tc.live, live)
			before := live.DeepCopy()

			got, changed := updateDeployment(live, newDeployment(as))
			checkEqual(t, "live after updateDeployment", before, live)
			checkEqual(t, "changed fields", tc.wantChanged, changed)
			if tc.want == nil {
				if got != nil {
					t.Errorf("got an update, want none:\n%s", cmp.Diff(live, got))
				}
				return
			}
			want := before.DeepCopy()
			tc.want(want)
			checkEqual(t, "updated Deployment", want, got)
		})
	}
}

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
			as := seedAppService()
			apply(tc.spec, &as.Spec)
			got := newService(as)
			if tc.none {
				if got != nil {
					t.Errorf("newService = %v, want nil", got)
				}
				return
			}
			want := desiredService()
			apply(tc.want, want)
			checkEqual(t, "Service", want, got)
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
	checkEqual(t, "service ports", want, servicePorts(in))
	checkEqual(t, "input after servicePorts", before, in)
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
			checkEqual(t, "ports", tc.want, mergeNodePorts(desired, tc.live, tc.typ))
			checkEqual(t, "desired after mergeNodePorts", tc.desired, desired)
		})
	}
}

func TestUpdateService(t *testing.T) {
	tests := []struct {
		name        string
		spec        func(*appv1.AppServiceSpec)
		live        func(*corev1.Service)
		want        func(*corev1.Service) // applied to a copy of live; nil: no update
		wantChanged []string
	}{
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
				svc.Spec.Selector = map[string]string{appv1.LabelAppService: testName, "extra": "x"}
			},
			want: func(svc *corev1.Service) {
				svc.Labels = testLabels()
				svc.Spec.Selector = testLabels()
				svc.Spec.Ports[0].Port = 8080
			},
			wantChanged: []string{"labels", "selector", "ports"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := seedAppService()
			apply(tc.spec, &as.Spec)
			live := liveService()
			apply(tc.live, live)
			before := live.DeepCopy()

			got, changed := updateService(live, newService(as))
			checkEqual(t, "live after updateService", before, live)
			checkEqual(t, "changed fields", tc.wantChanged, changed)
			if tc.want == nil {
				if got != nil {
					t.Errorf("got an update, want none:\n%s", cmp.Diff(live, got))
				}
				return
			}
			want := before.DeepCopy()
			tc.want(want)
			checkEqual(t, "updated Service", want, got)
		})
	}
}

func TestNewStatus(t *testing.T) {
	earlier := metav1.NewTime(lastTransition.Add(-time.Hour))
	inTheWay := &childError{reason: appv1.ReasonResourceExists, err: errors.New("Service default/nginx-app is in the way")}
	unknown := func(typ string) metav1.Condition {
		return condition(typ, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, "The Deployment has not reported this condition yet")
	}
	tests := []struct {
		name    string
		prior   *appv1.AppServiceStatus
		deploy  func(*appsv1.Deployment) // applied to liveDeployment
		noDepl  bool
		syncErr error
		want    appv1.AppServiceStatus
	}{
		{
			name: "mirrors the Deployment, from scratch",
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				for i := range st.Conditions {
					st.Conditions[i].LastTransitionTime = metav1.Time{}
				}
				return st
			}(),
		},
		{
			name:  "unchanged conditions keep their lastTransitionTime",
			prior: func() *appv1.AppServiceStatus { st := currentStatus(); return &st }(),
			want:  currentStatus(),
		},
		{
			name:   "no Deployment",
			noDepl: true,
			want:   missingDeploymentStatus(notDegraded()),
		},
		{
			name:   "Deployment without conditions",
			deploy: func(d *appsv1.Deployment) { d.Status = appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1} },
			want: appv1.AppServiceStatus{
				ObservedGeneration: testGeneration, Replicas: 1, UpdatedReplicas: 1, Selector: testSelector,
				Conditions: []metav1.Condition{unknown(appv1.ConditionAvailable), unknown(appv1.ConditionProgressing), notDegraded()},
			},
		},
		{
			name: "Deployment condition without a reason",
			deploy: func(d *appsv1.Deployment) {
				d.Status.Conditions[0] = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse}
			},
			prior: func() *appv1.AppServiceStatus { st := currentStatus(); return &st }(),
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				st.Conditions[0] = condition(appv1.ConditionAvailable, metav1.ConditionFalse, "DeploymentFalse", "")
				return st
			}(),
		},
		{
			name:    "Degraded from a wrapped *childError",
			prior:   func() *appv1.AppServiceStatus { st := currentStatus(); return &st }(),
			syncErr: errors.Join(nil, fmt.Errorf("sync: %w", inTheWay)),
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				setCondition(&st, degraded(appv1.ReasonResourceExists, "Service default/nginx-app is in the way"))
				return st
			}(),
		},
		{
			name:    "any other error makes it Degraded too, as SyncFailed",
			prior:   func() *appv1.AppServiceStatus { st := currentStatus(); return &st }(),
			syncErr: errors.New("connection refused"),
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				setCondition(&st, degraded(appv1.ReasonSyncFailed, "connection refused"))
				return st
			}(),
		},
		{
			name: "old observedGeneration, replicas and an old Degraded replaced",
			prior: func() *appv1.AppServiceStatus {
				st := currentStatus()
				st.ObservedGeneration, st.Replicas, st.ReadyReplicas = 1, 9, 9
				for i := range st.Conditions {
					st.Conditions[i].ObservedGeneration = 1
					st.Conditions[i].LastTransitionTime = earlier
				}
				c := degraded(appv1.ReasonUpdateFailed, "failed")
				c.LastTransitionTime, c.ObservedGeneration = earlier, 1
				setCondition(&st, c)
				return &st
			}(),
			want: func() appv1.AppServiceStatus {
				st := currentStatus()
				st.Conditions[0].LastTransitionTime = earlier
				st.Conditions[1].LastTransitionTime = earlier
				st.Conditions[2].LastTransitionTime = metav1.Time{} // changed: now
				return st
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := seedAppService()
			if tc.prior != nil {
				as.Status = *tc.prior
			}
			before := as.DeepCopy()
			var d *appsv1.Deployment
			if !tc.noDepl {
				d = liveDeployment()
				apply(tc.deploy, d)
			}
			got := newStatus(as, d, tc.syncErr)
			checkEqual(t, "AppService after newStatus", before, as)
			gotAS := matchTransitionTimes(t, withStatus(as, tc.want), withStatus(as, got))
			checkEqual(t, "status", tc.want, gotAS.Status)
		})
	}
}
