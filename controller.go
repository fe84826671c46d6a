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
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"example.com/appservice-controller/internal/analysis"
	"example.com/appservice-controller/internal/appcache"
	"example.com/appservice-controller/internal/appstatus"
	"example.com/appservice-controller/internal/canary"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/configrollout"
	"example.com/appservice-controller/internal/notify"
	"example.com/appservice-controller/internal/owner"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
	informers "example.com/appservice-controller/pkg/generated/informers/externalversions/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// The controller, top to bottom:
//
//	informers (AppServices; their children, of every kind, carrying appv1.LabelAppService)
//	  → event handlers map each object to its AppService's key, never calling the API
//	  → a rate-limited workqueue, which de-duplicates keys and backs off failures
//	  → workers, each running syncHandler for one key at a time
//	  → syncHandler: desired children from the spec (internal/children),
//	    compared with the live ones from the listers; create, update or delete
//	    only what differs (a rollout that a config change alone calls for
//	    waits its turn: internal/configrollout); status from the children
//	    (status.go), written only when it changed; Events on transitions.
//
// Every sync starts from the current spec and the current children, whatever
// woke it: a missed or doubled event cannot leave anything behind.

// controllerAgentName is the source of the controller's Events.
const controllerAgentName = owner.FieldManager

// appServiceKind is the AppService as the owner of its children
// (internal/owner): its kind, and the label that names it on them.
var appServiceKind = owner.Kind{GVK: children.ControllerKind, Label: appv1.LabelAppService}

// Controller turns AppServices into their children: a Deployment, and as the
// spec asks, a Service, ServiceAccount, Ingress, HTTPRoute,
// PodDisruptionBudget and HorizontalPodAutoscaler.
type Controller struct {
	kubeClient kubernetes.Interface
	appClient  clientset.Interface

	appServicesLister listers.AppServiceLister
	// The children's caches, one per kind.
	serviceAccounts   owner.ChildCache[*corev1.ServiceAccount]
	deployments       owner.ChildCache[*appsv1.Deployment]
	services          owner.ChildCache[*corev1.Service]
	ingresses         owner.ChildCache[*networkingv1.Ingress]
	disruptionBudgets owner.ChildCache[*policyv1.PodDisruptionBudget]
	autoscalers       owner.ChildCache[*autoscalingv2.HorizontalPodAutoscaler]
	activities        owner.ChildCache[*appv1.Activity]
	// routes is nil when the controller runs without the Gateway API's
	// client (in unit tests).
	routes *routeInformer
	// configs watches the ConfigMaps and Secrets that AppServices with
	// rolloutOnConfigChange read (configs.go).
	configs *configWatch
	// configRollouts caps the rollouts config changes start
	// (internal/configrollout, configs.go).
	configRollouts *configrollout.Throttle
	// analysis takes the canary analyses' measurements, off the syncs'
	// path (internal/analysis, canary.go).
	analysis *analysis.Runner
	// templates reads the analyses' templates (templates.go).
	templates *templateWatch
	// notifications are where a release's edges go, and the leader's
	// Sender of them (notifications.go).
	notifications *notifications
	cachesSynced  []cache.InformerSynced
	// statusWrites keeps a sync from deciding from an AppService the cache
	// holds from before the controller's own last status write.
	statusWrites owner.StatusWrites

	// queue holds the keys of AppServices to sync. Keys, not objects: the
	// worker always reads the latest state from the listers.
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	recorder record.EventRecorder
}

