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
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// This file turns the AppService's focused volume types into core/v1's,
// with what the API server defaults inside them filled in (the sources'
// defaultMode 0644, a fieldRef's apiVersion, a token's expirationSeconds),
// so that a written Deployment compares equal to the desired one.

// newVolumes are the Pods' volumes (nil when there are none).
func newVolumes(as *appv1.AppService) []corev1.Volume {
	if len(as.Spec.Volumes) == 0 {
		return nil
	}
	out := make([]corev1.Volume, 0, len(as.Spec.Volumes))
	for _, v := range as.Spec.Volumes {
		cv := corev1.Volume{Name: v.Name}
		switch {
		case v.ConfigMap != nil:
			cv.ConfigMap = &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: v.ConfigMap.Name},
				Items:                keyToPaths(v.ConfigMap.Items),
				DefaultMode:          new(orDefault(v.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)),
				Optional:             v.ConfigMap.Optional,
			}
		case v.Secret != nil:
			cv.Secret = &corev1.SecretVolumeSource{
				SecretName:  v.Secret.SecretName,
				Items:       keyToPaths(v.Secret.Items),
				DefaultMode: new(orDefault(v.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)),
				Optional:    v.Secret.Optional,
			}
		case v.EmptyDir != nil:
			cv.EmptyDir = &corev1.EmptyDirVolumeSource{Medium: v.EmptyDir.Medium, SizeLimit: v.EmptyDir.SizeLimit}
		case v.PersistentVolumeClaim != nil:
			cv.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: v.PersistentVolumeClaim.ClaimName,
				ReadOnly:  v.PersistentVolumeClaim.ReadOnly,
			}
		case v.Projected != nil:
			cv.Projected = &corev1.ProjectedVolumeSource{
				Sources:     projections(as.Name, v.Projected.Sources),
				DefaultMode: new(orDefault(v.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)),
			}
		case v.DownwardAPI != nil:
			cv.DownwardAPI = &corev1.DownwardAPIVolumeSource{
				Items:       downwardAPIFiles(as.Name, v.DownwardAPI.Items),
				DefaultMode: new(orDefault(v.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)),
			}
		default:
			// Admission refuses a volume with no source; the API server
			// would make it an emptyDir.
			cv.EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
		out = append(out, cv)
	}
	return out
}

// defaultTokenExpirationSeconds is the API server's default for a projected
// service account token: an hour.
const defaultTokenExpirationSeconds = 3600

func projections(container string, sources []appv1.VolumeProjection) []corev1.VolumeProjection {
	out := make([]corev1.VolumeProjection, 0, len(sources))
	for _, s := range sources {
		var p corev1.VolumeProjection
		switch {
		case s.ConfigMap != nil:
			p.ConfigMap = &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: s.ConfigMap.Name},
				Items:                keyToPaths(s.ConfigMap.Items),
				Optional:             s.ConfigMap.Optional,
			}
		case s.Secret != nil:
			p.Secret = &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: s.Secret.Name},
				Items:                keyToPaths(s.Secret.Items),
				Optional:             s.Secret.Optional,
			}
		case s.DownwardAPI != nil:
			p.DownwardAPI = &corev1.DownwardAPIProjection{Items: downwardAPIFiles(container, s.DownwardAPI.Items)}
		case s.ServiceAccountToken != nil:
			p.ServiceAccountToken = &corev1.ServiceAccountTokenProjection{
				Audience:          s.ServiceAccountToken.Audience,
				ExpirationSeconds: new(orDefault(s.ServiceAccountToken.ExpirationSeconds, defaultTokenExpirationSeconds)),
				Path:              s.ServiceAccountToken.Path,
			}
		}
		out = append(out, p)
	}
	return out
}

func keyToPaths(items []appv1.KeyToPath) []corev1.KeyToPath {
	if len(items) == 0 {
		return nil
	}
	out := make([]corev1.KeyToPath, 0, len(items))
	for _, i := range items {
		out = append(out, corev1.KeyToPath{Key: i.Key, Path: i.Path, Mode: i.Mode})
	}
	return out
}

