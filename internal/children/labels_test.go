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

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestMergeLabels(t *testing.T) {
	have := map[string]string{"team": "web", appv1.LabelAppService: "other"}
	got := mergeLabels(have, fixtures.Labels())
	fixtures.CheckEqual(t, "merged labels", map[string]string{"team": "web", appv1.LabelAppService: fixtures.Name}, got)
	fixtures.CheckEqual(t, "have after mergeLabels", map[string]string{"team": "web", appv1.LabelAppService: "other"}, have)
	if !hasLabels(got, fixtures.Labels()) || hasLabels(have, fixtures.Labels()) {
		t.Error("hasLabels does not tell a merged map from the one before")
	}
}