// NewController wires the informers' events to the workqueue. The children's
// informers come from kubeInformers, which is expected to list only objects
// carrying appv1.LabelAppService (see main.go): that is all the controller
// needs, and it keeps a large cluster's other objects out of its memory.
// Start kubeInformers after NewController: it asks for the informers it
// needs. metadataClient watches ConfigMaps and Secrets, as metadata only,
// where rolloutOnConfigChange asks for it (see configs.go); at most
// maxConfigRollouts AppServices roll their Pods at once for a config change
// (0: no cap).
func NewController(
	ctx context.Context,
	kubeClient kubernetes.Interface,
	metadataClient metadata.Interface,
	appClient clientset.Interface,
	kubeInformers kubeinformers.SharedInformerFactory,
	appInformers informers.Interface,
	gateway *GatewayAPI,
	recorder record.EventRecorder,
	maxConfigRollouts int,
	analysisConfig analysis.Config,
	notifyConfig notify.Config,
) (*Controller, error) {
	logger := klog.FromContext(ctx)
	appServiceInformer := appInformers.AppServices()
	c := &Controller{
		kubeClient:        kubeClient,
		appClient:         appClient,
		appServicesLister: appcache.NewLister(appServiceInformer.Informer().GetIndexer()),
		cachesSynced:      []cache.InformerSynced{appServiceInformer.Informer().HasSynced},
		queue:             owner.NewQueue("appservices"),
		recorder:          recorder,
	}

	prometheus, err := analysis.NewAPI(analysisConfig)
	if err != nil {
		return nil, err
	}
	c.analysis = analysis.NewRunner(ctx, prometheus, analysisConfig, c.queue.Add)
	if c.configs, err = newConfigWatch(ctx, metadataClient, kubeClient, appServiceInformer.Informer(), c.queue.Add); err != nil {
		return nil, err
	}
	var templatesSynced []cache.InformerSynced
	if c.templates, templatesSynced, err = newTemplateWatch(appInformers, appServiceInformer.Informer(), c.queue.Add); err != nil {
		return nil, err
	}
	c.cachesSynced = append(c.cachesSynced, templatesSynced...)
	var destinationsSynced cache.InformerSynced
	c.notifications, destinationsSynced = newNotifications(kubeClient, appInformers.NotificationDestinations(), notifyConfig,
		func(key cache.ObjectName) { c.queue.AddAfter(key, deliveryRecordDelay) })
	c.cachesSynced = append(c.cachesSynced, destinationsSynced)

	logger.V(4).Info("Setting up event handlers")
	// Every change of an AppService, and every periodic resync, queues it: a
	// sync that finds nothing to do writes nothing, and the resync is what
	// notices an object in our way disappearing (it is not watched).
	if _, err := appServiceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.handleAppService,
		UpdateFunc: func(_, obj interface{}) { c.handleAppService(obj) },
		DeleteFunc: c.handleAppService,
	}); err != nil {
		return nil, err
	}
	// A change of a child queues its owner, so that drift is repaired and the
	// status follows the Deployment.
	childHandler := owner.ChildEvents{Kind: appServiceKind, Queue: c.queue}.Handlers()
	errs := make([]error, 0, 16) // two for each informer registered
	c.serviceAccounts = watchChild[*corev1.ServiceAccount](c, kubeInformers.Core().V1().ServiceAccounts().Informer(), childHandler, &errs)
	c.deployments = watchChild[*appsv1.Deployment](c, kubeInformers.Apps().V1().Deployments().Informer(), childHandler, &errs)
	c.configRollouts, err = newConfigRollouts(c, kubeInformers.Apps().V1().Deployments().Informer(), maxConfigRollouts)
	errs = append(errs, err)
	c.services = watchChild[*corev1.Service](c, kubeInformers.Core().V1().Services().Informer(), childHandler, &errs)
	c.ingresses = watchChild[*networkingv1.Ingress](c, kubeInformers.Networking().V1().Ingresses().Informer(), childHandler, &errs)
	c.disruptionBudgets = watchChild[*policyv1.PodDisruptionBudget](c, kubeInformers.Policy().V1().PodDisruptionBudgets().Informer(), childHandler, &errs)
	c.autoscalers = watchChild[*autoscalingv2.HorizontalPodAutoscaler](c,
		kubeInformers.Autoscaling().V2().HorizontalPodAutoscalers().Informer(), childHandler, &errs)
	// A canary's tests (canary.go): Activities it owns, in the Activity
	// controller's informer, which caches them whole.
	c.activities = watchChild[*appv1.Activity](c, appInformers.Activities().Informer(), childHandler, &errs)
	if gateway != nil {
		c.routes = newRouteInformer(kubeClient.Discovery(), gateway, childHandler)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// watchChild registers a child kind's informer: the handler, the
// controller index, and its HasSynced among the caches the workers wait
// for. It returns the kind's cache; errors are added to errs.
func watchChild[T metav1.Object](c *Controller, informer cache.SharedIndexInformer, handler cache.ResourceEventHandler, errs *[]error) owner.ChildCache[T] {
	_, err := informer.AddEventHandler(handler)
	cc, indexErr := owner.NewChildCache[T](informer, appServiceKind)
	*errs = append(*errs, err, indexErr)
	c.cachesSynced = append(c.cachesSynced, informer.HasSynced)
	return cc
}

// handleAppService queues the key of an AppService (or of the last known
// state of a deleted one), and has the ConfigMaps and Secrets of its
// namespace watched while an AppService there needs it.
func (c *Controller) handleAppService(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	objectRef, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.configs.track(objectRef.Namespace)
	c.queue.Add(objectRef)
}

// Run waits for the caches, starts the workers and blocks until ctx is
// cancelled. Then it shuts the queue down and returns only after every
// worker has finished the sync it was running (owner.WorkerPool).
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	klog.FromContext(ctx).Info("Starting AppService controller")
	// The Sender posts while this replica leads: only the leader sends.
	c.notifications.sender.Start(ctx)
	synced := c.cachesSynced
	if c.routes != nil {
		if routesSynced := c.routes.run(ctx, c.queueRouted); routesSynced != nil {
			synced = append(slices.Clone(synced), routesSynced)
		}
	}
	return owner.WorkerPool{Name: "appservice", Queue: c.queue, Sync: c.syncHandler, Logger: appServiceLogger}.Run(ctx, workers, synced)
}

