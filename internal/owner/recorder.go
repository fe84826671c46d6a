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
	"context"
	"hash/fnv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// EventShards is how many broadcasters a Recorder sends Events through.
const EventShards = 8

// correlatorCacheSize is the entries of each of client-go's correlator
// caches for one broadcaster (its default): a Recorder's shards share it.
const correlatorCacheSize = 4096

// Recorder is an EventRecorder that sends Events through several of
// client-go's broadcasters instead of one. A broadcaster writes its Events
// one at a time, each waiting for the API server's answer, from a queue
// that drops what comes past 1000: under a backlog, Events trailed the
// writes they report by seconds (by 21 s in one test run), and a backlog
// of several thousand AppServices could lose some. With shards, that many
// Events are written at once, and each shard has a queue of its own.
//
// Every Event of one object goes through one shard, chosen by its UID, so
// that what client-go promises per object still holds: its Events are
// written in the order they were recorded, and its correlator (the spam
// budget and the folding of similar Events, CorrelatorOptions) sees them
// all. The shards share the sink's client, and so its rate limiter: the
// API server receives no more requests than with one.
type Recorder struct {
	broadcasters []record.EventBroadcaster
	recorders    []record.EventRecorder
}

var _ record.EventRecorder = (*Recorder)(nil)

// NewRecorder starts shards broadcasters that write to sink, log each Event
// (at level 0, as client-go's StartStructuredLogging does) and stop with
// Shutdown, not with ctx, so that Events recorded during a shutdown are
// still sent.
func NewRecorder(ctx context.Context, sink record.EventSink, scheme *runtime.Scheme, source corev1.EventSource, shards int) *Recorder {
	r := &Recorder{}
	shards = max(shards, 1)
	opts := shardOptions(shards)
	for range shards {
		b := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)), record.WithCorrelatorOptions(opts))
		b.StartStructuredLogging(0)
		b.StartRecordingToSink(sink)
		r.broadcasters = append(r.broadcasters, b)
		r.recorders = append(r.recorders, b.NewRecorder(scheme, source))
	}
	return r
}

// shardOptions are the correlator options of each of shards shards. Each
// remembers its share of the Events' keys: the shards together hold what
// one broadcaster's caches hold (client-go's 4096 entries each), not
// shards times as much (eight full caches held 13 MB at 10,000
// AppServices).
func shardOptions(shards int) record.CorrelatorOptions {
	opts := CorrelatorOptions()
	opts.LRUCacheSize = max(correlatorCacheSize/shards, 1)
	return opts
}

// shard is the recorder of object's shard.
func (r *Recorder) shard(object runtime.Object) record.EventRecorder {
	return r.recorders[Shard(object, len(r.recorders))]
}

// Shard is the shard, of n, of object's Events: by its UID, or by its
// namespace and name when it has none.
func Shard(object runtime.Object, n int) int {
	var key string
	if ref, ok := object.(*corev1.ObjectReference); ok {
		key = string(ref.UID)
		if key == "" {
			key = ref.Namespace + "/" + ref.Name
		}
	} else if m, err := meta.Accessor(object); err == nil {
		key = string(m.GetUID())
		if key == "" {
			key = m.GetNamespace() + "/" + m.GetName()
		}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// Event is record.EventRecorder's.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.shard(object).Event(object, eventtype, reason, message)
}

// Eventf is record.EventRecorder's.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.shard(object).Eventf(object, eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf is record.EventRecorder's.
func (r *Recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.shard(object).AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}

// Shutdown stops every shard, which sends the Events it still holds first;
// the shards stop side by side.
func (r *Recorder) Shutdown() {
	var wg sync.WaitGroup
	for _, b := range r.broadcasters {
		wg.Go(b.Shutdown)
	}
	wg.Wait()
}
