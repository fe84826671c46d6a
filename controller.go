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
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
	informers "example.com/appservice-controller/pkg/generated/informers/externalversions/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// The controller, top to bottom:
//
//	informers (AppServices; Deployments and Services carrying appv1.LabelAppService)
//	  → event handlers map each object to its AppService's key, never calling the API
//	  → a rate-limited workqueue, which de-duplicates keys and backs off failures
//	  → workers, each running syncHandler for one key at a time
//	  → syncHandler: desired children from the spec (deployment.go, service.go),
//	    compared with the live ones from the listers; create, update or delete
//	    only what differs; status from the children (status.go), written only
//	    when it changed; Events on transitions.
//
// Every sync starts from the current spec and the current children, whatever
// woke it: a missed or doubled event cannot leave anything behind.

const controllerAgentName = "appservice-controller"

// controllerKind is the group, version and kind of the objects this
// controller owns children for.
var controllerKind = appv1.SchemeGroupVersion.WithKind("AppService")

// Controller turns AppServices into Deployments and Services.
type Controller struct {
	kubeClient kubernetes.Interface
	appClient  clientset.Interface

	deploymentsLister appslisters.DeploymentLister
	servicesLister    corelisters.ServiceLister
	appServicesLister listers.AppServiceLister
	cachesSynced      []cache.InformerSynced

	// queue holds the keys of AppServices to sync. Keys, not objects: the
	// worker always reads the latest state from the listers.
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	recorder record.EventRecorder
}

// NewController wires the informers' events to the workqueue. The Deployment
// and Service informers are expected to list only objects carrying
// appv1.LabelAppService (see main.go): that is all the controller needs, and it
// keeps a large cluster's other objects out of its memory.
func NewController(
	ctx context.Context,
	kubeClient kubernetes.Interface,
	appClient clientset.Interface,
	deploymentInformer appsinformers.DeploymentInformer,
	serviceInformer coreinformers.ServiceInformer,
	appServiceInformer informers.AppServiceInformer,
	recorder record.EventRecorder,
) (*Controller, error) {
	logger := klog.FromContext(ctx)
	c := &Controller{
		kubeClient:        kubeClient,
		appClient:         appClient,
		deploymentsLister: deploymentInformer.Lister(),
		servicesLister:    serviceInformer.Lister(),
		appServicesLister: appServiceInformer.Lister(),
		cachesSynced: []cache.InformerSynced{
			deploymentInformer.Informer().HasSynced,
			serviceInformer.Informer().HasSynced,
			appServiceInformer.Informer().HasSynced,
		},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "appservices"},
		),
		recorder: recorder,
	}

	logger.V(4).Info("Setting up event handlers")
	// Every change of an AppService, and every periodic resync, queues it: a
	// sync that finds nothing to do writes nothing, and the resync is what
	// notices an object in our way disappearing (it is not watched).
	if _, err := appServiceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueAppService,
		UpdateFunc: func(_, obj interface{}) { c.enqueueAppService(obj) },
		DeleteFunc: c.enqueueAppService,
	}); err != nil {
		return nil, err
	}
	// A change of a child queues its owner, so that drift is repaired and the
	// status follows the Deployment.
	childHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.handleChild,
		UpdateFunc: c.handleChildUpdate,
		DeleteFunc: c.handleChild,
	}
	if _, err := deploymentInformer.Informer().AddEventHandler(childHandler); err != nil {
		return nil, err
	}
	if _, err := serviceInformer.Informer().AddEventHandler(childHandler); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueueAppService queues the key of an AppService (or of the last known
// state of a deleted one).
func (c *Controller) enqueueAppService(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	objectRef, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(objectRef)
}

// handleChildUpdate skips the periodic resync of an unchanged child: its
// owner is resynced on its own. When the child's controller or our label
// changed, the AppService it belonged to is queued as well as the one it
// belongs to now, so that both see the adoption or release.
func (c *Controller) handleChildUpdate(oldObj, newObj interface{}) {
	oldMeta, err1 := meta.Accessor(oldObj)
	newMeta, err2 := meta.Accessor(newObj)
	if err1 == nil && err2 == nil && oldMeta.GetResourceVersion() == newMeta.GetResourceVersion() {
		return
	}
	c.handleChild(newObj)
	if err1 == nil && err2 == nil {
		oldKey, oldOK := ownerKey(oldMeta)
		newKey, newOK := ownerKey(newMeta)
		if oldOK && (!newOK || oldKey != newKey) {
			c.queue.Add(oldKey)
		}
	}
}

// handleChild queues the AppService that controls a Deployment or Service,
// or, for one without a controller, the AppService our label names: that one
// may adopt it. Objects controlled by anything else are ignored; a deleted
// object may come as a tombstone holding its last known state.
func (c *Controller) handleChild(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, err := meta.Accessor(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("decoding object: %T is not an object", obj))
		return
	}
	if key, ok := ownerKey(object); ok {
		c.queue.Add(key)
	}
}

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
	return err == nil && gv.Group == controllerKind.Group && ref.Kind == controllerKind.Kind
}

