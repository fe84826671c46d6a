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
	"encoding/json"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func testMessage() Message {
	return Message{Namespace: "shop", AppService: "cart", Owed: Owed{
		ID: "abc-1.aborted-2.ops", Destination: "ops", Release: "abc-1", From: "cart:1", To: "cart:2",
		Edge: appv1.NotificationEdge{ID: "abc-1.aborted-2", Edge: appv1.EdgeAborted, Time: metav1.Time{Time: time.Unix(1796212800, 0)},
			Step: new(int32(1)), Steps: 3, Weight: 25, ExitCode: new(int32(3)),
			Message: "Canary abc aborted: its test smoke failed: exit code 3: <html>503</html>"},
	}}
}

// TestCloudEvent: a structured CloudEvent 1.0 that the SDK reads back, its
// id the delivery's, its type the edge's.
func TestCloudEvent(t *testing.T) {
	ct, body, err := testMessage().Body(appv1.DestinationWebhook)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "application/cloudevents+json; charset=utf-8" {
		t.Errorf("content type %q", ct)
	}
	var e cloudevents.Event
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("the SDK does not read it back: %v\n%s", err, body)
	}
	if err := e.Validate(); err != nil {
		t.Errorf("not a valid CloudEvent: %v", err)
	}
	if e.SpecVersion() != "1.0" || e.ID() != "abc-1.aborted-2.ops" || e.Type() != "com.example.appservice.release.aborted" ||
		e.Source() != "/apis/app.example.com/v1/namespaces/shop/appservices/cart" || !e.Time().Equal(time.Unix(1796212800, 0)) {
		t.Errorf("attributes: %s", e)
	}
	var d Data
	if err := e.DataAs(&d); err != nil {
		t.Fatal(err)
	}
	if d.Namespace != "shop" || d.AppService != "cart" || d.Edge != "Aborted" || *d.Step != 2 || d.Steps != 3 || d.Weight != 25 ||
		d.From != "cart:1" || d.To != "cart:2" || *d.ExitCode != 3 || d.Release != "abc-1" || !strings.Contains(d.Message, "exit code 3") {
		t.Errorf("data: %+v", d)
	}
}

// TestChatBodies: Slack's and Teams' messages say what happened, with the
// step, the weight, the images and the exit code, Slack's escaped.
func TestChatBodies(t *testing.T) {
	for _, typ := range []appv1.DestinationType{appv1.DestinationSlack, appv1.DestinationTeams} {
		ct, body, err := testMessage().Body(typ)
		if err != nil || ct != "application/json" || !json.Valid(body) {
			t.Fatalf("%s: %q, %v:\n%s", typ, ct, err, body)
		}
		for _, want := range []string{"shop/cart was aborted", "2 of 3", "25%", "cart:1 → cart:2", "Exit code", "abc-1"} {
			if !strings.Contains(string(body), want) {
				t.Errorf("%s: no %q in\n%s", typ, want, body)
			}
		}
	}
	_, slack, _ := testMessage().Body(appv1.DestinationSlack)
	if !strings.Contains(string(slack), `\u0026lt;html\u0026gt;`) {
		t.Errorf("Slack's blocks do not escape < and >: %s", slack)
	}
	_, teams, _ := testMessage().Body(appv1.DestinationTeams)
	if !strings.Contains(string(teams), "application/vnd.microsoft.card.adaptive") {
		t.Errorf("Teams: not an Adaptive Card: %s", teams)
	}
}

func TestSignature(t *testing.T) {
	key, body, now := []byte("s3cret"), []byte(`{"a":1}`), time.Unix(1796212800, 0)
	h := Sign(key, now, body)
	if !strings.HasPrefix(h, "t=1796212800,v1=") || len(h) != len("t=1796212800,v1=")+64 {
		t.Fatalf("header %q", h)
	}
	if err := Verify(key, h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Errorf("a good signature: %v", err)
	}
	for name, err := range map[string]error{
		"another body":  Verify(key, h, []byte(`{"a":2}`), now, 5*time.Minute),
		"another key":   Verify([]byte("other"), h, body, now, 5*time.Minute),
		"too old":       Verify(key, h, body, now.Add(6*time.Minute), 5*time.Minute),
		"none":          Verify(key, "", body, now, 5*time.Minute),
		"time replaced": Verify(key, strings.Replace(h, "t=1796212800", "t=1796212801", 1), body, now, 5*time.Minute),
	} {
		if err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

// TestTitle: every edge a release can have says what happened in its
// message's first line.
func TestTitle(t *testing.T) {
	for _, edge := range []appv1.ReleaseEdge{appv1.EdgeStarted, appv1.EdgeStep, appv1.EdgeGated, appv1.EdgeSwitched, appv1.EdgePromoted,
		appv1.EdgeAborted, appv1.EdgeProgressDeadline, appv1.EdgeRolledBack, EdgeTest} {
		m := testMessage()
		m.Edge.Edge = edge
		if got := m.Title(); !strings.HasPrefix(got, "shop/cart ") || strings.TrimSpace(strings.TrimPrefix(got, "shop/cart")) == "" {
			t.Errorf("%s: title %q says nothing of the edge", edge, got)
		}
	}
}
