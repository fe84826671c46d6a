//go:build e2e

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

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/localcluster"
	"example.com/appservice-controller/internal/notify"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Hearing about a release (NotificationDestination, internal/notify), end
// to end: a webhook receiver in the test process, which the controller (a
// process on this machine) reaches on the loopback address, records every
// post and checks its signature; the tests assert from what it recorded
// and from the AppService's watched versions.

// hookReceiver is a webhook destination. Its mode says how it answers:
// "ok" (200), "500", "down" (the connection closed once the request is
// read, as a receiver that crashes) or "hold" (no answer, until the mode
// changes or the test ends).
type hookReceiver struct {
	url string
	key []byte

	mu      sync.Mutex
	mode    string
	posts   []hookPost
	changed chan struct{} // closed and replaced at each post and mode change
}

// hookPost is a post the receiver read.
type hookPost struct {
	at       time.Time
	id, typ  string
	data     notify.Data
	accepted bool // answered 2xx
	// bad says what is wrong with it: its signature, its CloudEvent.
	bad string
}

// name is the post's edge and step, as "Step 2".
func (p hookPost) name() string {
	if p.data.Step == nil {
		return p.data.Edge
	}
	return fmt.Sprintf("%s %d", p.data.Edge, *p.data.Step)
}

func newHookReceiver(t *testing.T, mode string) *hookReceiver {
	t.Helper()
	r := &hookReceiver{key: []byte("s3cret-" + t.Name()), mode: mode, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.setMode("ok") // no held request outlives the test
		srv.Close()
	})
	r.url = srv.URL + "/hooks/T0KEN-" + strings.ReplaceAll(t.Name(), "/", "-")
	return r
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	p := hookPost{at: time.Now()}
	var e cloudevents.Event
	switch err := json.Unmarshal(body, &e); {
	case req.Header.Get("Content-Type") != "application/cloudevents+json; charset=utf-8":
		p.bad = "content type " + req.Header.Get("Content-Type")
	case err != nil:
		p.bad = "not a CloudEvent: " + err.Error()
	default:
		p.id, p.typ = e.ID(), e.Type()
		if err := e.DataAs(&p.data); err != nil {
			p.bad = "its data: " + err.Error()
		}
	}
	if err := notify.Verify(r.key, req.Header.Get(notify.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
		p.bad = "its signature: " + err.Error()
	}
	r.mu.Lock()
	mode, changed := r.mode, r.changed
	p.accepted = mode == "ok"
	r.posts = append(r.posts, p)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	close(changed)
	for mode == "hold" {
		select {
		case <-changed:
		case <-req.Context().Done():
			return
		}
		r.mu.Lock()
		if r.mode != "hold" {
			mode = "down" // never answered
		}
		changed = r.changed
		r.mu.Unlock()
	}
	switch mode {
	case "500":
		w.WriteHeader(http.StatusInternalServerError)
	case "down":
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}

func (r *hookReceiver) setMode(mode string) {
	r.mu.Lock()
	r.mode = mode
	changed := r.changed
	r.changed = make(chan struct{})
	r.mu.Unlock()
	close(changed)
}

// wait waits until check passes on the posts so far, woken by each post.
func (r *hookReceiver) wait(t *testing.T, timeout time.Duration, check func([]hookPost) error) []hookPost {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		posts, changed := slices.Clone(r.posts), r.changed
		r.mu.Unlock()
		err := check(posts)
		if err == nil {
			return posts
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("after %s: %v\nposts: %s", timeout, err, postsString(posts))
		}
	}
}

func postsString(posts []hookPost) string {
	var b strings.Builder
	for _, p := range posts {
		fmt.Fprintf(&b, "\n  %s %s %s accepted=%v %s", p.at.Format("15:04:05.000"), p.id, p.name(), p.accepted, p.bad)
	}
	return b.String()
}

// acceptedNames are the accepted posts' edges, in order.
func acceptedNames(posts []hookPost) []string {
	var names []string
	for _, p := range posts {
		if p.accepted {
			names = append(names, p.name())
		}
	}
	return names
}

