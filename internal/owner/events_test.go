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
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

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

// TestCorrelatorOptions: within a few seconds, on one AppService, 40
// distinct edges of a release after 30 other Events: every edge is recorded whole
// (client-go's defaults dropped all after the 25th Event of the object, and
// folded the 11th of a reason into "combined from similar events"). A storm
// of one edge repeated, or of other Events, stays bounded by 25.
func TestCorrelatorOptions(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(start)
	newCorrelator := func(o record.CorrelatorOptions) *record.EventCorrelator {
		o.Clock = clock
		return record.NewEventCorrelatorWithOptions(o)
	}
	event := func(typ, reason, message string) *corev1.Event {
		clock.Step(100 * time.Millisecond)
		now := metav1.NewTime(clock.Now())
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("shop.%d", clock.Now().UnixNano()), Namespace: "apps"},
			InvolvedObject: corev1.ObjectReference{Kind: "AppService", Namespace: "apps", Name: "shop", UID: "shop-uid", APIVersion: "app.example.com/v1"},
			Source:         corev1.EventSource{Component: "appservice-controller"},
			Type:           typ, Reason: reason, Message: message, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}
	}
	// recorded sends the events through c and returns the messages of those
	// it lets through, as the API server would get them.
	recorded := func(c *record.EventCorrelator, events []*corev1.Event) []string {
		var out []string
		for _, e := range events {
			r, err := c.EventCorrelate(e)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Skip {
				out = append(out, r.Event.Message)
			}
		}
		return out
	}
	var noise, edges []*corev1.Event
	for i := range 30 {
		noise = append(noise, event(corev1.EventTypeNormal, appv1.ReasonUpdated, fmt.Sprintf("Updated Deployment shop: replicas %d", i)))
	}
	reasons := []string{appv1.ReasonCanaryStep, appv1.ReasonCanaryRequested}
	for i := range 40 {
		edges = append(edges, event(corev1.EventTypeNormal, reasons[i%len(reasons)], fmt.Sprintf("Canary c%d: edge %d", i/len(reasons), i)))
	}

	ours := newCorrelator(CorrelatorOptions())
	if got := recorded(ours, noise); len(got) != 25 {
		t.Errorf("%d of 30 other Events recorded, want 25 (client-go's budget per object)", len(got))
	}
	got := recorded(ours, edges)
	if len(got) != len(edges) {
		t.Errorf("%d of %d edges recorded after 30 other Events, want all", len(got), len(edges))
	}
	for i, m := range got {
		if m != edges[i].Message {
			t.Errorf("edge %d recorded as %q, want %q", i, m, edges[i].Message)
		}
	}
	var storm []*corev1.Event
	for range 100 {
		storm = append(storm, event(corev1.EventTypeWarning, appv1.ReasonCanaryAborted, "Canary c9 aborted: the same edge again"))
	}
	if got := recorded(ours, storm); len(got) != 25 {
		t.Errorf("one edge repeated 100 times: %d recorded, want 25", len(got))
	}
	// What the defaults did to the same Events: the reason for the options.
	defaults := newCorrelator(record.CorrelatorOptions{})
	recorded(defaults, noise)
	if got := recorded(defaults, edges); len(got) != 0 {
		t.Errorf("client-go's defaults recorded %d edges after 30 other Events; this test no longer shows why the options are set", len(got))
	}
	defaults = newCorrelator(record.CorrelatorOptions{})
	if got := recorded(defaults, edges[:25]); len(got) != 25 || !strings.HasPrefix(got[24], "(combined from similar events)") {
		t.Errorf("client-go's defaults recorded the 25th edge as %q; this test no longer shows why the options are set", got[len(got)-1])
	}
	// And the edges' other reasons have budgets of their own too.
	for _, reason := range []string{appv1.ReasonCanaryAborted, appv1.ReasonCanaryPromoted, appv1.ReasonCanaryRolledBack, appv1.ReasonCanaryAnalysisFailed} {
		var more []*corev1.Event
		for i := range 30 {
			more = append(more, event(corev1.EventTypeWarning, reason, fmt.Sprintf("Canary d%d: %s", i, reason)))
		}
		if got := recorded(ours, more); len(got) != 30 || got[29] != more[29].Message {
			t.Errorf("%s: %d of 30 distinct edges recorded, the last as %q", reason, len(got), got[len(got)-1])
		}
	}
}
