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

// Package configrollout caps how many AppServices roll their Pods at once
// because a ConfigMap or Secret they read changed (rolloutOnConfigChange):
// one edit of a config many apps read (a CA bundle, a shared flags file)
// must not restart all of them together. Spec changes are never held: the
// user asked for those.
//
// It is level-triggered. What counts against the cap is read from the
// Deployments (Rolling: a rollout a config change started, not finished),
// so that a restarted controller keeps it; the AppServices waiting their
// turn give the time they began waiting in their status, so that the
// oldest still go first after a restart. What it keeps in memory between
// the two is only what the caches cannot show yet: the rollouts admitted
// whose write the Deployments' watch has not brought back.
//
// The decision itself is pure (Admit, Next), tested by tables; Throttle
// holds the state around it for the controller's workers.
//
// Of this repository it may import only the API's types (pkg/apis/app/v1).
package configrollout

import (
	"cmp"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Waiting is an AppService whose config changed, waiting to roll: since
// when, and its key (ties go by key, so that every worker sees one order).
type Waiting struct {
	Key   cache.ObjectName
	Since time.Time
}

// oldestFirst orders the waiting AppServices: the longest waiting first.
func oldestFirst(a, b Waiting) int {
	if c := a.Since.Compare(b.Since); c != 0 {
		return c
	}
	return cmp.Compare(a.Key.String(), b.Key.String())
}

// Admit reports whether the AppService key, one of the waiting ones, may
// start its config rollout now: max is the cap (0: none), inProgress the
// config rollouts already under way. The oldest waiting go first, as many
// as there are free places.
func Admit(maxRollouts, inProgress int, waiting []Waiting, key cache.ObjectName) bool {
	if maxRollouts <= 0 {
		return true
	}
	for _, w := range Next(maxRollouts, inProgress, waiting) {
		if w == key {
			return true
		}
	}
	return false
}

// Next returns the waiting AppServices that may start now, oldest first:
// as many as there are free places under the cap (every one when there is
// no cap).
func Next(maxRollouts, inProgress int, waiting []Waiting) []cache.ObjectName {
	sorted := slices.SortedFunc(slices.Values(waiting), oldestFirst)
	free := len(sorted)
	if maxRollouts > 0 {
		free = min(max(maxRollouts-inProgress, 0), len(sorted))
	}
	out := make([]cache.ObjectName, free)
	for i := range free {
		out[i] = sorted[i].Key
	}
	return out
}

// Rolling reports whether a Deployment is mid-way through a rollout that
// a config change started: the controller marked it so
// (appv1.AnnotationConfigRollout, the digest it rolled to) and its
// template still carries that digest, and the Deployment has not finished
// rolling it out, as kstatus judges a Deployment. One past its progress
// deadline has finished, failing: it no longer holds a place.
func Rolling(d *appsv1.Deployment) bool {
	marker := d.Annotations[appv1.AnnotationConfigRollout]
	if marker == "" || marker != d.Spec.Template.Annotations[appv1.AnnotationConfigDigest] {
		return false
	}
	if d.Status.ObservedGeneration < d.Generation {
		return true
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == appv1.ReasonProgressDeadlineExceeded {
			return false
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	return st.UpdatedReplicas < want || st.Replicas > want || st.AvailableReplicas < want
}

// Mark records on a Deployment whose Pod template a sync changes why it
// changes: updated is live with the owned fields brought in line (nil:
// nothing changes). A template rolled to the config digest admitted (a
// config change alone calls for it) is marked with that digest; a template
// that changes otherwise (the spec) is not, so that its rollout does not
// count against the cap. A Deployment whose template stays keeps its mark.
func Mark(live, updated *appsv1.Deployment, admitted string) {
	if updated == nil || equality.Semantic.DeepEqual(updated.Spec.Template, live.Spec.Template) {
		return
	}
	mark := ""
	if admitted != "" && updated.Spec.Template.Annotations[appv1.AnnotationConfigDigest] == admitted {
		mark = admitted
	}
	switch {
	case mark != "":
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[appv1.AnnotationConfigRollout] = mark
	case updated.Annotations[appv1.AnnotationConfigRollout] != "":
		delete(updated.Annotations, appv1.AnnotationConfigRollout)
		if len(updated.Annotations) == 0 {
			updated.Annotations = nil
		}
	}
}

// admittedFor is how long an admitted rollout holds its place before the
// Deployments show it (normally a moment: its write's watch event). A
// write that never shows, the controller noticing too late, gives its
// place back then.
const admittedFor = 2 * time.Minute

// Throttle is the controller-wide cap on config rollouts, shared by the
// workers.
type Throttle struct {
	max int
	// rolling counts the Deployments that are Rolling (an index of their
	// informer).
	rolling func() int
	// shows reports whether the Deployments' cache shows the AppService's
	// Deployment marked for digest.
	shows func(key cache.ObjectName, digest string) bool
	// wake queues an AppService whose turn has come.
	wake func(cache.ObjectName)
	now  func() time.Time

	mu      sync.Mutex
	waiting map[cache.ObjectName]time.Time
	// admitted are rollouts admitted whose write the cache has not shown
	// yet: the digest, and when.
	admitted map[cache.ObjectName]admission
}

type admission struct {
	digest string
	at     time.Time
}

// NewThrottle returns a throttle of max config rollouts at once (0: no
// cap). rolling, shows and wake read the caches and queue AppServices;
// none may block or call the API.
func NewThrottle(maxRollouts int, rolling func() int, shows func(cache.ObjectName, string) bool, wake func(cache.ObjectName)) *Throttle {
	return &Throttle{
		max: maxRollouts, rolling: rolling, shows: shows, wake: wake, now: time.Now,
		waiting: map[cache.ObjectName]time.Time{}, admitted: map[cache.ObjectName]admission{},
	}
}

// Max is the cap (0: none).
func (t *Throttle) Max() int { return t.max }

// Decision is what the throttle decides of one AppService's rollout.
type Decision int

const (
	// Wait: the rollout waits its turn.
	Wait Decision = iota
	// Go: the rollout may start now; write the template.
	Go
	// Sent: an earlier sync started this rollout, and the Deployments'
	// cache does not show its write yet. Write nothing (the cache is
	// behind): the write's own watch event syncs the AppService again.
	Sent
)

// Admit decides whether the AppService key may roll its Pods to the config
// digest now, waiting since since (when it was first queued, from its
// status; or now). Admitted (Go), it holds a place until its Deployment
// shows the rollout or its write fails (Failed). Not admitted (Wait), it
// waits its turn: the syncs of others wake it when it comes.
func (t *Throttle) Admit(key cache.ObjectName, digest string, since time.Time) Decision {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.admitted[key]; ok && a.digest == digest {
		return Sent
	}
	delete(t.admitted, key)
	if old, ok := t.waiting[key]; !ok || since.Before(old) {
		t.waiting[key] = since
	}
	inProgress := t.inProgressLocked()
	if !Admit(t.max, inProgress, t.queueLocked(), key) {
		t.wakeLocked(inProgress)
		return Wait
	}
	delete(t.waiting, key)
	t.admitted[key] = admission{digest: digest, at: t.now()}
	t.wakeLocked(inProgress + 1)
	return Go
}

// Done says that the AppService key needs no config rollout held: none is
// due, or its template changes for its spec anyway, or it is gone. Its
// place in the queue, if any, goes to the next; and as every sync of an
// AppService ends here or in Admit, so do the places of rollouts that
// finished meanwhile.
func (t *Throttle) Done(key cache.ObjectName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.waiting) == 0 && len(t.admitted) == 0 {
		return // nobody waits: the common case, without a count
	}
	delete(t.waiting, key)
	delete(t.admitted, key)
	t.wakeLocked(t.inProgressLocked())
}

// Failed gives back the place of an admitted rollout (Go) whose write failed;
// the AppService waits again, with its old place in the queue.
func (t *Throttle) Failed(key cache.ObjectName, since time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.admitted, key)
	t.waiting[key] = since
}

// Waiting reports whether the AppService key waits its turn.
func (t *Throttle) Waiting(key cache.ObjectName) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.waiting[key]
	return ok
}

// inProgressLocked counts the config rollouts under way: those the
// Deployments show, and those admitted that they do not show yet.
//
// The Deployments' cache moves on while it counts, so the order matters.
// The admissions it shows are dropped first, and the Deployments counted
// after: a write that shows up in between is then counted twice (a place
// held a moment too long), never missed (a place given twice). Counted
// the other way round, a write shown between the count and the check was
// in neither, and the cap let one more through.
func (t *Throttle) inProgressLocked() int {
	for key, a := range t.admitted {
		if t.shows(key, a.digest) || t.now().Sub(a.at) > admittedFor {
			delete(t.admitted, key)
		}
	}
	return t.rolling() + len(t.admitted)
}

func (t *Throttle) queueLocked() []Waiting {
	q := make([]Waiting, 0, len(t.waiting))
	for key, since := range t.waiting {
		q = append(q, Waiting{Key: key, Since: since})
	}
	return q
}

// wakeLocked queues the waiting AppServices whose turn has come.
func (t *Throttle) wakeLocked(inProgress int) {
	if len(t.waiting) == 0 {
		return
	}
	for _, key := range Next(t.max, inProgress, t.queueLocked()) {
		t.wake(key)
	}
}
