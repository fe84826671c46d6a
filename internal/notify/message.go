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
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Message is one delivery: an edge of an AppService's release, for a
// destination.
type Message struct {
	Namespace, AppService string
	Owed
}

// Data is what a message says, as JSON: a CloudEvent's data.
type Data struct {
	Namespace  string `json:"namespace"`
	AppService string `json:"appService"`
	Edge       string `json:"edge"`
	Release    string `json:"release"`
	// Step counts from 1, of Steps.
	Step     *int32 `json:"step,omitempty"`
	Steps    int32  `json:"steps,omitempty"`
	Weight   int32  `json:"weight"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	ExitCode *int32 `json:"exitCode,omitempty"`
	Message  string `json:"message,omitempty"`
}

// Data is the message's data.
func (m Message) Data() Data {
	d := Data{Namespace: m.Namespace, AppService: m.AppService, Edge: string(m.Edge.Edge), Release: m.Release,
		Steps: m.Edge.Steps, Weight: m.Edge.Weight, From: m.From, To: m.To, ExitCode: m.Edge.ExitCode, Message: m.Edge.Message}
	if m.Edge.Step != nil {
		d.Step = new(*m.Edge.Step + 1)
	}
	return d
}

// EdgeTest is the edge of kubectl appservice notify test's message.
const EdgeTest appv1.ReleaseEdge = "Test"

// EventTypePrefix begins every CloudEvent's type; the edge, in lower case,
// ends it (com.example.appservice.release.aborted).
const EventTypePrefix = "com.example.appservice.release."

// CloudEvent is the message as a CloudEvent 1.0: its id is the
// delivery's, the same on every try; its type names the edge; its source
// is the AppService.
func (m Message) CloudEvent() (cloudevents.Event, error) {
	e := cloudevents.New()
	e.SetID(m.ID)
	e.SetType(EventTypePrefix + strings.ToLower(string(m.Edge.Edge)))
	e.SetSource("/apis/app.example.com/v1/namespaces/" + m.Namespace + "/appservices/" + m.AppService)
	e.SetSubject(m.Namespace + "/" + m.AppService)
	e.SetTime(m.Edge.Time.Time)
	if err := e.SetData("application/json", m.Data()); err != nil {
		return e, err
	}
	return e, e.Validate()
}

// Title is the message's first line.
func (m Message) Title() string {
	what := map[appv1.ReleaseEdge]string{
		appv1.EdgeStarted: "started a canary", appv1.EdgeStep: "moved to the next step", appv1.EdgeGated: "waits at a gate",
		appv1.EdgeSwitched: "switched its users to the preview", appv1.EdgePromoted: "was promoted", appv1.EdgeAborted: "was aborted",
		appv1.EdgeProgressDeadline: "was aborted: its Pods missed the progress deadline", appv1.EdgeRolledBack: "was rolled back",
		EdgeTest: "sends a test message (kubectl appservice notify test)",
	}[m.Edge.Edge]
	return fmt.Sprintf("%s/%s %s", m.Namespace, m.AppService, what)
}

// Facts are the message's details, in order, as name and value.
func (m Message) Facts() [][2]string {
	d := m.Data()
	var f [][2]string
	if d.Step != nil {
		f = append(f, [2]string{"Step", fmt.Sprintf("%d of %d", *d.Step, d.Steps)})
	}
	if m.Edge.Edge != appv1.EdgeRolledBack && m.Edge.Edge != EdgeTest {
		f = append(f, [2]string{"Weight", fmt.Sprintf("%d%%", d.Weight)})
	}
	if d.From != "" || d.To != "" {
		f = append(f, [2]string{"Image", orUnknown(d.From) + " → " + orUnknown(d.To)})
	}
	if d.ExitCode != nil {
		f = append(f, [2]string{"Exit code", strconv.Itoa(int(*d.ExitCode))})
	}
	return append(f, [2]string{"Release", d.Release})
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// Body is what is posted to a destination of type typ, and its content
// type: a CloudEvent in structured mode (webhook), a Slack message, or a
// Teams workflow's Adaptive Card.
func (m Message) Body(typ appv1.DestinationType) (string, []byte, error) {
	switch typ {
	case appv1.DestinationWebhook:
		e, err := m.CloudEvent()
		if err != nil {
			return "", nil, err
		}
		b, err := json.Marshal(e)
		return "application/cloudevents+json; charset=utf-8", b, err
	case appv1.DestinationSlack:
		var facts []string
		for _, f := range m.Facts() {
			facts = append(facts, fmt.Sprintf("*%s:* %s", f[0], slackEscape(f[1])))
		}
		b, err := json.Marshal(slackMessage{Text: m.Title() + ": " + m.Edge.Message, Blocks: []slackBlock{
			{Type: "section", Text: &slackText{Type: "mrkdwn", Text: "*" + slackEscape(m.Title()) + "*\n" + slackEscape(m.Edge.Message)}},
			{Type: "context", Elements: []slackText{{Type: "mrkdwn", Text: strings.Join(facts, "   ")}}},
		}})
		return "application/json", b, err
	case appv1.DestinationTeams:
		var facts []cardFact
		for _, f := range m.Facts() {
			facts = append(facts, cardFact{Title: f[0], Value: f[1]})
		}
		card := adaptiveCard{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4",
			Body: []cardElement{
				{Type: "TextBlock", Size: "Medium", Weight: "Bolder", Wrap: true, Text: m.Title()},
				{Type: "TextBlock", Wrap: true, Text: m.Edge.Message},
				{Type: "FactSet", Facts: facts},
			}}
		b, err := json.Marshal(teamsMessage{Type: "message", Attachments: []teamsAttachment{
			{ContentType: "application/vnd.microsoft.card.adaptive", Content: card}}})
		return "application/json", b, err
	}
	return "", nil, fmt.Errorf("unknown destination type %q", typ)
}

// A Slack incoming webhook's message: a fallback text, and blocks.
type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// A Teams workflow webhook's message: an Adaptive Card attached.
type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string       `json:"contentType"`
	Content     adaptiveCard `json:"content"`
}

type adaptiveCard struct {
	Schema  string        `json:"$schema"`
	Type    string        `json:"type"`
	Version string        `json:"version"`
	Body    []cardElement `json:"body"`
}

type cardElement struct {
	Type   string     `json:"type"`
	Size   string     `json:"size,omitempty"`
	Weight string     `json:"weight,omitempty"`
	Wrap   bool       `json:"wrap,omitempty"`
	Text   string     `json:"text,omitempty"`
	Facts  []cardFact `json:"facts,omitempty"`
}

type cardFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// slackEscape escapes what Slack's mrkdwn reads as markup.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// SignatureHeader carries a webhook's signature: "t=UNIX,v1=HEX", HEX the
// HMAC-SHA256, keyed by the Secret's signingKey, of UNIX, a dot, and the
// body.
const SignatureHeader = "X-Appservice-Signature"

// Sign is the signature of body sent at t.
func Sign(key []byte, t time.Time, body []byte) string {
	return "t=" + strconv.FormatInt(t.Unix(), 10) + ",v1=" + hex.EncodeToString(mac(key, t.Unix(), body))
}

func mac(key []byte, t int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	fmt.Fprintf(h, "%d.", t)
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a signature header against body, as a receiver does: the
// HMAC matches (compared in constant time), and its time is within
// tolerance of now, so that a captured request cannot be replayed later.
func Verify(key []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var t int64
	var sums [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			var err error
			if t, err = strconv.ParseInt(v, 10, 64); err != nil {
				return errors.New("the signature's time is not a number")
			}
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sums = append(sums, b)
			}
		}
	}
	if t == 0 || len(sums) == 0 {
		return errors.New("no signature")
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("the signature's time is %s away, more than %s", d.Round(time.Second), tolerance)
	}
	want := mac(key, t, body)
	for _, s := range sums {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return errors.New("the signature does not match")
}