// downwardAPIFiles are the files of a downwardAPI volume or projection. A
// resourceFieldRef with no container names the AppService's, which is
// named after it: a volume's must name one.
func downwardAPIFiles(container string, items []appv1.DownwardAPIVolumeFile) []corev1.DownwardAPIVolumeFile {
	if len(items) == 0 {
		return nil
	}
	out := make([]corev1.DownwardAPIVolumeFile, 0, len(items))
	for _, i := range items {
		f := corev1.DownwardAPIVolumeFile{Path: i.Path, Mode: i.Mode}
		if r := i.FieldRef; r != nil {
			f.FieldRef = &corev1.ObjectFieldSelector{APIVersion: r.APIVersion, FieldPath: r.FieldPath}
			if f.FieldRef.APIVersion == "" {
				f.FieldRef.APIVersion = "v1"
			}
		}
		if r := i.ResourceFieldRef; r != nil {
			f.ResourceFieldRef = &corev1.ResourceFieldSelector{ContainerName: r.ContainerName, Resource: r.Resource}
			if f.ResourceFieldRef.ContainerName == "" {
				f.ResourceFieldRef.ContainerName = container
			}
			// Admission admits only the spellings of valid units; were
			// another to get through, the API server would refuse the
			// Deployment, and the AppService would be Degraded: the
			// builder must not panic on it.
			if q, err := resource.ParseQuantity(r.Divisor); r.Divisor != "" && err == nil {
				f.ResourceFieldRef.Divisor = q
			}
		}
		out = append(out, f)
	}
	return out
}

// newVolumeMounts are the container's volume mounts (nil when none).
func newVolumeMounts(mounts []appv1.VolumeMount) []corev1.VolumeMount {
	if len(mounts) == 0 {
		return nil
	}
	out := make([]corev1.VolumeMount, 0, len(mounts))
	for _, m := range mounts {
		out = append(out, corev1.VolumeMount{
			Name:              m.Name,
			MountPath:         m.MountPath,
			ReadOnly:          m.ReadOnly,
			RecursiveReadOnly: m.RecursiveReadOnly,
			SubPath:           m.SubPath,
			SubPathExpr:       m.SubPathExpr,
		})
	}
	return out
}

// syncVolumes makes *have, the Pods' volumes, hold want and keep every
// other volume that is not ours: the volumes named in owned (ours last
// time) that want no longer has go, and so does any volume with one of
// want's names (ours from now on). The others' volumes come first, in
// their order, then want's. It reports whether *have changed.
func syncVolumes(have *[]corev1.Volume, want []corev1.Volume, owned []string) bool {
	ours := make(map[string]bool, len(owned)+len(want))
	for _, name := range owned {
		ours[name] = true
	}
	for _, v := range want {
		ours[v.Name] = true
	}
	var out []corev1.Volume
	for _, v := range *have {
		if !ours[v.Name] {
			out = append(out, v)
		}
	}
	out = append(out, want...)
	if equality.Semantic.DeepEqual(*have, out) {
		return false
	}
	*have = out
	return true
}

// syncVolumeMounts makes *have, the container's mounts, hold want and keep
// every other mount of a volume that is not ours (others' volumes, with
// their mounts, are not our business): the mounts of our volumes that want
// does not list go, and so does any mount at one of want's paths (two
// mounts on one path are refused). The others' mounts come first, in their
// order, then want's. It reports whether *have changed.
func syncVolumeMounts(have *[]corev1.VolumeMount, want []corev1.VolumeMount, ours map[string]bool) bool {
	paths := make(map[string]bool, len(want))
	for _, m := range want {
		paths[m.MountPath] = true
	}
	var out []corev1.VolumeMount
	for _, m := range *have {
		if !ours[m.Name] && !paths[m.MountPath] {
			out = append(out, m)
		}
	}
	out = append(out, want...)
	if equality.Semantic.DeepEqual(*have, out) {
		return false
	}
	*have = out
	return true
}