// newControllerRef is the owner reference every child carries: it makes the
// garbage collector delete the child with its AppService.
func newControllerRef(as *appv1.AppService) *metav1.OwnerReference {
	return metav1.NewControllerRef(as, controllerKind)
}

// isControlledBy reports whether obj's controller is this very AppService
// (same UID: not an earlier AppService of the same name).
func isControlledBy(obj metav1.Object, as *appv1.AppService) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && isControllerKind(ref) && ref.Name == as.Name && ref.UID == as.UID
}

// Run waits for the caches, starts the workers and blocks until ctx is
// cancelled. Then it shuts the queue down and returns only after every
// worker has finished the sync it was running.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)

	logger.Info("Starting AppService controller")
	logger.Info("Waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.cachesSynced...); !ok {
		c.queue.ShutDown()
		if ctx.Err() != nil {
			return nil // stopped before the caches synced: a clean shutdown
		}
		return errors.New("failed to wait for caches to sync")
	}

	logger.Info("Starting workers", "count", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNextWorkItem(ctx) {
			}
		})
	}
	logger.Info("Started workers")

	<-ctx.Done()
	logger.Info("Shutting down workers")
	c.queue.ShutDown()
	wg.Wait()
	logger.Info("Workers stopped")
	return nil
}

// syncTimeout bounds one sync, so that a hung request cannot hold a worker
// (or shutdown) forever.
const syncTimeout = time.Minute

// processNextWorkItem takes one key off the queue and syncs it. It returns
// false when the queue has been shut down and drained.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)

	// After shutdown began, keys still queued are dropped, not synced: they
	// are level-triggered and the next start lists every AppService anyway.
	if ctx.Err() != nil {
		return true
	}
	// The sync itself is not cancelled with ctx: a sync already running is
	// finished (bounded by syncTimeout) so that shutdown never leaves a
	// half-written AppService behind.
	syncCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	defer cancel()
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "appservice", key)
	syncCtx = klog.NewContext(syncCtx, logger)

	start := time.Now()
	err := c.syncHandler(syncCtx, key)
	switch {
	case err == nil:
		observeReconcile("success", time.Since(start))
		c.queue.Forget(key)
	case isQuiet(err):
		// A conflict or a cache that lags behind our own write: the next
		// try sees the newer state. Retried with backoff, not reported.
		observeReconcile("requeue", time.Since(start))
		logger.V(4).Info("Requeuing after a conflict", "reason", err)
		c.queue.AddRateLimited(key)
	default:
		observeReconcile("error", time.Since(start))
		utilruntime.HandleErrorWithContext(syncCtx, err, "Error syncing; requeuing for later retry", "appservice", key)
		c.queue.AddRateLimited(key)
	}
	return true
}

// errCacheLag marks a sync that found the cache behind the API server.
var errCacheLag = errors.New("informer cache is behind the API server")

// errNamespaceTerminating marks a create refused because the namespace is
// being deleted: the AppService goes with it, so there is nothing to retry
// and nothing to report (kube-controller-manager's controllers do the same).
var errNamespaceTerminating = errors.New("the namespace is being terminated")

func isQuiet(err error) bool {
	return apierrors.IsConflict(err) || errors.Is(err, errCacheLag)
}

// allQuiet reports whether there is an error and every one is quiet.
func allQuiet(errs ...error) bool {
	some := false
	for _, err := range errs {
		if err != nil && !isQuiet(err) {
			return false
		}
		some = some || err != nil
	}
	return some
}

