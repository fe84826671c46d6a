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
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Claiming: which object of a child's name is the AppService's to manage,
// after kube-controller-manager's ControllerRefManager. Every child kind goes
// through the one path below, described by a childKind value, which also
// makes the kind's writes (create, adopt, release, update), recording each
// in the sync's change log.

// ownerKey is the key of the AppService an object belongs to: its
// controller if that is an AppService, or, if it has no controller, the
// AppService named by our label.
func ownerKey(object metav1.Object) (cache.ObjectName, bool) {
	if ref := metav1.GetControllerOf(object); ref != nil {
		if !isControllerKind(ref) {
			return cache.ObjectName{}, false
		}
		return cache.ObjectName{Namespace: object.GetNamespace(), Name: ref.Name}, true
	}
	if name := object.GetLabels()[appv1.LabelAppService]; name != "" {
		return cache.ObjectName{Namespace: object.GetNamespace(), Name: name}, true
	}
	return cache.ObjectName{}, false
}

// isControllerKind reports whether an owner reference points to an
// AppService: group and kind must both match (the version may differ).
func isControllerKind(ref *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == children.ControllerKind.Group && ref.Kind == children.ControllerKind.Kind
}

// isControlledBy reports whether obj's controller is this very AppService
// (same UID: not an earlier AppService of the same name).
func isControlledBy(obj metav1.Object, as *appv1.AppService) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && isControllerKind(ref) && ref.Name == as.Name && ref.UID == as.UID
}

// childClient is what the controller needs of a child kind's typed client;
// the clientset's DeploymentInterface and ServiceInterface are ones.
type childClient[T metav1.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// childKind is one kind of child, in one namespace: its name for messages
// and Events, its client and cache, diff (the kind's Update function in
// internal/children: a copy of live with the owned fields set as in
// desired, and what changed; nil when nothing did), and, for a kind the
// spec may ask for or not, why one goes when the spec asks for none.
type childKind[T interface {
	comparable
	metav1.Object
}] struct {
	name     string
	client   childClient[T]
	cache    childCache[T]
	diff     func(live, desired T) (T, []string)
	unwanted string
}

// createOrFind creates a child missing from the cache and reports whether it
// did. The cache holds only objects carrying our label, so the create can
// meet an object of the same name; it is then read back. If it is this
// AppService's and labelled for it, it is our own create not yet brought by
// the watch, and the sync is retried as stale (errCacheLag). Anything else
// (stripped of our label, an orphan, someone else's) is returned for the
// caller to claim. A create is recorded in s.changes.
//
// While the AppService is already Degraded by an object in the way, the
// object is read first instead, so that a blocked AppService does not issue a
// failing create on every retry and resync.
func (k childKind[T]) createOrFind(ctx context.Context, s *appSync, desired T) (T, bool, error) {
	var zero, existing T
	var err error
	blocked := blockedByExisting(s.as)
	if blocked {
		existing, err = k.client.Get(ctx, desired.GetName(), metav1.GetOptions{})
	}
	switch {
	case !blocked || apierrors.IsNotFound(err):
		created, err := k.client.Create(ctx, desired, metav1.CreateOptions{FieldManager: fieldManager})
		if err == nil {
			s.changes.created = append(s.changes.created, k.name+" "+created.GetName())
			return created, true, nil
		}
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return zero, false, errNamespaceTerminating
		}
		if !apierrors.IsAlreadyExists(err) {
			return zero, false, writeFailed(s.as, appv1.ReasonCreateFailed, "create", k.name, err)
		}
		if existing, err = k.client.Get(ctx, desired.GetName(), metav1.GetOptions{}); err != nil {
			return zero, false, err
		}
	case err != nil:
		return zero, false, err
	}
	if isControlledBy(existing, s.as) && children.LabelledFor(existing, s.as) {
		return zero, false, fmt.Errorf("%s %s/%s: %w", k.name, existing.GetNamespace(), existing.GetName(), errCacheLag)
	}
	return existing, false, nil
}

