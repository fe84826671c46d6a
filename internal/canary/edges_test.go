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
	"slices"
	"testing"
	"time"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestDecideEdges walks whole releases, each decision's status fed to the
// next, and checks the edges they make for the notifications, in order:
// each once, but Gated, decided at every sync its step waits (the
// notifications send its first).
func TestDecideEdges(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	gated := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10}, {Weight: 50, Gate: true}, {Weight: 100}}}
	for _, tc := range []struct {
		name string
		spec *appv1.Canary
		// ready: the canary's Pods become available; then, at the sync
		// numbered i (from 0), act changes the input.
		ready bool
		act   map[int]func(*Input)
		want  []string
	}{{
		name:  "promoted past a gate on request",
		spec:  gated,
		ready: true,
		act: map[int]func(*Input){6: func(in *Input) {
			in.Status.Request = &appv1.CanaryRequest{Action: appv1.CanaryPromote, TemplateHash: "new", Step: new(int32(1))}
		}},
		want: []string{"Started 0", "Step 0", "Step 1", "Gated 1", "Gated 1", "Gated 1", "Step 2", "Promoted 2"},
	}, {
		name: "its Pods never available: the progress deadline",
		spec: gated,
		want: []string{"Started 0", "ProgressDeadline 0"},
	}, {
		name:  "aborted on request at the gate",
		spec:  gated,
		ready: true,
		act: map[int]func(*Input){5: func(in *Input) {
			in.Status.Request = &appv1.CanaryRequest{Action: appv1.CanaryAbort, TemplateHash: "new"}
		}},
		want: []string{"Started 0", "Step 0", "Step 1", "Gated 1", "Gated 1", "Aborted 1"},
	}, {
		name:  "aborted by the spec mid-release",
		spec:  &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 600}, {Weight: 100}}},
		ready: true,
		act:   map[int]func(*Input){2: func(in *Input) { in.Spec = in.Spec.DeepCopy(); in.Spec.Abort = true }},
		want:  []string{"Started 0", "Step 0", "Aborted 0"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Spec: tc.spec, Hash: "new", StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now,
				Status: &appv1.CanaryStatus{StableTemplateHash: "old"}}
			var got []string
			for i := range 40 {
				if act := tc.act[i]; act != nil {
					in.Status = in.Status.DeepCopy()
					act(&in)
				}
				d := Decide(in)
				if d.Edge != "" {
					got = append(got, fmt.Sprintf("%s %d", d.Edge, d.EdgeStep))
				}
				if d.Phase == None || (d.Phase == Aborted && d.Event == nil) {
					break
				}
				in.Status = d.Status
				if n := d.CanaryReplicas; n > 0 {
					in.Pods = &Pods{Observed: true, Replicas: n, Total: n, Updated: n}
					if tc.ready {
						in.Pods.Available = n
					}
				}
				if d.Phase == Promoting {
					in.StableInLine, in.StableRolledOut = true, true
				}
				after := d.After
				if after == 0 || after > time.Minute && !tc.ready {
					after = min(max(after, time.Second), 11*time.Minute)
				}
				in.Now = in.Now.Add(after)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("edges %q, want %q", got, tc.want)
			}
		})
	}

	// A rollback's edge, once, when it is done.
	spec := &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10, PauseSeconds: 60}, {Weight: 100}}, RollbackWindow: 2}
	in := Input{Spec: spec, Hash: "a", StableReplicas: 4, ProgressDeadline: 10 * time.Minute, Now: now,
		Status: &appv1.CanaryStatus{StableTemplateHash: "c", History: []string{"a", "b"}}}
	if d := Decide(in); d.Edge != "" {
		t.Errorf("rolling back: edge %q, want none until it is done", d.Edge)
	}
	in.StableInLine, in.StableRolledOut = true, true
	d := Decide(in)
	if d.Edge != appv1.EdgeRolledBack {
		t.Errorf("rolled back: edge %q, want RolledBack", d.Edge)
	}
	in.Status = d.Status
	if d := Decide(in); d.Edge != "" {
		t.Errorf("after the rollback: edge %q, want none", d.Edge)
	}
}
