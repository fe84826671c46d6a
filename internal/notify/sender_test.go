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

package notify

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// receiver is a destination that answers each post with answer(n), n
// counting from 1, and records what it received.
type receiver struct {
	mu     sync.Mutex
	posts  []post
	answer func(n int, w http.ResponseWriter)
}

type post struct {
	at        time.Time
	body      string
	signature string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.posts = append(r.posts, post{time.Now(), string(b), req.Header.Get(SignatureHeader)})
	n := len(r.posts)
	r.mu.Unlock()
	r.answer(n, w)
}

func (r *receiver) received() []post {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]post(nil), r.posts...)
}

// senderFixture is a Sender with one webhook destination "ops" in "shop"
// whose Secret points at a receiver; secrets holds the Secrets there are.
type senderFixture struct {
	s       *Sender
	rcv     *receiver
	url     string
	mu      sync.Mutex
	secrets map[string]*corev1.Secret
	woken   chan cache.ObjectName
}

func newSenderFixture(t *testing.T, cfg Config, answer func(n int, w http.ResponseWriter)) *senderFixture {
	t.Helper()
	f := &senderFixture{rcv: &receiver{answer: answer}, woken: make(chan cache.ObjectName, 100)}
	srv := httptest.NewServer(f.rcv)
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/hook/T0KEN"
	f.secrets = map[string]*corev1.Secret{"ops-hook": {ObjectMeta: metav1.ObjectMeta{Name: "ops-hook", Namespace: "shop"},
		Data: map[string][]byte{appv1.SecretKeyAddress: []byte(f.url), appv1.SecretKeySigningKey: []byte("k3y")}}}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = indexer.Add(&appv1.NotificationDestination{ObjectMeta: metav1.ObjectMeta{Name: "ops", Namespace: "shop"},
		Spec: appv1.NotificationDestinationSpec{Type: appv1.DestinationWebhook, SecretRef: appv1.SecretReference{Name: "ops-hook"}}})
	get := func(_ context.Context, ns, name string) (*corev1.Secret, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if s, ok := f.secrets[name]; ok && ns == "shop" {
			return s, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	f.s = NewSender(cfg, get, listers.NewNotificationDestinationLister(indexer), func(k cache.ObjectName) { f.woken <- k })
	f.s.client.RetryWaitMin, f.s.client.RetryWaitMax = 10*time.Millisecond, 100*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.s.Start(ctx)
	return f
}

var shopCart = cache.ObjectName{Namespace: "shop", Name: "cart"}

func owedAt(edgeTime time.Time) Owed {
	return Owed{ID: "abc-1.aborted-1.ops", Destination: "ops", Release: "abc-1",
		Edge: appv1.NotificationEdge{ID: "abc-1.aborted-1", Edge: appv1.EdgeAborted, Time: metav1.Time{Time: edgeTime}, Message: "aborted"}}
}

// waitDone waits for the delivery's result, and checks that no result
// says the address.
func (f *senderFixture) waitDone(t *testing.T, within time.Duration) Result {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case <-f.woken:
			r := f.s.Results(shopCart)["abc-1.aborted-1.ops"]
			if strings.Contains(r.Message, "T0KEN") || strings.Contains(r.Message, "127.0.0.1") {
				t.Errorf("a result says the address: %q", r.Message)
			}
			if r.Done {
				return r
			}
		case <-deadline:
			t.Fatalf("no result within %s: %+v", within, f.s.Results(shopCart))
		}
	}
}

func TestSendOnce(t *testing.T) {
	f := newSenderFixture(t, DefaultConfig, func(int, http.ResponseWriter) {})
	o := owedAt(time.Now())
	f.s.Send(shopCart, []Owed{o})
	f.s.Send(shopCart, []Owed{o}) // in flight: not again
	r := f.waitDone(t, 10*time.Second)
	if !r.Delivered || r.Attempts != 1 {
		t.Errorf("result %+v, want delivered at the first attempt", r)
	}
	f.s.Send(shopCart, []Owed{o}) // delivered, the status not yet written: not again
	time.Sleep(100 * time.Millisecond)
	posts := f.rcv.received()
	if len(posts) != 1 {
		t.Fatalf("%d posts, want 1", len(posts))
	}
	if err := Verify([]byte("k3y"), posts[0].signature, []byte(posts[0].body), time.Now(), time.Minute); err != nil {
		t.Errorf("the signature: %v", err)
	}
	// Once the status records it, the Sender forgets it.
	f.s.Settle(shopCart, nil)
	if len(f.s.Results(shopCart)) != 0 {
		t.Errorf("results kept after the status recorded them: %v", f.s.Results(shopCart))
	}
}

// TestSendRetries: 503s with Retry-After, then 200: delivered, the wait
// the one asked for, each try signed again.
func TestSendRetries(t *testing.T) {
	f := newSenderFixture(t, DefaultConfig, func(n int, w http.ResponseWriter) {
		if n < 3 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	f.s.Send(shopCart, []Owed{owedAt(time.Now())})
	r := f.waitDone(t, 20*time.Second)
	posts := f.rcv.received()
	if !r.Delivered || r.Attempts != 3 || len(posts) != 3 {
		t.Fatalf("result %+v after %d posts, want delivered at the third attempt", r, len(posts))
	}
	for i := 1; i < 3; i++ {
		if gap := posts[i].at.Sub(posts[i-1].at); gap < 900*time.Millisecond {
			t.Errorf("try %d came %s after the last, before its Retry-After of 1s", i+1, gap)
		}
		if posts[i].body != posts[0].body {
			t.Errorf("try %d's body differs", i+1)
		}
	}
}

// TestSendGivesUp: a receiver that answers 500 forever is given up at the
// bound after the edge, with why.
func TestSendGivesUp(t *testing.T) {
	cfg := DefaultConfig
	cfg.GiveUpAfter = time.Minute
	f := newSenderFixture(t, cfg, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) })
	start := time.Now()
	f.s.Send(shopCart, []Owed{owedAt(start.Add(-cfg.GiveUpAfter + 2*time.Second))})
	r := f.waitDone(t, 20*time.Second)
	if r.Delivered || r.Attempts < 2 || !strings.Contains(r.Message, "gave up after") || !strings.Contains(r.Message, "500 Internal Server Error") {
		t.Errorf("result %+v, want given up after several attempts, saying the destination answered 500", r)
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Errorf("given up after %s, before the bound", took)
	}
}

