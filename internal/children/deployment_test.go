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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

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
			want: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(1)) },
		},
		{
			name: "size 0",
			spec: func(s *appv1.AppServiceSpec) { s.Size = new(int32(0)) },
			want: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(0)) },
		},
		{
			name: "suspended: 0, whatever the size",
			spec: func(s *appv1.AppServiceSpec) { s.Size, s.Suspend = new(int32(3)), new(true) },
			want: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(0)) },
		},
		{
			name: "suspended while autoscaling: 0, not minReplicas",
			spec: func(s *appv1.AppServiceSpec) {
				s.Suspend = new(true)
				s.Autoscaling = &appv1.Autoscaling{MinReplicas: new(int32(2)), MaxReplicas: 10}
			},
			want: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(0)) },
		},
		{
			name: "not suspended: size",
			spec: func(s *appv1.AppServiceSpec) { s.Suspend = new(false) },
		},
		{
			name: "env and resources",
			spec: func(s *appv1.AppServiceSpec) {
				s.Envs = []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: fieldRef("")}}
				s.Resources = resources
			},
			want: func(d *appsv1.Deployment) {
				fixtures.Container(d).Env = []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: fieldRef("v1")}}
				fixtures.Container(d).Resources = resources
			},
		},
		{
			name: "no ports",
			spec: func(s *appv1.AppServiceSpec) { s.Ports = nil },
			want: func(d *appsv1.Deployment) { fixtures.Container(d).Ports = nil },
		},
		{
			name: ":latest image",
			spec: func(s *appv1.AppServiceSpec) { s.Image = "nginx:latest" },
			want: func(d *appsv1.Deployment) {
				fixtures.Container(d).Image = "nginx:latest"
				fixtures.Container(d).ImagePullPolicy = corev1.PullAlways
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService()
			fixtures.Tweak(tc.spec, &as.Spec)
			before := as.DeepCopy()
			want := fixtures.DesiredDeployment()
			fixtures.Tweak(tc.want, want)

			got := NewDeployment(as)
			fixtures.CheckEqual(t, "Deployment", want, got)
			fixtures.CheckEqual(t, "AppService after NewDeployment", before, as)
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
			fixtures.CheckEqual(t, "container ports", tc.want, containerPorts(tc.ports))
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
			fixtures.CheckEqual(t, "env", tc.want, got)
			fixtures.CheckEqual(t, "input after normalizeEnv", tc.in, in)
		})
	}
}

