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
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The init containers and sidecars (spec.initContainers, spec.sidecars) go
// in the pod template's initContainers, in that order: the sidecars are
// init containers with restartPolicy Always, which the kubelet starts after
// the init containers before them, and keeps running beside the app. They
// are ours by name (recorded in the Deployment's AnnotationContainers, as
// volumes are): an init container another writer adds is kept where it is,
// and ours stay together, in the spec's order. Within each of ours the
// controller owns the fields it owns in the app container; mounts of
// others' volumes stay, as there.

// annotationDefaultContainer is the pod template annotation kubectl logs,
// exec and attach read to choose a container when none is named. The
// controller sets it to the app container while the Pods have init
// containers or sidecars, unless podAnnotations sets it: then the user's
// value stands. It is left off otherwise, so that Deployments written
// before sidecars existed keep their template (a change would roll them).
const annotationDefaultContainer = "kubectl.kubernetes.io/default-container"

// newInitContainers are the pod template's initContainers: the init
// containers, then the sidecars.
func newInitContainers(as *appv1.AppService) []corev1.Container {
	n := len(as.Spec.InitContainers) + len(as.Spec.Sidecars)
	if n == 0 {
		return nil
	}
	out := make([]corev1.Container, 0, n)
	for _, c := range as.Spec.InitContainers {
		out = append(out, newContainerFrom(c, false))
	}
	for _, c := range as.Spec.Sidecars {
		out = append(out, newContainerFrom(c, true))
	}
	return out
}

// newContainerFrom is the container for an init container, a sidecar or
// (through newContainer) the app, from a copy of the AppService
// (NewDeployment's). Values the API server would default inside the fields
// we own are set explicitly, so that the live object compares equal to the
// desired one once it has been written. Ports, probes and lifecycle are a
// sidecar's only: admission refuses them in an init container (they are
// built all the same, so that the API server would refuse what admission
// let through).
func newContainerFrom(c appv1.Container, sidecar bool) corev1.Container {
	policy := c.ImagePullPolicy
	if policy == "" {
		policy = pullPolicy(c.Image)
	}
	out := corev1.Container{
		Name:            c.Name,
		Image:           c.Image,
		ImagePullPolicy: policy,
		Command:         c.Command,
		Args:            c.Args,
		WorkingDir:      c.WorkingDir,
		SecurityContext: c.SecurityContext,
		Env:             normalizeEnv(c.Env),
		EnvFrom:         c.EnvFrom,
		Resources:       normalizeResources(c.Resources),
		VolumeMounts:    newVolumeMounts(c.VolumeMounts),
	}
	if sidecar {
		out.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	}
	out.LivenessProbe = normalizeProbe(c.LivenessProbe)
	out.ReadinessProbe = normalizeProbe(c.ReadinessProbe)
	out.StartupProbe = normalizeProbe(c.StartupProbe)
	out.Lifecycle = normalizeLifecycle(c.Lifecycle)
	for _, p := range c.Ports {
		out.Ports = append(out.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort, Protocol: protocolOrTCP(p.Protocol)})
	}
	return out
}

// containerNames are the names of the spec's init containers and sidecars.
func containerNames(as *appv1.AppService) map[string]string {
	names := make(map[string]string, len(as.Spec.InitContainers)+len(as.Spec.Sidecars))
	for _, c := range slices.Concat(as.Spec.InitContainers, as.Spec.Sidecars) {
		names[c.Name] = ""
	}
	return names
}

