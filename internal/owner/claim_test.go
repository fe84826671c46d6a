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

package owner

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The two owner kinds, as their controllers describe them.
var (
	appServiceKind = Kind{GVK: children.ControllerKind, Label: appv1.LabelAppService}
	activityKind   = Kind{GVK: children.ActivityKind, Label: appv1.LabelActivity}
)

// TestOwnerSyncControlsAndLabels: an object is the owner's when its
// controller reference names the owner's kind, name and UID; it is labelled
// for the owner when the kind's label names it. Each kind reads only its
// own label and references.
func TestOwnerSyncControlsAndLabels(t *testing.T) {
	as := fixtures.AppService()
	act := fixtures.Activity()
	apps, acts := &Sync{Obj: as, Kind: appServiceKind}, &Sync{Obj: act, Kind: activityKind}
	asRef := metav1.NewControllerRef(as, appv1.SchemeGroupVersion.WithKind("AppService"))
	actRef := metav1.NewControllerRef(act, appv1.SchemeGroupVersion.WithKind("Activity"))
	otherUID := *asRef
	otherUID.UID = "an-earlier-one"
	for _, tc := range []struct {
		name                  string
		labels                map[string]string
		ref                   *metav1.OwnerReference
		appControls, appLabel bool
		actControls, actLabel bool
	}{
		{name: "the AppService's", labels: fixtures.Labels(), ref: asRef, appControls: true, appLabel: true},
		{name: "labelled among others", labels: map[string]string{appv1.LabelAppService: fixtures.Name, "team": "web"}, appLabel: true},
		{name: "another AppService's label", labels: map[string]string{appv1.LabelAppService: "another-app"}},
		{name: "an earlier AppService of the name", ref: &otherUID},
		{name: "someone's app label", labels: map[string]string{"app": fixtures.Name}},
		{name: "the Activity's", labels: map[string]string{appv1.LabelActivity: act.Name}, ref: actRef, actControls: true, actLabel: true},
		{name: "nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Labels: tc.labels}
			if tc.ref != nil {
				obj.OwnerReferences = []metav1.OwnerReference{*tc.ref}
			}
			got := []bool{apps.controls(obj), apps.labels(obj), acts.controls(obj), acts.labels(obj)}
			fixtures.CheckEqual(t, "AppService controls and labels, Activity controls and labels", []bool{tc.appControls, tc.appLabel, tc.actControls, tc.actLabel}, got)
		})
	}
}
