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
	"k8s.io/apimachinery/pkg/util/intstr"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The generators of the lifecycle handlers and the security contexts:
// handlers with none, one or two actions and sleeps around the grace
// period; user and group IDs around 0 and 2^31; seccomp and AppArmor
// profiles with and without their localhost profile; privilege escalation
// against privileged and CAP_SYS_ADMIN; sysctls with good and bad names and
// duplicates.

func genLifecycleAndSecurity(r *specRand, s *appv1.AppServiceSpec) {
	if r.IntN(4) == 0 {
		s.Lifecycle = &corev1.Lifecycle{}
		if r.IntN(2) == 0 {
			s.Lifecycle.PostStart = genLifecycleHandler(r)
		}
		if r.IntN(2) == 0 {
			s.Lifecycle.PreStop = genLifecycleHandler(r)
		}
		if bad(r) {
			s.Lifecycle.StopSignal = new(corev1.SIGTERM)
		}
	}
	if r.IntN(4) == 0 {
		s.SecurityContext = genSecurityContext(r)
	}
	if r.IntN(4) == 0 {
		s.PodSecurityContext = genPodSecurityContext(r)
	}
}

func genLifecycleHandler(r *specRand) *corev1.LifecycleHandler {
	h := &corev1.LifecycleHandler{}
	actions := 1
	if bad(r) {
		actions = pick(r, 0, 2)
	}
	for range actions {
		switch r.IntN(4) {
		case 0:
			h.Exec = &corev1.ExecAction{Command: pick(r, []string{"/bin/sh", "-c", "sleep 5"}, []string{"true"})}
			if bad(r) {
				h.Exec.Command = nil
			}
		case 1:
			h.HTTPGet = &corev1.HTTPGetAction{Path: pick(r, "", "/shutdown"), Port: pick(r, intstr.FromInt32(8080), intstr.FromString("http"))}
			if r.IntN(3) == 0 {
				h.HTTPGet.Scheme = pick(r, corev1.URISchemeHTTP, corev1.URISchemeHTTPS)
			}
			if bad(r) {
				h.HTTPGet.Port = pick(r, intstr.FromInt32(0), intstr.FromString("Not_A_Name"))
			}
		case 2:
			h.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(pick(r, int32(80), 65535))}
			if bad(r) {
				h.TCPSocket.Port = intstr.FromInt32(70000)
			}
		case 3:
			h.Sleep = &corev1.SleepAction{Seconds: pick(r, int64(0), 5, 30)}
			if bad(r) {
				h.Sleep.Seconds = pick(r, int64(-1), 31, 3600)
			}
		}
	}
	return h
}

// genID: a user or group ID, now and then out of range.
func genID(r *specRand) *int64 {
	if r.IntN(2) == 0 {
		return nil
	}
	if bad(r) {
		return new(pick(r, int64(-1), 2147483648))
	}
	return new(pick(r, int64(0), 1000, 65532, 2147483647))
}

func genSeccomp(r *specRand) *corev1.SeccompProfile {
	if r.IntN(3) > 0 {
		return nil
	}
	p := &corev1.SeccompProfile{Type: pick(r, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined, corev1.SeccompProfileTypeLocalhost)}
	if p.Type == corev1.SeccompProfileTypeLocalhost {
		p.LocalhostProfile = new(pick(r, "profiles/audit.json", "a.json", "..x/y.json"))
	}
	if bad(r) {
		switch r.IntN(3) {
		case 0:
			p.Type = pick[corev1.SeccompProfileType](r, "", "Default")
		case 1:
			p.LocalhostProfile = new(pick(r, "/abs.json", "../up.json"))
		case 2:
			if p.Type == corev1.SeccompProfileTypeLocalhost {
				p.LocalhostProfile = nil
			} else {
				p.LocalhostProfile = new("a.json")
			}
		}
	}
	return p
}

