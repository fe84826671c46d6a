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
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// One sync of one child, the same for every kind: a ChildKind describes the
// kind (its name, client, cache and what "differs" means), and Sync does the
// rest. The child the spec asks for is created, claimed (claim.go) and
// brought in line; every other object the owner controls in that kind (its
// block removed from the spec, or the child renamed) is deleted.

// Sync brings the owner's child of this kind in line with desired, and
// deletes every other one it controls: all of them when desired is nil (the
// spec asks for none). It returns the live child it asks for (nil when
// there is none it controls).
func (k ChildKind[T]) Sync(ctx context.Context, s *Sync, desired T) (T, error) {
	var live, none T
	var errs []error
	if desired != none {
		var err error
		live, err = k.Ensure(ctx, s, desired)
		errs = append(errs, err)
	}
	errs = append(errs, k.prune(ctx, s, desired, desired))
	return live, errors.Join(errs...)
}

// Prune deletes every object of this kind the owner controls but those
// named in keep (the children it asks for, each Ensured; nil ones are
// skipped), for the kind's Unwanted reason: all of them when keep names
// none.
func (k ChildKind[T]) Prune(ctx context.Context, s *Sync, keep ...T) error {
	var none T
	return k.prune(ctx, s, none, keep...)
}

// prune is Prune, saying of each object deleted that replacement replaces
// it, unless that is nil.
func (k ChildKind[T]) prune(ctx context.Context, s *Sync, replacement T, keep ...T) error {
	var none T
	names := map[string]bool{}
	for _, obj := range keep {
		if obj != none {
			names[obj.GetName()] = true
		}
	}
	others, err := k.Cache.ControlledBy(s.Obj.GetUID())
	errs := []error{err}
	for _, obj := range others {
		if !names[obj.GetName()] {
			errs = append(errs, k.remove(ctx, s, obj, replacement))
		}
	}
	return errors.Join(errs...)
}

// Ensure creates or updates the child desired describes, and returns the
// live one (nil when there is none the owner controls).
func (k ChildKind[T]) Ensure(ctx context.Context, s *Sync, desired T) (T, error) {
	var none T
	live, found, err := k.Cache.Get(desired.GetNamespace(), desired.GetName())
	if err != nil {
		return none, err
	}
	if !found {
		var created bool
		if live, created, err = k.createOrFind(ctx, s, desired); err != nil || created {
			return live, err
		}
	}
	if s.beingDeleted(live) {
		// Wait for it to go (its deletion queues us again) and create it
		// anew then, rather than write to it now.
		if s.controls(live) {
			return live, nil
		}
		return none, nil
	}
	live, ours, err := k.claim(ctx, s, live)
	if err != nil {
		return none, err
	}
	if !ours {
		return none, NotOurs(s.Kind, s.Obj, live, k.Name)
	}
	updated, changed := k.Diff(live, desired)
	if updated == none {
		return live, nil
	}
	if updated, err = k.update(ctx, s, live, updated, changed); err != nil {
		return live, err
	}
	return updated, nil
}

// remove deletes obj, a child the owner controls but no longer asks
// for (desired is one it asks for instead, or nil). One no longer
// labelled for it is released instead, as claim does. The UID precondition
// makes sure the object deleted is the one looked at, not a newer one.
func (k ChildKind[T]) remove(ctx context.Context, s *Sync, obj, desired T) error {
	var none T
	if s.beingDeleted(obj) {
		return nil
	}
	obj, ours, err := k.claim(ctx, s, obj)
	if err != nil || !ours {
		return err
	}
	uid := obj.GetUID()
	err = k.Client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case apierrors.IsNotFound(err):
		return nil // already gone
	case err != nil:
		return syncerr.WriteFailed(s.Obj, appv1.ReasonDeleteFailed, "delete", k.Name, err)
	}
	why := k.Unwanted
	if desired != none {
		why = fmt.Sprintf("replaced by %s %s", k.Name, desired.GetName())
	}
	s.Changes.deleted = append(s.Changes.deleted, fmt.Sprintf("%s %s: %s", k.Name, obj.GetName(), why))
	return nil
}

// ChildCache is a kind's informer cache, which holds only objects carrying
// the owner kind's label (main.go lists them so), indexed by the UID of
// their controller (an object of the owner kind), each trimmed and encoded
// (children.Cached): reading one decodes it.
type ChildCache[T metav1.Object] struct {
	indexer cache.Indexer
	owner   Kind
}

// controllerIndex indexes children by the UID of the owner (AppService or
// Activity) that controls them, hashed into one of controllerBuckets
// buckets. An index of client-go keeps a set for each value: one set of
// one child per owner cost about 230 bytes a child, 4.6 MB of the
// controller's heap at 10,000 AppServices with a Deployment and a Service
// each, and a bucket of many children about 25 (BENCHMARKS.md, issue 74).
// ControlledBy reads a bucket's children's controller references (kept
// decoded, children.Cached) to find an owner's: some 40 per kind at 10,000.
const controllerIndex = "appservice-controller"

// controllerBuckets is how many buckets controllerIndex hashes owners
// into.
const controllerBuckets = 256

// bucketNames are the buckets' index values, made once: an index value is
// kept as long as the child.
var bucketNames = func() []string {
	names := make([]string, controllerBuckets)
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	return names
}()

// controllerBucket is the bucket of an owner's children: FNV-1a of its
// UID.
func controllerBucket(uid types.UID) string {
	h := uint32(2166136261)
	for i := 0; i < len(uid); i++ {
		h ^= uint32(uid[i])
		h *= 16777619
	}
	return bucketNames[h%controllerBuckets]
}

// NewChildCache adds the controller index to an informer (before it
// starts) and returns its cache.
func NewChildCache[T metav1.Object](informer cache.SharedIndexInformer, owner Kind) (ChildCache[T], error) {
	err := informer.AddIndexers(cache.Indexers{controllerIndex: func(obj any) ([]string, error) {
		object, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if ref := metav1.GetControllerOf(object); ref != nil && owner.Is(ref) {
			return []string{controllerBucket(ref.UID)}, nil
		}
		return nil, nil
	}})
	return ChildCache[T]{indexer: informer.GetIndexer(), owner: owner}, err
}

// Get returns the cached object of this name, and whether there is one.
func (c ChildCache[T]) Get(namespace, name string) (T, bool, error) {
	var none T
	item, found, err := c.indexer.GetByKey(cache.ObjectName{Namespace: namespace, Name: name}.String())
	if err != nil || !found {
		return none, false, err
	}
	obj, err := decode[T](item)
	return obj, err == nil, err
}

// decode returns the child a cache item holds, encoded or whole.
func decode[T metav1.Object](item any) (T, error) {
	var none T
	if obj, ok := item.(T); ok {
		// An informer that caches its objects whole (the Activities').
		return obj, nil
	}
	c, ok := item.(*children.Cached)
	if !ok {
		return none, fmt.Errorf("cache of %T holds a %T", none, item)
	}
	return children.Decode[T](c)
}

// ControlledBy returns the cached objects the owner of this UID controls.
func (c ChildCache[T]) ControlledBy(owner types.UID) ([]T, error) {
	items, err := c.indexer.ByIndex(controllerIndex, controllerBucket(owner))
	if err != nil {
		return nil, err
	}
	var out []T
	for _, item := range items {
		object, err := meta.Accessor(item)
		if err != nil {
			return nil, err
		}
		if ref := metav1.GetControllerOf(object); ref == nil || ref.UID != owner || !c.owner.Is(ref) {
			continue // another owner's, in the same bucket
		}
		obj, err := decode[T](item)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}
