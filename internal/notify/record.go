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
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/canary"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// MaxEdges is how many edges the status keeps (the CRD's bound): the
// oldest delivered ones go first.
const MaxEdges = 20

// MaxDeliveries is how many destinations an edge is delivered to (the
// CRD's bound), the first by name.
const MaxDeliveries = 10

// Change is what one sync decided, as the notifications see it.
type Change struct {
	// Decision is the canary's decision: its Edge, and what to say of it.
	Decision canary.Decision
	// Hash is the spec's template hash; Steps its canary's steps.
	Hash  string
	Steps int32
	// From and To are the images of the stable Deployment and of the spec.
	From, To string
	Now      time.Time
	// Subscribers are the destinations that hear of an edge, by name,
	// sorted.
	Subscribers func(appv1.ReleaseEdge) []string
	// Results are the Sender's, by delivery id (Owed.ID).
	Results map[string]Result
}

// Result is where the Sender stands with a delivery.
type Result struct {
	// Done: delivered (Delivered) or given up.
	Done, Delivered bool
	Attempts        int32
	Time            time.Time
	// Message says why it failed, or why it still cannot be sent (the
	// Secret missing, say): never the address.
	Message string
}

// Record is the notifications status after a sync: the old one with the
// decision's edge, if it makes one that some destination hears of and that
// is not recorded yet, and with the Sender's results. Nil when there is
// nothing to record.
func Record(old *appv1.NotificationsStatus, c Change) *appv1.NotificationsStatus {
	st := old.DeepCopy()
	if e, release := edge(old, c); e != nil {
		subscribers := c.Subscribers(e.Edge)
		if len(subscribers) > MaxDeliveries {
			subscribers = subscribers[:MaxDeliveries]
		}
		if len(subscribers) > 0 {
			if st == nil {
				st = &appv1.NotificationsStatus{}
			}
			if release.id != st.Release {
				// A new release: the last one's delivered edges go.
				st.Edges = owing(st.Edges)
				st.Release, st.From, st.To = release.id, release.from, release.to
			}
			for _, d := range subscribers {
				e.Deliveries = append(e.Deliveries, appv1.Delivery{Destination: d, Result: appv1.DeliveryPending})
			}
			st.Edges = append(st.Edges, *e)
		}
	}
	if st == nil {
		return nil
	}
	for i := range st.Edges {
		e := &st.Edges[i]
		for j := range e.Deliveries {
			d := &e.Deliveries[j]
			r, ok := c.Results[DeliveryID(e.ID, d.Destination)]
			if d.Result != appv1.DeliveryPending || !ok {
				continue
			}
			d.Message = r.Message
			if r.Done {
				d.Result, d.Attempts, d.Time = appv1.DeliveryFailed, r.Attempts, &metav1.Time{Time: r.Time.Truncate(time.Second)}
				if r.Delivered {
					d.Result = appv1.DeliveryDelivered
				}
			}
		}
	}
	st.Edges = trim(st.Edges)
	return st
}

// release is a release's id and images.
type release struct{ id, from, to string }

// edge is the edge the change makes and its release (nil: none, or one
// recorded already).
func edge(old *appv1.NotificationsStatus, c Change) (*appv1.NotificationEdge, release) {
	d := c.Decision
	if d.Edge == "" {
		return nil, release{}
	}
	r := release{id: c.Hash + "-" + strconv.FormatInt(c.Now.Unix(), 10), from: c.From, to: c.To}
	switch {
	case d.Edge == appv1.EdgeRolledBack:
		// Back to a template without a canary: a release of its own, from
		// what the last one went to.
		r.from = ""
		if old != nil {
			r.from = old.To
		}
	case d.Edge != appv1.EdgeStarted && old != nil && strings.HasPrefix(old.Release, c.Hash+"-"):
		r = release{id: old.Release, from: old.From, to: old.To}
	}
	e := &appv1.NotificationEdge{Edge: d.Edge, Time: metav1.Time{Time: c.Now.Truncate(time.Second)}, Steps: c.Steps}
	e.ID = r.id + "." + strings.ToLower(string(d.Edge))
	if d.Edge != appv1.EdgeRolledBack {
		e.Step = new(d.EdgeStep)
		e.ID += "-" + strconv.Itoa(int(d.EdgeStep)+1)
	}
	if old != nil {
		for _, o := range old.Edges {
			if o.ID == e.ID {
				return nil, release{}
			}
		}
	}
	if st := d.Status; st != nil && d.Edge != appv1.EdgeRolledBack {
		e.Weight = st.Weight
		if st.TrafficBy == appv1.CanaryByPods {
			e.Weight = st.Share
		}
		for _, t := range st.Tests {
			if t.Phase == appv1.TestFailed && (d.Edge == appv1.EdgeAborted) {
				e.ExitCode = t.ExitCode
			}
		}
	}
	if d.Edge == appv1.EdgePromoted {
		// Every Pod runs it: the status has no canary weight any more.
		e.Weight = 100
	}
	switch {
	case d.Edge == appv1.EdgeStarted:
		e.Message = fmt.Sprintf("Canary %s started: step 1 of %d", c.Hash, c.Steps)
	case d.Edge == appv1.EdgeGated || d.Event == nil:
		e.Message = d.Message
	default:
		e.Message = d.Event.Message
	}
	return e, r
}