// syncHandler brings the Deployment and Service of one AppService in line
// with its spec and writes its status.
func (c *Controller) syncHandler(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	defer func() { logger.V(2).Info("Synced", "duration", time.Since(start)) }()

	as, err := c.appServicesLister.AppServices(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Deleted: the garbage collector removes the children through their
		// owner references.
		logger.V(4).Info("AppService no longer exists")
		return nil
	}
	if err != nil {
		return err
	}
	if as.DeletionTimestamp != nil {
		// Being deleted (say, in foreground): do not recreate what the
		// garbage collector is removing.
		return nil
	}

	var changes changeLog
	deployment, deployErr := c.syncDeployment(ctx, as, &changes)
	serviceErr := c.syncService(ctx, as, &changes)
	changes.record(c.recorder, as)
	syncErr := errors.Join(deployErr, serviceErr)
	if errors.Is(syncErr, errNamespaceTerminating) {
		logger.V(2).Info("Namespace is being terminated; not creating children")
		return nil
	}
	if allQuiet(deployErr, serviceErr) {
		// Only conflicts and cache lag: retried without a status write.
		// Any other error is reported, whatever came with it.
		return syncErr
	}
	if err := c.updateStatus(ctx, as, deployment, syncErr); err != nil {
		return errors.Join(syncErr, err)
	}
	return syncErr
}

// syncDeployment creates or updates the AppService's Deployment and returns
// the live one (nil when there is none it controls).
func (c *Controller) syncDeployment(ctx context.Context, as *appv1.AppService, changes *changeLog) (*appsv1.Deployment, error) {
	desired := newDeployment(as)
	client := c.kubeClient.AppsV1().Deployments(as.Namespace)
	live, err := c.deploymentsLister.Deployments(as.Namespace).Get(as.Name)
	if apierrors.IsNotFound(err) {
		var created bool
		if live, created, err = createChild(ctx, c, as, changes, "Deployment", desired, client.Create, client.Get); err != nil || created {
			return live, err
		}
	} else if err != nil {
		return nil, err
	}
	if beingDeleted(live, as) {
		// Wait for it to go (its deletion queues us again) and create it
		// anew then, rather than write to it now.
		if isControlledBy(live, as) {
			return live, nil
		}
		return nil, nil
	}
	live, ours, err := claim(ctx, c, as, changes, "Deployment", live, client.Patch)
	if err != nil {
		return nil, err
	}
	if !ours {
		return nil, c.notOurs(as, live, "Deployment")
	}

	updated, changed := updateDeployment(live, desired)
	if updated == nil {
		return live, nil
	}
	updated, err = client.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return live, c.writeFailed(as, appv1.ReasonUpdateFailed, "update", "Deployment", err)
	}
	changes.updated = append(changes.updated, fmt.Sprintf("Deployment %s: %s", updated.Name, strings.Join(changed, ", ")))
	return updated, nil
}

// syncService creates, updates or deletes the AppService's Service.
func (c *Controller) syncService(ctx context.Context, as *appv1.AppService, changes *changeLog) error {
	desired := newService(as)
	client := c.kubeClient.CoreV1().Services(as.Namespace)
	live, err := c.servicesLister.Services(as.Namespace).Get(as.Name)
	switch {
	case apierrors.IsNotFound(err) && desired == nil:
		return nil
	case apierrors.IsNotFound(err):
		var created bool
		if live, created, err = createChild(ctx, c, as, changes, "Service", desired, client.Create, client.Get); err != nil || created {
			return err
		}
	case err != nil:
		return err
	}
	if beingDeleted(live, as) {
		return nil // created anew, if wanted, once it is gone
	}
	if desired == nil && !isControlledBy(live, as) {
		return nil // not ours, and we want none: nothing to adopt, nothing to say
	}
	live, ours, err := claim(ctx, c, as, changes, "Service", live, client.Patch)
	switch {
	case err != nil:
		return err
	case !ours && desired == nil:
		return nil // released, and we want none
	case !ours:
		return c.notOurs(as, live, "Service")
	}

	if desired == nil {
		// The ports were removed: the Service goes. The UID precondition
		// makes sure we delete the object we looked at, not a newer one.
		err := client.Delete(ctx, live.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &live.UID},
		})
		if apierrors.IsNotFound(err) {
			return nil // already gone
		}
		if err != nil {
			return c.writeFailed(as, appv1.ReasonDeleteFailed, "delete", "Service", err)
		}
		changes.deleted = append(changes.deleted, fmt.Sprintf("Service %s: the spec has no ports", live.Name))
		return nil
	}

	updated, changed := updateService(live, desired)
	if updated == nil {
		return nil
	}
	if _, err := client.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return c.writeFailed(as, appv1.ReasonUpdateFailed, "update", "Service", err)
	}
	changes.updated = append(changes.updated, fmt.Sprintf("Service %s: %s", updated.Name, strings.Join(changed, ", ")))
	return nil
}

