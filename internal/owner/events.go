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
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// ChangeLog collects what one sync wrote. It becomes one Normal Event per
// kind of change, naming every child it touched, rather than one per child:
// a new AppService costs one Event write, not two. (The Warning Event of a
// failed sync goes with the owner's status: each kind's updateStatus.)
type ChangeLog struct {
	created, updated, deleted, adopted, released []string
}

// Record emits the Events, in the order a sync makes the changes: claims
// first, then writes. Each message starts with its reason, a past-tense
// verb: "Created Deployment web, Service web".
func (l *ChangeLog) Record(recorder record.EventRecorder, owner runtime.Object) {
	for _, e := range []struct {
		reason, sep string
		children    []string
	}{
		{appv1.ReasonAdopted, ", ", l.adopted},
		{appv1.ReasonReleased, "; ", l.released},
		{appv1.ReasonCreated, ", ", l.created},
		{appv1.ReasonUpdated, "; ", l.updated},
		{appv1.ReasonDeleted, "; ", l.deleted},
	} {
		if len(e.children) > 0 {
			recorder.Event(owner, corev1.EventTypeNormal, e.reason, e.reason+" "+strings.Join(e.children, e.sep))
		}
	}
}
