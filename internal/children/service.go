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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The Service's pure part. The controller owns the Service's type, selector,
// ports and our label. The API server assigns clusterIP(s) and, for NodePort
// and LoadBalancer Services, any nodePort the spec leaves at 0; those are kept
// on every update, or each sync would ask for a new port (and each update
// would fail, as clusterIP is immutable).

// NewService returns the Service an AppService asks for, or nil when it
// declares no ports (a Service without ports is invalid).
func NewService(as *appv1.AppService) *corev1.Service {
	if len(as.Spec.Ports) == 0 {
		return nil
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            as.Name,
			Namespace:       as.Namespace,
			Labels:          SelectorLabels(as),
			OwnerReferences: []metav1.OwnerReference{*NewControllerRef(as)},
		},
		Spec: corev1.ServiceSpec{
			Type:     ServiceType(as),
			Selector: SelectorLabels(as),
			Ports:    servicePorts(as.Spec.Ports),
		},
	}
}

// ServiceType is spec.ServiceType, NodePort when unset (as the users'
// existing manifests expect).
func ServiceType(as *appv1.AppService) corev1.ServiceType {
	if as.Spec.ServiceType == "" {
		return corev1.ServiceTypeNodePort
	}
	return as.Spec.ServiceType
}

// servicePorts copies the ports, filling in what the API server defaults in
// them: the protocol (TCP) and the target port (the port itself).
func servicePorts(ports []corev1.ServicePort) []corev1.ServicePort {
	out := make([]corev1.ServicePort, len(ports))
	for i := range ports {
		ports[i].DeepCopyInto(&out[i])
		p := &out[i]
		p.Protocol = protocolOrTCP(p.Protocol)
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	return out
}

// hasNodePorts reports whether a Service of this type allocates node ports.
func hasNodePorts(t corev1.ServiceType) bool {
	return t == corev1.ServiceTypeNodePort || t == corev1.ServiceTypeLoadBalancer
}

// UpdateService returns a copy of live with every field this controller owns
// set as in desired, keeping the node ports the server assigned, and the
// names of the fields that changed; nil when nothing needs to change. live
// is never modified.
func UpdateService(live, desired *corev1.Service) (*corev1.Service, []string) {
	out := live.DeepCopy()
	changed := ownedLabels(&out.ObjectMeta, desired.Labels)
	setOwned(&changed, "type", &out.Spec.Type, desired.Spec.Type)
	setOwned(&changed, "selector", &out.Spec.Selector, desired.Spec.Selector)
	setOwned(&changed, "ports", &out.Spec.Ports, mergeNodePorts(desired.Spec.Ports, live.Spec.Ports, desired.Spec.Type))

	return updated(out, changed)
}

// mergeNodePorts returns the desired ports with every nodePort left at 0 set
// to the one the server assigned to the same port and protocol, when the
// Service keeps node ports.
func mergeNodePorts(desired, live []corev1.ServicePort, t corev1.ServiceType) []corev1.ServicePort {
	out := make([]corev1.ServicePort, len(desired))
	copy(out, desired)
	if !hasNodePorts(t) {
		return out
	}
	for i := range out {
		if out[i].NodePort != 0 {
			continue
		}
		for _, lp := range live {
			if lp.Port == out[i].Port && lp.Protocol == out[i].Protocol {
				out[i].NodePort = lp.NodePort
				break
			}
		}
	}
	return out
}
