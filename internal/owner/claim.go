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
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Claiming: which object of a child's name is the owner's to manage (an
// AppService's, or an Activity's), after kube-controller-manager's
// ControllerRefManager. Every child kind of both owner kinds goes through
// the one path below, described by a ChildKind value, which also makes the
// kind's writes (create, adopt, release, update), recording each in the
// sync's change log.

// Kind is a kind of custom object that has children: the AppService
// (of a Deployment, a Service, ...) or the Activity (of a Job). Claiming is
// the same for both; what differs is the kind itself, which its children's
// controller references name, and the label that names the owner on them.
type Kind struct {
	// GVK is the owner's kind, as its children's controller references
	// name it.
	GVK schema.GroupVersionKind
	// Label is the label that names the owner on its children.
	Label string
}

// Key is the key of the owner an object belongs to: its controller if that
// is of this kind, or, if it has no controller, the owner named by the
// kind's label.
func (k Kind) Key(object metav1.Object) (cache.ObjectName, bool) {
	if ref := metav1.GetControllerOf(object); ref != nil {
		if !k.Is(ref) {
			return cache.ObjectName{}, false
		}
		return cache.ObjectName{Namespace: object.GetNamespace(), Name: ref.Name}, true
	}
	if name := object.GetLabels()[k.Label]; name != "" {
		return cache.ObjectName{Namespace: object.GetNamespace(), Name: name}, true
	}
	return cache.ObjectName{}, false
}

// Is reports whether an owner reference points to an object of this kind:
// group and kind must both match (the version may differ).
func (k Kind) Is(ref *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == k.GVK.Group && ref.Kind == k.GVK.Kind
}

// Object is an AppService or an Activity.
type Object interface {
	metav1.Object
	runtime.Object
}

// Sync is one sync of one owner, as the claiming path and the child
// kinds' writes see it: the owner, its kind, and the log of what the sync
// changed, for the Events at its end.
type Sync struct {
	Obj  Object
	Kind Kind
	// Fresh reads the owner from the API server, past the cache, before an
	// adoption in its name (ReadFresh).
	Fresh func(ctx context.Context) (metav1.Object, error)
	// Blocked: the owner's status says the last sync found an object in
	// the way of a child (see createOrFind).
	Blocked bool
	// Changes is what the sync wrote: Record it at the sync's end.
	Changes ChangeLog
}

// ReadFresh reads the owner of this name with its typed client's Get, for
// a Sync's Fresh.
func ReadFresh[T metav1.Object](ctx context.Context, get func(context.Context, string, metav1.GetOptions) (T, error), name string) (metav1.Object, error) {
	obj, err := get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err // not obj: a nil pointer in an interface is not nil
	}
	return obj, nil
}

// controls reports whether obj's controller is this very owner (same UID:
// not an earlier owner of the same name).
func (s *Sync) controls(obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && s.Kind.Is(ref) && ref.Name == s.Obj.GetName() && ref.UID == s.Obj.GetUID()
}

// labels reports whether obj carries the kind's label naming this owner:
// what makes it the owner's child.
func (s *Sync) labels(obj metav1.Object) bool {
	return obj.GetLabels()[s.Kind.Label] == s.Obj.GetName()
}

