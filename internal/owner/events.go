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
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// ChangeLog collects what one sync wrote. It becomes one Normal Event per
// kind of change, naming every child it touched, rather than one per child:
// a new AppService costs one Event write, not two. (The Warning Event of a
// failed sync goes with the owner's status: each kind's updateStatus.)
type ChangeLog struct {
	created, updated, deleted, adopted, released []string
}

// Record emits the Events, in the order a sync makes the changes: claims
// first, then writes. Each message starts with its reason, a past-tense
// verb: "Created Deployment web, Service web".
func (l *ChangeLog) Record(recorder record.EventRecorder, owner runtime.Object) {
	for _, e := range []struct {
		reason, sep string
		children    []string
	}{
		{appv1.ReasonAdopted, ", ", l.adopted},
		{appv1.ReasonReleased, "; ", l.released},
		{appv1.ReasonCreated, ", ", l.created},
		{appv1.ReasonUpdated, "; ", l.updated},
		{appv1.ReasonDeleted, "; ", l.deleted},
	} {
		if len(e.children) > 0 {
			recorder.Event(owner, corev1.EventTypeNormal, e.reason, e.reason+" "+strings.Join(e.children, e.sep))
		}
	}
}

// releaseEdges are the reasons of the Events that mark an edge of a
// release: a step, a promotion, an abort, a rollback, a request acted on.
// They are what a person looks for in an incident, and a busy AppService
// emits many other Events (its measurements, its children's changes).
var releaseEdges = map[string]bool{
	appv1.ReasonCanaryStep:           true,
	appv1.ReasonCanaryPromoted:       true,
	appv1.ReasonCanaryAborted:        true,
	appv1.ReasonCanaryAnalysisFailed: true,
	appv1.ReasonCanaryTestFailed:     true,
	appv1.ReasonCanaryTest:           true,
	appv1.ReasonCanaryRequested:      true,
	appv1.ReasonCanaryRolledBack:     true,
}

// CorrelatorOptions are the Event broadcaster's. client-go's correlator
// lets a source send 25 Events about one object, then one every 5 minutes,
// and folds the 11th Event of one reason within 10 minutes into a
// "(combined from similar events)" one that keeps only the latest message.
// Both dropped a release's edges on a busy AppService. Here each edge,
// by its reason and message, has a budget of its own, and is never
// combined with another edge: every distinct edge is recorded, while the
// same edge repeated in a storm is held to 25 and then one every 5
// minutes, as before. Every other Event keeps client-go's budget per
// object and its folding (docs/design.md, "Events: every edge of a
// release").
func CorrelatorOptions() record.CorrelatorOptions {
	return record.CorrelatorOptions{KeyFunc: aggregateKey, SpamKeyFunc: spamKey}
}

// aggregateKey is client-go's (EventAggregatorByReasonFunc), with the
// message added for an edge: events are combined only within one key, and
// an edge's key holds one message.
func aggregateKey(e *corev1.Event) (string, string) {
	key, message := record.EventAggregatorByReasonFunc(e)
	if releaseEdges[e.Reason] {
		key += "\x00" + e.Message
	}
	return key, message
}

// spamKey is an edge's aggregateKey: its reason and message; for any other
// Event, the key client-go uses by default (its source, object and type).
func spamKey(e *corev1.Event) string {
	if releaseEdges[e.Reason] {
		key, _ := aggregateKey(e)
		return key
	}
	o := e.InvolvedObject
	return strings.Join([]string{e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, e.Type}, "")
}
