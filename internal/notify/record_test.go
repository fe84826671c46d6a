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

package notify

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/canary"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestRecord(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	release := "new-" + "1796212800"
	everyone := func(appv1.ReleaseEdge) []string { return []string{"ops", "team"} }
	onlyAborts := func(e appv1.ReleaseEdge) []string {
		if e == appv1.EdgeAborted {
			return []string{"ops"}
		}
		return nil
	}
	step := func(d canary.Decision, i int32) canary.Decision {
		d.EdgeStep = i
		d.Status = &appv1.CanaryStatus{CanaryTemplateHash: "new", Step: new(i), Weight: 10 * (i + 1)}
		return d
	}
	pending := func(names ...string) []appv1.Delivery {
		var out []appv1.Delivery
		for _, n := range names {
			out = append(out, appv1.Delivery{Destination: n, Result: appv1.DeliveryPending})
		}
		return out
	}
	started := appv1.NotificationEdge{ID: release + ".started-1", Edge: appv1.EdgeStarted, Time: metav1.Time{Time: now}, Step: new(int32(0)), Steps: 3,
		Message: "Canary new started: step 1 of 3", Deliveries: pending("ops", "team")}
	afterStart := &appv1.NotificationsStatus{Release: release, From: "app:1", To: "app:2", Edges: []appv1.NotificationEdge{started}}
	base := Change{Hash: "new", Steps: 3, From: "app:1", To: "app:2", Now: now, Subscribers: everyone}
	with := func(f func(*Change)) Change {
		c := base
		f(&c)
		return c
	}

	for _, tc := range []struct {
		name string
		old  *appv1.NotificationsStatus
		c    Change
		want *appv1.NotificationsStatus
	}{{
		name: "no edge, nothing recorded: nothing",
		c:    base,
	}, {
		name: "an edge nobody hears of: nothing",
		c: with(func(c *Change) {
			c.Decision, c.Subscribers = step(canary.Decision{Edge: appv1.EdgeStarted}, 0), onlyAborts
		}),
	}, {
		name: "started: a release of its own, a delivery owed to each destination",
		c:    with(func(c *Change) { c.Decision = step(canary.Decision{Edge: appv1.EdgeStarted}, 0) }),
		want: func() *appv1.NotificationsStatus {
			st := afterStart.DeepCopy()
			st.Edges[0].Weight = 10
			return st
		}(),
	}, {
		name: "a step of the same release, later: its id, its weight, the release's images",
		old:  afterStart,
		c: with(func(c *Change) {
			c.Decision = step(canary.Decision{Edge: appv1.EdgeStep, Event: &canary.Event{Message: "Canary new at step 2 of 3: 20%"}}, 1)
			c.Now, c.From = now.Add(time.Minute), "app:2"
		}),
		want: &appv1.NotificationsStatus{Release: release, From: "app:1", To: "app:2", Edges: []appv1.NotificationEdge{started, {
			ID: release + ".step-2", Edge: appv1.EdgeStep, Time: metav1.Time{Time: now.Add(time.Minute)}, Step: new(int32(1)), Steps: 3, Weight: 20,
			Message: "Canary new at step 2 of 3: 20%", Deliveries: pending("ops", "team")}}},
	}, {
		name: "promoted: all of the traffic",
		old:  afterStart,
		c: with(func(c *Change) {
			c.Decision = canary.Decision{Edge: appv1.EdgePromoted, EdgeStep: 2, Status: &appv1.CanaryStatus{StableTemplateHash: "new"},
				Event: &canary.Event{Message: "Canary new promoted"}}
		}),
		want: &appv1.NotificationsStatus{Release: release, From: "app:1", To: "app:2", Edges: []appv1.NotificationEdge{started, {
			ID: release + ".promoted-3", Edge: appv1.EdgePromoted, Time: metav1.Time{Time: now}, Step: new(int32(2)), Steps: 3, Weight: 100,
			Message: "Canary new promoted", Deliveries: pending("ops", "team")}}},
	}, {
		name: "an edge recorded already (a gate waits): nothing new",
		old: &appv1.NotificationsStatus{Release: release, Edges: []appv1.NotificationEdge{{ID: release + ".gated-2", Edge: appv1.EdgeGated,
			Deliveries: pending("ops")}}},
		c: with(func(c *Change) {
			c.Decision, c.Now = step(canary.Decision{Edge: appv1.EdgeGated, Message: "waits"}, 1), now.Add(time.Hour)
		}),
		want: &appv1.NotificationsStatus{Release: release, Edges: []appv1.NotificationEdge{{ID: release + ".gated-2", Edge: appv1.EdgeGated,
			Deliveries: pending("ops")}}},
	}, {
		name: "the Sender's results: recorded on the deliveries still owed",
		old:  afterStart,
		c: with(func(c *Change) {
			c.Results = map[string]Result{
				release + ".started-1.ops":  {Done: true, Delivered: true, Attempts: 2, Time: now.Add(1500 * time.Millisecond)},
				release + ".started-1.team": {Message: "Secret team-hook (spec.secretRef of NotificationDestination team) not found"},
			}
		}),
		want: &appv1.NotificationsStatus{Release: release, From: "app:1", To: "app:2", Edges: []appv1.NotificationEdge{func() appv1.NotificationEdge {
			e := *started.DeepCopy()
			e.Deliveries[0] = appv1.Delivery{Destination: "ops", Result: appv1.DeliveryDelivered, Attempts: 2, Time: &metav1.Time{Time: now.Add(time.Second)}}
			e.Deliveries[1].Message = "Secret team-hook (spec.secretRef of NotificationDestination team) not found"
			return e
		}()}},
	}, {
		name: "a new release: the last one's delivered edges go, those still owed stay",
		old: &appv1.NotificationsStatus{Release: "old-1", Edges: []appv1.NotificationEdge{
			{ID: "old-1.started-1", Deliveries: []appv1.Delivery{{Destination: "ops", Result: appv1.DeliveryDelivered}}},
			{ID: "old-1.aborted-1", Deliveries: pending("ops")},
		}},
		c: with(func(c *Change) {
			c.Decision, c.Subscribers = step(canary.Decision{Edge: appv1.EdgeStarted}, 0), onlyAborts
		}),
		want: &appv1.NotificationsStatus{Release: "old-1", Edges: []appv1.NotificationEdge{
			{ID: "old-1.started-1", Deliveries: []appv1.Delivery{{Destination: "ops", Result: appv1.DeliveryDelivered}}},
			{ID: "old-1.aborted-1", Deliveries: pending("ops")},
		}},
	}, {
		name: "aborted by a test: its exit code",
		old:  afterStart,
		c: with(func(c *Change) {
			d := step(canary.Decision{Edge: appv1.EdgeAborted, Event: &canary.Event{Message: "Canary new aborted: its test smoke failed: exit 3: 503"}}, 0)
			d.Status = &appv1.CanaryStatus{Tests: []appv1.CanaryTestStatus{{Name: "smoke", Phase: appv1.TestFailed, ExitCode: new(int32(3))}}}
			c.Decision, c.Subscribers = d, onlyAborts
		}),
		want: &appv1.NotificationsStatus{Release: release, From: "app:1", To: "app:2", Edges: []appv1.NotificationEdge{started, {
			ID: release + ".aborted-1", Edge: appv1.EdgeAborted, Time: metav1.Time{Time: now}, Step: new(int32(0)), Steps: 3, ExitCode: new(int32(3)),
			Message: "Canary new aborted: its test smoke failed: exit 3: 503", Deliveries: pending("ops")}}},
	}, {
		name: "rolled back: a release of its own, from what the last went to",
		old:  afterStart,
		c: with(func(c *Change) {
			c.Decision = canary.Decision{Edge: appv1.EdgeRolledBack, Event: &canary.Event{Message: "Rolled back to old"}}
			c.Hash, c.To = "old", "app:1"
			c.Subscribers = func(appv1.ReleaseEdge) []string { return []string{"ops"} }
		}),
		// The last release's started edge stays: it is still owed.
		want: &appv1.NotificationsStatus{Release: "old-1796212800", From: "app:2", To: "app:1", Edges: []appv1.NotificationEdge{started,
			{ID: "old-1796212800.rolledback", Edge: appv1.EdgeRolledBack, Time: metav1.Time{Time: now}, Steps: 3, Message: "Rolled back to old",
				Deliveries: pending("ops")}}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Record(tc.old, tc.c)); diff != "" {
				t.Errorf("Record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTrim(t *testing.T) {
	var edges []appv1.NotificationEdge
	for i := range MaxEdges + 3 {
		r := appv1.DeliveryDelivered
		if i%2 == 0 {
			r = appv1.DeliveryPending
		}
		edges = append(edges, appv1.NotificationEdge{ID: string(rune('a' + i)), Deliveries: []appv1.Delivery{{Result: r}}})
	}
	got := trim(edges)
	if len(got) != MaxEdges {
		t.Fatalf("%d edges, want %d", len(got), MaxEdges)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	// b, d and f (delivered, oldest) went; a, c and e (owed) stayed.
	if strings.Join(ids, "")[:4] != "aceg" || slices.Contains(ids, "b") {
		t.Errorf("kept %v: want the oldest delivered gone first", ids)
	}
}

func TestFailures(t *testing.T) {
	owed := &appv1.NotificationsStatus{Edges: []appv1.NotificationEdge{{ID: "r.aborted-1", Edge: appv1.EdgeAborted,
		Deliveries: []appv1.Delivery{{Destination: "ops", Result: appv1.DeliveryPending}}}}}
	blocked := owed.DeepCopy()
	blocked.Edges[0].Deliveries[0].Message = "Secret x not found"
	failed := owed.DeepCopy()
	failed.Edges[0].Deliveries[0] = appv1.Delivery{Destination: "ops", Result: appv1.DeliveryFailed, Message: "gave up"}
	for _, tc := range []struct {
		name     string
		old, new *appv1.NotificationsStatus
		want     []string
	}{
		{"owed: none", nil, owed, nil},
		{"waits for the user: once", owed, blocked, []string{appv1.ReasonNotificationBlocked}},
		{"still waiting: not again", blocked, blocked, nil},
		{"given up: once", blocked, failed, []string{appv1.ReasonNotificationFailed}},
		{"given up before: not again", failed, failed, nil},
	} {
		var got []string
		for _, e := range Failures(tc.old, tc.new) {
			got = append(got, e.Reason)
			if !strings.Contains(e.Message, "ops") || !strings.Contains(e.Message, "r.aborted-1") {
				t.Errorf("%s: %q names neither the destination nor the edge", tc.name, e.Message)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPending(t *testing.T) {
	st := &appv1.NotificationsStatus{Release: "new-2", From: "a", To: "b", Edges: []appv1.NotificationEdge{
		{ID: "old-1.aborted-1", Deliveries: []appv1.Delivery{{Destination: "ops", Result: appv1.DeliveryPending}}},
		{ID: "new-2.started-1", Deliveries: []appv1.Delivery{{Destination: "ops", Result: appv1.DeliveryDelivered}, {Destination: "team", Result: appv1.DeliveryPending}}},
	}}
	got := Pending(st)
	if len(got) != 2 || got[0].ID != "old-1.aborted-1.ops" || got[0].Release != "old-1" || got[0].To != "" ||
		got[1].ID != "new-2.started-1.team" || got[1].Release != "new-2" || got[1].To != "b" || got[1].Edge.Deliveries != nil {
		t.Errorf("Pending: %+v", got)
	}
}
