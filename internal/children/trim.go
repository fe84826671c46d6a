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
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The children's caches keep only what the controller reads: Trim is the
// child informers' transform. Of each child it keeps
//
//   - the metadata that claiming and the patches need: name, namespace,
//     UID, resourceVersion, generation, deletionTimestamp, owner references,
//     our label, and the annotations that are ours (app.example.com/ keys,
//     and those the AnnotationAnnotations record names);
//   - the fields the kind's Update function owns (see each kind's file);
//   - the status fields the AppService's status is computed from (the
//     Deployment's replica counts, observed generation and its Available
//     and Progressing conditions, without their times).
//
// In a Pod template, only the containers, init containers and volumes that
// are ours keep their owned fields; everyone else's keep their name alone,
// so that the order of the lists, which a patch must keep, is still known.
// Everything else (the fields the API server defaults, others' labels and
// annotations, managedFields, the rest of the status) is dropped.
//
// What is kept is kept encoded (Cached): the Go structs of the API types
// are sparse (an empty PodSpec alone takes 592 bytes, a map of one label
// some 300), so a decoded object, trimmed or not, takes two to four times
// its encoded size. Only the metadata that the informer's keys and indexes
// and the event handlers read stays decoded; the rest is decoded (Decode)
// when a sync reads the child.
//
// So a cached child is not the object the API server holds: the controller
// never writes one back. An update is a patch of the owned fields that
// differ (Patch, patch.go), and an object read from the API server (a
// create that met an existing one, an adoption) goes through the same
// Update and Patch functions whole.

// protoMessage is what the built-in kinds' generated protobuf code offers.
type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal(data []byte) error
}

// Decode returns the trimmed child c holds, as a T (a pointer to one of the
// child kinds). What of its metadata c keeps decoded is c's, shared: like
// every cached object, it must not be modified.
func Decode[T metav1.Object](c *Cached) (T, error) {
	var none T
	obj := reflect.New(reflect.TypeFor[T]().Elem())
	err := decompressed(c.Data, func(data []byte) error {
		if m, ok := obj.Interface().(protoMessage); ok {
			return m.Unmarshal(data)
		}
		return direct.Unmarshal(data, obj.Interface())
	})
	if err != nil {
		return none, fmt.Errorf("decoding the cached %s %s/%s: %w", reflect.TypeFor[T]().Elem().Name(), c.namespace, c.name, err)
	}
	field := obj.Elem().FieldByName("ObjectMeta")
	field.Set(reflect.ValueOf(c.metadata(field.Interface().(metav1.ObjectMeta))))
	return obj.Interface().(T), nil
}

// Encode keeps a trimmed child as a Cached one. Of its metadata, what the
// informer's keys, the indexes and the handlers read stays decoded (the
// name, namespace, UID, resourceVersion, deletion time and owner
// references), and so do the labels of a child without a controller:
// the handlers find the owner of one with a controller by its controller
// reference (internal/owner's Kind.Key), and of one without by our label.
// The rest is encoded with the object: a map of one label costs some 300
// bytes decoded, more than a whole Service encoded.
func Encode(obj metav1.Object) (*Cached, error) {
	return encode(obj, metav1.GetControllerOf(obj) != nil)
}

// EncodeLabelled is Encode with the labels encoded too, whatever the
// object: for a kind whose labels no handler or index reads (the
// AppServices, internal/appcache), whose readers decode it to match a
// selector.
func EncodeLabelled(obj metav1.Object) (*Cached, error) {
	return encode(obj, true)
}

func encode(obj metav1.Object, labels bool) (*Cached, error) {
	field := reflect.ValueOf(obj).Elem().FieldByName("ObjectMeta")
	rest := field.Interface().(metav1.ObjectMeta)
	c := newCached(&rest, labels)
	field.Set(reflect.ValueOf(rest))
	var (
		data []byte
		err  error
	)
	if m, ok := obj.(protoMessage); ok {
		data, err = m.Marshal()
	} else {
		data, err = direct.Marshal(obj)
	}
	if err != nil {
		return nil, err
	}
	c.Data, err = compress(data)
	return c, err
}

// Trim returns the part of a child the controller reads (see above), as a
// Cached object. Objects of other types, Cached ones among them, only lose
// their managedFields: trimming a trimmed object changes nothing.
func Trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return Encode(trimDeployment(o))
	case *corev1.Service:
		return Encode(trimService(o))
	case *corev1.ServiceAccount:
		return Encode(trimServiceAccount(o))
	case *networkingv1.Ingress:
		return Encode(trimIngress(o))
	case *policyv1.PodDisruptionBudget:
		return Encode(trimDisruptionBudget(o))
	case *autoscalingv2.HorizontalPodAutoscaler:
		return Encode(trimAutoscaler(o))
	case *gatewayv1.HTTPRoute:
		return Encode(trimHTTPRoute(o))
	case *gatewayv1.GRPCRoute:
		return Encode(trimGRPCRoute(o))
	case *batchv1.Job:
		return Encode(trimJob(o))
	}
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// The other kinds keep the fields their Update function owns.

