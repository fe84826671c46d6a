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

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestNewVolumes: every source becomes its core/v1 namesake with the API
// server's defaults filled in, as the live Deployment will have them.
func TestNewVolumes(t *testing.T) {
	as := fixtures.AppService()
	as.Spec.Volumes = []appv1.Volume{
		{Name: "cm", ConfigMap: &appv1.ConfigMapVolumeSource{Name: "app", Items: []appv1.KeyToPath{{Key: "k", Path: "app.conf", Mode: new(int32(0o600))}}}},
		{Name: "sec", Secret: &appv1.SecretVolumeSource{SecretName: "tls", DefaultMode: new(int32(0o400)), Optional: new(true)}},
		{Name: "tmp", EmptyDir: &appv1.EmptyDirVolumeSource{SizeLimit: new(resource.MustParse("1Gi"))}},
		{Name: "pvc", PersistentVolumeClaim: &appv1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}},
		{Name: "proj", Projected: &appv1.ProjectedVolumeSource{Sources: []appv1.VolumeProjection{
			{ServiceAccountToken: &appv1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"}},
			{DownwardAPI: &appv1.DownwardAPIProjection{Items: []appv1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &appv1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
		}}},
		{Name: "down", DownwardAPI: &appv1.DownwardAPIVolumeSource{Items: []appv1.DownwardAPIVolumeFile{
			{Path: "mem", ResourceFieldRef: &appv1.ResourceFieldSelector{Resource: "limits.memory", Divisor: "1Mi"}},
		}}},
	}
	mode := new(int32(0o644))
	want := []corev1.Volume{
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, DefaultMode: mode,
			Items: []corev1.KeyToPath{{Key: "k", Path: "app.conf", Mode: new(int32(0o600))}}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: new(int32(0o400)), Optional: new(true)}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: new(resource.MustParse("1Gi"))}}},
		{Name: "pvc", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: new(int64(3600))}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}},
		}}}},
		{Name: "down", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: mode, Items: []corev1.DownwardAPIVolumeFile{
			{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: as.Name, Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		}}}},
	}
	if diff := cmp.Diff(want, newVolumes(as)); diff != "" {
		t.Errorf("newVolumes (-want +got):\n%s", diff)
	}
	if got := newVolumes(fixtures.AppService()); got != nil {
		t.Errorf("no volumes: got %v, want nil", got)
	}
}
