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
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// StatusWrites remembers, for each owner whose status the controller wrote,
// the resourceVersion that write replaced, until the cache shows another.
//
// The status is the owner's record of what the controller decided (a
// canary's step and weight, a run's outcome), and the write's watch event
// reaches the cache some time after the write; on a loaded machine, after
// a child's own event has queued the owner again. A sync that read the
// owner then would decide from the status before the write, and write the
// children back to it: the route of a canary promoted to 100% back to the
// step before, until the next sync. Such a sync waits instead (Behind:
// syncerr.ErrCacheLag, retried with backoff), and the write's event queues the
// owner again once the cache has it.
//
// Only equality of resourceVersions is used, as the API allows: the cache
// moves forward, so once it shows any version but the one the write
// replaced, it has the write (or a later version).
type StatusWrites struct {
	mu       sync.Mutex
	replaced map[cache.ObjectName]string
}

// Wrote records a status write: from is the version the write was made
// from (as the cache held it), to what the API server returned. A write
// the API server found to change nothing keeps the resourceVersion, and
// sends no event: the cache already has it, and nothing is recorded.
func (w *StatusWrites) Wrote(from, to metav1.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := cache.MetaObjectToName(from)
	if to.GetResourceVersion() == from.GetResourceVersion() {
		delete(w.replaced, key)
		return
	}
	if w.replaced == nil {
		w.replaced = map[cache.ObjectName]string{}
	}
	w.replaced[key] = from.GetResourceVersion()
}

// Behind reports whether obj, read from the cache, is the version the last
// status write of it replaced: the cache lacks the controller's own write.
// Any other version ends the record.
func (w *StatusWrites) Behind(obj metav1.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := cache.MetaObjectToName(obj)
	rv, ok := w.replaced[key]
	if !ok {
		return false
	}
	if rv == obj.GetResourceVersion() {
		return true
	}
	delete(w.replaced, key)
	return false
}

// Forget drops the record of an owner that is gone.
func (w *StatusWrites) Forget(key cache.ObjectName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.replaced, key)
}
