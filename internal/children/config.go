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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The pure part of rolloutOnConfigChange: which ConfigMaps and Secrets the
// Pods read, the digest of one's data, and the pod template annotation
// (appv1.AnnotationConfigDigest) that lists them. Reading the objects is the
// controller's (configs.go).

// The kinds of ConfigRef, as the annotation spells them.
const (
	ConfigMapRef = "configmap"
	SecretRef    = "secret"
)

// MissingDigest stands for an object that does not exist.
const MissingDigest = "missing"

// ConfigRef is a ConfigMap or Secret, in the AppService's namespace, that
// its Pods read.
type ConfigRef struct {
	Kind, Name string
	// Optional: every reference to it is optional, so the Pods start
	// without it.
	Optional bool
}

// Key is how the annotation names it: "configmap/NAME" or "secret/NAME".
func (r ConfigRef) Key() string { return r.Kind + "/" + r.Name }

// String is how Events and messages name it: "ConfigMap NAME".
func (r ConfigRef) String() string { return describeConfigKey(r.Key()) }

// ConfigRefs are the ConfigMaps and Secrets the AppService's Pods read,
// each once, sorted by key: nil unless rolloutOnConfigChange is set. They
// come from the volumes (configMap, secret and projected sources), envFrom
// and the env vars' configMapKeyRef and secretKeyRef, of every container.
func ConfigRefs(as *appv1.AppService) []ConfigRef {
	if !as.Spec.RolloutOnConfigChange {
		return nil
	}
	refs := map[string]*ConfigRef{}
	add := func(kind, name string, optional *bool) {
		// No ConfigMap or Secret can have a name that is not a DNS
		// subdomain (admission refuses one in the spec, but an object
		// written before may have it): the digest of such a name could
		// never change, and "," or "=" in it would break the annotation.
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			return
		}
		opt := optional != nil && *optional
		r := refs[kind+"/"+name]
		if r == nil {
			refs[kind+"/"+name] = &ConfigRef{Kind: kind, Name: name, Optional: opt}
			return
		}
		r.Optional = r.Optional && opt // required once, required
	}
	for _, v := range as.Spec.Volumes {
		if v.ConfigMap != nil {
			add(ConfigMapRef, v.ConfigMap.Name, v.ConfigMap.Optional)
		}
		if v.Secret != nil {
			add(SecretRef, v.Secret.SecretName, v.Secret.Optional)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add(ConfigMapRef, s.ConfigMap.Name, s.ConfigMap.Optional)
				}
				if s.Secret != nil {
					add(SecretRef, s.Secret.Name, s.Secret.Optional)
				}
			}
		}
	}
	// The app container's environment, then the init containers' and the
	// sidecars'.
	envFroms, envs := [][]corev1.EnvFromSource{as.Spec.EnvFrom}, [][]corev1.EnvVar{as.Spec.Envs}
	for _, c := range slices.Concat(as.Spec.InitContainers, as.Spec.Sidecars) {
		envFroms, envs = append(envFroms, c.EnvFrom), append(envs, c.Env)
	}
	for _, e := range slices.Concat(envFroms...) {
		if e.ConfigMapRef != nil {
			add(ConfigMapRef, e.ConfigMapRef.Name, e.ConfigMapRef.Optional)
		}
		if e.SecretRef != nil {
			add(SecretRef, e.SecretRef.Name, e.SecretRef.Optional)
		}
	}
	for _, e := range slices.Concat(envs...) {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			add(ConfigMapRef, r.Name, r.Optional)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			add(SecretRef, r.Name, r.Optional)
		}
	}
	out := make([]ConfigRef, 0, len(refs))
	for _, k := range slices.Sorted(maps.Keys(refs)) {
		out = append(out, *refs[k])
	}
	return out
}

// ConfigMapDigest is the digest of a ConfigMap's data and binaryData: its
// labels, annotations and the rest of its metadata do not count.
func ConfigMapDigest(cm *corev1.ConfigMap) string {
	return configDigest(cm.UID, func(w *digestWriter) {
		w.section("data", len(cm.Data))
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			w.entry(k, []byte(cm.Data[k]))
		}
		w.section("binaryData", len(cm.BinaryData))
		for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
			w.entry(k, cm.BinaryData[k])
		}
	})
}

// SecretDigest is the digest of a Secret's data (stringData is folded into
// data by the API server).
func SecretDigest(s *corev1.Secret) string {
	return configDigest(s.UID, func(w *digestWriter) {
		w.section("data", len(s.Data))
		for _, k := range slices.Sorted(maps.Keys(s.Data)) {
			w.entry(k, s.Data[k])
		}
	})
}

