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

package metrics

import (
	"slices"
	"strconv"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	basemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// The series of each AppService and Activity, computed when /metrics is
// scraped from the informers' listers (as Argo CD's argocd_app_info and
// Flux's gotk_resource_info are): no cache of their own, no writes, and
// nothing kept between scrapes. Their labels are the object's namespace
// and name and values the controller defines (a state, a condition's
// reason, a phase, the name of a canary analysis metric); nothing else of
// the user's data (no image, no label, no message), so that a series per
// object and metric, and per analysis metric of its canary, is all there
// is.

var (
	// nameLabels are the labels every per-object series has.
	nameLabels = []string{"namespace", "name"}
	// metricLabels are the labels of a canary analysis metric's series.
	metricLabels = []string{"namespace", "name", "metric"}

	appServiceInfo = basemetrics.NewDesc("appservice_info",
		"A series of value 1 per AppService: its state (Ready, Reconciling, Stalled or Unknown, from its kstatus conditions) "+
			"and that condition's reason.",
		append(slices.Clone(nameLabels), "state", "reason"), nil, basemetrics.ALPHA, "")
	appServiceSpecReplicas = basemetrics.NewDesc("appservice_spec_replicas",
		"The replicas an AppService asks for: spec.size; with autoscaling, the autoscaler's minimum; suspended, 0.",
		nameLabels, nil, basemetrics.ALPHA, "")
	appServiceReadyReplicas = basemetrics.NewDesc("appservice_status_ready_replicas",
		"The ready Pods of an AppService's Deployment, as its status says.",
		nameLabels, nil, basemetrics.ALPHA, "")
	appServiceGenerationLag = basemetrics.NewDesc("appservice_status_generation_lag",
		"How many generations of an AppService's spec its status has not observed yet (0: up to date).",
		nameLabels, nil, basemetrics.ALPHA, "")
	appServiceSuspended = basemetrics.NewDesc("appservice_suspended",
		"1 while an AppService's spec.suspend is true, else 0.",
		nameLabels, nil, basemetrics.ALPHA, "")

	// The canary's series, for an AppService with a canary status. Their
	// metric label is a name of spec.canary.analysis.metrics, which the
	// CRD bounds (at most 10 per AppService, 63 characters each).
	appServiceCanaryWeight = basemetrics.NewDesc("appservice_canary_weight",
		"The percentage of an AppService's traffic its canary gets (status.canary.share): its route's weight, or without a route its Pods' share; 0 when none.",
		nameLabels, nil, basemetrics.ALPHA, "")
	appServiceCanaryMetricAnalysis = basemetrics.NewDesc("appservice_canary_metric_analysis",
		"The last value a query of an AppService's canary analysis returned, per metric (as Flagger's flagger_canary_metric_analysis); "+
			"none while the last measurement has no value (no data, an error).",
		metricLabels, nil, basemetrics.ALPHA, "")
	appServiceCanaryMetricResult = basemetrics.NewDesc("appservice_canary_metric_result",
		"A series of value 1 per metric of an AppService's canary analysis: the result of its last measurement "+
			"(Passed, Failed, NoData or Error).",
		append(slices.Clone(metricLabels), "result"), nil, basemetrics.ALPHA, "")
	appServiceCanaryMetricFailures = basemetrics.NewDesc("appservice_canary_metric_failures",
		"How many measurements of a metric of an AppService's canary analysis failed in this canary.",
		metricLabels, nil, basemetrics.ALPHA, "")
	// Its test label is a name of spec.canary.steps[].tests (at most 20
	// characters, 40 records).
	appServiceCanaryTestResult = basemetrics.NewDesc("appservice_canary_test_result",
		"A series of value 1 per test of an AppService's canary begun (status.canary.tests): its step (from 1) and phase "+
			"(Running, Succeeded, Failed or Stopped).",
		append(slices.Clone(nameLabels), "test", "step", "phase"), nil, basemetrics.ALPHA, "")

	activityInfo = basemetrics.NewDesc("activity_info",
		"A series of value 1 per Activity: its phase (prosta: Pending, Running, Succeeded or Failed).",
		append(slices.Clone(nameLabels), "prosta"), nil, basemetrics.ALPHA, "")
	activityExitCode = basemetrics.NewDesc("activity_exit_code",
		"The exit code of an Activity's command, once it ended.",
		nameLabels, nil, basemetrics.ALPHA, "")
	activityStartTime = basemetrics.NewDesc("activity_start_time_seconds",
		"When an Activity's run started, in seconds since the epoch.",
		nameLabels, nil, basemetrics.ALPHA, "")
	activityCompletionTime = basemetrics.NewDesc("activity_completion_time_seconds",
		"When an Activity's run ended, in seconds since the epoch.",
		nameLabels, nil, basemetrics.ALPHA, "")
)

// Objects is where the per-object series are read from.
type Objects struct {
	AppServices AppServices
	Activities  listers.ActivityLister
	// Active reports whether this process should report the objects: its
	// caches have synced and it leads (a standby reports none, so that
	// replicas do not report each object twice).
	Active func() bool
	// Value is the value a canary's metric had in its last round, when
	// this process has it (nil, or false: the status's, that of the
	// round that last changed what the status shows).
	Value func(namespace, name, metric string) (float64, bool)
	// Logger logs what a scrape could not read.
	Logger klog.Logger
}

// AppServices is where a scrape reads the AppServices: the controller's
// cache keeps them encoded, and Each decodes one at a time, so that a scrape
// never holds them all decoded at once (5000 realistic AppServices would be
// about 26 MB of heap, 5254 bytes each, and the runtime would keep that
// memory after the scrape).
type AppServices interface {
	// Each calls visit with each AppService; visit must not keep it or
	// modify it.
	Each(visit func(*appv1.AppService)) error
}

// objectCollector is the collector of the per-object series, registered
// once (the registry is the process's); ReportObjects gives it its
// source.
type objectCollector struct {
	basemetrics.BaseStableCollector
	source atomic.Pointer[Objects]
}

var objects = &objectCollector{}

func init() {
	legacyregistry.CustomMustRegister(objects)
}

// ReportObjects has /metrics report the objects of o, from now on.
func ReportObjects(o Objects) {
	objects.source.Store(&o)
}

// DescribeWithStability sends every series the collector may send.
func (c *objectCollector) DescribeWithStability(ch chan<- *basemetrics.Desc) {
	for _, d := range []*basemetrics.Desc{
		appServiceInfo, appServiceSpecReplicas, appServiceReadyReplicas, appServiceGenerationLag, appServiceSuspended,
		appServiceCanaryWeight, appServiceCanaryMetricAnalysis, appServiceCanaryMetricResult, appServiceCanaryMetricFailures,
		appServiceCanaryTestResult, activityInfo, activityExitCode, activityStartTime, activityCompletionTime,
	} {
		ch <- d
	}
}

// CollectWithStability sends the series of every AppService and Activity
// the listers hold.
func (c *objectCollector) CollectWithStability(ch chan<- basemetrics.Metric) {
	if o := c.source.Load(); o != nil && o.Active() {
		o.collect(ch)
	}
}

// value is Value's, when there is one.
func (o *Objects) value(namespace, name, metric string) (float64, bool) {
	if o.Value == nil {
		return 0, false
	}
	return o.Value(namespace, name, metric)
}

// collect sends the series of the objects of o.
func (o *Objects) collect(ch chan<- basemetrics.Metric) {
	gauge := func(d *basemetrics.Desc, v float64, labelValues ...string) {
		ch <- basemetrics.NewLazyConstMetric(d, basemetrics.GaugeValue, v, labelValues...)
	}
	err := o.AppServices.Each(func(as *appv1.AppService) {
		ns, name := as.Namespace, as.Name
		state, reason := appServiceState(as)
		gauge(appServiceInfo, 1, ns, name, state, reason)
		gauge(appServiceSpecReplicas, float64(*children.DesiredReplicas(as)), ns, name)
		gauge(appServiceReadyReplicas, float64(as.Status.ReadyReplicas), ns, name)
		gauge(appServiceGenerationLag, float64(max(0, as.Generation-as.Status.ObservedGeneration)), ns, name)
		gauge(appServiceSuspended, boolValue(as.Spec.Suspend != nil && *as.Spec.Suspend), ns, name)
		if c := as.Status.Canary; c != nil {
			share := c.Share
			if c.TrafficBy == "" {
				// A status from before status.canary.share: its route's
				// weight.
				share = c.Weight
			}
			gauge(appServiceCanaryWeight, float64(share), ns, name)
			for i := range c.Analysis {
				m := &c.Analysis[i]
				// The last round's value, which the status records only
				// when the round changes what it shows; else the status's,
				// a decimal string, empty when the measurement had none.
				if v, ok := o.value(ns, name, m.Name); ok {
					gauge(appServiceCanaryMetricAnalysis, v, ns, name, m.Name)
				} else if v, err := strconv.ParseFloat(m.Value, 64); err == nil {
					gauge(appServiceCanaryMetricAnalysis, v, ns, name, m.Name)
				}
				gauge(appServiceCanaryMetricResult, 1, ns, name, m.Name, string(m.Result))
				gauge(appServiceCanaryMetricFailures, float64(m.Failures), ns, name, m.Name)
			}
			for _, rec := range c.Tests {
				gauge(appServiceCanaryTestResult, 1, ns, name, rec.Name, strconv.Itoa(int(rec.Step)+1), string(rec.Phase))
			}
		}
	})
	if err != nil {
		o.Logger.Error(err, "Reading AppServices for /metrics")
	}
	activities, err := o.Activities.List(labels.Everything())
	if err != nil {
		o.Logger.Error(err, "Listing Activities for /metrics")
	}
	for _, a := range activities {
		ns, name, st := a.Namespace, a.Name, &a.Status
		prosta := st.Prosta
		if prosta == "" {
			prosta = appv1.ActivityPending
		}
		gauge(activityInfo, 1, ns, name, string(prosta))
		if st.ExitCode != nil {
			gauge(activityExitCode, float64(*st.ExitCode), ns, name)
		}
		if t := st.StartTime; t != nil {
			gauge(activityStartTime, unixSeconds(t), ns, name)
		}
		if t := st.CompletionTime; t != nil {
			gauge(activityCompletionTime, unixSeconds(t), ns, name)
		}
	}
}

// appServiceState is an AppService's state and its reason, as
// appservice_info labels them: Stalled, Reconciling or Ready, whichever of
// those conditions is True first in that order, with its reason; Unknown
// (reason None) when none is.
func appServiceState(as *appv1.AppService) (state, reason string) {
	for _, typ := range []string{appv1.ConditionStalled, appv1.ConditionReconciling, appv1.ConditionReady} {
		if c := meta.FindStatusCondition(as.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
			return typ, c.Reason
		}
	}
	return "Unknown", "None"
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t *metav1.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}
