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

// Package activity is the Activity's controller, the second kind: it runs
// an Activity's shell command once, as a Job, and reports the run in the
// Activity's status. Top to bottom, as the root's controller.go is for the
// AppService:
//
//	informers (Activities; Jobs carrying appv1.LabelActivity)
//	  → event handlers map each to its Activity's key (owner.ChildEvents)
//	  → the Activities' own rate-limited workqueue
//	  → their own workers (owner.WorkerPool), each running syncActivity
//	  → syncActivity: the Job (internal/children/job.go) created or claimed
//	    through the one claiming path (internal/owner); status from the
//	    Job (status.go), written only when it changed; Events on
//	    transitions (the change log's, and the run's end here).
//
// What it shares with the AppService's controller is in internal/owner: the
// claiming path, the child caches, the change log's Events, the errors, the
// queue and workers. What is its own: the queue, the workers' count, the
// sync and the status. main.go builds its informers and wires it.
//
// A run is a run: once the Activity has Succeeded or Failed its sync
// writes nothing and reads nothing but its caches. A Job deleted before the
// command finished is not created again (the command would run twice): the
// Activity fails. The Job carries a finalizer (appv1.FinalizerActivityStatus)
// until the Activity's status has recorded how the run ended, so that a Job
// deleted at once (a TTL of 0, a user, the controller down meanwhile) cannot
// take the outcome with it; releaseJob removes it then, once the Activity
// is gone or being deleted, and from a Job left by an earlier Activity of
// the name.
//
// It may import internal/owner, internal/syncerr, internal/children, the API's packages
// (pkg/apis, pkg/generated), client-go and apimachinery. It never imports
// the root (the AppService's controller), and nothing imports it but
// main.go.
package activity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/owner"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
	informers "example.com/appservice-controller/pkg/generated/informers/externalversions/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// activityKind is the Activity as the owner of its Job (internal/owner):
// its kind, and the label that names it on the Job.
var activityKind = owner.Kind{GVK: children.ActivityKind, Label: appv1.LabelActivity}

// Controller runs each Activity's command once, as a Job.
type Controller struct {
	kubeClient kubernetes.Interface
	appClient  clientset.Interface

	activities   listers.ActivityLister
	jobs         owner.ChildCache[*batchv1.Job]
	cachesSynced []cache.InformerSynced
	// statusWrites keeps a sync from deciding from an Activity the cache
	// holds from before the controller's own last status write.
	statusWrites owner.StatusWrites

	// queue holds the keys of Activities to sync, apart from the
	// AppServices': a burst of one kind does not hold up the other.
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	recorder record.EventRecorder

	// released remembers the Jobs whose finalizer releaseJob removed
	// (cache.ObjectName → the Job's UID) until the cache shows them
	// without it, so that a sync that runs before the watch brings the
	// change does not send the patch again: kube-controller-manager's
	// expectations, for one write.
	released sync.Map
}

// NewController wires the Activities' and their Jobs' events to the
// Activities' workqueue. jobInformers is expected to list only Jobs carrying
// appv1.LabelActivity, trimmed (see main.go); start it after this call.
func NewController(
	ctx context.Context,
	kubeClient kubernetes.Interface,
	appClient clientset.Interface,
	jobInformers kubeinformers.SharedInformerFactory,
	activityInformer informers.ActivityInformer,
	recorder record.EventRecorder,
) (*Controller, error) {
	klog.FromContext(ctx).V(4).Info("Setting up the Activities' event handlers")
	c := &Controller{
		kubeClient: kubeClient,
		appClient:  appClient,
		activities: activityInformer.Lister(),
		queue:      owner.NewQueue("activities"),
		recorder:   recorder,
	}
	// Every change of an Activity, and every resync, queues it; the sync
	// of a finished one returns at once.
	_, err := activityInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.handleActivity,
		UpdateFunc: func(_, obj interface{}) { c.handleActivity(obj) },
		DeleteFunc: c.handleActivity,
	})
	jobs := jobInformers.Batch().V1().Jobs().Informer()
	_, handlerErr := jobs.AddEventHandler(owner.ChildEvents{Kind: activityKind, Queue: c.queue}.Handlers())
	var indexErr error
	c.jobs, indexErr = owner.NewChildCache[*batchv1.Job](jobs, activityKind)
	c.cachesSynced = []cache.InformerSynced{activityInformer.Informer().HasSynced, jobs.HasSynced}
	if err := errors.Join(err, handlerErr, indexErr); err != nil {
		return nil, err
	}
	return c, nil
}

