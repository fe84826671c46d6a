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
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// NotifyRun: N AppServices release at once (a canary of two steps by
// route, no pauses), without a NotificationDestination (Mode "without") or
// with one that hears of every edge, posted to a receiver that answers
// each post after ReceiverDelaySeconds (Mode "with", issue 71): how long
// the releases take, and, with, how long until every edge is delivered.
type NotifyRun struct {
	Mode                 string  `json:"mode"`
	N                    int     `json:"n"`
	ReceiverDelaySeconds float64 `json:"receiverDelaySeconds,omitempty"`
	// PromotedSeconds: from the image changes until every canary is
	// promoted.
	PromotedSeconds float64 `json:"promotedSeconds"`
	// DeliveredSeconds: from the image changes until every status records
	// each of its edges delivered; Posts the posts the receiver answered,
	// MostInFlight the most it held at once.
	DeliveredSeconds float64 `json:"deliveredSeconds,omitempty"`
	Posts            int64   `json:"posts,omitempty"`
	MostInFlight     int64   `json:"mostInFlight,omitempty"`
}

// measureNotifications runs n releases without notifications, then with a
// receiver that takes delay to answer (see NotifyRun), each on a cluster
// of its own.
func measureNotifications(o options, n int, delay time.Duration) ([]NotifyRun, error) {
	var runs []NotifyRun
	for _, mode := range []string{"without", "with"} {
		logf("notifications: %d releases, %s a destination", n, mode)
		run, err := measureNotifyRun(o, mode, n, delay)
		if err != nil {
			return runs, fmt.Errorf("%s: %w", mode, err)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// slowReceiver answers every post 200 after delay, counting them.
type slowReceiver struct {
	*httptest.Server
	posts, inFlight, most atomic.Int64
}

func newSlowReceiver(delay time.Duration) *slowReceiver {
	r := &slowReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		now := r.inFlight.Add(1)
		defer r.inFlight.Add(-1)
		for m := r.most.Load(); now > m && !r.most.CompareAndSwap(m, now); m = r.most.Load() {
		}
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
		}
		r.posts.Add(1)
	}))
	return r
}

func measureNotifyRun(o options, mode string, n int, delay time.Duration) (NotifyRun, error) {
	res := NotifyRun{Mode: mode, N: n}
	e, closeAll, err := startRouted(o, "notify-"+mode)
	if err != nil {
		return res, err
	}
	defer closeAll()
	ctx := context.Background()
	var rcv *slowReceiver
	if mode == "with" {
		rcv = newSlowReceiver(delay)
		defer rcv.Close()
		res.ReceiverDelaySeconds = delay.Seconds()
		const hook = "hook" // the destination, and its Secret
		if _, err := e.kube.CoreV1().Secrets(benchNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: hook},
			StringData: map[string]string{appv1.SecretKeyAddress: rcv.URL, appv1.SecretKeySigningKey: "bench"}}, metav1.CreateOptions{}); err != nil {
			return res, err
		}
		if _, err := e.apps.AppV1().NotificationDestinations(benchNamespace).Create(ctx, &appv1.NotificationDestination{
			ObjectMeta: metav1.ObjectMeta{Name: hook},
			Spec:       appv1.NotificationDestinationSpec{Type: appv1.DestinationWebhook, SecretRef: appv1.SecretReference{Name: hook}},
		}, metav1.CreateOptions{}); err != nil {
			return res, err
		}
	}
	routes, err := watchRoutes(e)
	if err != nil {
		return res, err
	}
	defer routes.close()
	name := func(i int) string { return fmt.Sprintf("app-%05d", i) }
	if err := createCanaried(ctx, e, n, name, &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 50}, {Weight: 100}}}, routes, true); err != nil {
		return res, err
	}
	start := time.Now()
	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Patch(ctx, name(i), types.MergePatchType,
			[]byte(`{"spec":{"image":"nginx:1.28"}}`), metav1.PatchOptions{})
		return err
	}); err != nil {
		return res, err
	}
	if err := poll("the canaries promoted", canariesDone(ctx, e, n, routes, true)); err != nil {
		return res, err
	}
	res.PromotedSeconds = time.Since(start).Seconds()
	if rcv == nil {
		return res, nil
	}
	// Started, two steps and Promoted: four edges each.
	if err := poll("every edge delivered", func() (bool, error) {
		list, err := e.apps.AppV1().AppServices(benchNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		delivered := 0
		for _, as := range list.Items {
			if st := as.Status.Notifications; st != nil {
				for _, edge := range st.Edges {
					for _, d := range edge.Deliveries {
						if d.Result == appv1.DeliveryFailed {
							return false, fmt.Errorf("%s: %s given up: %s", as.Name, edge.ID, d.Message)
						}
						if d.Result == appv1.DeliveryDelivered {
							delivered++
						}
					}
				}
			}
		}
		return delivered == 4*n, nil
	}); err != nil {
		return res, err
	}
	res.DeliveredSeconds = time.Since(start).Seconds()
	res.Posts, res.MostInFlight = rcv.posts.Load(), rcv.most.Load()
	return res, nil
}

// notifyMarkdown is the row of the notification runs.
func notifyMarkdown(runs []NotifyRun) string {
	if len(runs) != 2 {
		return ""
	}
	without, with := runs[0], runs[1]
	return fmt.Sprintf("| %d AppServices release at once (a canary of 2 steps by route): until every one is promoted, without a "+
		"NotificationDestination vs with one hearing of every edge, posted to a receiver that answers after %.0f s; with: until every "+
		"edge is delivered (posts; most at once) | %.1f s vs %.1f s (%.2f×); %.1f s (%d; %d) |\n",
		with.N, with.ReceiverDelaySeconds, without.PromotedSeconds, with.PromotedSeconds, with.PromotedSeconds/without.PromotedSeconds,
		with.DeliveredSeconds, with.Posts, with.MostInFlight)
}