func trimService(o *corev1.Service) *corev1.Service {
	return &corev1.Service{ObjectMeta: trimMeta(&o.ObjectMeta), Spec: corev1.ServiceSpec{
		Type: o.Spec.Type, Selector: o.Spec.Selector, Ports: o.Spec.Ports,
	}}
}

func trimServiceAccount(o *corev1.ServiceAccount) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: trimMeta(&o.ObjectMeta), AutomountServiceAccountToken: o.AutomountServiceAccountToken}
}

func trimIngress(o *networkingv1.Ingress) *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: trimMeta(&o.ObjectMeta), Spec: networkingv1.IngressSpec{
		IngressClassName: o.Spec.IngressClassName, Rules: o.Spec.Rules, TLS: o.Spec.TLS,
	}}
}

func trimDisruptionBudget(o *policyv1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: trimMeta(&o.ObjectMeta), Spec: policyv1.PodDisruptionBudgetSpec{
		Selector: o.Spec.Selector, MinAvailable: o.Spec.MinAvailable, MaxUnavailable: o.Spec.MaxUnavailable,
	}}
}

func trimAutoscaler(o *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: trimMeta(&o.ObjectMeta), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: o.Spec.ScaleTargetRef, MinReplicas: o.Spec.MinReplicas, MaxReplicas: o.Spec.MaxReplicas,
		Metrics: o.Spec.Metrics, Behavior: o.Spec.Behavior,
	}}
}

func trimHTTPRoute(o *gatewayv1.HTTPRoute) *gatewayv1.HTTPRoute {
	r := &gatewayv1.HTTPRoute{ObjectMeta: trimMeta(&o.ObjectMeta)}
	r.Spec.ParentRefs, r.Spec.Hostnames, r.Spec.Rules = o.Spec.ParentRefs, o.Spec.Hostnames, o.Spec.Rules
	return r
}

func trimGRPCRoute(o *gatewayv1.GRPCRoute) *gatewayv1.GRPCRoute {
	r := &gatewayv1.GRPCRoute{ObjectMeta: trimMeta(&o.ObjectMeta)}
	r.Spec.ParentRefs, r.Spec.Hostnames, r.Spec.Rules = o.Spec.ParentRefs, o.Spec.Hostnames, o.Spec.Rules
	return r
}

// trimMeta keeps the metadata the controller reads of an AppService's
// child: of the labels, ours and the canary's (canary.go).
func trimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	out := trimMetaFor(m, appv1.LabelAppService)
	if v, ok := m.Labels[appv1.LabelCanary]; ok {
		out.Labels = mergeLabels(out.Labels, map[string]string{appv1.LabelCanary: v})
	}
	return out
}

// trimMetaFor keeps the metadata the controller reads, and of the labels
// only ours, the one naming the owner (label).
func trimMetaFor(m *metav1.ObjectMeta, label string) metav1.ObjectMeta {
	owned := recordedKeys(m.Annotations[appv1.AnnotationAnnotations])
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp, OwnerReferences: ownerReferences(m.OwnerReferences, m.Name),
		Labels: keep(m.Labels, func(k string) bool { return k == label }),
		Annotations: keep(m.Annotations, func(k string) bool {
			return strings.HasPrefix(k, appv1.SchemeGroupVersion.Group+"/") || slices.Contains(owned, k)
		}),
	}
}

// ownerReferences returns refs with the words every child repeats shared:
// the owner's API version and kind, and the flags. A watch decodes each
// child's anew, some 80 bytes a reference that 10,000 children would hold
// 10,000 times. An owner's name that is the child's, name, shares its
// string.
func ownerReferences(refs []metav1.OwnerReference, name string) []metav1.OwnerReference {
	if refs == nil {
		return nil
	}
	out := make([]metav1.OwnerReference, len(refs))
	for i, r := range refs {
		r.APIVersion, r.Kind = unique.Make(r.APIVersion).Value(), unique.Make(r.Kind).Value()
		r.Controller, r.BlockOwnerDeletion = sharedBool(r.Controller), sharedBool(r.BlockOwnerDeletion)
		if r.Name == name {
			r.Name = name
		}
		out[i] = r
	}
	return out
}

// The flags' shared values: like everything cached, never to be modified.
var sharedTrue, sharedFalse = new(true), new(false)

func sharedBool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return sharedTrue
	}
	return sharedFalse
}