// syncContainer sets the fields we own in c as in want, naming each change
// with prefix; mounts of the volumes in ourVolumes are ours, others' stay.
func syncContainer(changed *[]string, prefix string, c *corev1.Container, want *corev1.Container, ourVolumes map[string]bool) {
	setOwned(changed, prefix+"image", &c.Image, want.Image)
	setOwned(changed, prefix+"imagePullPolicy", &c.ImagePullPolicy, want.ImagePullPolicy)
	setOwned(changed, prefix+"command", &c.Command, want.Command)
	setOwned(changed, prefix+"args", &c.Args, want.Args)
	setOwned(changed, prefix+"workingDir", &c.WorkingDir, want.WorkingDir)
	setOwned(changed, prefix+"restartPolicy", &c.RestartPolicy, want.RestartPolicy)
	setOwned(changed, prefix+"livenessProbe", &c.LivenessProbe, want.LivenessProbe)
	setOwned(changed, prefix+"readinessProbe", &c.ReadinessProbe, want.ReadinessProbe)
	setOwned(changed, prefix+"startupProbe", &c.StartupProbe, want.StartupProbe)
	setOwned(changed, prefix+"lifecycle", &c.Lifecycle, want.Lifecycle)
	setOwned(changed, prefix+"securityContext", &c.SecurityContext, want.SecurityContext)
	setOwned(changed, prefix+"env", &c.Env, want.Env)
	setOwned(changed, prefix+"envFrom", &c.EnvFrom, want.EnvFrom)
	setOwned(changed, prefix+"resources", &c.Resources, want.Resources)
	setOwned(changed, prefix+"ports", &c.Ports, want.Ports)
	if syncVolumeMounts(&c.VolumeMounts, want.VolumeMounts, ourVolumes) {
		*changed = append(*changed, prefix+"volumeMounts")
	}
}

// syncInitContainers makes *have, the template's initContainers, hold want
// (ours, in order) and keep everyone else's where they are: ours go where
// the first of them was, or after the others' when none was there yet.
// owned are the names recorded last time: one of them that want no longer
// has is removed. It returns the names of what changed.
func syncInitContainers(have *[]corev1.Container, want []corev1.Container, owned []string, ourVolumes map[string]bool) []string {
	ours := make(map[string]bool, len(owned)+len(want))
	for _, name := range owned {
		ours[name] = true
	}
	for _, c := range want {
		ours[c.Name] = true
	}
	var others []corev1.Container
	var liveOrder []string
	at := -1
	live := map[string]*corev1.Container{}
	for i := range *have {
		c := &(*have)[i]
		if !ours[c.Name] {
			others = append(others, *c)
			continue
		}
		if at < 0 {
			at = len(others)
		}
		live[c.Name] = c
		liveOrder = append(liveOrder, c.Name)
	}
	if at < 0 {
		at = len(others)
	}
	var changed []string
	// The same containers of ours in the same order: each is updated where
	// it is, even with others' between them.
	if slices.EqualFunc(liveOrder, want, func(name string, c corev1.Container) bool { return name == c.Name }) {
		out := slices.Clone(*have)
		k := 0 // the k-th of ours is want[k]
		for i := range out {
			if !ours[out[i].Name] {
				continue
			}
			w := &want[k]
			k++
			out[i] = *out[i].DeepCopy()
			syncContainer(&changed, containerKind(w)+w.Name+" ", &out[i], w, ourVolumes)
		}
		if len(changed) == 0 {
			return nil
		}
		*have = out
		return changed
	}
	block := make([]corev1.Container, 0, len(want))
	for i := range want {
		w := &want[i]
		c, ok := live[w.Name]
		if !ok {
			block = append(block, *w)
			changed = append(changed, containerKind(w)+w.Name+" added")
			continue
		}
		out := *c.DeepCopy()
		syncContainer(&changed, containerKind(w)+w.Name+" ", &out, w, ourVolumes)
		block = append(block, out)
		delete(live, w.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(live)) {
		changed = append(changed, containerKind(live[name])+name+" removed")
	}
	out := slices.Concat(others[:at], block, others[at:])
	if len(out) == 0 {
		out = nil
	}
	if equality.Semantic.DeepEqual(*have, out) {
		return nil
	}
	if len(changed) == 0 {
		changed = append(changed, "initContainers order")
	}
	*have = out
	return changed
}

// containerKind names what c is in a changed field's name.
func containerKind(c *corev1.Container) string {
	if c.RestartPolicy != nil {
		return "sidecar "
	}
	return "init container "
}
