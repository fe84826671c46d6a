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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// This file holds the pure part of the Deployment's life: what it should look
// like for an AppService, and what "differs" means. Nothing here talks to the
// API server.
//
// The controller owns a small set of fields: the replica count (unless
// autoscaling: then the HorizontalPodAutoscaler owns it; 0 while
// suspended), strategy,
// minReadySeconds, revisionHistoryLimit and progressDeadlineSeconds; our
// label on the object and its Pod template, and the template's labels and
// annotations from podLabels and podAnnotations (the keys recorded in the
// Deployment's AnnotationPodLabels and AnnotationPodAnnotations), its
// AnnotationConfigDigest (config.go) and, while the Pods have init
// containers or sidecars, kubectl's default-container annotation
// (containers.go); the Pods' service account and whether they mount its
// token, image pull secrets, node selector, tolerations, affinity,
// topology spread constraints, priority class, termination grace period
// and security context, and the volumes from spec.volumes (recorded in
// AnnotationVolumes); the init containers and sidecars from the spec
// (recorded in AnnotationContainers); and, in the container named after
// the AppService and in each of those, its image, pull policy, command,
// args, working directory, probes, lifecycle, security context, env,
// envFrom, resources, ports, restart policy and its mounts of those
// volumes. An owned field the spec leaves unset is set to
// the API server's default, so that removing it from the spec takes it
// back there. Everything else (other containers, labels, annotations,
// volumes and mounts added by others, every other field the API server
// defaults) belongs to someone else and is left as it is, so that the
// comparison below cannot be defeated by defaulting and never fights
// another writer.

// NewDeployment returns the Deployment an AppService asks for.
func NewDeployment(as *appv1.AppService) *appsv1.Deployment {
	// A copy: as usually comes from the informer's cache, and the slices
	// and maps below end up in the object the controller writes.
	as = as.DeepCopy()
	labels := SelectorLabels(as)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            as.Name,
			Namespace:       as.Namespace,
			Labels:          labels,
			Annotations:     podMetadataRecords(as),
			OwnerReferences: []metav1.OwnerReference{*NewControllerRef(as)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas:                DesiredReplicas(as),
			Strategy:                newStrategy(as.Spec.Strategy),
			MinReadySeconds:         orDefault(as.Spec.MinReadySeconds, 0),
			RevisionHistoryLimit:    new(orDefault(as.Spec.RevisionHistoryLimit, defaultRevisionHistoryLimit)),
			ProgressDeadlineSeconds: new(orDefault(as.Spec.ProgressDeadlineSeconds, defaultProgressDeadlineSeconds)),
			Selector:                &metav1.LabelSelector{MatchLabels: SelectorLabels(as)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					// The selector label last: podLabels may not set it
					// (admission refuses it), and here cannot.
					Labels:      mergeLabels(as.Spec.PodLabels, SelectorLabels(as)),
					Annotations: podAnnotations(as),
				},
				Spec: corev1.PodSpec{
					InitContainers:     newInitContainers(as),
					Containers:         []corev1.Container{newContainer(as)},
					ServiceAccountName: ServiceAccountName(as),
					// The API server keeps this alias equal to
					// serviceAccountName, and reads it when
					// serviceAccountName is empty: it must be cleared too.
					DeprecatedServiceAccount:      ServiceAccountName(as), //nolint:staticcheck // kept in sync, see above
					AutomountServiceAccountToken:  automountToken(as),
					ImagePullSecrets:              as.Spec.ImagePullSecrets,
					NodeSelector:                  as.Spec.NodeSelector,
					Tolerations:                   as.Spec.Tolerations,
					Affinity:                      as.Spec.Affinity,
					TopologySpreadConstraints:     as.Spec.TopologySpreadConstraints,
					PriorityClassName:             as.Spec.PriorityClassName,
					TerminationGracePeriodSeconds: new(orDefault(as.Spec.TerminationGracePeriodSeconds, corev1.DefaultTerminationGracePeriodSeconds)),
					Volumes:                       newVolumes(as),
					// The API server gives every Pod template a security
					// context, empty when none is asked for.
					SecurityContext: orEmpty(as.Spec.PodSecurityContext),
				},
			},
		},
	}
}