// handleActivity queues the key of an Activity (or of the last known state
// of a deleted one).
func (c *Controller) handleActivity(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	key, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// Run waits for the caches, starts the workers and blocks until ctx is
// cancelled, then drains them (owner.WorkerPool).
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	klog.FromContext(ctx).Info("Starting Activity controller")
	return owner.WorkerPool{Name: "activity", Queue: c.queue, Sync: c.syncActivity, Logger: activityLogger}.Run(ctx, workers, c.cachesSynced)
}

// activityLogger is a sync's logger, with the Activity's key.
func activityLogger(logger klog.Logger, key cache.ObjectName) klog.Logger {
	return klog.LoggerWithValues(logger, "activity", key)
}

// CachesSynced are the caches the workers wait for: the process is ready
// once they have synced.
func (c *Controller) CachesSynced() []cache.InformerSynced {
	return c.cachesSynced
}

// syncActivity runs an Activity's command, through its Job, and reports how
// the run goes.
func (c *Controller) syncActivity(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx)
	act, err := c.activities.Activities(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		// Deleted: the garbage collector removes the Job, and the Job's Pod
		// with it, through their owner references, once the Job is
		// released.
		logger.V(4).Info("Activity no longer exists")
		c.statusWrites.Forget(key)
		return c.releaseJob(ctx, key, "")
	}
	if err != nil {
		return err
	}
	if c.statusWrites.Behind(act) {
		// Its status (the run's outcome among it) is older than the one
		// this controller wrote: the write's event queues the Activity
		// again once the cache has it.
		return fmt.Errorf("the last status write of %s: %w", key, syncerr.ErrCacheLag)
	}
	if act.DeletionTimestamp != nil {
		return c.releaseJob(ctx, key, "")
	}
	if act.Status.Prosta.Finished() {
		if err := c.releaseJob(ctx, key, ""); err != nil {
			return err
		}
		return c.expire(ctx, act)
	}
	logger.V(2).Info("Syncing")
	// A Job of the name held for an earlier Activity of the name, gone
	// since: released, so that the garbage collector can delete it.
	if err := c.releaseJob(ctx, key, act.UID); err != nil {
		return err
	}

	s := newActivitySync(c, act)
	run, runErr := s.syncJob(ctx)
	s.Changes.Record(c.recorder, act)
	if errors.Is(runErr, syncerr.ErrNamespaceTerminating) {
		logger.V(2).Info("Namespace is being terminated; not creating the Job")
		return nil
	}
	if syncerr.OnlyStale(runErr) {
		return runErr
	}
	final, err := c.updateStatus(ctx, act, run, runErr)
	if err != nil {
		return errors.Join(runErr, err)
	}
	if final {
		// The outcome is recorded: the Job may go.
		return errors.Join(runErr, c.releaseJob(ctx, key, ""))
	}
	return runErr
}

