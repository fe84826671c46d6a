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

// Package notify delivers a release's edges to the NotificationDestinations
// that hear of them: a signed CloudEvent to a webhook, a message to Slack
// or Teams.
//
// What is owed is decided with the edge, by the sync that makes it
// (Record, pure), and recorded in the AppService's status with the status
// write that records the edge: a delivery per destination, Pending until
// the leader's Sender has delivered it or given it up, which the next sync
// records. Nothing owed lives only in memory: a restart, or a new leader,
// sends what the status says is still Pending, with the same id (an
// at-least-once delivery a receiver deduplicates by id). A healthy
// controller sends each edge once: the Sender remembers what it delivered
// until the status records it.
//
// The Sender posts off the syncs' path, in goroutines of its own, so that a
// destination that is down or slow never holds a release or the workqueue;
// it retries with a jittered backoff that honours Retry-After
// (hashicorp/go-retryablehttp), until a bound after the edge, then gives
// up: the status, a Warning Event and a metric say so. A destination's
// address and keys are read from its Secret at each delivery and never
// appear in a log, an Event, the status or a metric.
package notify
