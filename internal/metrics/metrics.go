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

// Package metrics registers the controller's own series in component-base's
// legacy registry, which the metrics server serves: the reconcile metrics,
// named as controller-runtime names them, the build info, (by a blank
// import) client-go's workqueue, REST client and leader-election metrics,
// and the series of each AppService and Activity, read from the listers
// at scrape time (objects.go).
//
// It may import internal/version (the build info), internal/children (what
// an AppService asks for), the API's types (pkg/apis/app/v1) and the
// generated listers (pkg/generated/...) of this repository, and nothing
// else of it.
package metrics

import (
	"time"

	basemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"example.com/appservice-controller/internal/version"

	// client-go's workqueue, REST client and leader-election metrics, in
	// the Prometheus registry served on --metrics-bind-address, with the
	// names controller-runtime uses (workqueue_depth, rest_client_requests_total,
	// leader_election_master_status, ...), next to the Go and process
	// collectors the registry carries.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
)

// The reconcile metrics, named as controller-runtime names them so that
// existing dashboards and alerts work unchanged; their controller label is
// the kind: "appservice" or "activity".
var controllerNames = []string{"appservice", "activity"}

// controllerLabel names the controller in controller-runtime's series.
const controllerLabel = "controller"

var (
	reconcileTotal = basemetrics.NewCounterVec(&basemetrics.CounterOpts{
		Name:           "controller_runtime_reconcile_total",
		Help:           "Total number of reconciliations per controller, by result (success, error, requeue).",
		StabilityLevel: basemetrics.ALPHA,
	}, []string{controllerLabel, "result"})
	reconcileErrors = basemetrics.NewCounterVec(&basemetrics.CounterOpts{
		Name:           "controller_runtime_reconcile_errors_total",
		Help:           "Total number of reconciliation errors per controller.",
		StabilityLevel: basemetrics.ALPHA,
	}, []string{controllerLabel})
	reconcileTime = basemetrics.NewHistogramVec(&basemetrics.HistogramOpts{
		Name: "controller_runtime_reconcile_time_seconds",
		Help: "Length of time per reconciliation per controller.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
			1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60},
		StabilityLevel: basemetrics.ALPHA,
	}, []string{controllerLabel})

	// buildInfo is the constant 1, labelled with the version: join it to
	// other series to see which build produced them (as
	// kubernetes_build_info does for the Kubernetes components).
	// notificationDeliveries counts a release's edges delivered to a
	// NotificationDestination, or given up: by its namespace and name,
	// never its address.
	notificationDeliveries = basemetrics.NewCounterVec(&basemetrics.CounterOpts{
		Name:           "appservice_notification_deliveries_total",
		Help:           "Deliveries of a release's edges to a NotificationDestination, by its namespace and name and by result (delivered, failed).",
		StabilityLevel: basemetrics.ALPHA,
	}, []string{nameLabels[0], "destination", "result"})
	buildInfo = basemetrics.NewGaugeVec(&basemetrics.GaugeOpts{
		Name: "appservice_controller_build_info",
		Help: "A metric with a constant '1' value labelled by the version, commit, tree state, build date, Go version and platform " +
			"of the running appservice-controller.",
	}, []string{"git_version", "git_commit", "git_tree_state", "build_date", "go_version", "platform"})
)

func init() {
	legacyregistry.MustRegister(reconcileTotal, reconcileErrors, reconcileTime, notificationDeliveries, buildInfo)
	// Exposed at 0 from the start, as controller-runtime does, so that
	// rate() and alerts work before the first error.
	for _, controller := range controllerNames {
		for _, result := range []string{"success", "error", "requeue"} {
			reconcileTotal.WithLabelValues(controller, result).Add(0)
		}
		reconcileErrors.WithLabelValues(controller).Add(0)
	}
	v := version.Get()
	buildInfo.WithLabelValues(v.GitVersion, v.GitCommit, v.GitTreeState, v.BuildDate, v.GoVersion, v.Platform).Set(1)
}

// ObserveReconcile records one sync's result ("success", "error" or
// "requeue") and duration, for the controller of one kind ("appservice" or
// "activity").
func ObserveReconcile(controller, result string, took time.Duration) {
	reconcileTotal.WithLabelValues(controller, result).Inc()
	if result == "error" {
		reconcileErrors.WithLabelValues(controller).Inc()
	}
	reconcileTime.WithLabelValues(controller).Observe(took.Seconds())
}

// ObserveDelivery counts a delivery to the destination namespace/name that
// ended with result: delivered or failed.
func ObserveDelivery(namespace, destination, result string) {
	notificationDeliveries.WithLabelValues(namespace, destination, result).Inc()
}