func genAppArmor(r *specRand) *corev1.AppArmorProfile {
	if r.IntN(3) > 0 {
		return nil
	}
	p := &corev1.AppArmorProfile{Type: pick(r, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined, corev1.AppArmorProfileTypeLocalhost)}
	if p.Type == corev1.AppArmorProfileTypeLocalhost {
		p.LocalhostProfile = new(pick(r, "k8s-apparmor-example-deny-write", "a", strings.Repeat("p", 4095)))
	}
	if bad(r) {
		switch r.IntN(3) {
		case 0:
			p.Type = pick[corev1.AppArmorProfileType](r, "", "runtime/default")
		case 1:
			p.Type, p.LocalhostProfile = corev1.AppArmorProfileTypeLocalhost, new(pick(r, "", " padded", "padded\n", strings.Repeat("p", 4096)))
		case 2:
			p.Type, p.LocalhostProfile = corev1.AppArmorProfileTypeRuntimeDefault, new("x")
		}
	}
	return p
}

func genSecurityContext(r *specRand) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		RunAsUser:       genID(r),
		RunAsGroup:      genID(r),
		SeccompProfile:  genSeccomp(r),
		AppArmorProfile: genAppArmor(r),
	}
	if r.IntN(2) == 0 {
		sc.RunAsNonRoot = new(r.IntN(2) == 0)
	}
	if r.IntN(2) == 0 {
		sc.ReadOnlyRootFilesystem = new(r.IntN(2) == 0)
	}
	if r.IntN(2) == 0 {
		sc.AllowPrivilegeEscalation = new(r.IntN(3) > 0)
	}
	if r.IntN(4) == 0 {
		sc.Privileged = new(false)
		if bad(r) {
			sc.Privileged = new(true) // with allowPrivilegeEscalation false, refused by both
			sc.AllowPrivilegeEscalation = new(false)
		}
	}
	if r.IntN(3) == 0 {
		sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		if r.IntN(2) == 0 {
			sc.Capabilities.Add = []corev1.Capability{pick[corev1.Capability](r, "NET_BIND_SERVICE", "CHOWN", "CAP_SYS_ADMIN")}
		}
	}
	if r.IntN(5) == 0 {
		sc.ProcMount = new(corev1.DefaultProcMount)
		if bad(r) {
			sc.ProcMount = new(pick(r, corev1.UnmaskedProcMount, corev1.ProcMountType("Masked")))
		}
	}
	if r.IntN(5) == 0 {
		sc.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c123,c456", Type: pick(r, "", "spc_t")}
	}
	if bad(r) {
		sc.WindowsOptions = &corev1.WindowsSecurityContextOptions{RunAsUserName: new("ContainerUser")}
	}
	return sc
}

func genPodSecurityContext(r *specRand) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{
		RunAsUser:       genID(r),
		RunAsGroup:      genID(r),
		FSGroup:         genID(r),
		SeccompProfile:  genSeccomp(r),
		AppArmorProfile: genAppArmor(r),
	}
	if r.IntN(2) == 0 {
		sc.RunAsNonRoot = new(true)
	}
	for range r.IntN(3) {
		sc.SupplementalGroups = append(sc.SupplementalGroups, pick(r, int64(0), 1000, 2147483647))
		if bad(r) {
			sc.SupplementalGroups = append(sc.SupplementalGroups, -1)
		}
	}
	if r.IntN(4) == 0 {
		sc.FSGroupChangePolicy = new(pick(r, corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways))
		if bad(r) {
			sc.FSGroupChangePolicy = new(corev1.PodFSGroupChangePolicy("Never"))
		}
	}
	if r.IntN(4) == 0 {
		sc.SupplementalGroupsPolicy = new(pick(r, corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict))
		if bad(r) {
			sc.SupplementalGroupsPolicy = new(corev1.SupplementalGroupsPolicy("merge"))
		}
	}
	if r.IntN(4) == 0 {
		sc.SELinuxChangePolicy = new(pick(r, corev1.SELinuxChangePolicyRecursive, corev1.SELinuxChangePolicyMountOption))
		if bad(r) {
			sc.SELinuxChangePolicy = new(corev1.PodSELinuxChangePolicy("Never"))
		}
	}
	for range r.IntN(3) {
		s := corev1.Sysctl{Name: pick(r, "net.core.somaxconn", "kernel.shm_rmid_forced", "net/ipv4/ip_local_port_range", "a"), Value: pick(r, "1024", "", "1024 65535")}
		if bad(r) {
			s.Name = pick(r, "", "Net.Core", "net..core", "-net", strings.Repeat("a", 254))
		}
		sc.Sysctls = append(sc.Sysctls, s)
	}
	if bad(r) {
		sc.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: new(false)}
	}
	return sc
}