// podMetadataRecords are the Deployment's annotations recording which pod
// template labels, annotations and volumes come from the spec (nil when
// none do).
func podMetadataRecords(as *appv1.AppService) map[string]string {
	records := map[string]string{}
	if len(as.Spec.PodLabels) > 0 {
		records[appv1.AnnotationPodLabels] = ownedKeys(as.Spec.PodLabels)
	}
	if len(as.Spec.PodAnnotations) > 0 {
		records[appv1.AnnotationPodAnnotations] = ownedKeys(as.Spec.PodAnnotations)
	}
	if len(as.Spec.Volumes) > 0 {
		names := make(map[string]string, len(as.Spec.Volumes))
		for _, v := range as.Spec.Volumes {
			names[v.Name] = ""
		}
		records[appv1.AnnotationVolumes] = ownedKeys(names)
	}
	if names := containerNames(as); len(names) > 0 {
		records[appv1.AnnotationContainers] = ownedKeys(names)
	}
	if len(records) == 0 {
		return nil
	}
	return records
}

// podAnnotations are the pod template's annotations: podAnnotations, and
// the default container while the Pods have others (see
// annotationDefaultContainer).
func podAnnotations(as *appv1.AppService) map[string]string {
	_, set := as.Spec.PodAnnotations[annotationDefaultContainer]
	if set || len(as.Spec.InitContainers)+len(as.Spec.Sidecars) == 0 {
		return as.Spec.PodAnnotations
	}
	return mergeLabels(as.Spec.PodAnnotations, map[string]string{annotationDefaultContainer: as.Name})
}

// The API server's defaults for a Deployment's revisionHistoryLimit and
// progressDeadlineSeconds (apps/v1): the desired Deployment carries them
// when the spec leaves them unset, so that the defaulted live Deployment
// compares equal, and a value removed from the spec goes back to them.
const (
	defaultRevisionHistoryLimit    = 10
	defaultProgressDeadlineSeconds = 600
)

// newStrategy is spec.strategy with the API server's defaults filled in:
// RollingUpdate, with 25% unavailable and 25% surge where not given.
func newStrategy(s *appsv1.DeploymentStrategy) appsv1.DeploymentStrategy {
	var out appsv1.DeploymentStrategy
	if s != nil {
		s.DeepCopyInto(&out)
	}
	if out.Type == "" {
		out.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if out.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return out
	}
	if out.RollingUpdate == nil {
		out.RollingUpdate = &appsv1.RollingUpdateDeployment{}
	}
	for _, v := range []**intstr.IntOrString{&out.RollingUpdate.MaxUnavailable, &out.RollingUpdate.MaxSurge} {
		if *v == nil {
			*v = new(intstr.FromString("25%"))
		}
	}
	return out
}