// waitAccepted waits until the accepted posts are want, in order, and
// checks what every post must be: signed, a CloudEvent whose id and type
// name its edge, for ns/name, and each id accepted once.
func (r *hookReceiver) waitAccepted(t *testing.T, timeout time.Duration, ns, name string, want ...string) []hookPost {
	t.Helper()
	posts := r.wait(t, timeout, func(posts []hookPost) error {
		if got := acceptedNames(posts); !slices.Equal(got, want) {
			if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) {
				t.Fatalf("accepted %q, want %q", got, want)
			}
			return fmt.Errorf("accepted %q, want %q", got, want)
		}
		return nil
	})
	ids := map[string]bool{}
	for _, p := range posts {
		if p.bad != "" {
			t.Errorf("post %s: %s", p.id, p.bad)
		}
		if p.data.Namespace != ns || p.data.AppService != name || p.typ != notify.EventTypePrefix+strings.ToLower(p.data.Edge) ||
			!strings.HasPrefix(p.id, p.data.Release+".") {
			t.Errorf("post %s (%s): data %+v", p.id, p.typ, p.data)
		}
		if p.accepted && ids[p.id] {
			t.Errorf("%s accepted twice:%s", p.id, postsString(posts))
		}
		ids[p.id] = ids[p.id] || p.accepted
	}
	return posts
}

// createDestination creates the webhook NotificationDestination "ops" that
// posts to r (its Secret, named secret, too, unless r is nil).
func createDestination(t *testing.T, ns, secret string, r *hookReceiver) {
	t.Helper()
	ctx := context.Background()
	if r != nil {
		createHookSecret(t, ns, secret, r)
	}
	d := &appv1.NotificationDestination{ObjectMeta: metav1.ObjectMeta{Name: "ops"},
		Spec: appv1.NotificationDestinationSpec{Type: appv1.DestinationWebhook, SecretRef: appv1.SecretReference{Name: secret}}}
	if _, err := apps.AppV1().NotificationDestinations(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createHookSecret(t *testing.T, ns, name string, r *hookReceiver) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
		StringData: map[string]string{appv1.SecretKeyAddress: r.url, appv1.SecretKeySigningKey: string(r.key)}}
	if _, err := kube.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deliveries are a version's deliveries, as "ID→DESTINATION=RESULT".
func deliveries(as *appv1.AppService) []string {
	var out []string
	if st := as.Status.Notifications; st != nil {
		for _, e := range st.Edges {
			for _, d := range e.Deliveries {
				out = append(out, fmt.Sprintf("%s→%s=%s", e.ID, d.Destination, d.Result))
			}
		}
	}
	return out
}

// checkNoAddress fails if the address, or its token, shows in any version
// of the AppService's status its watch recorded, in its Events or in the
// controller's log.
func checkNoAddress(t *testing.T, ns string, rec *canaryRecord, r *hookReceiver) {
	t.Helper()
	var b []byte
	for _, v := range rec.app.snapshot() {
		st, _ := json.Marshal(v.obj.Status)
		b = append(b, st...)
	}
	list, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		b = append(b, e.Message...)
	}
	if strings.Contains(string(b), "T0KEN") || strings.Contains(string(b), r.url) {
		t.Errorf("the address shows in the status or an Event: %s", b)
	}
	if ctrl.LogContains("T0KEN") {
		t.Error("the address shows in the controller's log")
	}
}

// threeStepsGated is an AppService of 2 Pods with a canary by Pods of three
// steps, the second with a gate.
func threeStepsGated() appv1.AppServiceSpec {
	return podsSpec(2, appv1.CanaryStep{Weight: 25}, appv1.CanaryStep{Weight: 50, Gate: true}, appv1.CanaryStep{Weight: 100})
}

var threeStepsEdges = []string{"Started 1", "Step 1", "Step 2", "Gated 2", "Step 3", "Promoted 3"}

// twoSteps is an AppService of 2 Pods with a canary by Pods of two steps.
func twoSteps() appv1.AppServiceSpec {
	return podsSpec(2, appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100})
}