// expire deletes a finished Activity with a TTL once the TTL has passed
// and its Job is gone: the cluster's ttl-after-finished controller deletes
// the Job at the TTL, and the Activity goes with it, as a Job with a TTL
// does. The TTL counts from the run's end (completionTime, or when it
// Failed); a Job gone sooner (deleted by someone) leaves the Activity until
// then.
func (c *Controller) expire(ctx context.Context, act *appv1.Activity) error {
	ttl := act.Spec.TTLSecondsAfterFinished
	if ttl == nil {
		return nil
	}
	if _, found, err := c.jobs.Get(act.Namespace, act.Name); err != nil || found {
		return err
	}
	end := act.Status.CompletionTime
	if end == nil {
		if failed := meta.FindStatusCondition(act.Status.Conditions, appv1.ConditionFailed); failed != nil {
			end = &failed.LastTransitionTime
		}
	}
	if end != nil {
		if left := time.Until(end.Add(time.Duration(*ttl) * time.Second)); left > 0 {
			c.queue.AddAfter(cache.MetaObjectToName(act), left)
			return nil
		}
	}
	uid := act.UID
	err := c.appClient.AppV1().Activities(act.Namespace).Delete(ctx, act.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone already, or another Activity of the name
	}
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Deleted the finished Activity: its TTL has passed and its Job is gone")
	}
	return err
}

// releaseJobPatch removes our finalizer from a Job, and only ours.
var releaseJobPatch = fmt.Appendf(nil, `{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`, appv1.FinalizerActivityStatus)

// releaseJob removes our finalizer from the cached Job of key's name, if it
// carries it and an Activity of that name controls it, unless that
// Activity's UID is keep (the Activity whose run is still to be recorded).
// A Job without it, or someone else's, is left alone.
func (c *Controller) releaseJob(ctx context.Context, key cache.ObjectName, keep types.UID) error {
	job, found, err := c.jobs.Get(key.Namespace, key.Name)
	if err != nil {
		return err
	}
	if !found || !slices.Contains(job.Finalizers, appv1.FinalizerActivityStatus) {
		c.released.Delete(key)
		return nil
	}
	if uid, ok := c.released.Load(key); ok && uid == job.UID {
		return nil // released; the watch has not brought it yet
	}
	ref := metav1.GetControllerOf(job)
	if ref == nil || !activityKind.Is(ref) || ref.Name != key.Name || (keep != "" && ref.UID == keep) {
		return nil
	}
	_, err = c.kubeClient.BatchV1().Jobs(key.Namespace).Patch(ctx, key.Name, types.StrategicMergePatchType, releaseJobPatch,
		metav1.PatchOptions{FieldManager: owner.FieldManager})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	c.released.Store(key, job.UID)
	return nil
}

// activitySync is one sync of one Activity.
type activitySync struct {
	owner.Sync
	c   *Controller
	act *appv1.Activity
}

// newActivitySync starts the sync of an Activity.
func newActivitySync(c *Controller, act *appv1.Activity) *activitySync {
	return &activitySync{
		Sync: owner.Sync{
			Obj: act, Kind: activityKind, Blocked: activityBlocked(act),
			Fresh: func(ctx context.Context) (metav1.Object, error) {
				return owner.ReadFresh(ctx, c.appClient.AppV1().Activities(act.Namespace).Get, act.Name)
			},
		},
		c: c, act: act,
	}
}

// jobs is the Activity's one kind of child.
func (s *activitySync) jobs() owner.ChildKind[*batchv1.Job] {
	return owner.ChildKind[*batchv1.Job]{
		Name: "Job", Client: s.c.kubeClient.BatchV1().Jobs(s.act.Namespace),
		Cache: s.c.jobs, Diff: children.UpdateJob,
	}
}

// syncJob creates or claims the Activity's Job, unless the run has started
// and the Job is gone, and returns what the status is made from: the Job,
// and for a run that failed, how its command ended.
func (s *activitySync) syncJob(ctx context.Context) (jobRun, error) {
	desired := children.NewJob(s.act)
	if s.act.Status.StartTime != nil {
		if _, found, err := s.c.jobs.Get(desired.Namespace, desired.Name); err != nil || !found {
			return jobRun{gone: !found}, err
		}
	}
	if err := s.serviceAccountExists(ctx, desired); err != nil {
		return jobRun{}, err
	}
	job, err := s.jobs().Ensure(ctx, &s.Sync, desired)
	if err != nil || job == nil {
		return jobRun{}, err
	}
	run := jobRun{job: job}
	c, ended := children.JobFinished(job)
	switch {
	case !ended && job.DeletionTimestamp != nil:
		// Being deleted before the command finished (our finalizer holds
		// it): the run is lost.
		run.gone = true
	case ended && c.Type == batchv1.JobFailed:
		run.terminated, err = s.terminated(ctx, job)
	}
	return run, err
}

