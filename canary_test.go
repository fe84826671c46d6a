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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestCanaryHeld: the canary's Deployment that the decision no longer asks
// for stays while its Pods serve behind the Service (by Pods) and the
// stable Deployment is not rolled out at the spec's count (an abort, a
// rollback, spec.canary removed); it may go once it is, by route at once,
// and suspended at once. An AppService whose canary status is gone but
// whose canary Deployment is there still has canary children to prune.
func TestCanaryHeld(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		byPods, suspended     bool
		stableReplicas, avail int32
		want                  bool
	}{
		{name: "by Pods, the stable back at 2 of 2 available: it may go", byPods: true, stableReplicas: 2, avail: 2},
		{name: "by Pods, the stable at 2 of 2, 1 available: held", byPods: true, stableReplicas: 2, avail: 1, want: true},
		{name: "by Pods, the stable still at 1 (shrunk): held", byPods: true, stableReplicas: 1, avail: 1, want: true},
		{name: "by route: it may go", stableReplicas: 2, avail: 1},
		{name: "by Pods, suspended: it may go", byPods: true, suspended: true, stableReplicas: 2, avail: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService() // size 2, no spec.canary, no canary status: removed
			as.Spec.Suspend = &tc.suspended
			stable := fixtures.LiveDeployment()
			stable.Spec.Replicas = &tc.stableReplicas
			stable.Status.Replicas, stable.Status.UpdatedReplicas, stable.Status.ReadyReplicas, stable.Status.AvailableReplicas =
				tc.stableReplicas, tc.stableReplicas, tc.avail, tc.avail
			c := children.NewCanaryDeployment(as, children.NewDeployment(as), 1, tc.byPods)
			c.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(as, appv1.SchemeGroupVersion.WithKind("AppService"))}
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{stable, c}
			_, ctx := ktesting.NewTestContext(t)
			s := newAppSync(f.newController(ctx), as)
			if !s.canaryChildren() {
				t.Errorf("canaryChildren() is false with a canary Deployment there")
			}
			if got := s.canaryHeld(children.NewDeployment(as)) != nil; got != tc.want {
				t.Errorf("canaryHeld = %v, want %v", got, tc.want)
			}
		})
	}
}
