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
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"example.com/appservice-controller/internal/notify"
)

// The notifications step's receiver: a webhook on this machine that checks
// each post's signature and prints what arrived, as a team's receiver
// would log it.

// ordersManifest is orders and its NotificationDestination.
const ordersManifest = "hack/demo/manifests/orders.yaml"

// receiverKey signs the posts to the tour's receiver.
const receiverKey = "the-tour-signing-key"

// receiver is the tour's webhook: what arrived, in order.
type receiver struct {
	url string
	mu  sync.Mutex
	got []arrival
}

// arrival is a post that arrived: its CloudEvent's id, its edge and step,
// and whether its signature held.
type arrival struct {
	id, name string
	signed   bool
}

// serveReceiver is the notifications step's before: it starts the receiver
// and creates the Secret releases-webhook with its address and the key.
func serveReceiver(ctx context.Context, t *tour) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	r := &receiver{url: "http://" + l.Addr().String() + "/releases"}
	go func() {
		_ = http.Serve(l, http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) { r.serve(t, req) }))
	}()
	t.receiver = r
	if out, err := t.run(ctx, "create", "secret", "generic", "releases-webhook", "--from-literal=address="+r.url,
		"--from-literal=signingKey="+receiverKey); err != nil {
		return fmt.Errorf("kubectl create secret: %v: %s", err, out)
	}
	fmt.Fprintln(t.out, t.say(text{
		"\n(the tour's receiver listens on " + r.url + "; the Secret releases-webhook holds that address and the signing key)",
		"\n（演示的接收方在 " + r.url + " 上监听；Secret releases-webhook 保存这个地址和签名密钥）",
	}))
	return nil
}

// serve checks a post's signature and prints what it says (the answer:
// 200).
func (r *receiver) serve(t *tour, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	signed := notify.Verify([]byte(receiverKey), req.Header.Get(notify.SignatureHeader), body, time.Now(), 5*time.Minute) == nil
	var e struct {
		ID   string      `json:"id"`
		Type string      `json:"type"`
		Data notify.Data `json:"data"`
	}
	_ = json.Unmarshal(body, &e)
	name := e.Data.Edge
	if e.Data.Step != nil {
		name = fmt.Sprintf("%s %d", e.Data.Edge, *e.Data.Step)
	}
	r.mu.Lock()
	r.got = append(r.got, arrival{e.ID, name, signed})
	r.mu.Unlock()
	check := t.say(text{"signature checked", "签名已校验"})
	if !signed {
		check = t.say(text{"BAD SIGNATURE", "签名不对"})
	}
	fmt.Fprintf(t.out, "  ⇠ %s %s (%s): %s/%s, %s of %d, %d%%, %s → %s\n", t.say(text{"receiver:", "接收方："}), e.Type, check,
		e.Data.Namespace, e.Data.AppService, name, e.Data.Steps, e.Data.Weight, e.Data.From, e.Data.To)
}

// heardOnce checks the notifications step: the receiver got each edge of
// orders' release once, in order, signed, and kubectl appservice get (the
// fifth command) counts them delivered.
func heardOnce(_ context.Context, t *tour) error {
	if t.receiver == nil {
		return fmt.Errorf("no receiver")
	}
	t.receiver.mu.Lock()
	got := append([]arrival(nil), t.receiver.got...)
	t.receiver.mu.Unlock()
	var names []string
	ids := map[string]bool{}
	for _, a := range got {
		names = append(names, a.name)
		if !a.signed || ids[a.id] {
			return fmt.Errorf("the receiver got %s unsigned, or twice", a.id)
		}
		ids[a.id] = true
	}
	if want := "Started 1, Step 1, Step 2, Promoted 2"; strings.Join(names, ", ") != want {
		return fmt.Errorf("the receiver got %q, want %s", names, want)
	}
	if len(t.last) < 5 || !containsAll(t.last[4], []string{"Notifications:", "4 delivered"}) {
		return fmt.Errorf("kubectl appservice get orders does not count 4 deliveries")
	}
	return nil
}
