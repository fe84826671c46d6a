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
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/canary"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/notify"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	informers "example.com/appservice-controller/pkg/generated/informers/externalversions/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// Hearing about a release (internal/notify): the sync that makes an edge
// records it in status.notifications, with a Pending delivery for each
// NotificationDestination of the namespace that hears of it, in the same
// status write; once that write is in, the leader's Sender posts what is
// owed, off the sync's path, and wakes the AppService with each result,
// which the next sync records. An AppService no destination hears of has
// no status.notifications, and none of this costs it anything.

// deliveryRecordDelay is how long a delivery's result waits before it
// wakes its AppService's sync to record it: the syncs of a release under
// way record the results they find with their own status writes, and a
// release's deliveries cost few writes of their own. The next edge to the
// same destination does not wait for it: the Sender knows the result.
const deliveryRecordDelay = 2 * time.Second

// notifications are the NotificationDestinations and the Sender.
type notifications struct {
	destinations listers.NotificationDestinationLister
	sender       *notify.Sender
}

// newNotifications reads the destinations from their informer (nothing to
// queue on their changes: an edge goes to those there at the edge) and
// reads their Secrets with a GET at each delivery; wake queues an
// AppService whose delivery has a result.
func newNotifications(kubeClient kubernetes.Interface, destinations informers.NotificationDestinationInformer, cfg notify.Config,
	wake func(cache.ObjectName)) (*notifications, cache.InformerSynced) {
	secrets := func(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
		return kubeClient.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	lister := destinations.Lister()
	return &notifications{destinations: lister, sender: notify.NewSender(cfg, secrets, lister, wake)},
		destinations.Informer().HasSynced
}

// subscribers are the destinations of as's namespace that hear of its edge
// e, by name.
func (n *notifications) subscribers(as *appv1.AppService) (func(appv1.ReleaseEdge) []string, error) {
	all, err := n.destinations.NotificationDestinations(as.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return func(e appv1.ReleaseEdge) []string {
		var names []string
		for _, d := range all {
			if len(d.Spec.Edges) > 0 && !slices.Contains(d.Spec.Edges, e) {
				continue
			}
			if d.Spec.Selector != nil {
				sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
				if err != nil || !sel.Matches(labels.Set(as.Labels)) {
					continue
				}
			}
			names = append(names, d.Name)
		}
		slices.Sort(names)
		return names
	}, nil
}

// recordNotifications is the notifications status this sync records (nil:
// as it is), and the Warning Events of deliveries that fail, added to the
// canary's Events (sent once the status is written). desired is the
// Deployment the spec asks for.
func (s *appSync) recordNotifications(desired *appsv1.Deployment) (*appv1.NotificationsStatus, error) {
	n, key := s.c.notifications, cache.MetaObjectToName(s.as)
	old := s.as.Status.Notifications
	// What the status last written records needs no memory any more.
	n.sender.Settle(key, notify.Pending(old))
	if s.canary.Edge == "" && old == nil {
		return nil, nil
	}
	subscribers, err := n.subscribers(s.as)
	if err != nil {
		return nil, err
	}
	change := notify.Change{Decision: s.canary, Hash: children.TemplateHash(desired), To: image(desired), Now: time.Now(),
		Subscribers: subscribers, Results: n.sender.Results(key)}
	if c := s.as.Spec.Canary; c != nil {
		change.Steps = int32(len(c.Steps))
	}
	if live, found, err := s.c.deployments.Get(desired.Namespace, desired.Name); err == nil && found {
		change.From = image(live)
	}
	st := notify.Record(old, change)
	for _, e := range notify.Failures(old, st) {
		s.canary.Events = append(s.canary.Events, canary.Event{Type: corev1.EventTypeWarning, Reason: e.Reason, Message: e.Message})
	}
	return st, nil
}

// sendNotifications has the Sender post what st, as written, owes.
func (c *Controller) sendNotifications(key cache.ObjectName, st *appv1.NotificationsStatus) {
	if st != nil {
		c.notifications.sender.Send(key, notify.Pending(st))
	}
}

// image is a Deployment's first container's image.
func image(d *appsv1.Deployment) string {
	if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}
