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

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The generators of volumes and volume mounts: every source, file paths
// near the rules on relative paths and '..', modes around 0777, names that
// collide, mounts that name no volume, projections whose files collide.

// genVolumes adds volumes and mounts of them to s.
func genVolumes(r *specRand, s *appv1.AppServiceSpec) {
	if r.IntN(3) > 0 {
		return
	}
	names := []string{"config", "data", "a", strings.Repeat("v", 63), "cache-1"}
	for range 1 + r.IntN(3) {
		v := genVolume(r)
		v.Name = pick(r, names...)
		if bad(r) {
			v.Name = pick(r, "", "Config", "a.b", "-a", strings.Repeat("v", 64))
		}
		if i := volumeIndex(s.Volumes, v.Name); i >= 0 && !bad(r) {
			continue // a duplicate name, most of the time skipped
		}
		s.Volumes = append(s.Volumes, v)
	}
	for range r.IntN(3) {
		m := appv1.VolumeMount{
			Name:      pick(r, names...),
			MountPath: pick(r, "/etc/app", "/data", "/var/cache/app", "relative/dir", "/a:b", strings.Repeat("/m", 100)),
			ReadOnly:  r.IntN(2) == 0,
		}
		if len(s.Volumes) > 0 {
			m.Name = s.Volumes[r.IntN(len(s.Volumes))].Name
		}
		if bad(r) {
			m.Name = pick(r, "missing", "", "Config")
		}
		if bad(r) {
			m.MountPath = ""
		}
		if r.IntN(3) == 0 {
			m.SubPath = genRelativePath(r, false)
		}
		if r.IntN(5) == 0 {
			m.SubPathExpr = pick(r, "$(POD_NAME)", "logs/$(POD_NAME)", "..$(X)")
			if bad(r) {
				m.SubPathExpr = pick(r, "/$(X)", "../$(X)")
			}
		}
		if r.IntN(4) == 0 {
			m.RecursiveReadOnly = new(pick(r, corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyEnabled))
			if bad(r) {
				m.RecursiveReadOnly = new(corev1.RecursiveReadOnlyMode("Always"))
			}
		}
		if hasMountPath(s.VolumeMounts, m.MountPath) && !bad(r) {
			continue
		}
		s.VolumeMounts = append(s.VolumeMounts, m)
	}
}

func volumeIndex(vs []appv1.Volume, name string) int {
	for i := range vs {
		if vs[i].Name == name {
			return i
		}
	}
	return -1
}