// startRelease creates the AppService ns/name of spec, waits until its 2 Pods
// are available, then gives it nginx:1.28: a release, recorded from its
// start.
func startRelease(t *testing.T, ns, name string, spec appv1.AppServiceSpec) *canaryRecord {
	t.Helper()
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 2)
	rec := recordCanary(t, ns, name)
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	return rec
}

func TestNotifications(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	t.Run("each edge once, in order, signed", func(t *testing.T) { t.Parallel(); testNotifyEdges(t) })
	t.Run("receiver down", func(t *testing.T) { t.Parallel(); testNotifyReceiverDown(t) })
	t.Run("secret missing", func(t *testing.T) { t.Parallel(); testNotifySecretMissing(t) })
	t.Run("aborted by hand, rolled back, chosen", func(t *testing.T) { t.Parallel(); testNotifyChosen(t) })
}

// testNotifyEdges: each edge of a three-step canary with a gate arrives
// once, in order, signed; the gate, waited at across syncs, once; the
// status records each delivery, and nothing says the address.
func testNotifyEdges(t *testing.T) {
	ns := newNamespace(t)
	const name = "heard"
	rcv := newHookReceiver(t, "ok")
	createDestination(t, ns, "ops-hook", rcv)
	rec := startRelease(t, ns, name, threeStepsGated())

	rec.waitAtGate(t, 1)
	rcv.waitAccepted(t, time.Minute, ns, name, threeStepsEdges[:4]...)
	waitSyncs(t, ns, name) // the gate waits on, across syncs: not sent again
	p := &plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}
	p.expect(0, "", "", "promote", name)
	waitCanaryDone(t, ns, name)
	posts := rcv.waitAccepted(t, time.Minute, ns, name, threeStepsEdges...)
	for _, p := range posts {
		if p.data.From != "nginx:1.27" || p.data.To != "nginx:1.28" || p.data.Release != posts[0].data.Release || p.data.Steps != 3 {
			t.Errorf("post %s: from %q to %q, release %q of %d steps; want nginx:1.27 to nginx:1.28, one release, 3 steps",
				p.id, p.data.From, p.data.To, p.data.Release, p.data.Steps)
		}
	}
	if w := posts[2].data.Weight; w != 50 {
		t.Errorf("step 2's weight %d, want 50", w)
	}
	if w := posts[len(posts)-1].data.Weight; w != 100 {
		t.Errorf("the promotion's weight %d, want 100", w)
	}
	// Recorded: each delivery Delivered, at the first attempt.
	vs := rec.app.wait(t, time.Minute, func(vs []version[*appv1.AppService]) error {
		got := deliveries(vs[len(vs)-1].obj)
		if len(got) != len(threeStepsEdges) {
			return fmt.Errorf("deliveries %v, want %d", got, len(threeStepsEdges))
		}
		for _, d := range got {
			if !strings.HasSuffix(d, "→ops=Delivered") {
				return fmt.Errorf("deliveries %v, want all delivered", got)
			}
		}
		return nil
	})
	for _, e := range vs[len(vs)-1].obj.Status.Notifications.Edges {
		if e.Deliveries[0].Attempts != 1 {
			t.Errorf("%s: %d attempts, want 1", e.ID, e.Deliveries[0].Attempts)
		}
	}
	checkNoAddress(t, ns, rec, rcv)
	// All recorded, the steady state writes nothing, across syncs and a
	// resync, and posts nothing more. (The release's own Events may still
	// trail it under load, as client-go's broadcaster sends them one at a
	// time: they are not counted; TestNoWritesInSteadyState counts them.)
	since, posted := time.Now(), len(rcv.wait(t, time.Second, func([]hookPost) error { return nil }))
	waitSyncs(t, ns, name)
	var writes []localcluster.AuditEvent
	for _, w := range controllerWrites(t, since, ns) {
		if w.ObjectRef == nil || w.ObjectRef.Resource != "events" {
			writes = append(writes, w)
		}
	}
	if len(writes) != 0 {
		t.Errorf("%d writes in the steady state after the deliveries: %s", len(writes), summarize(writes))
	}
	if n := len(rcv.wait(t, time.Second, func([]hookPost) error { return nil })); n != posted {
		t.Errorf("%d posts in the steady state, want none", n-posted)
	}
}