// createChild creates a child missing from the cache and reports whether it
// did. The cache holds only objects carrying our label, so the create can
// meet an object of the same name; it is then read back. If it is this
// AppService's and labelled for it, it is our own create not yet brought by
// the watch, and the sync is retried quietly (errCacheLag). Anything else
// (stripped of our label, an orphan, someone else's) is returned for the
// caller to claim.
//
// While the AppService is already Degraded by an object in the way, the
// object is read first instead, so that a blocked AppService does not issue a
// failing create on every retry and resync.
func createChild[T metav1.Object](
	ctx context.Context, c *Controller, as *appv1.AppService, changes *changeLog, kind string, desired T,
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	get func(context.Context, string, metav1.GetOptions) (T, error),
) (T, bool, error) {
	var zero T
	var existing T
	var err error
	blocked := blockedByExisting(as)
	if blocked {
		existing, err = get(ctx, desired.GetName(), metav1.GetOptions{})
	}
	switch {
	case !blocked || apierrors.IsNotFound(err):
		created, err := create(ctx, desired, metav1.CreateOptions{})
		if err == nil {
			changes.created = append(changes.created, kind+" "+created.GetName())
			return created, true, nil
		}
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return zero, false, errNamespaceTerminating
		}
		if !apierrors.IsAlreadyExists(err) {
			return zero, false, c.writeFailed(as, appv1.ReasonCreateFailed, "create", kind, err)
		}
		if existing, err = get(ctx, desired.GetName(), metav1.GetOptions{}); err != nil {
			return zero, false, err
		}
	case err != nil:
		return zero, false, err
	}
	if isControlledBy(existing, as) && labelledFor(existing, as) {
		return zero, false, fmt.Errorf("%s %s/%s: %w", kind, existing.GetNamespace(), existing.GetName(), errCacheLag)
	}
	return existing, false, nil
}

// beingDeleted reports whether obj, the AppService's child or an orphan
// labelled for it, is on its way out. Nothing is written to it: its deletion
// event queues the AppService, whose next sync creates the child anew, once.
func beingDeleted(obj metav1.Object, as *appv1.AppService) bool {
	return obj.GetDeletionTimestamp() != nil && (isControlledBy(obj, as) || (metav1.GetControllerOf(obj) == nil && labelledFor(obj, as)))
}

// labelledFor reports whether obj carries our label naming the AppService:
// the selector that makes it this AppService's child.
func labelledFor(obj metav1.Object, as *appv1.AppService) bool {
	return obj.GetLabels()[appv1.LabelAppService] == as.Name
}