// configDigest is an HMAC-SHA256 of what write writes, keyed by the object's
// UID and cut to 16 hex digits. It sits on every Pod, which more people may
// read than the Secret: keyed by a value only those who can read the Secret
// know, it cannot be used to guess low-entropy data offline. An object
// deleted and created anew, even with the same data, has a new digest.
func configDigest(uid types.UID, write func(*digestWriter)) string {
	w := &digestWriter{mac: hmac.New(sha256.New, []byte(uid))}
	write(w)
	return hex.EncodeToString(w.mac.Sum(nil)[:8])
}

// digestWriter writes lengths before bytes, so that no two different
// contents write the same stream.
type digestWriter struct {
	mac hash.Hash
	buf []byte
}

func (w *digestWriter) section(name string, entries int) {
	w.bytes([]byte(name))
	w.buf = binary.AppendUvarint(w.buf[:0], uint64(entries))
	_, _ = w.mac.Write(w.buf)
}

func (w *digestWriter) entry(key string, value []byte) {
	w.bytes([]byte(key))
	w.bytes(value)
}

func (w *digestWriter) bytes(b []byte) {
	w.buf = binary.AppendUvarint(w.buf[:0], uint64(len(b)))
	_, _ = w.mac.Write(w.buf)
	_, _ = w.mac.Write(b)
}

// FormatConfigDigest is the annotation's value for digests by key
// ("configmap/NAME" → digest): "KEY=DIGEST" entries, sorted, comma-separated;
// "" for none. Names, DNS subdomains, hold no ',' or '='.
func FormatConfigDigest(digests map[string]string) string {
	entries := make([]string, 0, len(digests))
	for _, k := range slices.Sorted(maps.Keys(digests)) {
		entries = append(entries, k+"="+digests[k])
	}
	return strings.Join(entries, ",")
}

// ParseConfigDigest reads the annotation's value back (nil for "").
// Malformed entries, which only a hand edit makes, are skipped: the next
// write replaces them.
func ParseConfigDigest(value string) map[string]string {
	if value == "" {
		return nil
	}
	out := map[string]string{}
	for _, e := range strings.Split(value, ",") {
		if k, d, ok := strings.Cut(e, "="); ok && k != "" {
			out[k] = d
		}
	}
	return out
}

// ConfigDigestOf is the annotation on the Deployment's pod template ("" when
// there is none).
func ConfigDigestOf(d *appsv1.Deployment) string {
	if d == nil {
		return ""
	}
	return d.Spec.Template.Annotations[appv1.AnnotationConfigDigest]
}

// SetConfigDigest puts the annotation on a desired Deployment's pod template
// ("" leaves it off).
func SetConfigDigest(d *appsv1.Deployment, value string) {
	if value == "" {
		return
	}
	tmpl := &d.Spec.Template
	tmpl.Annotations = mergeLabels(tmpl.Annotations, map[string]string{appv1.AnnotationConfigDigest: value})
}

// syncConfigDigest sets the annotation in *annotations (a live pod
// template's) to want, or removes it for "": the key is the controller's
// alone. It returns what changed, for the Event ("" for nothing).
func syncConfigDigest(annotations *map[string]string, want string) string {
	have, had := (*annotations)[appv1.AnnotationConfigDigest]
	if have == want && (had || want == "") {
		return ""
	}
	if want == "" {
		delete(*annotations, appv1.AnnotationConfigDigest)
		if len(*annotations) == 0 {
			*annotations = nil
		}
		return "config digest removed (rolloutOnConfigChange is off)"
	}
	*annotations = mergeLabels(*annotations, map[string]string{appv1.AnnotationConfigDigest: want})
	if !had {
		return "config digest added (rolloutOnConfigChange is on)"
	}
	old, now := ParseConfigDigest(have), ParseConfigDigest(want)
	var names []string
	for _, k := range slices.Sorted(maps.Keys(mergeLabels(old, now))) {
		if o, ok := old[k]; !ok || o != now[k] {
			names = append(names, describeConfigKey(k))
		}
	}
	if len(names) == 0 {
		return "config digest" // the same digests, written differently by hand
	}
	return "config of " + strings.Join(names, " and ")
}

// describeConfigKey turns "configmap/NAME" into "ConfigMap NAME".
func describeConfigKey(key string) string {
	kind, name, _ := strings.Cut(key, "/")
	switch kind {
	case ConfigMapRef:
		kind = "ConfigMap"
	case SecretRef:
		kind = "Secret"
	}
	return kind + " " + name
}
