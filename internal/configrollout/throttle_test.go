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

package configrollout

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func key(name string) cache.ObjectName { return cache.ObjectName{Namespace: "apps", Name: name} }

func at(name string, seconds int) Waiting {
	return Waiting{Key: key(name), Since: t0.Add(time.Duration(seconds) * time.Second)}
}

// TestAdmit: as many of the oldest waiting as there are free places go;
// ties by key; no cap lets every one go.
func TestAdmit(t *testing.T) {
	queue := []Waiting{at("c", 3), at("a", 1), at("b", 2), at("d", 3)}
	tests := []struct {
		name        string
		max, rolled int
		queue       []Waiting
		want        []string // admitted, in order
	}{
		{name: "no cap: every one", max: 0, rolled: 50, queue: queue, want: []string{"a", "b", "c", "d"}},
		{name: "room for two: the two oldest", max: 5, rolled: 3, queue: queue, want: []string{"a", "b"}},
		{name: "room for three: a tie broken by key", max: 5, rolled: 2, queue: queue, want: []string{"a", "b", "c"}},
		{name: "full", max: 5, rolled: 5, queue: queue},
		{name: "over the cap (it was lowered): none", max: 2, rolled: 5, queue: queue},
		{name: "more room than waiting", max: 20, rolled: 0, queue: queue, want: []string{"a", "b", "c", "d"}},
		{name: "nobody waiting", max: 1, rolled: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var next []string
			for _, k := range Next(tc.max, tc.rolled, tc.queue) {
				next = append(next, k.Name)
			}
			if !slices.Equal(next, tc.want) {
				t.Errorf("Next = %v, want %v", next, tc.want)
			}
			for _, w := range tc.queue {
				if got, want := Admit(tc.max, tc.rolled, tc.queue, w.Key), slices.Contains(tc.want, w.Key.Name); got != want {
					t.Errorf("Admit(%s) = %v, want %v", w.Key.Name, got, want)
				}
			}
		})
	}
}