// claim decides whether the object of a child's name is the AppService's to
// manage, with the rules of kube-controller-manager's ControllerRefManager:
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
// ours.
func claim[T metav1.Object](
	ctx context.Context, c *Controller, as *appv1.AppService, changes *changeLog, kind string, obj T,
	patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error),
) (T, bool, error) {
	controlled, labelled := isControlledBy(obj, as), labelledFor(obj, as)
	switch {
	case controlled && labelled:
		return obj, true, nil
	case controlled:
		released, err := patch(ctx, obj.GetName(), types.StrategicMergePatchType, releasePatch(obj, as), metav1.PatchOptions{})
		if apierrors.IsNotFound(err) || uidChanged(err) {
			// Gone, or deleted and created anew, since it was cached: the
			// next sync sees what is there now.
			return obj, false, fmt.Errorf("not releasing %s %s/%s: it changed since it was cached: %w", kind, obj.GetNamespace(), obj.GetName(), errCacheLag)
		}
		if err != nil {
			return obj, false, c.writeFailed(as, appv1.ReasonUpdateFailed, "release", kind, err)
		}
		changes.released = append(changes.released, fmt.Sprintf("%s %s: its label %s no longer names this AppService", kind, obj.GetName(), appv1.LabelAppService))
		return released, false, nil
	case metav1.GetControllerOf(obj) != nil || !labelled:
		return obj, false, nil
	}

	// An orphan labelled for us. The cached AppService may be stale: read it
	// from the API server before taking ownership in its name.
	fresh, err := c.appClient.AppV1().AppServices(as.Namespace).Get(ctx, as.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return obj, false, err
	}
	if err != nil || fresh.UID != as.UID || fresh.DeletionTimestamp != nil {
		return obj, false, fmt.Errorf("not adopting %s %s/%s: AppService %s changed since it was cached: %w", kind, obj.GetNamespace(), obj.GetName(), as.Name, errCacheLag)
	}
	adopted, err := patch(ctx, obj.GetName(), types.StrategicMergePatchType, adoptPatch(obj, as), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || uidChanged(err) {
		// Gone, or deleted and created anew, since it was cached: the next
		// sync sees what is there now.
		return obj, false, fmt.Errorf("not adopting %s %s/%s: it changed since it was cached: %w", kind, obj.GetNamespace(), obj.GetName(), errCacheLag)
	}
	if err != nil {
		return obj, false, c.writeFailed(as, appv1.ReasonUpdateFailed, "adopt", kind, err)
	}
	changes.adopted = append(changes.adopted, kind+" "+obj.GetName())
	return adopted, true, nil
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
	p.Metadata.OwnerReferences = []any{newControllerRef(as)}
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

// changeLog collects what one sync wrote. It becomes one Normal Event per
// kind of change, naming every child it touched, rather than one per child:
// a new AppService costs one Event write, not two.
type changeLog struct {
	created, updated, deleted, adopted, released []string
}

func (l *changeLog) record(recorder record.EventRecorder, as *appv1.AppService) {
	// In the order a sync makes them: claims first, then writes.
	if len(l.adopted) > 0 {
		recorder.Event(as, corev1.EventTypeNormal, appv1.ReasonAdopted, "Adopted "+strings.Join(l.adopted, ", "))
	}
	if len(l.released) > 0 {
		recorder.Event(as, corev1.EventTypeNormal, appv1.ReasonReleased, "Released "+strings.Join(l.released, "; "))
	}
	if len(l.created) > 0 {
		recorder.Event(as, corev1.EventTypeNormal, appv1.ReasonCreated, "Created "+strings.Join(l.created, ", "))
	}
	if len(l.updated) > 0 {
		recorder.Event(as, corev1.EventTypeNormal, appv1.ReasonUpdated, "Updated "+strings.Join(l.updated, "; "))
	}
	if len(l.deleted) > 0 {
		recorder.Event(as, corev1.EventTypeNormal, appv1.ReasonDeleted, "Deleted "+strings.Join(l.deleted, "; "))
	}
}

// blockedByExisting reports whether the last sync found an object in the
// way of one of the AppService's children.
func blockedByExisting(as *appv1.AppService) bool {
	c := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionDegraded)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == appv1.ReasonResourceExists
}

// notOurs reports an object of the child's name that this AppService does not
// control. It is never modified.
func (c *Controller) notOurs(as *appv1.AppService, obj metav1.Object, kind string) error {
	return &childError{
		reason: appv1.ReasonResourceExists,
		err:    fmt.Errorf("%s %s/%s already exists and is not controlled by AppService %s; it is left untouched", kind, obj.GetNamespace(), obj.GetName(), as.Name),
	}
}

// writeFailed wraps a failed write. Conflicts pass through unwrapped: they
// are retried quietly and never make the AppService Degraded.
func (c *Controller) writeFailed(as *appv1.AppService, reason, verb, kind string, err error) error {
	if apierrors.IsConflict(err) {
		return err
	}
	return &childError{reason: reason, err: fmt.Errorf("failed to %s %s %s/%s: %w", verb, kind, as.Namespace, as.Name, err)}
}

// updateStatus writes the AppService's status through the status
// subresource when, and only when, it changed. A Warning Event announces the
// Degraded condition when it becomes True or its message changes, not on
// every failed retry.
func (c *Controller) updateStatus(ctx context.Context, as *appv1.AppService, d *appsv1.Deployment, syncErr error) error {
	status := newStatus(as, d, syncErr)
	if equality.Semantic.DeepEqual(as.Status, status) {
		return nil
	}
	oldDegraded := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionDegraded)
	newDegraded := meta.FindStatusCondition(status.Conditions, appv1.ConditionDegraded)
	if newDegraded.Status == metav1.ConditionTrue &&
		(oldDegraded == nil || oldDegraded.Status != metav1.ConditionTrue || oldDegraded.Message != newDegraded.Message) {
		c.recorder.Event(as, corev1.EventTypeWarning, newDegraded.Reason, newDegraded.Message)
	}

	// Never modify the cache's object: write a copy.
	updated := as.DeepCopy()
	updated.Status = status
	_, err := c.appClient.AppV1().AppServices(as.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: there is no status left to report in
	}
	return err
}
