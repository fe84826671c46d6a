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
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"example.com/appservice-controller/internal/metrics"
	"example.com/appservice-controller/internal/syncerr"
)

// What both kinds' controllers share between the informers and the syncs:
// the children's events mapped to their owners' keys (ChildEvents), and the
// workers that take keys off a kind's queue and sync them (WorkerPool). Each
// kind has its own queue, workers and sync function: a burst of one kind
// does not hold up the other, and each kind's metrics say which it is.

// NewQueue is an owner kind's workqueue, named for its metrics
// (workqueue_depth{name=...}).
func NewQueue(name string) workqueue.TypedRateLimitingInterface[cache.ObjectName] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: name},
	)
}

// ChildEvents maps the events of an owner kind's children to their owners'
// keys in the kind's queue. Handlers never block and never call the API.
type ChildEvents struct {
	Kind  Kind
	Queue workqueue.TypedInterface[cache.ObjectName]
}

// Handlers are the informer event handlers of the kind's children.
func (e ChildEvents) Handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: e.changed, UpdateFunc: e.updated, DeleteFunc: e.changed}
}

// updated skips the periodic resync of an unchanged child: its owner is
// resynced on its own. When the child's controller or our label changed,
// the owner it belonged to is queued as well as the one it belongs to now,
// so that both see the adoption or release.
func (e ChildEvents) updated(oldObj, newObj interface{}) {
	oldMeta, err1 := meta.Accessor(oldObj)
	newMeta, err2 := meta.Accessor(newObj)
	if err1 == nil && err2 == nil && oldMeta.GetResourceVersion() == newMeta.GetResourceVersion() {
		return
	}
	e.changed(newObj)
	if err1 == nil && err2 == nil {
		oldKey, oldOK := e.Kind.Key(oldMeta)
		newKey, newOK := e.Kind.Key(newMeta)
		if oldOK && (!newOK || oldKey != newKey) {
			e.Queue.Add(oldKey)
		}
	}
}

// changed queues the owner that controls a child, or, for one without a
// controller, the owner the kind's label names: that one may adopt it.
// Objects controlled by anything else are ignored; a deleted object may come
// as a tombstone holding its last known state.
func (e ChildEvents) changed(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, err := meta.Accessor(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("decoding object: %T is not an object", obj))
		return
	}
	if key, ok := e.Kind.Key(object); ok {
		e.Queue.Add(key)
	}
}

// syncTimeout bounds one sync, so that a hung request cannot hold a worker
// (or shutdown) forever.
const syncTimeout = time.Minute

// WorkerPool drains an owner kind's queue, each running sync for one key at a
// time.
type WorkerPool struct {
	// Name is the kind in lower case: the controller label of the
	// reconcile metrics.
	Name  string
	Queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	Sync  func(ctx context.Context, key cache.ObjectName) error
	// Logger adds the owner's key to a sync's logger, under the kind's
	// name (logcheck wants the keys spelled out, so each kind gives its
	// own).
	Logger func(logger klog.Logger, key cache.ObjectName) klog.Logger
}

// Run waits for the caches, starts count workers and blocks until ctx is
// cancelled. Then it shuts the queue down and returns only after every
// worker has finished the sync it was running.
func (w WorkerPool) Run(ctx context.Context, count int, synced []cache.InformerSynced) error {
	logger := klog.FromContext(ctx)
	logger.Info("Waiting for informer caches to sync", "controller", w.Name)
	if ok := cache.WaitForCacheSync(ctx.Done(), synced...); !ok {
		w.Queue.ShutDown()
		if ctx.Err() != nil {
			return nil // stopped before the caches synced: a clean shutdown
		}
		return errors.New("failed to wait for caches to sync")
	}

	logger.Info("Starting workers", "controller", w.Name, "count", count)
	var wg sync.WaitGroup
	for range count {
		wg.Go(func() {
			for w.processNextWorkItem(ctx) {
			}
		})
	}
	logger.Info("Started workers", "controller", w.Name)

	<-ctx.Done()
	logger.Info("Shutting down workers", "controller", w.Name)
	w.Queue.ShutDown()
	wg.Wait()
	logger.Info("Workers stopped", "controller", w.Name)
	return nil
}

// processNextWorkItem takes one key off the queue and syncs it. It returns
// false when the queue has been shut down and drained.
func (w WorkerPool) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := w.Queue.Get()
	if shutdown {
		return false
	}
	defer w.Queue.Done(key)

	// After shutdown began, keys still queued are dropped, not synced: they
	// are level-triggered and the next start lists every owner anyway.
	if ctx.Err() != nil {
		return true
	}
	// The sync itself is not cancelled with ctx: a sync already running is
	// finished (bounded by syncTimeout) so that shutdown never leaves a
	// half-written owner behind.
	syncCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	defer cancel()
	logger := w.Logger(klog.FromContext(ctx), key)
	syncCtx = klog.NewContext(syncCtx, logger)

	start := time.Now()
	err := w.Sync(syncCtx, key)
	switch {
	case err == nil:
		metrics.ObserveReconcile(w.Name, "success", time.Since(start))
		w.Queue.Forget(key)
	case syncerr.IsStale(err):
		// A conflict or a cache that lags behind our own write: the next
		// try sees the newer state. Retried with backoff, not reported.
		metrics.ObserveReconcile(w.Name, "requeue", time.Since(start))
		logger.V(4).Info("Requeuing: the sync worked from a stale view", "reason", err)
		w.Queue.AddRateLimited(key)
	default:
		metrics.ObserveReconcile(w.Name, "error", time.Since(start))
		utilruntime.HandleErrorWithContext(syncCtx, err, "Error syncing; requeuing for later retry")
		w.Queue.AddRateLimited(key)
	}
	return true
}