// testNotifyReceiverDown: with the receiver down for 30 s from the
// release's start, the release goes on as without it, and afterwards every
// edge is delivered, in order, the first with the id it was tried with.
func testNotifyReceiverDown(t *testing.T) {
	ns := newNamespace(t)
	const name = "unheard"
	rcv := newHookReceiver(t, "down")
	createDestination(t, ns, "ops-hook", rcv)
	startRelease(t, ns, name, twoSteps())
	down := time.Now() // the release's start: down for 30 s from it
	waitCanaryDone(t, ns, name)
	tried := rcv.wait(t, time.Minute, func(posts []hookPost) error {
		if len(posts) == 0 {
			return fmt.Errorf("no post yet")
		}
		return nil
	})
	select {
	case <-time.After(time.Until(down.Add(30 * time.Second))):
	case <-t.Context().Done():
	}
	rcv.setMode("ok")
	posts := rcv.waitAccepted(t, 2*time.Minute, ns, name, "Started 1", "Step 1", "Step 2", "Promoted 2")
	if first := posts[slices.IndexFunc(posts, func(p hookPost) bool { return p.accepted })]; first.id != tried[0].id {
		t.Errorf("delivered %s after the outage, tried %s during it: want one id", first.id, tried[0].id)
	}
	for _, p := range posts {
		if !p.accepted && p.id != tried[0].id {
			t.Errorf("during the outage, %s was tried while the first edge was owed: out of order", p.id)
		}
	}
}

// testNotifySecretMissing: a destination whose Secret is missing at run
// time says so at once (a Warning Event, the delivery's message), and the
// release goes on; once the Secret is there, the edges are delivered.
func testNotifySecretMissing(t *testing.T) {
	ns := newNamespace(t)
	const name = "secretless"
	rcv := newHookReceiver(t, "ok")
	createDestination(t, ns, "absent", nil)
	rec := startRelease(t, ns, name, twoSteps())
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonNotificationBlocked,
		"waits to be delivered to NotificationDestination ops: Secret absent (spec.secretRef of NotificationDestination ops) not found")
	waitCanaryDone(t, ns, name)
	rec.app.wait(t, time.Minute, func(vs []version[*appv1.AppService]) error {
		st := vs[len(vs)-1].obj.Status.Notifications
		if st == nil || len(st.Edges) == 0 || st.Edges[0].Deliveries[0].Result != appv1.DeliveryPending ||
			!strings.Contains(st.Edges[0].Deliveries[0].Message, "Secret absent") {
			return fmt.Errorf("status.notifications %+v, want the first delivery owed, saying the Secret is missing", st)
		}
		return nil
	})
	createHookSecret(t, ns, "absent", rcv)
	rcv.waitAccepted(t, 2*time.Minute, ns, name, "Started 1", "Step 1", "Step 2", "Promoted 2")
}