// owing is the edges with a delivery still owed.
func owing(edges []appv1.NotificationEdge) []appv1.NotificationEdge {
	var out []appv1.NotificationEdge
	for _, e := range edges {
		if pending(e) {
			out = append(out, e)
		}
	}
	return out
}

func pending(e appv1.NotificationEdge) bool {
	for _, d := range e.Deliveries {
		if d.Result == appv1.DeliveryPending {
			return true
		}
	}
	return false
}

// trim keeps at most MaxEdges edges: the oldest delivered ones go first,
// then, should every one still be owed, the oldest.
func trim(edges []appv1.NotificationEdge) []appv1.NotificationEdge {
	for len(edges) > MaxEdges {
		drop := 0
		for i, e := range edges {
			if !pending(e) {
				drop = i
				break
			}
		}
		edges = append(edges[:drop:drop], edges[drop+1:]...)
	}
	return edges
}

// DeliveryID is the id of an edge's delivery to a destination: the
// CloudEvent's id, the same on every try.
func DeliveryID(edge, destination string) string { return edge + "." + destination }

// Owed is a delivery the status says is owed.
type Owed struct {
	// ID is DeliveryID's.
	ID          string
	Destination string
	Edge        appv1.NotificationEdge
	// Release, From and To are the edge's release's.
	Release, From, To string
}

// Pending is what st says is owed.
func Pending(st *appv1.NotificationsStatus) []Owed {
	if st == nil {
		return nil
	}
	var out []Owed
	for _, e := range st.Edges {
		for _, d := range e.Deliveries {
			if d.Result != appv1.DeliveryPending {
				continue
			}
			edge := e
			edge.Deliveries = nil
			o := Owed{ID: DeliveryID(e.ID, d.Destination), Destination: d.Destination, Edge: edge}
			if strings.HasPrefix(e.ID, st.Release+".") {
				o.Release, o.From, o.To = st.Release, st.From, st.To
			} else {
				o.Release, _, _ = strings.Cut(e.ID, ".")
			}
			out = append(out, o)
		}
	}
	return out
}

// Event is a Warning Event a delivery calls for.
type Event struct{ Reason, Message string }

// Failures are the Warning Events of the deliveries that st records as
// given up, or waiting for the user, and old did not: each once.
func Failures(old, st *appv1.NotificationsStatus) []Event {
	if st == nil {
		return nil
	}
	before := map[string]appv1.Delivery{}
	if old != nil {
		for _, e := range old.Edges {
			for _, d := range e.Deliveries {
				before[DeliveryID(e.ID, d.Destination)] = d
			}
		}
	}
	var out []Event
	for _, e := range st.Edges {
		for _, d := range e.Deliveries {
			was := before[DeliveryID(e.ID, d.Destination)]
			switch {
			case d.Result == appv1.DeliveryFailed && was.Result != appv1.DeliveryFailed:
				out = append(out, Event{appv1.ReasonNotificationFailed, fmt.Sprintf(
					"Gave up delivering the %s edge (%s) to NotificationDestination %s: %s", e.Edge, e.ID, d.Destination, d.Message)})
			case d.Result == appv1.DeliveryPending && d.Message != "" && d.Message != was.Message:
				out = append(out, Event{appv1.ReasonNotificationBlocked, fmt.Sprintf(
					"The %s edge (%s) waits to be delivered to NotificationDestination %s: %s", e.Edge, e.ID, d.Destination, d.Message)})
			}
		}
	}
	return out
}
