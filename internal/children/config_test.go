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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestConfigRefs(t *testing.T) {
	yes := new(true)
	as := fixtures.AppService()
	s := &as.Spec
	s.Volumes = []appv1.Volume{
		{Name: "conf", ConfigMap: &appv1.ConfigMapVolumeSource{Name: "nginx-conf"}},
		{Name: "tls", Secret: &appv1.SecretVolumeSource{SecretName: "tls", Optional: yes}},
		{Name: "cache", EmptyDir: &appv1.EmptyDirVolumeSource{}},
		{Name: "all", Projected: &appv1.ProjectedVolumeSource{Sources: []appv1.VolumeProjection{
			{ConfigMap: &appv1.ConfigMapProjection{Name: "extra", Optional: yes}},
			{Secret: &appv1.SecretProjection{Name: "tls", Optional: yes}},
		}}},
	}
	s.EnvFrom = []corev1.EnvFromSource{
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}},
	}
	s.Envs = []corev1.EnvVar{
		{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "nginx-conf"}, Key: "a", Optional: yes}}},
		{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "api-key"}, Key: "b", Optional: yes}}},
		{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "D", Value: "d"},
	}
	if got := ConfigRefs(as); got != nil {
		t.Errorf("rolloutOnConfigChange off: got %v, want none", got)
	}
	s.RolloutOnConfigChange = true
	// Each once, sorted; required when any reference is required.
	fixtures.CheckEqual(t, "refs", []ConfigRef{
		{Kind: ConfigMapRef, Name: "extra"},
		{Kind: ConfigMapRef, Name: "nginx-conf"},
		{Kind: SecretRef, Name: "api-key", Optional: true},
		{Kind: SecretRef, Name: "db"},
		{Kind: SecretRef, Name: "tls", Optional: true},
	}, ConfigRefs(as))
	// The init containers' and sidecars' references count too; a name no
	// object can have (written before admission refused it) does not.
	s.InitContainers = []appv1.Container{{Name: "migrate", EnvFrom: []corev1.EnvFromSource{
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "migrations"}}},
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a,b=c"}}},
	}}}
	s.Sidecars = []appv1.Container{{Name: "shipper", Env: []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "shipper"}, Key: "k"}}}}}}
	fixtures.CheckEqual(t, "refs with the containers'", []ConfigRef{
		{Kind: ConfigMapRef, Name: "extra"},
		{Kind: ConfigMapRef, Name: "nginx-conf"},
		{Kind: ConfigMapRef, Name: "shipper"},
		{Kind: SecretRef, Name: "api-key", Optional: true},
		{Kind: SecretRef, Name: "db"},
		{Kind: SecretRef, Name: "migrations"},
		{Kind: SecretRef, Name: "tls", Optional: true},
	}, ConfigRefs(as))
	if got, want := (ConfigRef{Kind: SecretRef, Name: "db"}).String(), "Secret db"; got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
}

func TestConfigDigests(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "conf", UID: "uid-1", Labels: map[string]string{"a": "b"}},
		Data:       map[string]string{"nginx.conf": "worker_processes 1;", "other": "x"},
	}
	base := ConfigMapDigest(cm)
	if len(base) != 16 {
		t.Errorf("digest %q: want 16 hex digits", base)
	}
	same := cm.DeepCopy()
	same.Labels = map[string]string{"changed": "only"}
	same.Annotations = map[string]string{"note": "x"}
	same.ResourceVersion = "99"
	different := func(name string, change func(*corev1.ConfigMap)) {
		c := cm.DeepCopy()
		change(c)
		if ConfigMapDigest(c) == base {
			t.Errorf("%s: digest unchanged", name)
		}
	}
	if got := ConfigMapDigest(same); got != base {
		t.Errorf("metadata-only change: digest %q, want %q", got, base)
	}
	different("data value", func(c *corev1.ConfigMap) { c.Data["other"] = "y" })
	different("data key", func(c *corev1.ConfigMap) { c.Data["other2"] = c.Data["other"]; delete(c.Data, "other") })
	different("same data under binaryData", func(c *corev1.ConfigMap) {
		c.BinaryData = map[string][]byte{"other": []byte("x")}
		delete(c.Data, "other")
	})
	different("entries shifted between key and value", func(c *corev1.ConfigMap) {
		c.Data = map[string]string{"nginx.conf" + "worker_processes 1;": "", "other": "x"}
	})
	different("new object, same data", func(c *corev1.ConfigMap) { c.UID = "uid-2" })

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	if SecretDigest(secret) == SecretDigest(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{UID: "uid-2"}, Data: secret.Data}) {
		t.Errorf("a Secret's digest does not depend on its UID: it could be used to guess its data")
	}
}