func TestUpdateDeployment(t *testing.T) {
	runUpdateCases(t, "Deployment", fixtures.LiveDeployment, NewDeployment, UpdateDeployment, []updateCase[*appsv1.Deployment]{
		{name: "equal after defaulting"},
		{
			name: "equal quantities in another form",
			spec: func(s *appv1.AppServiceSpec) {
				s.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
			},
			live: func(d *appsv1.Deployment) {
				fixtures.Container(d).Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2000m"), corev1.ResourceMemory: resource.MustParse("1073741824")}
			},
		},
		{
			name: "fields others own are left alone",
			live: func(d *appsv1.Deployment) {
				d.Labels["team"] = "web"
				d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "3"}
				d.Spec.Template.Labels["version"] = "v1"
				d.Spec.Paused = true
				fixtures.Container(d).TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
				d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "envoy"})
			},
		},
		{
			name:        "replicas",
			spec:        func(s *appv1.AppServiceSpec) { s.Size = new(int32(7)) },
			want:        func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(7)) },
			wantChanged: []string{"replicas"},
		},
		{
			name: "our label missing, foreign labels kept",
			live: func(d *appsv1.Deployment) { d.Labels = map[string]string{"team": "web"} },
			want: func(d *appsv1.Deployment) {
				d.Labels = map[string]string{"team": "web", appv1.LabelAppService: fixtures.Name}
			},
			wantChanged: []string{"labels"},
		},
		{
			name: "our pod label with another value",
			live: func(d *appsv1.Deployment) {
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: "other", "v": "1"}
			},
			want: func(d *appsv1.Deployment) {
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: fixtures.Name, "v": "1"}
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
			name: "pull policy, command, args and working directory",
			spec: func(s *appv1.AppServiceSpec) {
				s.ImagePullPolicy = corev1.PullNever
				s.Command = []string{"nginx"}
				s.Args = []string{"-g", "daemon off;"}
				s.WorkingDir = "/srv"
			},
			want: func(d *appsv1.Deployment) {
				c := fixtures.Container(d)
				c.ImagePullPolicy = corev1.PullNever
				c.Command = []string{"nginx"}
				c.Args = []string{"-g", "daemon off;"}
				c.WorkingDir = "/srv"
			},
			wantChanged: []string{"imagePullPolicy", "command", "args", "workingDir"},
		},
		{
			name: "pod labels and annotations set, recorded on the Deployment",
			spec: func(s *appv1.AppServiceSpec) {
				s.PodLabels = map[string]string{"tier": "web", "team": "a"}
				s.PodAnnotations = map[string]string{"prometheus.io/scrape": "true"}
			},
			want: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationPodLabels: "team,tier", appv1.AnnotationPodAnnotations: "prometheus.io/scrape"}
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: fixtures.Name, "tier": "web", "team": "a"}
				d.Spec.Template.Annotations = map[string]string{"prometheus.io/scrape": "true"}
			},
			wantChanged: []string{"pod labels", "pod annotations"},
		},
		{
			name: "pod labels and annotations in line, others' kept (rollout restart)",
			spec: func(s *appv1.AppServiceSpec) {
				s.PodLabels = map[string]string{"tier": "web"}
				s.PodAnnotations = map[string]string{"prometheus.io/scrape": "true"}
			},
			live: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationPodLabels: "tier", appv1.AnnotationPodAnnotations: "prometheus.io/scrape", "deployment.kubernetes.io/revision": "2"}
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: fixtures.Name, "tier": "web", "version": "v2"}
				d.Spec.Template.Annotations = map[string]string{"prometheus.io/scrape": "true", "kubectl.kubernetes.io/restartedAt": "2026-11-23T10:00:00Z"}
			},
		},
		{
			name: "pod labels and annotations removed from the spec: ours go, others' stay",
			live: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationPodLabels: "tier", appv1.AnnotationPodAnnotations: "prometheus.io/scrape", "deployment.kubernetes.io/revision": "2"}
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: fixtures.Name, "tier": "web", "version": "v2"}
				d.Spec.Template.Annotations = map[string]string{"prometheus.io/scrape": "true", "kubectl.kubernetes.io/restartedAt": "2026-11-23T10:00:00Z"}
			},
			want: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2"}
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: fixtures.Name, "version": "v2"}
				d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-23T10:00:00Z"}
			},
			wantChanged: []string{"pod labels", "pod annotations"},
		},
		{
			name: "a pod label's value changed, one dropped, one added",
			spec: func(s *appv1.AppServiceSpec) { s.PodLabels = map[string]string{"tier": "api", "new": "1"} },
			live: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationPodLabels: "old,tier"}
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: fixtures.Name, "tier": "web", "old": "x"}
			},
			want: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationPodLabels: "new,tier"}
				d.Spec.Template.Labels = map[string]string{appv1.LabelAppService: fixtures.Name, "tier": "api", "new": "1"}
			},
			wantChanged: []string{"pod labels"},
		},
		{
			name: "volumes and mounts set, the volumes recorded on the Deployment",
			spec: func(s *appv1.AppServiceSpec) {
				s.Volumes = []appv1.Volume{{Name: "config", ConfigMap: &appv1.ConfigMapVolumeSource{Name: "app"}}}
				s.VolumeMounts = []appv1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true}}
			},
			want: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationVolumes: "config"}
				d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, DefaultMode: new(int32(0o644))}}}}
				d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true}}
			},
			wantChanged: []string{"volumes", "volumeMounts"},
		},
		{
			name: "volumes: ours changed or removed, a sidecar's kept",
			spec: func(s *appv1.AppServiceSpec) {
				s.Volumes = []appv1.Volume{{Name: "cache", EmptyDir: &appv1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}
			},
			live: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationVolumes: "cache,config"}
				d.Spec.Template.Spec.Volumes = []corev1.Volume{
					{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, DefaultMode: new(int32(0o644))}}},
					{Name: "sidecar-certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "certs", DefaultMode: new(int32(0o644))}}},
					{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				}
			},
			want: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationVolumes: "cache"}
				d.Spec.Template.Spec.Volumes = []corev1.Volume{
					{Name: "sidecar-certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "certs", DefaultMode: new(int32(0o644))}}},
					{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				}
			},
			wantChanged: []string{"volumes"},
		},
		{
			name: "volume mounts: a mount of someone else's volume in our container is kept",
			spec: func(s *appv1.AppServiceSpec) {
				s.Volumes = []appv1.Volume{{Name: "cache", EmptyDir: &appv1.EmptyDirVolumeSource{}}}
				s.VolumeMounts = []appv1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
			},
			live: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationVolumes: "cache,old"}
				d.Spec.Template.Spec.Volumes = []corev1.Volume{
					{Name: "vault", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				}
				d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
					{Name: "old", MountPath: "/old"}, {Name: "vault", MountPath: "/vault/secrets"}, {Name: "cache", MountPath: "/cache"},
				}
			},
			want: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationVolumes: "cache"}
				d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "vault", MountPath: "/vault/secrets"}, {Name: "cache", MountPath: "/cache"}}
			},
			wantChanged: []string{"volumes", "volumeMounts"},
		},
		{
			name: "volumes removed from the spec: ours go, the record too",
			live: func(d *appsv1.Deployment) {
				d.Annotations = map[string]string{appv1.AnnotationVolumes: "cache"}
				d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
			},
			want: func(d *appsv1.Deployment) {
				d.Annotations = nil
				d.Spec.Template.Spec.Volumes = nil
				d.Spec.Template.Spec.Containers[0].VolumeMounts = nil
			},
			wantChanged: []string{"volumes", "volumeMounts"},
		},
		{
			name: "lifecycle, security contexts, affinity and spread set; the lifecycle's httpGet defaulted",
			spec: func(s *appv1.AppServiceSpec) {
				s.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
				s.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: new(true)}
				s.PodSecurityContext = &corev1.PodSecurityContext{FSGroup: new(int64(2000))}
				s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}}}}
				s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
			},
			want: func(d *appsv1.Deployment) {
				c := &d.Spec.Template.Spec.Containers[0]
				c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Scheme: corev1.URISchemeHTTP, Port: intstr.FromInt32(80)}}}
				c.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: new(true)}
				pod := &d.Spec.Template.Spec
				pod.SecurityContext = &corev1.PodSecurityContext{FSGroup: new(int64(2000))}
				pod.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}}}}
				pod.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
			},
			wantChanged: []string{"affinity", "topologySpreadConstraints", "podSecurityContext", "lifecycle", "securityContext"},
		},
		{
			name: "lifecycle, security contexts, affinity and spread removed: the Pods' security context back to the empty one",
			live: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
				d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: new(true)}
				d.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: new(int64(2000))}
				d.Spec.Template.Spec.Affinity = &corev1.Affinity{}
				d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
			},
			want: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Lifecycle = nil
				d.Spec.Template.Spec.Containers[0].SecurityContext = nil
				d.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{}
				d.Spec.Template.Spec.Affinity = nil
				d.Spec.Template.Spec.TopologySpreadConstraints = nil
			},
			wantChanged: []string{"affinity", "topologySpreadConstraints", "podSecurityContext", "lifecycle", "securityContext"},
		},
		{
			name: "probes: defaults filled in, as the API server would",
			spec: func(s *appv1.AppServiceSpec) {
				s.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
				s.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}, PeriodSeconds: 5}
				s.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, FailureThreshold: 30}
			},
			want: func(d *appsv1.Deployment) {
				c := fixtures.Container(d)
				timings := func(p corev1.Probe) *corev1.Probe {
					p.TimeoutSeconds, p.SuccessThreshold = 1, 1
					if p.PeriodSeconds == 0 {
						p.PeriodSeconds = 10
					}
					if p.FailureThreshold == 0 {
						p.FailureThreshold = 3
					}
					return &p
				}
				c.LivenessProbe = timings(corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}}})
				c.ReadinessProbe = timings(corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: new("")}}, PeriodSeconds: 5})
				c.StartupProbe = timings(corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, FailureThreshold: 30})
			},
			wantChanged: []string{"livenessProbe", "readinessProbe", "startupProbe"},
		},
		{
			name: "envFrom set, then its prefix changed",
			spec: func(s *appv1.AppServiceSpec) {
				s.EnvFrom = []corev1.EnvFromSource{{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}
			},
			live: func(d *appsv1.Deployment) {
				fixtures.Container(d).EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}
			},
			want: func(d *appsv1.Deployment) {
				fixtures.Container(d).EnvFrom[0].Prefix = "DB_"
			},
			wantChanged: []string{"envFrom"},
		},
		{
			name: "probes removed from the spec",
			live: func(d *appsv1.Deployment) {
				probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
				c := fixtures.Container(d)
				c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = probe, probe.DeepCopy(), probe.DeepCopy()
			},
			want: func(d *appsv1.Deployment) {
				c := fixtures.Container(d)
				c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
			},
			wantChanged: []string{"livenessProbe", "readinessProbe", "startupProbe"},
		},
		{
			name: "command, args and working directory removed from the spec",
			live: func(d *appsv1.Deployment) {
				c := fixtures.Container(d)
				c.Command, c.Args, c.WorkingDir = []string{"sh"}, []string{"-c", "sleep 1"}, "/tmp"
			},
			want: func(d *appsv1.Deployment) {
				c := fixtures.Container(d)
				c.Command, c.Args, c.WorkingDir = nil, nil, ""
			},
			wantChanged: []string{"command", "args", "workingDir"},
		},
		{
			name: "pod fields: service account, pull secrets, node selector, priority, grace period",
			spec: func(s *appv1.AppServiceSpec) {
				s.ServiceAccountName = "web"
				s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
				s.NodeSelector = map[string]string{"disktype": "ssd"}
				s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
				s.PriorityClassName = "high"
				s.TerminationGracePeriodSeconds = new(int64(5))
			},
			want: func(d *appsv1.Deployment) {
				pod := &d.Spec.Template.Spec
				pod.ServiceAccountName, pod.DeprecatedServiceAccount = "web", "web"
				pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
				pod.NodeSelector = map[string]string{"disktype": "ssd"}
				pod.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
				pod.PriorityClassName = "high"
				pod.TerminationGracePeriodSeconds = new(int64(5))
			},
			wantChanged: []string{"serviceAccountName", "imagePullSecrets", "nodeSelector", "tolerations", "priorityClassName", "terminationGracePeriodSeconds"},
		},
		{
			name: "pod fields removed from the spec: the service account's alias is cleared too",
			live: func(d *appsv1.Deployment) {
				pod := &d.Spec.Template.Spec
				pod.ServiceAccountName, pod.DeprecatedServiceAccount = "web", "web"
				pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
				pod.NodeSelector = map[string]string{"disktype": "ssd"}
				pod.PriorityClassName = "high"
				pod.TerminationGracePeriodSeconds = new(int64(5))
			},
			want: func(d *appsv1.Deployment) {
				pod := &d.Spec.Template.Spec
				pod.ServiceAccountName, pod.DeprecatedServiceAccount = "", ""
				pod.ImagePullSecrets, pod.NodeSelector, pod.PriorityClassName = nil, nil, ""
				pod.TerminationGracePeriodSeconds = new(int64(30))
			},
			wantChanged: []string{"serviceAccountName", "imagePullSecrets", "nodeSelector", "priorityClassName", "terminationGracePeriodSeconds"},
		},
		{
			name: "strategy: Recreate",
			spec: func(s *appv1.AppServiceSpec) {
				s.Strategy = &appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			},
			want: func(d *appsv1.Deployment) {
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			},
			wantChanged: []string{"strategy"},
		},
		{
			name: "strategy: a rolling update with only maxSurge given gets the default maxUnavailable",
			spec: func(s *appv1.AppServiceSpec) {
				s.Strategy = &appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: new(intstr.FromInt32(1))}}
			},
			want:        func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = new(intstr.FromInt32(1)) },
			wantChanged: []string{"strategy"},
		},
		{
			name: "strategy removed from the spec: back to the default rolling update",
			live: func(d *appsv1.Deployment) {
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			},
			want:        func(d *appsv1.Deployment) { d.Spec.Strategy = fixtures.DesiredDeployment().Spec.Strategy },
			wantChanged: []string{"strategy"},
		},
		{
			name: "rollout fields",
			spec: func(s *appv1.AppServiceSpec) {
				s.MinReadySeconds = new(int32(5))
				s.RevisionHistoryLimit = new(int32(0))
				s.ProgressDeadlineSeconds = new(int32(120))
			},
			want: func(d *appsv1.Deployment) {
				d.Spec.MinReadySeconds = 5
				d.Spec.RevisionHistoryLimit = new(int32(0))
				d.Spec.ProgressDeadlineSeconds = new(int32(120))
			},
			wantChanged: []string{"minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"},
		},
		{
			name: "rollout fields removed from the spec go back to the defaults",
			live: func(d *appsv1.Deployment) {
				d.Spec.MinReadySeconds = 5
				d.Spec.RevisionHistoryLimit = new(int32(3))
				d.Spec.ProgressDeadlineSeconds = new(int32(120))
			},
			want: func(d *appsv1.Deployment) {
				d.Spec.MinReadySeconds = 0
				d.Spec.RevisionHistoryLimit = new(int32(10))
				d.Spec.ProgressDeadlineSeconds = new(int32(600))
			},
			wantChanged: []string{"minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"},
		},
		{
			name: "init containers and sidecars: equal after defaulting",
			spec: withContainers,
			live: liveContainers,
		},
		{
			name: "init containers and sidecars added, in order, after others'",
			spec: withContainers,
			live: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "istio-init", Image: "proxyv2"}}
			},
			want: func(d *appsv1.Deployment) {
				desired := containersDeployment()
				d.Annotations = desired.Annotations
				d.Spec.Template.Annotations = desired.Spec.Template.Annotations
				d.Spec.Template.Spec.Volumes = desired.Spec.Template.Spec.Volumes
				d.Spec.Template.Spec.InitContainers = append([]corev1.Container{{Name: "istio-init", Image: "proxyv2"}}, desired.Spec.Template.Spec.InitContainers...)
			},
			wantChanged: []string{"default container", "volumes", "init container migrate added", "sidecar shipper added"},
		},
		{
			name: "a sidecar's image and probe; others' init container and container kept in place",
			spec: func(s *appv1.AppServiceSpec) {
				withContainers(s)
				s.Sidecars[0].Image = "fluent-bit:4"
				s.Sidecars[0].ReadinessProbe.PeriodSeconds = 5
			},
			live: func(d *appsv1.Deployment) {
				liveContainers(d)
				pod := &d.Spec.Template.Spec
				pod.InitContainers = slices.Insert(pod.InitContainers, 1, corev1.Container{Name: "injected", Image: "x"})
				pod.Containers = append([]corev1.Container{{Name: "proxy", Image: "envoy"}}, pod.Containers...)
			},
			want: func(d *appsv1.Deployment) {
				shipper := &d.Spec.Template.Spec.InitContainers[2]
				shipper.Image = "fluent-bit:4"
				shipper.ReadinessProbe.PeriodSeconds = 5
			},
			wantChanged: []string{"sidecar shipper image", "sidecar shipper readinessProbe"},
		},
		{
			name: "the init container and the sidecar removed: the default container goes too",
			spec: func(s *appv1.AppServiceSpec) {
				s.Volumes = []appv1.Volume{{Name: "logs", EmptyDir: &appv1.EmptyDirVolumeSource{}}}
			},
			live: liveContainers,
			want: func(d *appsv1.Deployment) {
				delete(d.Annotations, appv1.AnnotationContainers)
				d.Spec.Template.Annotations = nil
				d.Spec.Template.Spec.InitContainers = nil
			},
			wantChanged: []string{"default container", "init container migrate removed", "sidecar shipper removed"},
		},
		{
			name: "an init container the spec names, with probes and ports someone added: ours to drop",
			spec: withContainers,
			live: func(d *appsv1.Deployment) {
				liveContainers(d)
				migrate := &d.Spec.Template.Spec.InitContainers[0]
				migrate.Ports = []corev1.ContainerPort{{ContainerPort: 1, Protocol: corev1.ProtocolTCP}}
				migrate.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			},
			want: func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.InitContainers[0].Ports = nil
			},
			wantChanged: []string{"init container migrate ports"},
		},
		{
			name: "the default container from podAnnotations stands",
			spec: func(s *appv1.AppServiceSpec) {
				withContainers(s)
				s.PodAnnotations = map[string]string{annotationDefaultContainer: "shipper"}
			},
			live: func(d *appsv1.Deployment) {
				liveContainers(d)
				d.Annotations[appv1.AnnotationPodAnnotations] = annotationDefaultContainer
				d.Spec.Template.Annotations[annotationDefaultContainer] = "shipper"
			},
		},
		{
			name: "our container missing: put first",
			live: func(d *appsv1.Deployment) {
				d.Spec.Replicas = new(int32(1))
				d.Spec.Template.Spec.Containers[0].Name = "renamed"
			},
			want: func(d *appsv1.Deployment) {
				d.Spec.Replicas = new(int32(2))
				d.Spec.Template.Spec.Containers = append([]corev1.Container{fixtures.DesiredDeployment().Spec.Template.Spec.Containers[0]}, d.Spec.Template.Spec.Containers...)
			},
			wantChanged: []string{"replicas", "container nginx-app"},
		},
	})
}

