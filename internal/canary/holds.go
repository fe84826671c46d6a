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

// Package canary decides where an AppService's canary (spec.canary) stands
// and what its children should be: which template the stable Deployment
// keeps, how many Pods the canary runs, which weight the HTTPRoute sends it,
// when to promote and when to abort. It is the whole decision, as one pure
// function (Decide) of the spec's steps, the status the last edge recorded,
// what the children show and the time, tested by a table; the controller
// (package main, canary.go there) reads the inputs and writes what it says.
//
// Its share of the traffic is carried by the route's weights, or, when the
// AppService has no httpRoute, by its Pods beside the stable ones behind
// the one Service (TrafficBy, PodReplicas): the same steps, and a status
// that gives the share the Pods really carry, never the step's weight.
//
// With spec.canary.analysis, each routed step is also judged by
// measurements of what the canary serves (analysis.go).
//
// It is level-triggered: which step the canary is on, and since when, come
// from the status (CanaryStatus), recorded at the step edges only; between
// them a Decision changes nothing, so that a sync during a pause writes
// nothing, and a restarted controller neither skips a step nor starts a
// pause over.
//
// Of this repository it may import only internal/plural and the API's
// types (pkg/apis/app/v1).
package canary

import (
	"fmt"
	"time"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The holds at a canary's start: no step, no Pods and no weight while its
// route cannot exist (the cluster serves no HTTPRoutes, or GRPCRoutes) or its analysis's
// templates cannot be resolved; the stable Pods serve all the traffic.

// holdForRoute reports whether the canary must hold at its start for its
// route, which the cluster cannot hold: no step may claim a weight no
// route carries.
func holdForRoute(in Input, st *appv1.CanaryStatus, running bool) bool {
	return in.RouteMissing && routeHolds(in, st, running)
}

// routeHolds reports whether a canary whose route cannot carry it holds
// at its start: one not yet running, or running by route before its
// promotion. A promotion under way goes on, needing no route; so does a
// canary by Pods to which a route was added.
func routeHolds(in Input, st *appv1.CanaryStatus, running bool) bool {
	if !running || st.CanaryTemplateHash != in.Hash {
		return true
	}
	return in.by != appv1.CanaryByPods && *st.Step < int32(len(in.Spec.Steps))
}

// awaitRoute is the decision of a canary of in.Hash held at its start while
// its route cannot exist: no step, no Pods, no weight; the stable Pods
// serve all the traffic. Its status names the template with no step, which
// the plugin reads as waiting for the route; a canary that was running
// starts again at its first step once the route can exist.
func awaitRoute(in Input, st *appv1.CanaryStatus) Decision {
	return Decision{
		Phase: AwaitingRoute, HoldStable: true, Reason: appv1.ReasonRouteAPIMissing,
		Status: &appv1.CanaryStatus{StableTemplateHash: st.StableTemplateHash, CanaryTemplateHash: in.Hash,
			AbortedTemplateHash: st.AbortedTemplateHash, History: st.History, Tests: st.Tests},
		Message: fmt.Sprintf("Canary %s holds at its start, with no step and no traffic: "+
			"it waits for its route, which the cluster cannot hold until it serves the Gateway API", in.Hash),
	}
}

// holdForFeatures reports whether the canary must hold at its start for a
// feature its route needs and a Gateway's class does not support (a
// mirror, sticky users).
func holdForFeatures(in Input, st *appv1.CanaryStatus, running bool) bool {
	return in.RouteUnsupported != "" && routeHolds(in, st, running)
}

// FeaturesRecheck is how often a canary held for its route's features
// looks again: the classes' statuses are read, not watched.
const FeaturesRecheck = 30 * time.Second

// awaitFeatures is the decision of a canary of in.Hash held at its start
// while its route needs a feature a Gateway's class does not support: as
// awaitRoute, and Stalled, for it needs the user (another Gateway, or a
// spec without the feature); looked at again every FeaturesRecheck.
func awaitFeatures(in Input, st *appv1.CanaryStatus) Decision {
	d := awaitRoute(in, st)
	d.Stalled, d.Reason, d.After = true, appv1.ReasonRouteFeatureUnsupported, FeaturesRecheck
	d.Message = fmt.Sprintf("Canary %s holds at its start, with no step and no traffic: its route needs what the Gateway does not support: %s",
		in.Hash, in.RouteUnsupported)
	return d
}

// awaitAnalysis is the decision of a canary of in.Hash held at its start
// while its analysis's templates cannot be resolved: as awaitRoute, no
// step, no Pods and no weight, and Stalled, for it needs the user. The
// templates are watched: it starts once they resolve.
func awaitAnalysis(in Input, st *appv1.CanaryStatus, aborted string) Decision {
	return Decision{
		Phase: AwaitingAnalysis, HoldStable: true, Stalled: true, Reason: appv1.ReasonCanaryAnalysisUnresolved,
		Status: &appv1.CanaryStatus{StableTemplateHash: st.StableTemplateHash, CanaryTemplateHash: in.Hash,
			AbortedTemplateHash: aborted, History: st.History, Tests: st.Tests},
		Message: fmt.Sprintf("Canary %s holds at its start, with no step and no traffic: its analysis cannot be resolved: %s",
			in.Hash, in.Analysis.Unresolved),
	}
}
