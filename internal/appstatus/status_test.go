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

package appstatus

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// rolledOut is the message of Ready when the seed's two replicas run the
// current template.
const rolledOut = "2 of 2 replicas run the current template and are available"

// FuzzStatus feeds the status any spec that decodes, with the Deployment
// the builders make of it, as FuzzBuilders (internal/children) feeds the
// builders: the status never panics, and it and every condition carry the
// AppService's generation.
//
//	go test -run '^$' -fuzz FuzzStatus -fuzztime 1m ./internal/appstatus
func FuzzStatus(f *testing.F) {
	fixtures.FuzzSpecs(f, func(t *testing.T, as *appv1.AppService) {
		st := New(as, Observed{Deployment: children.NewDeployment(as)}, errors.New("boom"))
		if st.ObservedGeneration != as.Generation {
			t.Errorf("status observedGeneration %d, want %d", st.ObservedGeneration, as.Generation)
		}
		for _, c := range st.Conditions {
			if c.ObservedGeneration != as.Generation {
				t.Errorf("condition %s: observedGeneration %d, want %d", c.Type, c.ObservedGeneration, as.Generation)
			}
		}
	})
}

// TestProgress: the rollout is judged as kstatus judges a Deployment, and
// with autoscaling the autoscaler must have reached the minimum.
func TestProgress(t *testing.T) {
	tests := []struct {
		name        string
		deploy      func(*appsv1.Deployment) // applied to LiveDeployment
		noDepl      bool
		minReplicas *int32 // autoscaling's, when set
		suspended   bool
		want        Rollout
	}{
		{name: "rolled out", want: Rollout{Done: true, Message: rolledOut}},
		{name: "no Deployment", noDepl: true, want: Rollout{Reason: appv1.ReasonRollingOut, Message: "The Deployment does not exist yet"}},
		{
			name:   "generation not observed yet",
			deploy: func(d *appsv1.Deployment) { d.Generation = 2 },
			want:   Rollout{Reason: appv1.ReasonRollingOut, Message: "Waiting for the Deployment's controller to observe generation 2"},
		},
		{
			name:   "replicas being updated",
			deploy: func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 },
			want:   Rollout{Reason: appv1.ReasonRollingOut, Message: "1 of 2 replicas updated"},
		},
		{
			name: "one replica, not available yet: in the singular",
			deploy: func(d *appsv1.Deployment) {
				d.Spec.Replicas, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = new(int32(1)), 1, 1, 0
			},
			want: Rollout{Reason: appv1.ReasonRollingOut, Message: "0 of 1 replica available"},
		},
		{
			name: "one replica, rolled out: in the singular",
			deploy: func(d *appsv1.Deployment) {
				d.Spec.Replicas, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = new(int32(1)), 1, 1, 1
			},
			want: Rollout{Done: true, Message: "1 of 1 replica runs the current template and is available"},
		},
		{
			name:   "old replicas terminating",
			deploy: func(d *appsv1.Deployment) { d.Status.Replicas = 3 },
			want:   Rollout{Reason: appv1.ReasonRollingOut, Message: "3 replicas for 2 wanted: the others are terminating"},
		},
		{
			name:   "updated replicas not available yet",
			deploy: func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 0 },
			want:   Rollout{Reason: appv1.ReasonRollingOut, Message: "0 of 2 replicas available"},
		},
		{
			name: "past the progress deadline",
			deploy: func(d *appsv1.Deployment) {
				d.Status.UpdatedReplicas = 1
				d.Status.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
					Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "nginx-app-6d4cf56db6" has timed out progressing.`}
			},
			want: Rollout{Stalled: true, Reason: appv1.ReasonProgressDeadlineExceeded,
				Message: `The Deployment's rollout made no progress within its deadline: ReplicaSet "nginx-app-6d4cf56db6" has timed out progressing.`},
		},
		{
			name:        "autoscaler below the minimum",
			minReplicas: new(int32(3)),
			want:        Rollout{Reason: appv1.ReasonScalingToMinimum, Message: "The autoscaler has 2 replicas, below the minimum of 3"},
		},
		{name: "autoscaler at the minimum", minReplicas: new(int32(2)), want: Rollout{Done: true, Message: rolledOut}},
		{
			name: "suspended, the Deployment not yet scaled down", suspended: true,
			want: Rollout{Reason: appv1.ReasonSuspending, Message: "Suspending: 2 replicas still running"},
		},
		{
			name: "suspended, the Pods terminating", suspended: true,
			deploy: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(0)) },
			want:   Rollout{Reason: appv1.ReasonSuspending, Message: "Suspending: 2 replicas still running"},
		},
		{
			name: "suspended at 0, the autoscaler's minimum not asked for", suspended: true, minReplicas: new(int32(3)),
			deploy: func(d *appsv1.Deployment) {
				d.Spec.Replicas = new(int32(0))
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
			},
			want: Rollout{Done: true, Message: "Suspended: the Deployment is at 0 replicas"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService()
			if tc.minReplicas != nil {
				as.Spec.Autoscaling = &appv1.Autoscaling{MinReplicas: tc.minReplicas, MaxReplicas: 5}
			}
			as.Spec.Suspend = new(tc.suspended)
			var d *appsv1.Deployment
			if !tc.noDepl {
				d = fixtures.LiveDeployment()
				fixtures.Tweak(tc.deploy, d)
			}
			if got := Progress(as, d); got != tc.want {
				t.Errorf("Progress = %+v, want %+v", got, tc.want)
			}
		})
	}
}