func hasMountPath(ms []appv1.VolumeMount, path string) bool {
	for _, m := range ms {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// genVolume: one source (now and then none, or two).
func genVolume(r *specRand) appv1.Volume {
	var v appv1.Volume
	sources := 1
	if bad(r) {
		sources = pick(r, 0, 2)
	}
	for range sources {
		switch r.IntN(6) {
		case 0:
			v.ConfigMap = &appv1.ConfigMapVolumeSource{Name: genObjectName(r), Items: genKeyToPaths(r, 3), DefaultMode: genMode(r), Optional: genOptional(r)}
		case 1:
			v.Secret = &appv1.SecretVolumeSource{SecretName: genObjectName(r), Items: genKeyToPaths(r, 3), DefaultMode: genMode(r), Optional: genOptional(r)}
		case 2:
			v.EmptyDir = &appv1.EmptyDirVolumeSource{}
			if r.IntN(2) == 0 {
				v.EmptyDir.Medium = corev1.StorageMediumMemory
			}
			if r.IntN(2) == 0 {
				v.EmptyDir.SizeLimit = new(resource.MustParse(pick(r, "0", "1Gi", "500M", "1.5Gi", "100m")))
				if bad(r) {
					v.EmptyDir.SizeLimit = new(resource.MustParse("-1Gi"))
				}
			}
			if bad(r) {
				v.EmptyDir.Medium = pick[corev1.StorageMedium](r, corev1.StorageMediumHugePages, "memory")
			}
		case 3:
			v.PersistentVolumeClaim = &appv1.PersistentVolumeClaimVolumeSource{ClaimName: genObjectName(r), ReadOnly: r.IntN(2) == 0}
		case 4:
			v.Projected = &appv1.ProjectedVolumeSource{DefaultMode: genMode(r)}
			for range 1 + r.IntN(3) {
				v.Projected.Sources = append(v.Projected.Sources, genProjection(r))
			}
			if bad(r) {
				v.Projected.Sources = nil
			}
		case 5:
			v.DownwardAPI = &appv1.DownwardAPIVolumeSource{DefaultMode: genMode(r)}
			for range 1 + r.IntN(3) {
				v.DownwardAPI.Items = append(v.DownwardAPI.Items, genDownwardAPIFile(r))
			}
		}
	}
	return v
}

// genProjection: one source of a projected volume; file paths come from a
// small pool, so that two sources' files sometimes collide.
func genProjection(r *specRand) appv1.VolumeProjection {
	var p appv1.VolumeProjection
	switch r.IntN(4) {
	case 0:
		p.ConfigMap = &appv1.ConfigMapProjection{Name: genObjectName(r), Items: genKeyToPaths(r, 2), Optional: genOptional(r)}
	case 1:
		p.Secret = &appv1.SecretProjection{Name: genObjectName(r), Items: genKeyToPaths(r, 2), Optional: genOptional(r)}
	case 2:
		p.DownwardAPI = &appv1.DownwardAPIProjection{}
		for range r.IntN(3) {
			p.DownwardAPI.Items = append(p.DownwardAPI.Items, genDownwardAPIFile(r))
		}
	case 3:
		p.ServiceAccountToken = &appv1.ServiceAccountTokenProjection{Path: genRelativePath(r, true), Audience: pick(r, "", "vault", "https://example.com")}
		if r.IntN(2) == 0 {
			p.ServiceAccountToken.ExpirationSeconds = new(pick(r, int64(600), 3600, 86400, 1<<32))
			if bad(r) {
				p.ServiceAccountToken.ExpirationSeconds = new(pick(r, int64(0), 599, 1<<32+1))
			}
		}
	}
	return p
}

func genKeyToPaths(r *specRand, most int) []appv1.KeyToPath {
	var out []appv1.KeyToPath
	for range r.IntN(most + 1) {
		kp := appv1.KeyToPath{Key: pick(r, "app.conf", "tls.crt", "KEY_1", "a-b.c_d"), Path: genRelativePath(r, true), Mode: genMode(r)}
		if bad(r) {
			kp.Key = pick(r, "", "a/b", "a b", strings.Repeat("k", 254))
		}
		out = append(out, kp)
	}
	return out
}

func genDownwardAPIFile(r *specRand) appv1.DownwardAPIVolumeFile {
	f := appv1.DownwardAPIVolumeFile{Path: genRelativePath(r, true), Mode: genMode(r)}
	if r.IntN(3) > 0 {
		f.FieldRef = &appv1.ObjectFieldSelector{FieldPath: pick(r, "metadata.labels", "metadata.annotations", "metadata.name", "metadata.uid", "metadata.labels['app.example.com/appservice']")}
		if r.IntN(3) == 0 {
			f.FieldRef.APIVersion = "v1"
		}
		if bad(r) {
			f.FieldRef.FieldPath = pick(r, "status.podIP", "spec.nodeName", "metadata.labels['a b']", "metadata.generateName")
		}
	} else {
		f.ResourceFieldRef = &appv1.ResourceFieldSelector{Resource: pick(r, "limits.cpu", "requests.memory", "limits.ephemeral-storage", "requests.hugepages-2Mi")}
		if r.IntN(2) == 0 {
			f.ResourceFieldRef.Divisor = pick(r, "1", "1m", "1Mi", "1k", "1Ei")
		}
		if r.IntN(3) == 0 {
			f.ResourceFieldRef.ContainerName = pick(r, "", "app", "other")
		}
		if bad(r) {
			f.ResourceFieldRef.Resource = pick(r, "limits.gpu", "cpu", "requests.nvidia.com/gpu")
		}
	}
	if bad(r) {
		f.FieldRef, f.ResourceFieldRef = &appv1.ObjectFieldSelector{FieldPath: "metadata.name"}, &appv1.ResourceFieldSelector{Resource: "limits.cpu"}
	}
	return f
}

// genRelativePath: a path inside a volume; file paths (which may not start
// with '..') when file is true, subPaths otherwise.
func genRelativePath(r *specRand, file bool) string {
	p := pick(r, "app.conf", "conf/app.yaml", "a//b", "./x", ".hidden", "...", "a/..b", "a/b.", strings.Repeat("p", 200))
	if !file && r.IntN(4) == 0 {
		p = pick(r, "..data", "..x/y")
	}
	if bad(r) {
		p = pick(r, "", "/etc/passwd", "..", "../x", "a/../b", "a/..", "..data")
	}
	return p
}

func genMode(r *specRand) *int32 {
	if r.IntN(2) == 0 {
		return nil
	}
	if bad(r) {
		return new(pick(r, int32(-1), 512, 0o1777))
	}
	return new(pick(r, int32(0), 0o400, 0o644, 0o777))
}

func genOptional(r *specRand) *bool {
	if r.IntN(3) == 0 {
		return new(r.IntN(2) == 0)
	}
	return nil
}

func genObjectName(r *specRand) string {
	n := pick(r, "app-config", "tls", "a.b", "data-1")
	if bad(r) {
		n = pick(r, "", strings.Repeat("n", 254))
	}
	return n
}