// withContainers gives the spec an init container and a sidecar that
// shares a volume with the app.
func withContainers(s *appv1.AppServiceSpec) {
	s.Volumes = []appv1.Volume{{Name: "logs", EmptyDir: &appv1.EmptyDirVolumeSource{}}}
	s.InitContainers = []appv1.Container{{Name: "migrate", Image: "app:1", Command: []string{"migrate"}}}
	s.Sidecars = []appv1.Container{{
		Name: "shipper", Image: "fluent-bit:3",
		Ports:          []appv1.ContainerPort{{Name: "metrics", ContainerPort: 2020}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("metrics")}}},
		VolumeMounts:   []appv1.VolumeMount{{Name: "logs", MountPath: "/logs", ReadOnly: true}},
	}}
}

// containersDeployment is the Deployment built for withContainers' spec.
func containersDeployment() *appsv1.Deployment {
	as := fixtures.AppService()
	withContainers(&as.Spec)
	return NewDeployment(as)
}

// liveContainers makes the live Deployment the one built for
// withContainers' spec, as the API server returns it.
func liveContainers(d *appsv1.Deployment) {
	desired := containersDeployment()
	d.Annotations = desired.Annotations
	d.Spec.Template.Annotations = desired.Spec.Template.Annotations
	pod := &d.Spec.Template.Spec
	pod.Volumes = []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.InitContainers = desired.Spec.Template.Spec.InitContainers
	for i := range pod.InitContainers {
		pod.InitContainers[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
		pod.InitContainers[i].TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
}
