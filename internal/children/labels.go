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
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// SelectorLabels are the labels that tie an AppService's Pods to its
// Deployment and Service.
func SelectorLabels(as *appv1.AppService) map[string]string {
	return map[string]string{appv1.LabelAppService: as.Name}
}

// addLabels sets want's labels on meta, keeping the others, and reports
// whether one was missing or different.
func addLabels(meta *metav1.ObjectMeta, want map[string]string) bool {
	if hasLabels(meta.Labels, want) {
		return false
	}
	meta.Labels = mergeLabels(meta.Labels, want)
	return true
}

// hasLabels reports whether every label in want is set in have, to the same
// value. Labels others add are not our business.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// mergeLabels returns have with want's labels set over it.
func mergeLabels(have, want map[string]string) map[string]string {
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}

// ownedKeys is the record of the keys of m, as AnnotationPodLabels and
// AnnotationPodAnnotations hold it: sorted and comma-separated ("" for
// none). Label and annotation keys cannot hold a comma.
func ownedKeys(m map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ",")
}

// recordedKeys reads such a record back.
func recordedKeys(record string) []string {
	if record == "" {
		return nil
	}
	return strings.Split(record, ",")
}

// syncOwnedKeys sets want's entries in *have and deletes the keys in owned
// (what we set last time) that want no longer has; every other key is
// someone else's and kept. It reports whether *have changed.
func syncOwnedKeys(have *map[string]string, want map[string]string, owned []string) bool {
	changed := false
	for _, k := range owned {
		if _, keep := want[k]; keep {
			continue
		}
		if _, ok := (*have)[k]; ok {
			delete(*have, k)
			changed = true
		}
	}
	if !hasLabels(*have, want) {
		*have = mergeLabels(*have, want)
		changed = true
	}
	if changed && len(*have) == 0 {
		*have = nil
	}
	return changed
}

// setRecord sets (or, for "", removes) one record annotation in *annotations
// and reports whether it changed.
func setRecord(annotations *map[string]string, key, record string) bool {
	if (*annotations)[key] == record {
		return false
	}
	if record == "" {
		delete(*annotations, key)
		if len(*annotations) == 0 {
			*annotations = nil
		}
		return true
	}
	*annotations = mergeLabels(*annotations, map[string]string{key: record})
	return true
}

// withRecord returns annotations with AnnotationAnnotations recording their
// keys: the annotations an object created with them owns. Nil for none. The
// record is the controller's: a spec's annotation of that key (admission
// refuses it) is dropped.
func withRecord(annotations map[string]string) map[string]string {
	out := make(map[string]string, len(annotations)+1)
	for k, v := range annotations {
		if k != appv1.AnnotationAnnotations {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	out[appv1.AnnotationAnnotations] = ownedKeys(out)
	return out
}

// updateAnnotations brings the annotations of out, whose live ones are live,
// in line with desired (built by withRecord): the keys recorded last time
// that desired no longer has go, the others' keys stay, and the record
// follows. It reports whether anything changed.
func updateAnnotations(out *metav1.ObjectMeta, live, desired map[string]string) bool {
	want := make(map[string]string, len(desired))
	for k, v := range desired {
		if k != appv1.AnnotationAnnotations {
			want[k] = v
		}
	}
	owned := recordedKeys(live[appv1.AnnotationAnnotations])
	changed := syncOwnedKeys(&out.Annotations, want, owned)
	return setRecord(&out.Annotations, appv1.AnnotationAnnotations, desired[appv1.AnnotationAnnotations]) || changed
}