// TestSendRefused: a 4xx is not tried again.
func TestSendRefused(t *testing.T) {
	f := newSenderFixture(t, DefaultConfig, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound) })
	f.s.Send(shopCart, []Owed{owedAt(time.Now())})
	r := f.waitDone(t, 10*time.Second)
	if r.Delivered || r.Attempts != 1 || r.Message != "the destination answered 404 Not Found" {
		t.Errorf("result %+v, want failed at once, saying 404", r)
	}
}

// TestSendSecretMissing: said at once, tried again, delivered once the
// Secret is there.
func TestSendSecretMissing(t *testing.T) {
	f := newSenderFixture(t, DefaultConfig, func(int, http.ResponseWriter) {})
	secret := f.secrets["ops-hook"]
	delete(f.secrets, "ops-hook")
	f.s.Send(shopCart, []Owed{owedAt(time.Now())})
	select {
	case <-f.woken:
	case <-time.After(10 * time.Second):
		t.Fatal("a missing Secret is not said")
	}
	r := f.s.Results(shopCart)["abc-1.aborted-1.ops"]
	if r.Done || r.Message != "Secret ops-hook (spec.secretRef of NotificationDestination ops) not found" {
		t.Fatalf("result %+v, want owed, saying the Secret is missing", r)
	}
	f.mu.Lock()
	f.secrets["ops-hook"] = secret
	f.mu.Unlock()
	if r := f.waitDone(t, 20*time.Second); !r.Delivered {
		t.Errorf("result %+v, want delivered once the Secret is there", r)
	}
}

// TestSendNotLeading: a Sender not started (or no longer leading) sends
// nothing: what is owed stays owed, for the leader.
func TestSendNotLeading(t *testing.T) {
	f := newSenderFixture(t, DefaultConfig, func(int, http.ResponseWriter) {})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.s.Start(ctx)
	f.s.Send(shopCart, []Owed{owedAt(time.Now())})
	time.Sleep(200 * time.Millisecond)
	if n := len(f.rcv.received()); n != 0 {
		t.Errorf("%d posts while not leading", n)
	}
}

// TestSendInOrder: an AppService's edges reach a destination one at a
// time, oldest first: the second starts once the first is done.
func TestSendInOrder(t *testing.T) {
	f := newSenderFixture(t, DefaultConfig, func(int, http.ResponseWriter) {})
	first, second := owedAt(time.Now()), owedAt(time.Now())
	second.ID, second.Edge.ID = "abc-1.promoted-1.ops", "abc-1.promoted-1"
	f.s.Send(shopCart, []Owed{first, second})
	f.waitDone(t, 10*time.Second)
	if posts := f.rcv.received(); len(posts) != 1 || !strings.Contains(posts[0].body, first.ID) {
		t.Fatalf("posts %v, want the first alone", posts)
	}
	f.s.Send(shopCart, []Owed{first, second}) // the sync the result wakes
	deadline := time.After(10 * time.Second)
	for !f.s.Results(shopCart)[second.ID].Done {
		select {
		case <-f.woken:
		case <-deadline:
			t.Fatal("the second edge is not delivered")
		}
	}
	if posts := f.rcv.received(); len(posts) != 2 || !strings.Contains(posts[1].body, second.ID) {
		t.Errorf("posts %v, want the first then the second", posts)
	}
}

// TestSendPastTheBound: a delivery that starts past its bound (it waited
// behind others, or for a leader) is tried once, then given up.
func TestSendPastTheBound(t *testing.T) {
	f := newSenderFixture(t, DefaultConfig, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) })
	f.s.Send(shopCart, []Owed{owedAt(time.Now().Add(-2 * time.Hour))})
	r := f.waitDone(t, 10*time.Second)
	if r.Delivered || r.Attempts != 1 || r.Message != "gave up after 1 attempt in 1h0m0s: the destination answered 502 Bad Gateway" {
		t.Errorf("result %+v, want given up after one attempt", r)
	}
}

// TestSendBackoffHoldsNoSlot: with one slot, a delivery to a destination
// that keeps failing waits out its backoff without the slot, and another
// AppService's delivery goes meanwhile.
func TestSendBackoffHoldsNoSlot(t *testing.T) {
	cfg := DefaultConfig
	cfg.Parallel = 1
	f := newSenderFixture(t, cfg, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	f.s.Send(shopCart, []Owed{owedAt(time.Now())})
	deadline := time.After(10 * time.Second)
	for len(f.rcv.received()) == 0 {
		select {
		case <-deadline:
			t.Fatal("no first post")
		case <-time.After(10 * time.Millisecond):
		}
	}
	other := cache.ObjectName{Namespace: "shop", Name: "basket"}
	f.s.Send(other, []Owed{owedAt(time.Now())})
	for !f.s.Results(other)["abc-1.aborted-1.ops"].Done {
		select {
		case <-f.woken:
		case <-deadline:
			t.Fatal("the other delivery waited for the first's backoff")
		}
	}
}