// ChildClient is what the controller needs of a child kind's typed client;
// the clientset's DeploymentInterface and ServiceInterface are ones.
type ChildClient[T metav1.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// ChildKind is one kind of child, of either owner kind, in one namespace: its name for messages
// and Events, its client and cache, diff (the kind's Update function in
// internal/children: a copy of live with the owned fields set as in
// desired, and what changed; nil when nothing did), and, for a kind the
// spec may ask for or not, why one goes when the spec asks for none.
type ChildKind[T interface {
	comparable
	metav1.Object
}] struct {
	Name     string
	Client   ChildClient[T]
	Cache    ChildCache[T]
	Diff     func(live, desired T) (T, []string)
	Unwanted string
}

// createOrFind creates a child missing from the cache and reports whether it
// did. The cache holds only objects carrying our label, so the create can
// meet an object of the same name; it is then read back. If it is this
// owner's and labelled for it, it is our own create not yet brought by
// the watch, and the sync is retried as stale (syncerr.ErrCacheLag). Anything else
// (stripped of our label, an orphan, someone else's) is returned for the
// caller to claim. A create is recorded in s.Changes.
//
// While the owner is already blocked by an object in the way, the object is
// read first instead, so that a blocked owner does not issue a failing
// create on every retry and resync.
func (k ChildKind[T]) createOrFind(ctx context.Context, s *Sync, desired T) (T, bool, error) {
	var zero, existing T
	var err error
	blocked := s.Blocked
	if blocked {
		existing, err = k.Client.Get(ctx, desired.GetName(), metav1.GetOptions{})
	}
	switch {
	case !blocked || apierrors.IsNotFound(err):
		created, err := k.Client.Create(ctx, desired, metav1.CreateOptions{FieldManager: FieldManager})
		if err == nil {
			s.Changes.created = append(s.Changes.created, k.Name+" "+created.GetName())
			return created, true, nil
		}
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return zero, false, syncerr.ErrNamespaceTerminating
		}
		if !apierrors.IsAlreadyExists(err) {
			return zero, false, syncerr.WriteFailed(s.Obj, appv1.ReasonCreateFailed, "create", k.Name, err)
		}
		if existing, err = k.Client.Get(ctx, desired.GetName(), metav1.GetOptions{}); err != nil {
			return zero, false, err
		}
	case err != nil:
		return zero, false, err
	}
	if s.controls(existing) && s.labels(existing) {
		return zero, false, fmt.Errorf("%s %s/%s: %w", k.Name, existing.GetNamespace(), existing.GetName(), syncerr.ErrCacheLag)
	}
	return existing, false, nil
}

// claim decides whether obj, the object of a child's name, is the owner's
// to manage, with the rules of ControllerRefManager:
//
//   - controlled by this owner and labelled for it: ours;
//   - controlled by this owner but no longer labelled for it: released
//     (our owner reference removed), and from then on in the way;
//   - controlled by nothing and labelled for it: adopted (our owner
//     reference added), but only after an uncached read confirms that the
//     owner still exists with the same UID and is not being deleted, so
//     that a stale cache never adopts for an owner that is gone;
//   - anything else (someone else's, unlabelled): in the way, untouched.
//
// Callers skip objects being deleted (beingDeleted): those are neither
// adopted nor released. It returns the object as it now is and whether it is
// ours; an adoption or release is recorded in s.Changes.
func (k ChildKind[T]) claim(ctx context.Context, s *Sync, obj T) (T, bool, error) {
	owner := s.Obj
	controlled, labelled := s.controls(obj), s.labels(obj)
	switch {
	case controlled && labelled:
		return obj, true, nil
	case controlled:
		released, err := k.patchOwners(ctx, obj, releasePatch(obj, owner.GetUID()))
		if err != nil {
			return obj, false, k.claimFailed(owner, releasing, obj, err)
		}
		s.Changes.released = append(s.Changes.released,
			fmt.Sprintf("%s %s: its label %s no longer names this %s", k.Name, obj.GetName(), s.Kind.Label, s.Kind.GVK.Kind))
		return released, false, nil
	case metav1.GetControllerOf(obj) != nil || !labelled:
		return obj, false, nil
	}

	// An orphan labelled for us. The cached owner may be stale: read it
	// from the API server before taking ownership in its name.
	fresh, err := s.Fresh(ctx)
	if err != nil && !apierrors.IsNotFound(err) {
		return obj, false, err
	}
	if err != nil || fresh.GetUID() != owner.GetUID() || fresh.GetDeletionTimestamp() != nil {
		return obj, false, fmt.Errorf("not adopting %s %s/%s: %s %s changed since it was cached: %w",
			k.Name, obj.GetNamespace(), obj.GetName(), s.Kind.GVK.Kind, owner.GetName(), syncerr.ErrCacheLag)
	}
	adopted, err := k.patchOwners(ctx, obj, adoptPatch(obj, metav1.NewControllerRef(owner, s.Kind.GVK)))
	if err != nil {
		return obj, false, k.claimFailed(owner, adopting, obj, err)
	}
	s.Changes.adopted = append(s.Changes.adopted, k.Name+" "+obj.GetName())
	return adopted, true, nil
}

