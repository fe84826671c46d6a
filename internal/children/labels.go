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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// SelectorLabels are the labels that tie an AppService's Pods to its
// Deployment and Service.
func SelectorLabels(as *appv1.AppService) map[string]string {
	return map[string]string{appv1.LabelAppService: as.Name}
}

// LabelledFor reports whether obj carries our label naming the AppService:
// the selector that makes it this AppService's child.
func LabelledFor(obj metav1.Object, as *appv1.AppService) bool {
	return obj.GetLabels()[appv1.LabelAppService] == as.Name
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