// serviceAccountExists checks, before the Job of desired is created, that
// the ServiceAccount the spec names exists: without it the Job controller
// cannot create the Pod, and would retry quietly, the run hanging Pending.
// A missing one is reported (Stalled, ServiceAccountNotFound) and the sync
// retried with backoff, so that the run starts once it exists. Read from
// the API server: the controller caches no ServiceAccount it did not make,
// and only an Activity not started yet, that names one, asks.
func (s *activitySync) serviceAccountExists(ctx context.Context, desired *batchv1.Job) error {
	name := s.act.Spec.ServiceAccountName
	if name == "" {
		return nil
	}
	if _, found, err := s.c.jobs.Get(desired.Namespace, desired.Name); err != nil || found {
		return err
	}
	_, err := s.c.kubeClient.CoreV1().ServiceAccounts(desired.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &syncerr.ChildError{Reason: appv1.ReasonServiceAccountNotFound, Err: fmt.Errorf(
			"ServiceAccount %s/%s, which spec.serviceAccountName names, does not exist: the run starts once it does", desired.Namespace, name)}
	}
	return err
}

// terminated returns how the command's container ended, read from the
// Job's Pod (nil when the Pod is gone, as when the Job's deadline stopped
// it). Only a sync that sees the run fail reads it: after that, the status
// says so and the Activity is never synced again.
func (s *activitySync) terminated(ctx context.Context, job *batchv1.Job) (*corev1.ContainerStateTerminated, error) {
	pods, err := s.c.kubeClient.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: batchv1.ControllerUidLabel + "=" + string(job.UID),
	})
	if err != nil {
		return nil, err
	}
	for _, pod := range pods.Items {
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == children.ActivityContainer && cs.State.Terminated != nil {
				return cs.State.Terminated, nil
			}
		}
	}
	return nil, nil
}

// activityBlocked reports whether the last sync found an object in the way
// of the Activity's Job.
func activityBlocked(act *appv1.Activity) bool {
	c := meta.FindStatusCondition(act.Status.Conditions, appv1.ConditionStalled)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == appv1.ReasonResourceExists
}

// updateStatus writes the Activity's status when, and only when, it
// changed, and then announces the run's end: a Normal Event when it
// Succeeded, a Warning when Stalled becomes True or changes its message
// (the run failed, or cannot start). It reports whether the status written
// is final (Succeeded or Failed).
func (c *Controller) updateStatus(ctx context.Context, act *appv1.Activity, run jobRun, runErr error) (bool, error) {
	status := newActivityStatus(act, run, runErr)
	if equality.Semantic.DeepEqual(act.Status, status) {
		return false, nil
	}
	updated := act.DeepCopy()
	updated.Status = status
	written, err := c.appClient.AppV1().Activities(act.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: owner.FieldManager})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.statusWrites.Wrote(act, written)
	oldStalled := meta.FindStatusCondition(act.Status.Conditions, appv1.ConditionStalled)
	newStalled := meta.FindStatusCondition(status.Conditions, appv1.ConditionStalled)
	switch {
	case status.Prosta == appv1.ActivitySucceeded:
		complete := meta.FindStatusCondition(status.Conditions, appv1.ConditionComplete)
		c.recorder.Event(act, corev1.EventTypeNormal, appv1.ReasonSucceeded, complete.Message)
	case newStalled.Status == metav1.ConditionTrue &&
		(oldStalled == nil || oldStalled.Status != metav1.ConditionTrue || oldStalled.Message != newStalled.Message):
		c.recorder.Event(act, corev1.EventTypeWarning, newStalled.Reason, newStalled.Message)
	}
	return status.Prosta.Finished(), nil
}
