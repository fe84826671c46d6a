//go:build e2e

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

package e2e

// What a watch recorded. A state that lasts seconds (a canary step's
// replicas, a pause, a phase between two writes) is asserted from every
// version of the object a watch delivered since before the test acted,
// never by reading the object at a moment: a reading comes when the test
// gets to it, which on a loaded machine can be after the state has passed.
// A watch delivers every version, in order, however late the test looks at
// what it recorded.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// version is one version of an object, as a watch delivered it.
type version[O any] struct {
	// rv is the object's resourceVersion as a number. The suite's cluster
	// has one etcd, and a resourceVersion is the revision of etcd's write:
	// the versions of different objects are ordered by it. (A client of
	// Kubernetes in general may not assume so; these tests know their
	// cluster.)
	rv int64
	// deleted: the watch said the object was deleted; obj is its last
	// state.
	deleted bool
	obj     O
	// at is when the watch delivered it: after the write.
	at time.Time
}

// recording is what a watch delivered so far, for the test to read, or
// wait on, while the watch goes on.
type recording[T any] struct {
	mu    sync.Mutex
	items []T
	// changed is closed, and replaced, at every change.
	changed chan struct{}
	// ended: the watch ended before the test did; what follows is missing.
	ended bool
}

func newRecording[T any]() *recording[T] {
	return &recording[T]{changed: make(chan struct{})}
}

func (r *recording[T]) add(item T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, item)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recording[T]) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	close(r.changed)
	r.changed = make(chan struct{})
}

// snapshot is a copy of what was recorded so far.
func (r *recording[T]) snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.items)
}

// wait waits until check passes on what was recorded, looking again at
// each new item, and returns what check passed on. It fails the test with
// check's last error after timeout, at once if the watch ended, and, as
// eventually does, if the controller died.
func (r *recording[T]) wait(t *testing.T, timeout time.Duration, check func([]T) error) []T {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		r.mu.Lock()
		items, ended, changed := slices.Clone(r.items), r.ended, r.changed
		r.mu.Unlock()
		err := check(items)
		if err == nil {
			return items
		}
		if ended {
			t.Fatalf("the watch ended early: %v", err)
		}
		select {
		case <-changed:
		case <-tick.C:
			if exitErr := ctrl.Exited(); exitErr != nil {
				t.Fatal(exitErr)
			}
		case <-deadline.C:
			t.Fatalf("after %s: %v", timeout, err)
		}
	}
}

// record watches the object of that name with watchFn (a typed client's
// Watch) from now until the test ends, and records every version of it: the
// one that exists now first, if any. A watch that ends before the test fails
// it: the record would miss versions.
func record[O metav1.Object](t *testing.T, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), name string) *recording[version[O]] {
	t.Helper()
	return recordSelected[O](t, watchFn, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}, name)
}

// recordSelected is record of the objects opts selects (what names them).
func recordSelected[O metav1.Object](t *testing.T, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), opts metav1.ListOptions, name string) *recording[version[O]] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watchFn(ctx, opts)
	if err != nil {
		cancel()
		t.Fatalf("watching %s: %v", name, err)
	}
	rec := newRecording[version[O]]()
	done := make(chan struct{})
	// Cleanups run last-in first-out: the watch stops, then its end is
	// judged.
	t.Cleanup(func() {
		<-done
		if rec.ended {
			t.Errorf("the watch of %s ended before the test: its record misses versions", name)
		}
	})
	t.Cleanup(cancel)
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(O)
			if !ok {
				continue // a watch error (an *metav1.Status): the channel closes next
			}
			rv, err := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
			if err != nil {
				continue
			}
			rec.add(version[O]{rv: rv, deleted: ev.Type == watch.Deleted, obj: o, at: time.Now()})
		}
		if ctx.Err() == nil {
			rec.end()
		}
	}()
	return rec
}

// before is the last version recorded before the write of resourceVersion
// rv (of this object or another), and whether there is one.
func before[O any](versions []version[O], rv int64) (version[O], bool) {
	var last version[O]
	found := false
	for _, v := range versions {
		if v.rv >= rv {
			break
		}
		last, found = v, true
	}
	return last, found
}

// loggedSyncs are the times at which the suite's controller logged that it
// had synced the AppService ("Synced", at -v=2), from the log's klog headers
// ("I1127 15:04:05.000000 ...", local time, no year).
func loggedSyncs(t *testing.T, ns, name string) []time.Time {
	t.Helper()
	return loggedTimes(t, ns, name, "Synced")
}

// loggedRounds are the times at which the suite's controller logged that it
// had taken a round of the AppService's analysis ("Measured", at -v=2).
func loggedRounds(t *testing.T, ns, name string) []time.Time {
	t.Helper()
	return loggedTimes(t, ns, name, "Measured")
}

// loggedTimes are the times of the suite's controller's log lines of
// message msg about the AppService.
func loggedTimes(t *testing.T, ns, name, msg string) []time.Time {
	t.Helper()
	f, err := os.Open(ctrl.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key := fmt.Sprintf(`appservice=%q`, ns+"/"+name)
	now := time.Now()
	var times []time.Time
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		line := s.Text()
		if !strings.Contains(line, strconv.Quote(msg)) || !strings.Contains(line, key) || len(line) < 21 {
			continue
		}
		at, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
		if err != nil {
			t.Fatalf("a log line without a klog header: %q", line)
		}
		at = at.AddDate(now.Year(), 0, 0)
		if at.After(now.Add(24 * time.Hour)) { // logged last year
			at = at.AddDate(-1, 0, 0)
		}
		times = append(times, at)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return times
}

// syncsBetween counts the syncs that ended in [from, to).
func syncsBetween(syncs []time.Time, from, to time.Time) int {
	n := 0
	for _, at := range syncs {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	return n
}
