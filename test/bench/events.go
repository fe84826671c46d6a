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

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/localcluster"
)

// EventsLag: how far a backlog's Events trail its writes. N AppServices
// (the benchmark's spec) are created before the controller starts; from
// its start, the time to its last object write (the backlog's: every
// Deployment, Service and status, waitWritten) and to its last Event
// write, once every AppService has its Event. The goal: the last Event
// within 10% of the last object write (Ratio ≤ 1.10). Run under this
// controller and, with -baseline, the baseline's, in alternation.
type EventsLag struct {
	N          int    `json:"n"`
	Controller string `json:"controller"`
	// ObjectSeconds, EventSeconds: from the controller's start to its
	// last object write, and to its last Event write.
	ObjectSeconds float64 `json:"objectSeconds"`
	EventSeconds  float64 `json:"eventSeconds"`
	// Ratio is EventSeconds / ObjectSeconds.
	Ratio float64 `json:"ratio"`
	// WithEvent: AppServices with an Event written (none lost: N).
	// EventWrites: the controller's Event writes (a backlog makes one
	// each).
	WithEvent   int `json:"withEvent"`
	EventWrites int `json:"eventWrites"`
	// PeakWritesPerSecond: the most writes of every kind the API server
	// answered the controller in one second (its client's -kube-api-qps
	// bounds them, Events included).
	PeakWritesPerSecond int `json:"peakWritesPerSecond"`
}

// eventsResource is the Events' resource in the audit log.
const eventsResource = "events"

// measureEvents runs the Events row unless -skip leaves it out.
func measureEvents(o options, res *Results) error {
	if o.skip["events"] {
		return nil
	}
	logf("events")
	lags, err := measureEventsLags(o)
	res.EventsLags = lags
	return err
}

// eventsTurns are the backlogs the row measures, and how many turns each
// (a turn: one run under each controller).
var eventsTurns = []struct{ n, turns int }{{1000, 3}, {5000, 1}}

// measureEventsLags runs each of eventsTurns under this controller and,
// with -baseline, the baseline's, each in turn first.
func measureEventsLags(o options) ([]EventsLag, error) {
	var out []EventsLag
	turn := 0
	for _, size := range eventsTurns {
		for range size.turns {
			controllers := []struct{ name, bin string }{{"this", o.controller}}
			if o.baseline != "" {
				controllers = append(controllers, struct{ name, bin string }{o.baselineName, o.baseline})
				if turn%2 == 1 {
					controllers[0], controllers[1] = controllers[1], controllers[0]
				}
			}
			turn++
			for _, c := range controllers {
				logf("events: a backlog of %d under %s", size.n, c.name)
				oc := o
				oc.controller = c.bin
				lag, err := measureEventsLag(oc, size.n)
				if err != nil {
					return out, err
				}
				lag.Controller = c.name
				out = append(out, lag)
			}
		}
	}
	return out, nil
}

// measureEventsLag is one run of EventsLag.
func measureEventsLag(o options, n int) (EventsLag, error) {
	res := EventsLag{N: n}
	e, err := newEnvWith(o, fmt.Sprintf("events-%d", n), localcluster.Options{})
	if err != nil {
		return res, err
	}
	defer e.cluster.Stop()
	if err := installCRD(o, e); err != nil {
		return res, err
	}
	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Create(context.Background(), appService(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return res, err
	}
	ctrl, err := startController(o, e)
	if err != nil {
		return res, err
	}
	defer stop(ctrl)
	start := ctrl.Started()
	if err := followEvents(e.cluster, start, n, 10*time.Minute, &res); err != nil {
		return res, err
	}
	return res, nil
}

// followEvents follows the audit log, as waitWritten does, until it shows
// every AppService's Deployment, Service and status written and an Event
// of each (an Event's name is its object's, a dot and a suffix), and sets
// res's times from since and its counts.
func followEvents(c *localcluster.Cluster, since time.Time, n int, timeout time.Duration, res *EventsLag) error {
	tail, err := c.TailAudit()
	if err != nil {
		return err
	}
	defer tail.Close()
	written := map[string]map[string]bool{"deployments": {}, "services": {}, "appservices/status": {}, eventsResource: {}}
	perSecond := map[int64]int{}
	var lastObject, lastEvent time.Time
	deadline := time.Now().Add(timeout)
	for {
		events, err := tail.Next()
		if err != nil {
			return err
		}
		for _, ev := range events {
			if !wroteSince(ev, controllerUser, since) {
				continue
			}
			at := ev.StageTimestamp
			perSecond[at.Unix()]++
			res.PeakWritesPerSecond = max(res.PeakWritesPerSecond, perSecond[at.Unix()])
			what, name := ev.ObjectRef.Resource, ev.ObjectRef.Name
			if ev.ObjectRef.Subresource != "" {
				what += "/" + ev.ObjectRef.Subresource
			}
			if what == eventsResource {
				res.EventWrites++
				if i := strings.LastIndexByte(name, '.'); i > 0 {
					name = name[:i]
				}
				if at.After(lastEvent) {
					lastEvent = at
				}
			}
			if names, ok := written[what]; ok && !names[name] {
				names[name] = true
				if what != eventsResource && at.After(lastObject) {
					lastObject = at
				}
			}
		}
		res.WithEvent = len(written[eventsResource])
		d, s, st := len(written["deployments"]), len(written["services"]), len(written["appservices/status"])
		if d >= n && s >= n && st >= n && res.WithEvent >= n {
			res.ObjectSeconds, res.EventSeconds = lastObject.Sub(since).Seconds(), lastEvent.Sub(since).Seconds()
			res.Ratio = res.EventSeconds / res.ObjectSeconds
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %d Deployments, %d Services, %d statuses, %d AppServices' Events written of %d",
				timeout, d, s, st, res.WithEvent, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventsMarkdown is the rows of the Events' lag.
func eventsMarkdown(lags []EventsLag) string {
	var b strings.Builder
	for _, l := range lags {
		fmt.Fprintf(&b, "| a backlog of %d, %s controller: to its last object write vs to its last Event (ratio, goal ≤ 1.10); "+
			"AppServices with their Event; Event writes; most writes in one second | %.1f s vs %.1f s (**%.2f×**); %d of %d; %d; %d |\n",
			l.N, l.Controller, l.ObjectSeconds, l.EventSeconds, l.Ratio, l.WithEvent, l.N, l.EventWrites, l.PeakWritesPerSecond)
	}
	return b.String()
}
