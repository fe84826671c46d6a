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

	"k8s.io/client-go/tools/record"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// One Normal Event per kind of change, in the order a sync makes them, each
// naming every child it touched; none when nothing changed.
func TestChangeLogRecord(t *testing.T) {
	tests := []struct {
		name    string
		changes ChangeLog
		want    []string
	}{
		{name: "nothing changed"},
		{
			name:    "created both children",
			changes: ChangeLog{created: []string{"Deployment nginx-app", "Service nginx-app"}},
			want:    []string{fixtures.Normal(appv1.ReasonCreated, "Created Deployment nginx-app, Service nginx-app")},
		},
		{
			name: "every kind, claims first",
			changes: ChangeLog{
				deleted:  []string{"Service nginx-app: the spec has no ports"},
				updated:  []string{"Deployment nginx-app: replicas, image"},
				created:  []string{"Service nginx-app"},
				released: []string{"Service nginx-app: its label changed", "Deployment nginx-app: its label changed"},
				adopted:  []string{"Deployment nginx-app"},
			},
			want: []string{
				fixtures.Normal(appv1.ReasonAdopted, "Adopted Deployment nginx-app"),
				fixtures.Normal(appv1.ReasonReleased, "Released Service nginx-app: its label changed; Deployment nginx-app: its label changed"),
				fixtures.Normal(appv1.ReasonCreated, "Created Service nginx-app"),
				fixtures.Normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: replicas, image"),
				fixtures.Normal(appv1.ReasonDeleted, "Deleted Service nginx-app: the spec has no ports"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recorder := record.NewFakeRecorder(10)
			tc.changes.Record(recorder, fixtures.AppService())
			fixtures.CheckEvents(t, tc.want, fixtures.DrainEvents(recorder))
		})
	}
}
