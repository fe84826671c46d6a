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

package canary

import (
	"fmt"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// What the route carries for the canary besides its weight (the testers',
// the mirror, the sticky users'), and how the traffic is told in messages.

// routeRules decides the route's rules beside the weight: the testers',
// the step's mirror and the sticky users'. All are the route's only, and
// need an available Pod of the canary to send to.
func (in Input) routeRules(d *Decision) {
	if in.by != appv1.CanaryByRoute || !in.Pods.serving() {
		return
	}
	// Testers reach the canary from its first available Pod to the end of
	// its promotion, whatever the weight.
	d.Testers = in.Spec != nil && len(in.Spec.TesterHeaders) > 0 && (d.Phase == Running || d.Phase == Promoting)
	// The mirror and the sticky users are the running steps': they go at
	// the promotion and at an abort.
	if d.Phase == Running {
		d.RouteMirror = d.Status.Mirror
		if in.Spec.Sticky != nil {
			d.StickyCookie = in.Hash
		}
	}
}

// traffic says the canary's share at a step of weight, and how it is
// carried: "10% of the traffic by route", or by Pods "20% of the traffic
// by Pods (1 of 5), for a 25% step", from the Pods available now.
func (in Input) traffic(weight int32) string {
	switch in.by {
	case appv1.CanaryByService:
		return fmt.Sprintf("%d%% of the traffic by the Service's selector", weight)
	case appv1.CanaryByRoute, "":
		return fmt.Sprintf("%d%% of the traffic by route", weight)
	}
	share, c, n := podShare(in)
	s := fmt.Sprintf("%d%% of the traffic by Pods (%d of %d)", share, c, n)
	if weight > 0 {
		s += fmt.Sprintf(", for a %d%% step", weight)
	}
	return s
}

// mirrored says a step's mirror, after its traffic: ", and a copy of 20% of
// the requests"; "" for none.
func mirrored(mirror int32) string {
	if mirror == 0 {
		return ""
	}
	return fmt.Sprintf(", and a copy of %d%% of the requests", mirror)
}

// routed is the weight the route sends the canary: its step's, while it
// has an available Pod to take it (the Gateway would fail requests sent to
// a Service without endpoints); none otherwise.
func routed(weight int32, serving bool) int32 {
	if !serving {
		return 0
	}
	return weight
}
