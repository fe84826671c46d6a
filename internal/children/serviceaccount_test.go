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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestServiceAccountName(t *testing.T) {
	tests := []struct {
		name string
		spec func(*appv1.AppServiceSpec)
		want string
	}{
		{name: "none: the namespace's default", want: ""},
		{name: "serviceAccountName", spec: func(s *appv1.AppServiceSpec) { s.ServiceAccountName = "builder" }, want: "builder"},
		{name: "an existing one by name", spec: func(s *appv1.AppServiceSpec) { s.ServiceAccount = &appv1.ServiceAccount{Name: "builder"} }, want: "builder"},
		{name: "created: after the AppService", spec: func(s *appv1.AppServiceSpec) { s.ServiceAccount = &appv1.ServiceAccount{Create: true} }, want: fixtures.Name},
		{name: "created and named", spec: func(s *appv1.AppServiceSpec) { s.ServiceAccount = &appv1.ServiceAccount{Create: true, Name: "runner"} }, want: "runner"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService()
			fixtures.Tweak(tc.spec, &as.Spec)
			if got := ServiceAccountName(as); got != tc.want {
				t.Errorf("ServiceAccountName = %q, want %q", got, tc.want)
			}
			pod := NewDeployment(as).Spec.Template.Spec
			if pod.ServiceAccountName != tc.want || pod.DeprecatedServiceAccount != tc.want { //nolint:staticcheck // kept in sync
				t.Errorf("the Pods run as %q (alias %q), want %q", pod.ServiceAccountName, pod.DeprecatedServiceAccount, tc.want) //nolint:staticcheck // kept in sync
			}
		})
	}
}

// desiredServiceAccount is the ServiceAccount the seed asks for with
// create, two annotations and no token.
func desiredServiceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fixtures.Name,
			Namespace: fixtures.Namespace,
			Labels:    map[string]string{appv1.LabelAppService: fixtures.Name},
			Annotations: map[string]string{
				"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/app",
				"note":                       "x",
				appv1.AnnotationAnnotations:  "eks.amazonaws.com/role-arn,note",
			},
			OwnerReferences: []metav1.OwnerReference{fixtures.OwnerRef()},
		},
		AutomountServiceAccountToken: new(false),
	}
}

func withServiceAccount(s *appv1.AppServiceSpec) {
	s.ServiceAccount = &appv1.ServiceAccount{
		Create:         true,
		Annotations:    map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/app", "note": "x"},
		AutomountToken: new(false),
	}
}

func TestNewServiceAccount(t *testing.T) {
	as := fixtures.AppService()
	if sa := NewServiceAccount(as); sa != nil {
		t.Errorf("no serviceAccount: got %v, want none", sa)
	}
	as.Spec.ServiceAccount = &appv1.ServiceAccount{Name: "builder"}
	if sa := NewServiceAccount(as); sa != nil {
		t.Errorf("an existing ServiceAccount: got %v, want none created", sa)
	}
	withServiceAccount(&as.Spec)
	fixtures.CheckEqual(t, "ServiceAccount", desiredServiceAccount(), NewServiceAccount(as))
	if got := NewDeployment(as).Spec.Template.Spec.AutomountServiceAccountToken; got == nil || *got {
		t.Errorf("the Pods' automountServiceAccountToken = %v, want false", got)
	}
	as.Spec.ServiceAccount.Annotations = nil
	if got := NewServiceAccount(as).Annotations; got != nil {
		t.Errorf("no annotations: got %v, want none (not even the record)", got)
	}
}

func TestUpdateServiceAccount(t *testing.T) {
	runUpdateCases(t, "ServiceAccount", desiredServiceAccount, NewServiceAccount, UpdateServiceAccount, []updateCase[*corev1.ServiceAccount]{
		{name: "in line", spec: withServiceAccount},
		{
			name: "what others add is kept",
			spec: withServiceAccount,
			live: func(sa *corev1.ServiceAccount) {
				sa.Annotations["kubernetes.io/enforce-mountable-secrets"] = "true"
				sa.Labels["team"] = "a"
				sa.Secrets = []corev1.ObjectReference{{Name: "token"}}
				sa.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			},
		},
		{
			name: "an annotation removed from the spec goes; others' stay",
			spec: func(s *appv1.AppServiceSpec) {
				withServiceAccount(s)
				delete(s.ServiceAccount.Annotations, "note")
			},
			live: func(sa *corev1.ServiceAccount) { sa.Annotations["theirs"] = "y" },
			want: func(sa *corev1.ServiceAccount) {
				delete(sa.Annotations, "note")
				sa.Annotations[appv1.AnnotationAnnotations] = "eks.amazonaws.com/role-arn"
			},
			wantChanged: []string{"annotations"},
		},
		{
			name: "every annotation removed: the record goes too",
			spec: func(s *appv1.AppServiceSpec) {
				withServiceAccount(s)
				s.ServiceAccount.Annotations = nil
			},
			want:        func(sa *corev1.ServiceAccount) { sa.Annotations = nil },
			wantChanged: []string{"annotations"},
		},
		{
			name: "drift: a changed annotation and token setting",
			spec: withServiceAccount,
			live: func(sa *corev1.ServiceAccount) {
				sa.Annotations["note"] = "changed"
				sa.AutomountServiceAccountToken = nil
			},
			want: func(sa *corev1.ServiceAccount) {
				sa.Annotations["note"] = "x"
				sa.AutomountServiceAccountToken = new(false)
			},
			wantChanged: []string{"annotations", "automountServiceAccountToken"},
		},
	})
}