// keep returns the entries of m whose keys ours reports, nil for none.
func keep(m map[string]string, ours func(key string) bool) map[string]string {
	var out map[string]string
	for k, v := range m {
		if ours(k) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// trimDeployment keeps the fields UpdateDeployment owns and the status
// newStatus reads. The app container is the one named after the AppService
// the Deployment belongs to (its controller, else our label); the init
// containers, sidecars and volumes that are ours are those the
// Deployment's records name.
func trimDeployment(d *appsv1.Deployment) *appsv1.Deployment {
	app := d.Labels[appv1.LabelAppService]
	if ref := metav1.GetControllerOf(d); ref != nil {
		app = ref.Name
	}
	ourContainers := recordedKeys(d.Annotations[appv1.AnnotationContainers])
	ourVolumes := recordedKeys(d.Annotations[appv1.AnnotationVolumes])
	podLabels := recordedKeys(d.Annotations[appv1.AnnotationPodLabels])
	podAnnotations := recordedKeys(d.Annotations[appv1.AnnotationPodAnnotations])

	tmpl := &d.Spec.Template
	pod := &tmpl.Spec
	out := &appsv1.Deployment{
		ObjectMeta: trimMeta(&d.ObjectMeta),
		Spec: appsv1.DeploymentSpec{
			Replicas: d.Spec.Replicas, Strategy: d.Spec.Strategy, MinReadySeconds: d.Spec.MinReadySeconds,
			RevisionHistoryLimit: d.Spec.RevisionHistoryLimit, ProgressDeadlineSeconds: d.Spec.ProgressDeadlineSeconds,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: keep(tmpl.Labels, func(k string) bool {
						return k == appv1.LabelAppService || k == appv1.LabelCanary || k == appv1.LabelTemplate || slices.Contains(podLabels, k)
					}),
					Annotations: keep(tmpl.Annotations, func(k string) bool {
						return k == appv1.AnnotationConfigDigest || k == annotationDefaultContainer || slices.Contains(podAnnotations, k)
					}),
				},
				Spec: corev1.PodSpec{
					ServiceAccountName:            pod.ServiceAccountName,
					DeprecatedServiceAccount:      pod.DeprecatedServiceAccount, //nolint:staticcheck // owned with serviceAccountName
					AutomountServiceAccountToken:  pod.AutomountServiceAccountToken,
					ImagePullSecrets:              pod.ImagePullSecrets,
					NodeSelector:                  pod.NodeSelector,
					Tolerations:                   pod.Tolerations,
					Affinity:                      pod.Affinity,
					TopologySpreadConstraints:     pod.TopologySpreadConstraints,
					PriorityClassName:             pod.PriorityClassName,
					TerminationGracePeriodSeconds: pod.TerminationGracePeriodSeconds,
					SecurityContext:               pod.SecurityContext,
					InitContainers:                trimContainers(pod.InitContainers, ourContainers),
					Containers:                    trimContainers(pod.Containers, []string{app}),
				},
			},
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: d.Status.ObservedGeneration, Replicas: d.Status.Replicas,
			UpdatedReplicas: d.Status.UpdatedReplicas, ReadyReplicas: d.Status.ReadyReplicas,
			AvailableReplicas: d.Status.AvailableReplicas,
		},
	}
	for _, v := range pod.Volumes {
		if !slices.Contains(ourVolumes, v.Name) {
			v = corev1.Volume{Name: v.Name}
		}
		out.Spec.Template.Spec.Volumes = append(out.Spec.Template.Spec.Volumes, v)
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable || c.Type == appsv1.DeploymentProgressing {
			out.Status.Conditions = append(out.Status.Conditions,
				appsv1.DeploymentCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	return out
}

// trimContainers keeps the fields syncContainer owns in the containers
// named ours, and the name alone of the others.
func trimContainers(containers []corev1.Container, ours []string) []corev1.Container {
	if containers == nil {
		return nil
	}
	out := make([]corev1.Container, len(containers))
	for i := range containers {
		c := &containers[i]
		if !slices.Contains(ours, c.Name) {
			out[i] = corev1.Container{Name: c.Name}
			continue
		}
		out[i] = corev1.Container{
			Name: c.Name, Image: c.Image, ImagePullPolicy: c.ImagePullPolicy,
			Command: c.Command, Args: c.Args, WorkingDir: c.WorkingDir, RestartPolicy: c.RestartPolicy,
			LivenessProbe: c.LivenessProbe, ReadinessProbe: c.ReadinessProbe, StartupProbe: c.StartupProbe,
			Lifecycle: c.Lifecycle, SecurityContext: c.SecurityContext,
			Env: c.Env, EnvFrom: c.EnvFrom, Resources: c.Resources, Ports: c.Ports, VolumeMounts: c.VolumeMounts,
		}
	}
	return out
}
