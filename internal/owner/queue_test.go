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

package owner

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The children's events map to their owner's key in the queue of the
// owner's kind: an AppService's children, below, and an Activity's Job.

var testKey = cache.ObjectName{Namespace: fixtures.Namespace, Name: fixtures.Name}

// notLabelledForUs makes a child look like an object that is not the
// seed's: no controller, and the label naming another AppService.
func notLabelledForUs(o metav1.Object) {
	o.SetOwnerReferences(nil)
	o.GetLabels()[appv1.LabelAppService] = "another-app"
}

// queuedBy returns the keys that handle adds to a queue, in order.
func queuedBy(handle func(ChildEvents)) []cache.ObjectName {
	queue := workqueue.NewTyped[cache.ObjectName]()
	defer queue.ShutDown()
	handle(ChildEvents{Kind: appServiceKind, Queue: queue})
	var got []cache.ObjectName
	for queue.Len() > 0 {
		key, _ := queue.Get()
		queue.Done(key)
		got = append(got, key)
	}
	return got
}

func TestHandleChild(t *testing.T) {
	controlledBy := func(apiVersion, kind string, controller bool) *appsv1.Deployment {
		d := fixtures.LiveDeployment()
		d.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: apiVersion, Kind: kind, Name: fixtures.Name, UID: fixtures.UID, Controller: &controller,
		}}
		return d
	}
	renamedService := fixtures.LiveService()
	renamedService.Name = "renamed"
	unowned := fixtures.LiveService()
	unowned.OwnerReferences = nil
	relabelled := fixtures.LiveService()
	notLabelledForUs(relabelled)
	unlabelled := fixtures.LiveService()
	unlabelled.OwnerReferences = nil
	unlabelled.Labels = nil

	tests := []struct {
		name string
		obj  interface{}
		want []cache.ObjectName
	}{
		{"Deployment", fixtures.LiveDeployment(), []cache.ObjectName{testKey}},
		{"Service", fixtures.LiveService(), []cache.ObjectName{testKey}},
		{"the owner's name, not the child's", renamedService, []cache.ObjectName{testKey}},
		{"another version of the AppService API", controlledBy("app.example.com/v2", "AppService", true), []cache.ObjectName{testKey}},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "default/nginx-app", Obj: fixtures.LiveDeployment()}, []cache.ObjectName{testKey}},
		{"no owner, labelled: the AppService that may adopt it", unowned, []cache.ObjectName{testKey}},
		{"no owner, labelled for another AppService", relabelled, []cache.ObjectName{{Namespace: fixtures.Namespace, Name: "another-app"}}},
		{"owner but not controller, labelled", controlledBy("app.example.com/v1", "AppService", false), []cache.ObjectName{testKey}},
		{"controlled by a ReplicaSet", controlledBy("apps/v1", "ReplicaSet", true), nil},
		{"controlled by another group's AppService", controlledBy("other.example.com/v1", "AppService", true), nil},
		{"controlled by an Activity", controlledBy("app.example.com/v1", "Activity", true), nil},
		{"tombstone without owner", cache.DeletedFinalStateUnknown{Key: "default/nginx-app", Obj: unowned}, []cache.ObjectName{testKey}},
		{"no owner, no label", unlabelled, nil},
		{"not an object", "default/nginx-app", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := queuedBy(func(e ChildEvents) { e.changed(tc.obj) })
			fixtures.CheckEqual(t, "queued", tc.want, got)
		})
	}
}

func TestHandleChildUpdate(t *testing.T) {
	newer := fixtures.LiveDeployment()
	newer.ResourceVersion = "101"
	released := newer.DeepCopy()
	notLabelledForUs(released)
	tests := []struct {
		name     string
		old, new *appsv1.Deployment
		want     []cache.ObjectName
	}{
		{"resync, same resourceVersion", fixtures.LiveDeployment(), fixtures.LiveDeployment(), nil},
		{"changed", fixtures.LiveDeployment(), newer, []cache.ObjectName{testKey}},
		{"relabelled for another AppService and released: both queued", fixtures.LiveDeployment(), released, []cache.ObjectName{{Namespace: fixtures.Namespace, Name: "another-app"}, testKey}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := queuedBy(func(e ChildEvents) { e.updated(tc.old, tc.new) })
			fixtures.CheckEqual(t, "queued", tc.want, got)
		})
	}
}

// TestActivityJobEvents: a Job queues the Activity that controls it, or
// the one its label names; the AppServices' events ignore it, and the
// Activities' ignore an AppService's child.
func TestActivityJobEvents(t *testing.T) {
	actKey := cache.ObjectName{Namespace: fixtures.Namespace, Name: fixtures.ActivityName}
	job := children.NewJob(fixtures.Activity())
	orphan := job.DeepCopy()
	orphan.OwnerReferences = nil
	foreign := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fixtures.ActivityName, Namespace: fixtures.Namespace}}
	for _, tc := range []struct {
		name string
		kind Kind
		obj  any
		want []cache.ObjectName
	}{
		{"the Activity's Job", activityKind, job, []cache.ObjectName{actKey}},
		{"an orphan labelled for it", activityKind, orphan, []cache.ObjectName{actKey}},
		{"someone's Job of the name", activityKind, foreign, nil},
		{"an AppService's child", activityKind, fixtures.LiveDeployment(), nil},
		{"the Job, to the AppServices", appServiceKind, job, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := queuedBy(func(e ChildEvents) { e.Kind = tc.kind; e.changed(tc.obj) })
			fixtures.CheckEqual(t, "queued", tc.want, got)
		})
	}
}