// TestRolling: a Deployment counts against the cap while the rollout a
// config change started is under way, and no longer once it finished,
// failed past its deadline, or a spec change rolled the template since.
func TestRolling(t *testing.T) {
	const digest = "configmap/app=1234"
	rolled := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: 3, Annotations: map[string]string{appv1.AnnotationConfigRollout: digest}},
			Spec: appsv1.DeploymentSpec{
				Replicas: new(int32(2)),
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{appv1.AnnotationConfigDigest: digest}}},
			},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2},
		}
	}
	tests := []struct {
		name   string
		change func(*appsv1.Deployment)
		want   bool
	}{
		{name: "finished", want: false},
		{name: "not observed yet", change: func(d *appsv1.Deployment) { d.Generation = 4 }, want: true},
		{name: "replicas being updated", change: func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 }, want: true},
		{name: "old replicas still running", change: func(d *appsv1.Deployment) { d.Status.Replicas = 3 }, want: true},
		{name: "not available yet", change: func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 }, want: true},
		{
			name: "past its progress deadline: failed, its place given back",
			change: func(d *appsv1.Deployment) {
				d.Status.UpdatedReplicas = 1
				d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: appv1.ReasonProgressDeadlineExceeded}}
			},
			want: false,
		},
		{
			name: "a spec change rolled the template since (the marker removed)",
			change: func(d *appsv1.Deployment) {
				d.Status.UpdatedReplicas = 1
				delete(d.Annotations, appv1.AnnotationConfigRollout)
			},
			want: false,
		},
		{
			name: "an older marker than the template's digest",
			change: func(d *appsv1.Deployment) {
				d.Status.UpdatedReplicas = 1
				d.Spec.Template.Annotations[appv1.AnnotationConfigDigest] = "configmap/app=5678"
			},
			want: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := rolled()
			if tc.change != nil {
				tc.change(d)
			}
			if got := Rolling(d); got != tc.want {
				t.Errorf("Rolling = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestThrottle: the cap holds while writes are not seen yet, the oldest
// waiting are woken as places free, a failed write gives its place back,
// and an AppService that no longer needs a config rollout leaves the
// queue.
func TestThrottle(t *testing.T) {
	rolling := 0
	shown := map[cache.ObjectName]bool{}
	var woken []string
	th := NewThrottle(2, func() int { return rolling },
		func(k cache.ObjectName, _ string) bool { return shown[k] },
		func(k cache.ObjectName) { woken = append(woken, k.Name) })
	now := t0
	th.now = func() time.Time { return now }

	// Two places: a and b go, c and d wait, in their order.
	for i, name := range []string{"a", "b", "c", "d"} {
		got := th.Admit(key(name), "v2", t0.Add(time.Duration(i)*time.Second))
		if want := map[bool]Decision{true: Go, false: Wait}[i < 2]; got != want {
			t.Fatalf("Admit(%s) = %v, want %v", name, got, want)
		}
	}
	if !th.Waiting(key("c")) || !th.Waiting(key("d")) || th.Waiting(key("a")) {
		t.Error("c and d should wait, a not")
	}
	// a's sync again before its write is seen: sent already, not twice,
	// and no new place.
	if got := th.Admit(key("a"), "v2", t0); got != Sent {
		t.Errorf("a rollout admitted and not yet seen, again: %v, want Sent", got)
	}
	// The writes are seen: the Deployments now count them.
	shown[key("a")], shown[key("b")], rolling = true, true, 2
	woken = nil
	if th.Admit(key("d"), "v2", t0.Add(3*time.Second)) != Wait {
		t.Error("d went past the cap")
	}
	// a's rollout finishes: the next sync wakes c, the oldest waiting.
	rolling = 1
	woken = nil
	th.Done(key("a"))
	if !slices.Equal(woken, []string{"c"}) {
		t.Errorf("woken %v, want [c]", woken)
	}
	// d's sync before c's: d is not the oldest, it waits.
	if th.Admit(key("d"), "v2", t0.Add(3*time.Second)) != Wait {
		t.Error("d went before c, which waited longer")
	}
	if th.Admit(key("c"), "v2", t0.Add(2*time.Second)) != Go {
		t.Error("c, the oldest, was refused a free place")
	}
	// c's write fails: its place is given back, and it waits first in line.
	th.Failed(key("c"), t0.Add(2*time.Second))
	if th.Admit(key("d"), "v2", t0.Add(3*time.Second)) != Wait {
		t.Error("d took the place c gave back")
	}
	// c's config was reverted: it leaves the queue, d's turn comes.
	woken = nil
	th.Done(key("c"))
	if !slices.Equal(woken, []string{"d"}) {
		t.Errorf("woken %v, want [d]", woken)
	}
	// A new digest while admitted and not yet seen: admitted again, once.
	if th.Admit(key("d"), "v3", t0.Add(3*time.Second)) != Go || th.Admit(key("d"), "v4", t0.Add(3*time.Second)) != Go {
		t.Error("d, admitted, was refused a newer digest")
	}
	// An admission whose write never shows gives its place back in time.
	rolling = 2
	now = now.Add(admittedFor + time.Second)
	if th.Admit(key("e"), "v2", now) != Wait {
		t.Error("e went past the cap")
	}
	rolling = 1
	if th.Admit(key("e"), "v2", now) != Go {
		t.Error("the place of an admission never seen was not given back")
	}
	if th.Max() != 2 {
		t.Errorf("Max = %d", th.Max())
	}
}

// TestThrottleCacheMovesWhileCounting: the Deployments' cache shows an
// admitted rollout's write in the middle of a count, between one look at
// it and the next. Whichever look comes first, the rollout is counted, and
// the cap holds.
func TestThrottleCacheMovesWhileCounting(t *testing.T) {
	// The cache shows a's write from the second look at it on.
	shown, armed := false, false
	look := func() {
		if armed {
			shown = true
		}
	}
	th := NewThrottle(1,
		func() int {
			defer look()
			if shown {
				return 1
			}
			return 0
		},
		func(k cache.ObjectName, _ string) bool {
			defer look()
			return shown && k == key("a")
		},
		func(cache.ObjectName) {})
	th.now = func() time.Time { return t0 }
	if th.Admit(key("a"), "v2", t0) != Go {
		t.Fatal("a refused the only place")
	}
	armed = true
	if got := th.Admit(key("b"), "v2", t0.Add(time.Second)); got != Wait {
		t.Errorf("b, while a's write shows up mid-count: %v, want Wait (a cap of 1)", got)
	}
	if !shown {
		t.Fatal("the cache never moved: the test did not test the race")
	}
}