// orEmpty is p, or a new zero T when p is nil.
func orEmpty[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// orDefault is *p, or d when p is nil.
func orDefault[T int32 | int64](p *T, d T) T {
	if p == nil {
		return d
	}
	return *p
}

// DesiredReplicas is spec.size, or 1 when the field is unset (the CRD
// defaults it, but an object written before the default existed may lack it).
// While autoscaling it is minReplicas, the count the Deployment starts with:
// the controller keeps the autoscaler's count after that (see
// AutoscaledReplicas). Suspended, it is 0.
func DesiredReplicas(as *appv1.AppService) *int32 {
	if Suspended(as) {
		return new(int32(0))
	}
	if a := as.Spec.Autoscaling; a != nil {
		return new(orDefault(a.MinReplicas, 1))
	}
	size := int32(1)
	if as.Spec.Size != nil {
		size = *as.Spec.Size
	}
	return &size
}

// newContainer is the application's container: built as an init
// container's or a sidecar's (newContainerFrom), with the Service's target
// ports declared on it.
func newContainer(as *appv1.AppService) corev1.Container {
	s := &as.Spec
	c := newContainerFrom(appv1.Container{
		Name: as.Name, Image: s.Image, ImagePullPolicy: s.ImagePullPolicy,
		Command: s.Command, Args: s.Args, WorkingDir: s.WorkingDir,
		Env: s.Envs, EnvFrom: s.EnvFrom, Resources: s.Resources, VolumeMounts: s.VolumeMounts,
		SecurityContext: s.SecurityContext,
		LivenessProbe:   s.LivenessProbe, ReadinessProbe: s.ReadinessProbe, StartupProbe: s.StartupProbe,
		Lifecycle: s.Lifecycle,
	}, false)
	c.Ports = containerPorts(s.Ports)
	return c
}

// pullPolicy is the API server's default for an image: Always for a :latest
// image or one with neither tag nor digest, IfNotPresent otherwise. We set it ourselves because the
// server only defaults it on create: an image changed later from nginx:1.25 to
// nginx:latest would otherwise keep IfNotPresent and never pull again.
func pullPolicy(image string) corev1.PullPolicy {
	name, digest, _ := strings.Cut(image, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		tag = name[i+1:]
	}
	if tag == "latest" || (tag == "" && digest == "") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// normalizeResources copies the resources with every quantity rounded up to
// a thousandth, as the API server stores them in a Pod template (100u of cpu
// becomes 1m): compared unrounded, they would never match.
func normalizeResources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *r.DeepCopy()
	for _, list := range []corev1.ResourceList{out.Requests, out.Limits} {
		for name, q := range list {
			q.RoundUp(-3)
			list[name] = q
		}
	}
	return out
}

// normalizeProbe copies a probe and fills in what the API server defaults
// in it: the timings (timeout 1 s, period 10 s, success 1, failure 3), an
// httpGet's path and scheme, and a grpc probe's service.
func normalizeProbe(p *corev1.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	out := p.DeepCopy()
	for _, f := range []struct {
		v *int32
		d int32
	}{{&out.TimeoutSeconds, 1}, {&out.PeriodSeconds, 10}, {&out.SuccessThreshold, 1}, {&out.FailureThreshold, 3}} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	normalizeHTTPGet(out.HTTPGet)
	if g := out.GRPC; g != nil && g.Service == nil {
		g.Service = new("")
	}
	return out
}

// normalizeLifecycle copies the lifecycle handlers and fills in what the
// API server defaults in them: an httpGet's path and scheme.
func normalizeLifecycle(l *corev1.Lifecycle) *corev1.Lifecycle {
	if l == nil {
		return nil
	}
	out := l.DeepCopy()
	for _, h := range []*corev1.LifecycleHandler{out.PostStart, out.PreStop} {
		if h != nil {
			normalizeHTTPGet(h.HTTPGet)
		}
	}
	return out
}

// normalizeHTTPGet fills in an httpGet action's defaults: path / and
// scheme HTTP.
func normalizeHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// normalizeEnv copies the env and fills in what the API server defaults in
// it: the apiVersion of a fieldRef.
func normalizeEnv(envs []corev1.EnvVar) []corev1.EnvVar {
	if len(envs) == 0 {
		return nil
	}
	out := make([]corev1.EnvVar, len(envs))
	for i := range envs {
		envs[i].DeepCopyInto(&out[i])
		if ref := out[i].ValueFrom; ref != nil && ref.FieldRef != nil && ref.FieldRef.APIVersion == "" {
			ref.FieldRef.APIVersion = "v1"
		}
	}
	return out
}

// containerPorts declares each Service target port on the container: a
// numeric target port (or the Service port when none is given) as a
// containerPort, a named target port as a container port of that name whose
// number is the Service port. Duplicates are declared once.
func containerPorts(ports []corev1.ServicePort) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	seen := map[corev1.ContainerPort]bool{}
	names := map[string]bool{}
	for _, p := range ports {
		cp := corev1.ContainerPort{ContainerPort: p.Port, Protocol: protocolOrTCP(p.Protocol)}
		switch {
		case p.TargetPort.Type == intstr.String && p.TargetPort.StrVal != "":
			if names[p.TargetPort.StrVal] {
				continue
			}
			names[p.TargetPort.StrVal] = true
			cp.Name = p.TargetPort.StrVal
		case p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal != 0:
			cp.ContainerPort = p.TargetPort.IntVal
		}
		if seen[cp] {
			continue
		}
		seen[cp] = true
		out = append(out, cp)
	}
	return out
}

func protocolOrTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// UpdateDeployment returns a copy of live with every field this controller
// owns set as in desired, and the names of the fields that changed; it
// returns nil when nothing needs to change. live is never modified: it
// usually comes from the informer's cache.
func UpdateDeployment(live, desired *appsv1.Deployment) (*appsv1.Deployment, []string) {
	var changed []string
	out := live.DeepCopy()

	if addLabels(&out.ObjectMeta, desired.Labels) {
		changed = append(changed, "labels")
	}
	setOwned(&changed, "replicas", &out.Spec.Replicas, desired.Spec.Replicas)
	setOwned(&changed, "strategy", &out.Spec.Strategy, desired.Spec.Strategy)
	setOwned(&changed, "minReadySeconds", &out.Spec.MinReadySeconds, desired.Spec.MinReadySeconds)
	setOwned(&changed, "revisionHistoryLimit", &out.Spec.RevisionHistoryLimit, desired.Spec.RevisionHistoryLimit)
	setOwned(&changed, "progressDeadlineSeconds", &out.Spec.ProgressDeadlineSeconds, desired.Spec.ProgressDeadlineSeconds)
	tmpl := &out.Spec.Template
	// The config digest (rolloutOnConfigChange) is ours alone: admission
	// keeps it out of podAnnotations. Set first, so that the annotations
	// below find it in place.
	if what := syncConfigDigest(&tmpl.Annotations, desired.Spec.Template.Annotations[appv1.AnnotationConfigDigest]); what != "" {
		changed = append(changed, what)
	}
	// The default container, ours unless podAnnotations sets it (synced
	// below, then): set while the Pods have init containers or sidecars,
	// removed after, when it still names the app container. Set first, as
	// the config digest.
	if !slices.Contains(recordedKeys(desired.Annotations[appv1.AnnotationPodAnnotations]), annotationDefaultContainer) {
		want, have := desired.Spec.Template.Annotations[annotationDefaultContainer], tmpl.Annotations[annotationDefaultContainer]
		switch {
		case want != "" && have != want:
			tmpl.Annotations = mergeLabels(tmpl.Annotations, map[string]string{annotationDefaultContainer: want})
			changed = append(changed, "default container")
		case want == "" && have != "" && have == desired.Name && live.Annotations[appv1.AnnotationContainers] != "":
			setRecord(&tmpl.Annotations, annotationDefaultContainer, "")
			changed = append(changed, "default container")
		}
	}

	// The template's labels and annotations from podLabels and
	// podAnnotations: the keys recorded last time that the spec no longer
	// has go, the others' keys stay; then the record follows the spec.
	for _, m := range []struct {
		name       string
		record     string
		have, want *map[string]string
	}{
		{"pod labels", appv1.AnnotationPodLabels, &tmpl.Labels, &desired.Spec.Template.Labels},
		{"pod annotations", appv1.AnnotationPodAnnotations, &tmpl.Annotations, &desired.Spec.Template.Annotations},
	} {
		owned := recordedKeys(live.Annotations[m.record])
		recordChanged := setRecord(&out.Annotations, m.record, desired.Annotations[m.record])
		if syncOwnedKeys(m.have, *m.want, owned) || recordChanged {
			changed = append(changed, m.name)
		}
	}

	changed = append(changed, updatePodSpec(&tmpl.Spec, &desired.Spec.Template.Spec)...)
	// The volumes from spec.volumes, by name: the same rule as for labels.
	ownedVolumes := recordedKeys(live.Annotations[appv1.AnnotationVolumes])
	recordChanged := setRecord(&out.Annotations, appv1.AnnotationVolumes, desired.Annotations[appv1.AnnotationVolumes])
	if syncVolumes(&tmpl.Spec.Volumes, desired.Spec.Template.Spec.Volumes, ownedVolumes) || recordChanged {
		changed = append(changed, "volumes")
	}

	// The containers' mounts of our volumes (those recorded last time and
	// those of the spec) are ours; mounts of others' volumes stay.
	ours := map[string]bool{}
	for _, name := range ownedVolumes {
		ours[name] = true
	}
	for _, v := range desired.Spec.Template.Spec.Volumes {
		ours[v.Name] = true
	}
	// The init containers and sidecars (containers.go), by the names
	// recorded last time and the spec's.
	ownedContainers := recordedKeys(live.Annotations[appv1.AnnotationContainers])
	recordChanged = setRecord(&out.Annotations, appv1.AnnotationContainers, desired.Annotations[appv1.AnnotationContainers])
	if what := syncInitContainers(&tmpl.Spec.InitContainers, desired.Spec.Template.Spec.InitContainers, ownedContainers, ours); len(what) > 0 {
		changed = append(changed, what...)
	} else if recordChanged {
		changed = append(changed, "init containers")
	}

	// The app container: first among the containers when it is added (so
	// that kubectl picks it by default); where it is otherwise, so that a
	// container another writer put first is not fought over.
	want := desired.Spec.Template.Spec.Containers[0]
	i := containerIndex(tmpl.Spec.Containers, want.Name)
	if i < 0 {
		tmpl.Spec.Containers = slices.Insert(tmpl.Spec.Containers, 0, want)
		return out, append(changed, "container "+want.Name)
	}
	syncContainer(&changed, "", &tmpl.Spec.Containers[i], &want, ours)

	if len(changed) == 0 {
		return nil, nil
	}
	return out, changed
}