// claim decides whether obj, the object of a child's name, is the
// AppService's to manage, with the rules of ControllerRefManager:
//
//   - controlled by this AppService and labelled for it: ours;
//   - controlled by this AppService but no longer labelled for it: released
//     (our owner reference removed), and from then on in the way;
//   - controlled by nothing and labelled for it: adopted (our owner
//     reference added), but only after an uncached read confirms that the
//     AppService still exists with the same UID and is not being deleted, so
//     that a stale cache never adopts for an AppService that is gone;
//   - anything else (someone else's, unlabelled): in the way, untouched.
//
// Callers skip objects being deleted (beingDeleted): those are neither
// adopted nor released. It returns the object as it now is and whether it is
// ours; an adoption or release is recorded in s.changes.
func (k childKind[T]) claim(ctx context.Context, s *appSync, obj T) (T, bool, error) {
	as := s.as
	controlled, labelled := isControlledBy(obj, as), children.LabelledFor(obj, as)
	switch {
	case controlled && labelled:
		return obj, true, nil
	case controlled:
		released, err := k.patchOwners(ctx, obj, releasePatch(obj, as))
		if err != nil {
			return obj, false, k.claimFailed(as, releasing, obj, err)
		}
		s.changes.released = append(s.changes.released,
			fmt.Sprintf("%s %s: its label %s no longer names this AppService", k.name, obj.GetName(), appv1.LabelAppService))
		return released, false, nil
	case metav1.GetControllerOf(obj) != nil || !labelled:
		return obj, false, nil
	}

	// An orphan labelled for us. The cached AppService may be stale: read it
	// from the API server before taking ownership in its name.
	fresh, err := s.c.appClient.AppV1().AppServices(as.Namespace).Get(ctx, as.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return obj, false, err
	}
	if err != nil || fresh.UID != as.UID || fresh.DeletionTimestamp != nil {
		return obj, false, fmt.Errorf("not adopting %s %s/%s: AppService %s changed since it was cached: %w",
			k.name, obj.GetNamespace(), obj.GetName(), as.Name, errCacheLag)
	}
	adopted, err := k.patchOwners(ctx, obj, adoptPatch(obj, as))
	if err != nil {
		return obj, false, k.claimFailed(as, adopting, obj, err)
	}
	s.changes.adopted = append(s.changes.adopted, k.name+" "+obj.GetName())
	return adopted, true, nil
}

// patchOwners writes an ownerPatch.
func (k childKind[T]) patchOwners(ctx context.Context, obj T, patch []byte) (T, error) {
	return k.client.Patch(ctx, obj.GetName(), types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
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
func (k childKind[T]) claimFailed(as *appv1.AppService, op claimOp, obj T, err error) error {
	if apierrors.IsNotFound(err) || uidChanged(err) {
		return fmt.Errorf("not %s %s %s/%s: it changed since it was cached: %w", op.gerund, k.name, obj.GetNamespace(), obj.GetName(), errCacheLag)
	}
	return writeFailed(as, appv1.ReasonUpdateFailed, op.verb, k.name, err)
}

// update writes what changed between live (usually the cached, trimmed
// child) and updated, live with its owned fields brought in line with the
// spec, as a patch of those fields (children.Patch), and records what
// changed in s.changes. A patch that comes out empty (the fields differ
// only as Go values, not as JSON) writes nothing.
func (k childKind[T]) update(ctx context.Context, s *appSync, live, updated T, changed []string) (T, error) {
	patch, pt, err := children.Patch(live, updated)
	if err != nil || patch == nil {
		return live, err
	}
	written, err := k.client.Patch(ctx, live.GetName(), pt, patch, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil {
		return live, writeFailed(s.as, appv1.ReasonUpdateFailed, "update", k.name, err)
	}
	s.changes.updated = append(s.changes.updated, fmt.Sprintf("%s %s: %s", k.name, written.GetName(), strings.Join(changed, ", ")))
	return written, nil
}

// beingDeleted reports whether obj, the AppService's child or an orphan
// labelled for it, is on its way out. Nothing is written to it: its deletion
// event queues the AppService, whose next sync creates the child anew, once.
func beingDeleted(obj metav1.Object, as *appv1.AppService) bool {
	return obj.GetDeletionTimestamp() != nil &&
		(isControlledBy(obj, as) || (metav1.GetControllerOf(obj) == nil && children.LabelledFor(obj, as)))
}

// blockedByExisting reports whether the last sync found an object in the
// way of one of the AppService's children.
func blockedByExisting(as *appv1.AppService) bool {
	c := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionDegraded)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == appv1.ReasonResourceExists
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

// adoptPatch adds the AppService as obj's controller.
func adoptPatch(obj metav1.Object, as *appv1.AppService) []byte {
	var p ownerPatch
	p.Metadata.OwnerReferences = []any{children.NewControllerRef(as)}
	p.Metadata.UID = obj.GetUID()
	return mustMarshal(p)
}

// releasePatch removes the AppService's owner reference (owner references
// merge by UID) from obj.
func releasePatch(obj metav1.Object, as *appv1.AppService) []byte {
	var p ownerPatch
	p.Metadata.OwnerReferences = []any{map[string]any{"$patch": "delete", "uid": as.UID}}
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
