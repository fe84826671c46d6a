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
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	appscheme "example.com/appservice-controller/pkg/generated/clientset/versioned/scheme"
)

// slowSink is an API server that takes a while to answer each Event, and
// remembers, per object, the messages in the order it received them, and
// how many writes it had in flight at most.
type slowSink struct {
	delay time.Duration

	mu               sync.Mutex
	byObject         map[types.UID][]string
	total            int
	inFlight, mostAt int
}

func (s *slowSink) write(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	s.inFlight++
	s.mostAt = max(s.mostAt, s.inFlight)
	s.mu.Unlock()
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	s.byObject[e.InvolvedObject.UID] = append(s.byObject[e.InvolvedObject.UID], e.Message)
	s.total++
	return e, nil
}

func (s *slowSink) Create(e *corev1.Event) (*corev1.Event, error) { return s.write(e) }
func (s *slowSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.write(e) }
func (s *slowSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.write(e)
}

// TestRecorder: Events of many objects, recorded at once, reach an API
// server that takes 5 ms to answer each: all of them, each object's in the
// order recorded, several written at once; the API server never has more
// in flight than there are shards.
func TestRecorder(t *testing.T) {
	if err := appscheme.AddToScheme(scheme.Scheme); err != nil {
		t.Fatal(err)
	}
	const objects, each = 64, 10
	sink := &slowSink{delay: 5 * time.Millisecond, byObject: map[types.UID][]string{}}
	r := NewRecorder(context.Background(), sink, scheme.Scheme, corev1.EventSource{Component: "test"}, EventShards)
	defer r.Shutdown()

	var wg sync.WaitGroup
	for i := range objects {
		as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("web-%d", i),
			UID: types.UID(fmt.Sprintf("uid-%d", i))}}
		wg.Go(func() {
			for j := range each {
				// A reason per Event: none is folded into another.
				r.Eventf(as, corev1.EventTypeNormal, fmt.Sprintf("Step%d", j), "%s %d", as.Name, j)
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(time.Minute)
	for {
		sink.mu.Lock()
		total := sink.total
		sink.mu.Unlock()
		if total == objects*each {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Events written after a minute", total, objects*each)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for i := range objects {
		got := sink.byObject[types.UID(fmt.Sprintf("uid-%d", i))]
		for j := range each {
			if want := fmt.Sprintf("web-%d %d", i, j); j >= len(got) || got[j] != want {
				t.Fatalf("object %d's Events written %q, want %d in the order recorded", i, got, each)
			}
		}
	}
	if sink.mostAt < 2 || sink.mostAt > EventShards {
		t.Errorf("at most %d Events written at once, want 2 to %d (the shards)", sink.mostAt, EventShards)
	}
}

// TestShard: an object's Events all go to one shard, whether recorded
// against the object or a reference to it; objects spread over the
// shards.
func TestShard(t *testing.T) {
	used := map[int]bool{}
	for i := range 200 {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("web-%d", i), UID: uid}}
		ref := &corev1.ObjectReference{Kind: "AppService", Namespace: "shop", Name: as.Name, UID: uid}
		s := Shard(as, EventShards)
		if Shard(ref, EventShards) != s || Shard(as.DeepCopy(), EventShards) != s {
			t.Fatalf("object %d: shard %d, its reference's %d", i, s, Shard(ref, EventShards))
		}
		used[s] = true
	}
	if len(used) != EventShards {
		t.Errorf("200 objects used %d of %d shards", len(used), EventShards)
	}
	noUID := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	if Shard(noUID, EventShards) != Shard(&corev1.ObjectReference{Namespace: "shop", Name: "web"}, EventShards) {
		t.Error("an object without a UID and its reference: shards differ")
	}
}

// TestShardOptions: the shards' correlator caches together are one
// broadcaster's, and keep the edges' keys (CorrelatorOptions).
func TestShardOptions(t *testing.T) {
	for shards, want := range map[int]int{1: 4096, EventShards: 512} {
		opts := shardOptions(shards)
		if opts.LRUCacheSize != want {
			t.Errorf("%d shards: each caches %d entries, want %d", shards, opts.LRUCacheSize, want)
		}
		if opts.KeyFunc == nil || opts.SpamKeyFunc == nil {
			t.Errorf("%d shards: the edges' keys are lost", shards)
		}
	}
}