func TestConfigDigestAnnotation(t *testing.T) {
	digests := map[string]string{"secret/db": "0123456789abcdef", "configmap/conf": MissingDigest}
	value := FormatConfigDigest(digests)
	if want := "configmap/conf=missing,secret/db=0123456789abcdef"; value != want {
		t.Errorf("FormatConfigDigest: got %q, want %q", value, want)
	}
	fixtures.CheckEqual(t, "parsed", digests, ParseConfigDigest(value))
	if got := ParseConfigDigest(""); got != nil {
		t.Errorf("ParseConfigDigest(\"\"): got %v", got)
	}
	fixtures.CheckEqual(t, "malformed entries skipped", map[string]string{"secret/db": "x"}, ParseConfigDigest("junk,secret/db=x,=y"))
}

// TestUpdateDeploymentConfigDigest: the annotation is the controller's
// alone, set, changed and removed as the desired Deployment has it, next to
// others' annotations.
func TestUpdateDeploymentConfigDigest(t *testing.T) {
	withDigest := func(value string) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) { SetConfigDigest(d, value) }
	}
	theirs := func(d *appsv1.Deployment) {
		d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "now"}
	}
	tests := []struct {
		name          string
		live, desired func(*appsv1.Deployment)
		wantDigest    string // on the updated template ("" and no change: none)
		changed       []string
	}{
		{name: "off, none", live: theirs},
		{name: "on, the same", live: withDigest("configmap/conf=aa"), desired: withDigest("configmap/conf=aa")},
		{
			name: "turned on", live: theirs, desired: withDigest("configmap/conf=aa"),
			wantDigest: "configmap/conf=aa", changed: []string{"config digest added (rolloutOnConfigChange is on)"},
		},
		{
			name:       "one changed, one added",
			live:       withDigest("configmap/conf=aa,secret/db=bb"),
			desired:    withDigest("configmap/conf=aa,secret/db=cc,secret/tls=missing"),
			wantDigest: "configmap/conf=aa,secret/db=cc,secret/tls=missing",
			changed:    []string{"config of Secret db and Secret tls"},
		},
		{
			name: "turned off", live: func(d *appsv1.Deployment) { theirs(d); withDigest("configmap/conf=aa")(d) },
			changed: []string{"config digest removed (rolloutOnConfigChange is off)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			live := fixtures.LiveDeployment()
			fixtures.Tweak(tc.live, live)
			desired := fixtures.DesiredDeployment()
			fixtures.Tweak(tc.desired, desired)
			updated, changed := UpdateDeployment(live, desired)
			fixtures.CheckEqual(t, "changed", tc.changed, changed)
			if tc.changed == nil {
				if updated != nil {
					t.Errorf("got an update, want none")
				}
				return
			}
			if got := ConfigDigestOf(updated); got != tc.wantDigest {
				t.Errorf("digest: got %q, want %q", got, tc.wantDigest)
			}
			if live.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] != "" &&
				updated.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
				t.Errorf("others' template annotation lost")
			}
			if again, changed := UpdateDeployment(updated, desired); again != nil {
				t.Errorf("a second update: %v", changed)
			}
		})
	}
}
