//go:build e2e

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

package admission

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// genContainers: init containers and sidecars, each drawn from the pools
// of the app container's fields. In two of three specs that may draw bad
// values, the containers draw none and break one rule that spans them
// instead (violate): a name taken by the app (the AppService's name) or by
// an init container, what only a sidecar may have on an init container, a
// mount of no volume, a sleep beyond the grace period, a resourceFieldRef
// to another container, a port clashing with another sidecar's or the
// app's, a request above its limit. Among the other bad draws, a rule
// missing there would rarely be the only one a spec breaks.
func genContainers(r *specRand, name string, s *appv1.AppServiceSpec) {
	odds := r.badOdds
	violate := odds > 0 && r.IntN(3) > 0
	if violate {
		r.badOdds = 0
	}
	if r.IntN(3) == 0 && len(s.Volumes) == 0 {
		s.Volumes = []appv1.Volume{{Name: "shared", EmptyDir: &appv1.EmptyDirVolumeSource{}}}
	}
	if len(s.Ports) == 0 && r.IntN(2) == 0 {
		for i := range 1 + r.IntN(2) {
			s.Ports = append(s.Ports, genPort(r, i))
		}
	}
	names := []string{"migrate", "wait-db", "shipper", "proxy"}
	pickName := func(i int) string {
		if bad(r) {
			return pick(r, name, "migrate", "Bad_Name", "", strings.Repeat("c", 64))
		}
		return names[i%len(names)]
	}
	for i := range r.IntN(3) {
		c := genContainer(r, pickName(i), s)
		if bad(r) {
			sidecarOnly(r, &c)
		}
		s.InitContainers = append(s.InitContainers, c)
	}
	for i := range r.IntN(3) {
		c := genContainer(r, pickName(i+2), s)
		for j := range r.IntN(3) {
			c.Ports = append(c.Ports, genContainerPort(r, j))
		}
		for _, probe := range []**corev1.Probe{&c.LivenessProbe, &c.ReadinessProbe, &c.StartupProbe} {
			if r.IntN(4) == 0 {
				*probe = genProbe(r)
			}
		}
		if r.IntN(4) == 0 {
			c.Lifecycle = &corev1.Lifecycle{PostStart: genLifecycleHandler(r)}
			if r.IntN(2) == 0 {
				c.Lifecycle.PreStop = genLifecycleHandler(r)
			}
		}
		s.Sidecars = append(s.Sidecars, c)
	}
	r.badOdds = odds
	if violate {
		violation(r, name, s)
	}
}

// sidecarOnly gives an init container what only a sidecar may have.
func sidecarOnly(r *specRand, c *appv1.Container) {
	switch r.IntN(3) {
	case 0:
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
	case 1:
		c.Ports = []appv1.ContainerPort{{ContainerPort: 9000, Protocol: corev1.ProtocolTCP}}
	default:
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
	}
}

// violation breaks one rule that spans the containers.
func violation(r *specRand, name string, s *appv1.AppServiceSpec) {
	if len(s.InitContainers) == 0 {
		s.InitContainers = []appv1.Container{{Name: "init", Image: "busybox"}}
	}
	if len(s.Sidecars) == 0 {
		s.Sidecars = []appv1.Container{{Name: "side", Image: "busybox"}}
	}
	init, side := &s.InitContainers[r.IntN(len(s.InitContainers))], &s.Sidecars[r.IntN(len(s.Sidecars))]
	switch r.IntN(10) {
	case 0:
		pick(r, init, side).Name = name
	case 1:
		side.Name = init.Name
	case 2:
		s.Sidecars = append(s.Sidecars, *side.DeepCopy())
	case 3:
		sidecarOnly(r, init)
	case 4:
		c := pick(r, init, side)
		c.VolumeMounts = append(c.VolumeMounts, appv1.VolumeMount{Name: "undeclared", MountPath: "/undeclared"})
	case 5:
		s.TerminationGracePeriodSeconds = new(int64(10))
		side.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 20}}}
	case 6:
		c := pick(r, init, side)
		c.Env = append(c.Env, corev1.EnvVar{Name: "LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "other", Resource: "limits.memory"}}})
	case 7:
		p := appv1.ContainerPort{ContainerPort: 7070, Protocol: corev1.ProtocolTCP}
		s.Sidecars = append(s.Sidecars, appv1.Container{Name: "second", Image: "busybox", Ports: []appv1.ContainerPort{p}})
		side = &s.Sidecars[0]
		side.Ports = append(side.Ports, appv1.ContainerPort{ContainerPort: 7070, Protocol: corev1.ProtocolTCP, Name: "clash"})
	case 8:
		s.Ports = append(s.Ports[:0:0], corev1.ServicePort{Port: 80})
		side.Ports = []appv1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	default:
		side.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}
	}
}

func genContainer(r *specRand, name string, s *appv1.AppServiceSpec) appv1.Container {
	c := appv1.Container{Name: name, Image: pick(r, "busybox:1.36", "fluent/fluent-bit:3.1", "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2")}
	if bad(r) {
		c.Image = pick(r, "", "with space")
	}
	if r.IntN(4) == 0 {
		c.ImagePullPolicy = pick(r, corev1.PullAlways, corev1.PullIfNotPresent)
	}
	if r.IntN(2) == 0 {
		c.Command = pick(r, []string{"sh", "-c", "until nc -z db 5432; do sleep 1; done"}, []string{"/migrate", "$(DB_URL)"})
	}
	if r.IntN(4) == 0 {
		c.Args, c.WorkingDir = []string{"--verbose"}, pick(r, "/work", "rel")
	}
	for range r.IntN(3) {
		c.Env = append(c.Env, genEnv(r))
	}
	if r.IntN(4) == 0 {
		c.EnvFrom = append(c.EnvFrom, genEnvFrom(r))
	}
	if r.IntN(3) == 0 {
		c.Resources = genResources(r)
	}
	if r.IntN(4) == 0 {
		c.SecurityContext = genSecurityContext(r)
	}
	if r.IntN(2) == 0 {
		volume := "shared"
		if len(s.Volumes) > 0 {
			volume = s.Volumes[r.IntN(len(s.Volumes))].Name
		}
		if bad(r) {
			volume = "undeclared"
		}
		c.VolumeMounts = []appv1.VolumeMount{{Name: volume, MountPath: pick(r, "/var/log/app", "/shared"), ReadOnly: r.IntN(2) == 0}}
	}
	if r.IntN(6) == 0 {
		// A resourceFieldRef naming a container: this one, the app's or
		// another.
		c.Env = append(c.Env, corev1.EnvVar{Name: "LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
			ContainerName: pick(r, "", name, "other"), Resource: "limits.memory",
		}}})
	}
	return c
}

// genContainerPort: a sidecar's port, its number and name drawn near the
// app's common ones (80, 8080, http) so that clashes happen.
func genContainerPort(r *specRand, i int) appv1.ContainerPort {
	p := appv1.ContainerPort{
		ContainerPort: pick(r, int32(2020), 9090, 8080, 80, int32(9100+i)),
		Protocol:      pick(r, corev1.ProtocolTCP, corev1.ProtocolTCP, corev1.ProtocolUDP),
	}
	if r.IntN(2) == 0 {
		p.Name = pick(r, "metrics", "http", "admin", "web-2")
	}
	if bad(r) {
		switch r.IntN(3) {
		case 0:
			p.ContainerPort = pick(r, int32(0), 65536)
		case 1:
			p.Name = pick(r, "Metrics", "1234", "a--b", "sixteen-chars-xx")
		default:
			p.Protocol = "HTTP"
		}
	}
	return p
}