// queueRouted queues every AppService that asks for a route: once a kind of
// route is served, those that waited for it are synced at once, not
// at their next retry.
func (c *Controller) queueRouted() {
	all, err := c.appServicesLister.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, as := range all {
		if as.Spec.HTTPRoute != nil || as.Spec.GRPCRoute != nil {
			c.queue.Add(cache.MetaObjectToName(as))
		}
	}
}

// appServiceLogger is a sync's logger, with the AppService's key.
func appServiceLogger(logger klog.Logger, key cache.ObjectName) klog.Logger {
	return klog.LoggerWithValues(logger, "appservice", key)
}

// syncHandler brings the children of one AppService in line
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
		c.configRollouts.Done(key)
		c.analysis.Forget(key)
		c.notifications.sender.Forget(key)
		c.statusWrites.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if c.statusWrites.Behind(as) {
		// Its status (a canary's step and weight among it) is older than
		// the one this controller wrote: the write's event queues the
		// AppService again once the cache has it.
		return fmt.Errorf("the last status write of %s: %w", key, syncerr.ErrCacheLag)
	}
	if as.DeletionTimestamp != nil {
		// Being deleted (say, in foreground): do not recreate what the
		// garbage collector is removing.
		return nil
	}

	// The ServiceAccount first, the Pods' identity: the Deployment's Pods
	// cannot be created before it exists.
	s := newAppSync(c, as)
	_, saErr := s.serviceAccounts().Sync(ctx, &s.Sync, children.NewServiceAccount(as))
	desiredDeployment := children.NewDeployment(as)
	configErr := s.setConfigDigest(ctx, desiredDeployment)
	configQueued, throttleErr := s.throttleConfigRollout(desiredDeployment)
	// A canary (canary.go, internal/canary) decides which template the
	// Deployment keeps, and what the canary's objects and the route are.
	canaryErr := s.decideCanary(ctx, desiredDeployment)
	deployment, deployErr := s.syncDeployments(ctx, desiredDeployment)
	if deployErr != nil && s.configRollout != "" {
		c.configRollouts.Failed(key, s.configRolloutSince)
	}
	serviceErr := s.syncServices(ctx)
	ingress, ingressErr := s.ingresses().Sync(ctx, &s.Sync, children.NewIngress(as))
	route, httpRouteErr := s.syncHTTPRoute(ctx)
	grpcRouteErr := s.syncGRPCRoute(ctx)
	pruneErr := s.pruneCanary(ctx, desiredDeployment, errors.Join(httpRouteErr, grpcRouteErr))
	testsErr := s.syncCanaryTests(ctx)
	_, budgetErr := s.disruptionBudgets().Sync(ctx, &s.Sync, children.NewDisruptionBudget(as))
	_, autoscalerErr := s.autoscalers().Sync(ctx, &s.Sync, children.NewAutoscaler(as))
	s.Changes.Record(c.recorder, as)
	errs := []error{saErr, configErr, throttleErr, canaryErr, deployErr, serviceErr, ingressErr, httpRouteErr, grpcRouteErr, pruneErr, testsErr,
		budgetErr, autoscalerErr}
	syncErr := errors.Join(errs...)
	if errors.Is(syncErr, syncerr.ErrNamespaceTerminating) {
		logger.V(2).Info("Namespace is being terminated; not creating children")
		return nil
	}
	if syncerr.OnlyStale(errs...) {
		// Only conflicts and cache lag: retried without a status write.
		// Any other error is reported, whatever came with it.
		return syncErr
	}
	// The edge the canary's decision makes, for the destinations that hear
	// of it, and the deliveries' results (notifications.go).
	notifications, notifyErr := s.recordNotifications(desiredDeployment)
	syncErr = errors.Join(syncErr, notifyErr)
	seen := appstatus.Observed{Deployment: deployment, ConfigQueued: configQueued, MaxConfigRollouts: c.configRollouts.Max(), Canary: s.canary,
		Notifications: notifications}
	if ingress != nil {
		seen.URL = children.IngressURL(ingress)
	}
	if route != nil && seen.URL == "" {
		seen.URL = children.HTTPRouteURL(route)
	}
	if err := c.updateStatus(ctx, as, seen, syncErr); err != nil {
		return errors.Join(syncErr, err)
	}
	// Recorded: what it owes may go.
	c.sendNotifications(key, cmp.Or(notifications, as.Status.Notifications))
	if s.canary.After > 0 {
		// The end of a canary's pause, or its deadline: nothing else
		// would wake the sync then.
		c.queue.AddAfter(key, s.canary.After)
	}
	return syncErr
}

