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
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The sizes: how many Pods a canary runs at a step, by route or by Pods,
// and the share its available Pods carry.

// podShare is the share of a canary by Pods: its available Pods, all the
// available Pods behind the Service, and the first's percentage of the
// second, rounded to the nearest.
func podShare(in Input) (share, canaryPods, servingPods int32) {
	canaryPods = in.CanaryServingAvailable
	if in.Pods != nil && in.serve {
		canaryPods = in.Pods.Available
	}
	servingPods = canaryPods + max(in.StableAvailable, 0)
	if servingPods == 0 {
		return 0, canaryPods, 0
	}
	return int32((200*int64(canaryPods) + int64(servingPods)) / (2 * int64(servingPods))), canaryPods, servingPods
}

// replicas is the canary's replica count at a step of weight: by route,
// CanaryReplicas; by Pods, PodReplicas, or ShrinkReplicas when the stable
// shrinks.
func (in Input) replicas(weight int32) int32 {
	switch {
	case in.blueGreen() && weight == 100:
		return in.fullSize()
	case in.blueGreen():
		return in.previewSize()
	case in.shrinking():
		return ShrinkReplicas(in.StableReplicas, weight)
	case in.by == appv1.CanaryByPods:
		return PodReplicas(in.StableReplicas, weight)
	}
	return CanaryReplicas(in.StableReplicas, weight)
}

// shrinking: a canary by Pods whose stable gives up a Pod for each of its
// own (spec.canary.shrinkStable).
func (in Input) shrinking() bool {
	return in.by == appv1.CanaryByPods && in.Spec != nil && in.Spec.ShrinkStable
}

// ShrinkReplicas is the canary's replica count for a step of weight
// percent by Pods when the stable gives up as many (shrinkStable): of the
// spec's count, the nearest to weight percent (the fewer on a tie), from 1
// to all of them.
func ShrinkReplicas(size, weight int32) int32 {
	n, w := int64(max(size, 0)), int64(min(max(weight, 0), 100))
	c := n * w / 100
	if n*w%100 > 50 {
		c++
	}
	return int32(min(max(c, 1), max(n, 1)))
}

// PodReplicas is the canary's replica count for a step of weight percent
// by Pods, beside stable Pods that keep their number: the count c whose
// share c / (stable + c) is nearest the weight (the smaller on a tie), at
// least one, and at most stable, so that it never runs more Pods than a
// canary by route at 100%. A weight above 50 is carried as 50%.
func PodReplicas(stable, weight int32) int32 {
	n, w := int64(max(stable, 0)), int64(min(max(weight, 0), 100))
	if n <= 1 {
		return 1
	}
	if w >= 50 {
		return int32(n)
	}
	// The share c/(n+c) is w/100 at c = n*w/(100-w): the nearest whole
	// count is one of its floor and ceiling, compared exactly.
	lo := max(1, n*w/(100-w))
	hi := min(n, lo+1)
	off := func(c int64) int64 { return abs(100*c-w*(n+c)) * (n + lo + hi - c) }
	if lo < hi && off(hi) < off(lo) {
		return int32(hi)
	}
	return int32(lo)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// CanaryReplicas is the canary's replica count at weight percent of the
// stable's count, rounded up, at least one.
func CanaryReplicas(stable, weight int32) int32 {
	return max(1, int32((int64(stable)*int64(weight)+99)/100))
}