// patchOwners writes an ownerPatch.
func (k ChildKind[T]) patchOwners(ctx context.Context, obj T, patch []byte) (T, error) {
	return k.Client.Patch(ctx, obj.GetName(), types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
}

// claimOp is an adoption or a release, as its messages spell it.
type claimOp struct{ verb, gerund string }

var (
	adopting  = claimOp{verb: "adopt", gerund: "adopting"}
	releasing = claimOp{verb: "release", gerund: "releasing"}
)

// claimFailed is the error of a failed adoption or release. An object
// gone, or deleted and created anew, since it was cached is stale, not a
// failure: the next sync sees what is there now.
func (k ChildKind[T]) claimFailed(owner metav1.Object, op claimOp, obj T, err error) error {
	if apierrors.IsNotFound(err) || uidChanged(err) {
		return fmt.Errorf("not %s %s %s/%s: it changed since it was cached: %w", op.gerund, k.Name, obj.GetNamespace(), obj.GetName(), syncerr.ErrCacheLag)
	}
	return syncerr.WriteFailed(owner, appv1.ReasonUpdateFailed, op.verb, k.Name, err)
}

// update writes what changed between live (usually the cached, trimmed
// child) and updated, live with its owned fields brought in line with the
// spec, as a patch of those fields (children.Patch), and records what
// changed in s.Changes. A patch that comes out empty (the fields differ
// only as Go values, not as JSON) writes nothing.
func (k ChildKind[T]) update(ctx context.Context, s *Sync, live, updated T, changed []string) (T, error) {
	patch, pt, err := children.Patch(live, updated)
	if err != nil || patch == nil {
		return live, err
	}
	written, err := k.Client.Patch(ctx, live.GetName(), pt, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return live, syncerr.WriteFailed(s.Obj, appv1.ReasonUpdateFailed, "update", k.Name, err)
	}
	s.Changes.updated = append(s.Changes.updated, fmt.Sprintf("%s %s: %s", k.Name, written.GetName(), strings.Join(changed, ", ")))
	return written, nil
}

// beingDeleted reports whether obj, the owner's child or an orphan
// labelled for it, is on its way out. Nothing is written to it: its deletion
// event queues the owner, whose next sync creates the child anew, once.
func (s *Sync) beingDeleted(obj metav1.Object) bool {
	return obj.GetDeletionTimestamp() != nil &&
		(s.controls(obj) || (metav1.GetControllerOf(obj) == nil && s.labels(obj)))
}

// ownerPatch is a strategic merge patch of an object's owner references. The
// object's UID in it guards against a stale read: on an object deleted and
// created anew since, the patch would change the UID, which the API server
// refuses (see uidChanged).
type ownerPatch struct {
	Metadata struct {
		OwnerReferences []any     `json:"ownerReferences"`
		UID             types.UID `json:"uid"`
	} `json:"metadata"`
}

// adoptPatch adds ref, the owner's controller reference, to obj.
func adoptPatch(obj metav1.Object, ref *metav1.OwnerReference) []byte {
	var p ownerPatch
	p.Metadata.OwnerReferences = []any{ref}
	p.Metadata.UID = obj.GetUID()
	return mustMarshal(p)
}

// releasePatch removes the owner's reference (owner references merge by
// UID) from obj.
func releasePatch(obj metav1.Object, owner types.UID) []byte {
	var p ownerPatch
	p.Metadata.OwnerReferences = []any{map[string]any{"$patch": "delete", "uid": owner}}
	p.Metadata.UID = obj.GetUID()
	return mustMarshal(p)
}

// uidChanged reports whether err is the API server refusing an ownerPatch
// because the object's UID is not the one in the patch.
func uidChanged(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

func mustMarshal(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs and maps above
	}
	return data
}