// updatePodSpec sets the Pod-level fields we own in live as in desired and
// returns the names of those that changed.
func updatePodSpec(live, desired *corev1.PodSpec) []string {
	var changed []string
	if setOwned(&changed, "serviceAccountName", &live.ServiceAccountName, desired.ServiceAccountName) {
		live.DeprecatedServiceAccount = desired.DeprecatedServiceAccount //nolint:staticcheck // kept in sync with serviceAccountName
	}
	setOwned(&changed, "imagePullSecrets", &live.ImagePullSecrets, desired.ImagePullSecrets)
	setOwned(&changed, "nodeSelector", &live.NodeSelector, desired.NodeSelector)
	setOwned(&changed, "tolerations", &live.Tolerations, desired.Tolerations)
	setOwned(&changed, "affinity", &live.Affinity, desired.Affinity)
	setOwned(&changed, "topologySpreadConstraints", &live.TopologySpreadConstraints, desired.TopologySpreadConstraints)
	setOwned(&changed, "automountServiceAccountToken", &live.AutomountServiceAccountToken, desired.AutomountServiceAccountToken)
	setOwned(&changed, "priorityClassName", &live.PriorityClassName, desired.PriorityClassName)
	setOwned(&changed, "terminationGracePeriodSeconds", &live.TerminationGracePeriodSeconds, desired.TerminationGracePeriodSeconds)
	setOwned(&changed, "podSecurityContext", &live.SecurityContext, desired.SecurityContext)
	return changed
}

func containerIndex(containers []corev1.Container, name string) int {
	for i := range containers {
		if containers[i].Name == name {
			return i
		}
	}
	return -1
}
