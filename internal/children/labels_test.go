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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestLabelledFor(t *testing.T) {
	as := fixtures.AppService()
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{fixtures.Labels(), true},
		{map[string]string{appv1.LabelAppService: fixtures.Name, "team": "web"}, true},
		{map[string]string{appv1.LabelAppService: "another-app"}, false},
		{map[string]string{"app": fixtures.Name}, false},
		{nil, false},
	} {
		obj := &metav1.ObjectMeta{Labels: tc.labels}
		if got := LabelledFor(obj, as); got != tc.want {
			t.Errorf("LabelledFor(labels %v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}

func TestMergeLabels(t *testing.T) {
	have := map[string]string{"team": "web", appv1.LabelAppService: "other"}
	got := mergeLabels(have, fixtures.Labels())
	fixtures.CheckEqual(t, "merged labels", map[string]string{"team": "web", appv1.LabelAppService: fixtures.Name}, got)
	fixtures.CheckEqual(t, "have after mergeLabels", map[string]string{"team": "web", appv1.LabelAppService: "other"}, have)
	if !hasLabels(got, fixtures.Labels()) || hasLabels(have, fixtures.Labels()) {
		t.Error("hasLabels does not tell a merged map from the one before")
	}
}
