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

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The ServiceAccount's pure part. The controller owns, on a ServiceAccount
// it creates, our label, the annotations from spec.serviceAccount (the keys
// recorded in AnnotationAnnotations) and automountServiceAccountToken. Its
// secrets and image pull secrets, and annotations others add, are someone
// else's.

// ServiceAccountName is the ServiceAccount the Pods run as: the one
// spec.serviceAccount names or creates (after the AppService, unless
// named), or spec.serviceAccountName; "" for the namespace's default.
func ServiceAccountName(as *appv1.AppService) string {
	sa := as.Spec.ServiceAccount
	switch {
	case sa == nil:
		return as.Spec.ServiceAccountName
	case sa.Name != "":
		return sa.Name
	case sa.Create:
		return as.Name
	}
	return ""
}

// automountToken is whether the Pods mount the ServiceAccount's token, nil
// when the spec does not say (the ServiceAccount's own setting then
// applies).
func automountToken(as *appv1.AppService) *bool {
	if sa := as.Spec.ServiceAccount; sa != nil {
		return sa.AutomountToken
	}
	return nil
}

// NewServiceAccount returns the ServiceAccount an AppService creates, or nil
// when it creates none.
func NewServiceAccount(as *appv1.AppService) *corev1.ServiceAccount {
	sa := as.Spec.ServiceAccount
	if sa == nil || !sa.Create {
		return nil
	}
	return &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ServiceAccountName(as),
			Namespace:       as.Namespace,
			Labels:          SelectorLabels(as),
			Annotations:     withRecord(sa.Annotations),
			OwnerReferences: []metav1.OwnerReference{*NewControllerRef(as)},
		},
		AutomountServiceAccountToken: sa.AutomountToken,
	}
}

// UpdateServiceAccount returns a copy of live with the fields the
// controller owns set as in desired, and the names of those that changed;
// nil when nothing needs to change. live is never modified.
func UpdateServiceAccount(live, desired *corev1.ServiceAccount) (*corev1.ServiceAccount, []string) {
	out := live.DeepCopy()
	changed := ownedLabels(&out.ObjectMeta, desired.Labels)
	if updateAnnotations(&out.ObjectMeta, live.Annotations, desired.Annotations) {
		changed = append(changed, "annotations")
	}
	setOwned(&changed, "automountServiceAccountToken", &out.AutomountServiceAccountToken, desired.AutomountServiceAccountToken)
	return updated(out, changed)
}
