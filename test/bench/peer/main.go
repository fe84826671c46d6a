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

// Command peer is the controller a user would write instead of this one,
// for the benchmark to compare against (test/bench, "The peer" in
// BENCHMARKS.md): the kubebuilder book's controller, on controller-runtime
// at the scaffold's defaults, for the same AppService CRD. It makes the
// Deployment and the Service of each AppService and reports their state,
// and nothing else: no other child, no canary, no config rollouts.
//
// It is written as the book writes one and must stay that plain, for it
// stands for what users would run: the manager's default cache (every
// Deployment and Service of the cluster, whole), one worker, Get, then
// controllerutil.CreateOrUpdate with SetControllerReference, then
// Status().Update when the status changed, and an Event when a child is
// created. Its main is the scaffold's cmd/main.go, cut to the flags the
// benchmark passes, plus -profiling for the heap profile the benchmark
// reads. The Pod template comes from the controller's own builders
// (internal/children), so that both make the same objects.
//
// Only the benchmark builds it; nothing else may import controller-runtime.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(appv1.AddToScheme(scheme))
}

func main() {
	var metricsAddr, probeAddr string
	var enableLeaderElection, secureMetrics, enableHTTP2, profiling bool
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to. "+
		"Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "Enable leader election for controller manager.")
	// Not in the scaffold, which runs in a Pod and finds its namespace
	// there: the benchmark runs it outside one.
	var leaderElectionNamespace string
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "", "The namespace of the leader election Lease.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "If set, the metrics endpoint is served securely via HTTPS.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "If set, HTTP/2 will be enabled for the metrics and webhook servers.")
	flag.BoolVar(&profiling, "profiling", false, "Serve /debug/pprof/heap on the metrics endpoint (for the benchmark).")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsServerOptions := metricsserver.Options{
		BindAddress:   metricsAddr,
		SecureServing: secureMetrics,
		TLSOpts:       tlsOpts,
	}
	if secureMetrics {
		metricsServerOptions.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if profiling {
		metricsServerOptions.ExtraHandlers = map[string]http.Handler{"/debug/pprof/heap": pprof.Handler("heap")}
	}

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsServerOptions,
		WebhookServer:           webhook.NewServer(webhook.Options{TLSOpts: tlsOpts}),
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          enableLeaderElection,
		LeaderElectionID:        "peer.app.example.com",
		LeaderElectionNamespace: leaderElectionNamespace,
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}

	if err := (&AppServiceReconciler{
		Client:   mgr.GetClient(),
		Scheme:   mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("appservice-controller"),
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "unable to create controller", "controller", "AppService")
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}

// AppServiceReconciler reconciles an AppService object.
type AppServiceReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
}

// Reconcile makes the AppService's Deployment and Service as its spec says,
// then reports the Deployment's state in its status.
func (r *AppServiceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	var as appv1.AppService
	if err := r.Get(ctx, req.NamespacedName, &as); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	desired := children.NewDeployment(&as)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: as.Name, Namespace: as.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		dep.Labels = desired.Labels
		dep.Annotations = desired.Annotations
		if dep.CreationTimestamp.IsZero() {
			dep.Spec.Selector = desired.Spec.Selector
		}
		dep.Spec.Replicas = desired.Spec.Replicas
		dep.Spec.Strategy = desired.Spec.Strategy
		dep.Spec.MinReadySeconds = desired.Spec.MinReadySeconds
		dep.Spec.RevisionHistoryLimit = desired.Spec.RevisionHistoryLimit
		dep.Spec.ProgressDeadlineSeconds = desired.Spec.ProgressDeadlineSeconds
		dep.Spec.Template = desired.Spec.Template
		return controllerutil.SetControllerReference(&as, dep, r.Scheme)
	})
	if err != nil {
		log.Error(err, "unable to reconcile the Deployment")
		return ctrl.Result{}, err
	}
	if op == controllerutil.OperationResultCreated {
		r.Recorder.Eventf(&as, dep, corev1.EventTypeNormal, "Created", "Create", "Created Deployment %s", dep.Name)
	}

	desiredSvc := children.NewService(&as)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: as.Name, Namespace: as.Namespace}}
	op, err = controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		svc.Labels = desiredSvc.Labels
		svc.Spec.Type = desiredSvc.Spec.Type
		svc.Spec.Selector = desiredSvc.Spec.Selector
		svc.Spec.Ports = desiredSvc.Spec.Ports
		return controllerutil.SetControllerReference(&as, svc, r.Scheme)
	})
	if err != nil {
		log.Error(err, "unable to reconcile the Service")
		return ctrl.Result{}, err
	}
	if op == controllerutil.OperationResultCreated {
		r.Recorder.Eventf(&as, svc, corev1.EventTypeNormal, "Created", "Create", "Created Service %s", svc.Name)
	}

	status := *as.Status.DeepCopy()
	status.ObservedGeneration = as.Generation
	status.Replicas = dep.Status.Replicas
	status.ReadyReplicas = dep.Status.ReadyReplicas
	status.AvailableReplicas = dep.Status.AvailableReplicas
	status.UpdatedReplicas = dep.Status.UpdatedReplicas
	available := metav1.Condition{
		Type: "Available", Status: metav1.ConditionFalse, Reason: "Reconciling",
		Message: "The Deployment has not reported enough available Pods yet", ObservedGeneration: as.Generation,
	}
	if want := desired.Spec.Replicas; want != nil && dep.Status.AvailableReplicas >= *want {
		available.Status, available.Reason = metav1.ConditionTrue, "Available"
		available.Message = fmt.Sprintf("%d of %d Pods available", dep.Status.AvailableReplicas, *want)
	}
	meta.SetStatusCondition(&status.Conditions, available)
	if !equality.Semantic.DeepEqual(as.Status, status) {
		as.Status = status
		if err := r.Status().Update(ctx, &as); err != nil {
			log.Error(err, "unable to update the AppService's status")
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches AppServices and the Deployments and Services
// they own.
func (r *AppServiceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appv1.AppService{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Named("appservice").
		Complete(r)
}