// testNotifyChosen: a destination that hears of Aborted and RolledBack,
// for the AppServices labelled team=shop: an abort by hand and a rollback
// reach it (the edges the anchors' users found missing), a promotion does
// not, and an AppService without the label releases unheard.
func testNotifyChosen(t *testing.T) {
	ns := newNamespace(t)
	const name, other = "chosen", "unchosen"
	rcv := newHookReceiver(t, "ok")
	createHookSecret(t, ns, "ops-hook", rcv)
	d := &appv1.NotificationDestination{ObjectMeta: metav1.ObjectMeta{Name: "ops"}, Spec: appv1.NotificationDestinationSpec{
		Type: appv1.DestinationWebhook, SecretRef: appv1.SecretReference{Name: "ops-hook"},
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}},
		Edges:    []appv1.ReleaseEdge{appv1.EdgeAborted, appv1.EdgeRolledBack},
	}}
	if _, err := apps.AppV1().NotificationDestinations(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec := podsSpec(2, appv1.CanaryStep{Weight: 25, Gate: true}, appv1.CanaryStep{Weight: 100})
	spec.Canary.RollbackWindow = 2
	createAppService(t, ns, name, spec)
	updateAppService(t, ns, name, func(a *appv1.AppService) { a.Labels = map[string]string{"team": "shop"} })
	createAppService(t, ns, other, twoSteps())
	waitAvailable(t, ns, name, 2)
	waitAvailable(t, ns, other, 2)
	rec := recordCanary(t, ns, name)
	for _, n := range []string{name, other} {
		updateAppService(t, ns, n, func(a *appv1.AppService) { a.Spec.Image = "nginx:1.28" })
	}
	p := &plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}
	rec.waitAtGate(t, 0)
	p.expect(0, "", "", "abort", name)
	rcv.waitAccepted(t, time.Minute, ns, name, "Aborted 1")
	p.expect(0, "", "", "retry", name)
	rec.waitAtGate(t, 0)
	p.expect(0, "", "", "promote", name)
	waitCanaryDone(t, ns, name)
	updateAppService(t, ns, name, func(a *appv1.AppService) { a.Spec.Image = "nginx:1.27" })
	waitEvent(t, ns, name, corev1.EventTypeNormal, appv1.ReasonCanaryRolledBack, "Rolled back to")
	posts := rcv.waitAccepted(t, time.Minute, ns, name, "Aborted 1", "RolledBack")
	if rb := posts[len(posts)-1].data; rb.From != "nginx:1.28" || rb.To != "nginx:1.27" {
		t.Errorf("the rollback's images: from %q to %q, want nginx:1.28 to nginx:1.27", rb.From, rb.To)
	}
	if !strings.Contains(posts[0].data.Message, "aborted on request") {
		t.Errorf("the abort's message %q does not say it was by hand", posts[0].data.Message)
	}
	waitCanaryDone(t, ns, other)
	if as, err := getAppService(ns, other); err != nil || as.Status.Notifications != nil {
		t.Errorf("%s, not chosen: status.notifications %+v (%v), want none", other, as.Status.Notifications, err)
	}
}

// TestNotificationFaults: a controller that gives a delivery 20 s, and
// takes over from a killed replica in seconds.
func TestNotificationFaults(t *testing.T) {
	serial(t, 1)
	installGatewayAPI(t)
	args := []string{"-notification-give-up-after=20s", "-leader-elect-lease-duration=4s", "-leader-elect-renew-deadline=3s", "-leader-elect-retry-period=1s"}
	swapController(t, "notify-faults", args...)
	t.Run("given up", testNotifyGivenUp)
	t.Run("killed before a delivery", testNotifyKilled)
	t.Run("two replicas", func(t *testing.T) { testNotifyReplicas(t, args) })
}

// testNotifyGivenUp: a receiver that answers 500 forever: the release is
// promoted as without it, and each delivery is given up visibly: the
// status, a Warning Event, the metric.
func testNotifyGivenUp(t *testing.T) {
	ns := newNamespace(t)
	const name = "ignored"
	rcv := newHookReceiver(t, "500")
	createDestination(t, ns, "ops-hook", rcv)
	rec := startRelease(t, ns, name, twoSteps())
	waitCanaryDone(t, ns, name)
	// Promoted while the first delivery was still tried: the release did
	// not wait for it.
	started := false
	for _, v := range rec.app.snapshot() {
		st := v.obj.Status.Canary
		if st == nil {
			continue
		}
		if st.CanaryTemplateHash != "" {
			started = true
			continue
		}
		if started {
			// The first version promoted.
			for _, e := range v.obj.Status.Notifications.Edges {
				if e.Edge == appv1.EdgeStarted && e.Deliveries[0].Result != appv1.DeliveryPending {
					t.Errorf("the canary was promoted only once the first delivery was %s", e.Deliveries[0].Result)
				}
			}
			break
		}
	}
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonNotificationFailed, "Gave up delivering the Started edge")
	rec.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		got := deliveries(vs[len(vs)-1].obj)
		if len(got) != 4 {
			return fmt.Errorf("deliveries %v, want 4", got)
		}
		for _, d := range got {
			if !strings.HasSuffix(d, "→ops=Failed") {
				return fmt.Errorf("deliveries %v, want all given up", got)
			}
		}
		return nil
	})
	as, err := getAppService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if m := as.Status.Notifications.Edges[0].Deliveries[0].Message; !strings.Contains(m, "in 20s: the destination answered 500 Internal Server Error") {
		t.Errorf("the first delivery's message %q, want why it was given up", m)
	}
	body := scrape(t, ns)
	if v, ok := metricValue(body, `appservice_notification_deliveries_total{destination="ops",namespace="`+ns+`",result="failed"}`); !ok || v != 4 {
		t.Errorf("appservice_notification_deliveries_total of the failed deliveries: %v (found %v), want 4", v, ok)
	}
	checkNoAddress(t, ns, rec, rcv)
}