// appSync is one sync of one AppService: what the syncs of its children
// share.
type appSync struct {
	owner.Sync
	c  *Controller
	as *appv1.AppService
	// configRollout is the config digest this sync may roll the Pods to
	// for a config change alone ("": none admitted), and
	// configRolloutSince when its rollout began to wait.
	configRollout      string
	configRolloutSince time.Time
	// configHeld: the config rollout waits, or an earlier sync sent it;
	// the Deployment keeps the config digest it has.
	configHeld bool
	// canary is the canary's decision (canary.go): Phase None without
	// spec.canary; canaryUnknown: it could not be made (a cache read
	// error), and the canary's objects stay as they are.
	canary        canary.Decision
	canaryUnknown bool
}

// newAppSync starts the sync of an AppService.
func newAppSync(c *Controller, as *appv1.AppService) *appSync {
	return &appSync{
		Sync: owner.Sync{
			Obj: as, Kind: appServiceKind, Blocked: blockedByExisting(as),
			Fresh: func(ctx context.Context) (metav1.Object, error) {
				return owner.ReadFresh(ctx, c.appClient.AppV1().AppServices(as.Namespace).Get, as.Name)
			},
		},
		c: c, as: as,
	}
}

// blockedByExisting reports whether the last sync found an object in the
// way of one of the AppService's children.
func blockedByExisting(as *appv1.AppService) bool {
	c := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionDegraded)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == appv1.ReasonResourceExists
}