// testNotifyKilled: the controller SIGKILLed after an edge's status write
// and before its delivery (the receiver holds the post, unanswered):
// delivered after the restart, with its id, once.
func testNotifyKilled(t *testing.T) {
	ns := newNamespace(t)
	const name = "interrupted"
	rcv := newHookReceiver(t, "hold")
	createDestination(t, ns, "ops-hook", rcv)
	rec := startRelease(t, ns, name, twoSteps())
	held := rcv.wait(t, time.Minute, func(posts []hookPost) error {
		if len(posts) == 0 {
			return fmt.Errorf("no post yet")
		}
		return nil
	})[0]
	// Its edge is in the status, owed.
	rec.app.wait(t, time.Minute, func(vs []version[*appv1.AppService]) error {
		if got := deliveries(vs[len(vs)-1].obj); !slices.Contains(got, strings.TrimSuffix(held.id, ".ops")+"→ops=Pending") {
			return fmt.Errorf("deliveries %v, want %s owed", got, held.id)
		}
		return nil
	})
	restartController(t)
	rcv.setMode("ok")
	posts := rcv.waitAccepted(t, 2*time.Minute, ns, name, "Started 1", "Step 1", "Step 2", "Promoted 2")
	if first := posts[slices.IndexFunc(posts, func(p hookPost) bool { return p.accepted })]; first.id != held.id {
		t.Errorf("delivered %s after the restart, held %s before it: want one id", first.id, held.id)
	}
	waitCanaryDone(t, ns, name)
}

// testNotifyReplicas: two replicas, one leading: each edge once; the
// leader killed while a delivery is held, the other delivers it.
func testNotifyReplicas(t *testing.T, args []string) {
	ns := newNamespace(t)
	const name = "replicated"
	leader := ctrl
	b, err := newControllerProcess("notify-standby", args...)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, the test after this one finds the leader running.
	t.Cleanup(func() {
		_, _ = b.Stop(syscall.SIGTERM)
		ctrl = leader
		if leader.Exited() != nil {
			if err := leader.Start(); err != nil {
				t.Error(err)
			}
		}
	})
	if err := b.WaitReady(time.Minute); err != nil {
		t.Fatal(err)
	}
	rcv := newHookReceiver(t, "ok")
	createDestination(t, ns, "ops-hook", rcv)
	rec := startRelease(t, ns, name, threeStepsGated())
	rec.waitAtGate(t, 1)
	rcv.waitAccepted(t, time.Minute, ns, name, threeStepsEdges[:4]...)

	// The next edges held at the receiver; the leader killed.
	rcv.setMode("hold")
	p := &plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}
	p.expect(0, "", "", "promote", name)
	rcv.wait(t, time.Minute, func(posts []hookPost) error {
		if len(posts) <= 4 {
			return fmt.Errorf("no post after the promotion yet")
		}
		return nil
	})
	if _, err := leader.Stop(syscall.SIGKILL); err == nil {
		t.Fatal("the killed leader exited cleanly?")
	}
	ctrl = b
	waitLeading(t, b)
	rcv.setMode("ok")
	rcv.waitAccepted(t, 2*time.Minute, ns, name, threeStepsEdges...)
	waitCanaryDone(t, ns, name)
}
