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

package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func event(uid, reason, msg string, at time.Duration) corev1.Event {
	return corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: reason + "." + uid, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "AppService", Namespace: ns, Name: name, UID: "as-uid"},
		Type:           corev1.EventTypeNormal, Reason: reason, Message: msg, Count: 1, LastTimestamp: ago(at),
	}
}

func TestDetailView(t *testing.T) {
	s := gatedSnapshot()
	old := event("1", "Old", "of an earlier web", time.Hour)
	old.InvolvedObject.UID = "earlier-uid"
	events := []corev1.Event{event("2", "CanaryStep", "step 1", 4*time.Minute), old,
		event("3", "Hostile", `<img src=x onerror=alert(1)>`, time.Minute)}
	v := NewDetailView(s, events, now)

	if v.State != Gated || v.Symbol != "॥" || v.Message != gatedMessage {
		t.Errorf("state %s %s, message %q", v.Symbol, v.State, v.Message)
	}
	c := v.Canary
	if c == nil || !c.Gated || c.Phase != "running" || c.Hash != canaryHash || c.Traffic != "10% of the traffic by route" || c.PauseUntil != "" {
		t.Fatalf("canary %+v", c)
	}
	var steps []string
	for _, st := range c.Steps {
		steps = append(steps, fmt.Sprintf("%d:%d%% %s gate=%v current=%v passed=%v", st.Number, st.Weight, st.Pause, st.Gate, st.Current, st.Passed))
	}
	if want := []string{"1:10% 60s gate=true current=true passed=false", "2:50% 5m gate=false current=false passed=false", "3:100%  gate=false current=false passed=false"}; !cmp.Equal(steps, want) {
		t.Errorf("steps (-want +got):\n%s", cmp.Diff(want, steps))
	}
	buttons := map[string]string{}
	for _, a := range v.Actions {
		buttons[a.Action] = fmt.Sprint(a.Enabled, " ", a.Why)
	}
	if want := map[string]string{"promote": "true ", "promote-full": "true ", "abort": "true ",
		"retry": "false appservice/web: canary " + canaryHash + " runs (step 1 of 3): nothing to retry"}; !cmp.Equal(buttons, want) {
		t.Errorf("buttons (-want +got):\n%s", cmp.Diff(want, buttons))
	}
	if v.Route != "web 90%, web-canary 10%" {
		t.Errorf("route %q", v.Route)
	}
	// The tree is get's: the same rows.
	var b strings.Builder
	if err := Render(&b, s, now); err != nil {
		t.Fatal(err)
	}
	for _, r := range v.Tree {
		if !regexp.MustCompile(regexp.QuoteMeta(r.Name) + `\s+` + r.Kind + `\s+` + regexp.QuoteMeta(r.Status)).MatchString(b.String()) {
			t.Errorf("tree row %+v is not get's", r)
		}
	}
	if len(v.Tree) != 9 || v.Tree[0].Kind != "AppService" || v.Tree[len(v.Tree)-1].Kind != "HTTPRoute" {
		t.Errorf("tree: %+v", v.Tree)
	}
	if v.Conditions[0].Type != appv1.ConditionReady {
		t.Errorf("conditions not kstatus's first: %+v", v.Conditions)
	}
	// The AppService's Events only, the latest first; data kept as is
	// (the page makes text of it).
	if len(v.Events) != 2 || v.Events[0].Reason != "Hostile" || v.Events[0].Message != `<img src=x onerror=alert(1)>` || v.Events[1].Age != "4m" {
		t.Errorf("events %+v", v.Events)
	}
}

func TestListView(t *testing.T) {
	a, b := gatedApp(), gatedApp()
	b.Name, b.Namespace = "api", "other"
	b.Spec.Canary, b.Status.Canary = nil, nil
	b.Status.Conditions = []metav1.Condition{condition(appv1.ConditionReady, metav1.ConditionTrue, "Ready", "ok")}
	v := NewListView([]appv1.AppService{*a, *b}, "", now)
	got := fmt.Sprintf("%+v", v.Items)
	want := "[{Namespace:other Name:api State:Healthy Symbol:✔ Step:- Weight:- Age:2d Message:} " +
		"{Namespace:shop Name:web State:Gated Symbol:॥ Step:1/3 Weight:10% by route Age:2d Message:" + gatedMessage + "}]"
	if got != want {
		t.Errorf("items\n got %s\nwant %s", got, want)
	}
}

// The command on fakes: it prints the URL; the page's view is the
// caches'; a button sends the command's request; a view or request of
// another namespace is refused.
func TestDashboardCommand(t *testing.T) {
	f := newFakes(gatedSnapshot())
	_, _ = f.kube.CoreV1().Events(ns).Create(context.Background(), new(event("2", "CanaryStep", "step 1", time.Minute)), metav1.CreateOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int)
	go func() { done <- f.runTo(ctx, &out, &errOut, "dashboard", "--port", "0") }()
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=\S+`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		url = urlRE.FindString(out.String())
	}
	if url == "" {
		cancel()
		t.Fatalf("no URL printed: %q, stderr %q", out.String(), errOut.String())
	}
	if !strings.HasPrefix(out.String(), `The dashboard of namespace "shop": http://127.0.0.1:`) {
		t.Errorf("stdout %q", out.String())
	}
	base := url[:strings.Index(url, "/?")]
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	get := func(path string) (int, string) {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(url[len(base):]); code != http.StatusOK {
		t.Fatalf("the printed URL: %d", code)
	}
	code, body := get("/api/view?namespace=shop&name=web")
	var v DetailView
	if err := json.Unmarshal([]byte(body), &v); code != http.StatusOK || err != nil {
		t.Fatalf("view: %d %v %s", code, err, body)
	}
	want := NewDetailView(gatedSnapshot(), nil, now)
	if diff := cmp.Diff(want.Tree, v.Tree); diff != "" {
		t.Errorf("the tree from the caches differs from get's (-want +got):\n%s", diff)
	}
	if v.Canary == nil || !v.Canary.Gated || len(v.Events) != 1 || v.Events[0].Reason != "CanaryStep" {
		t.Errorf("view %s", body)
	}
	if code, body := get("/api/view?namespace=shop"); code != http.StatusOK || !strings.Contains(body, `"name":"web","state":"Gated"`) {
		t.Errorf("list: %d %s", code, body)
	}
	if code, body := get("/api/view?namespace=other&name=web"); code != http.StatusNotFound || !strings.Contains(body, `shows namespace \"shop\", not \"other\"`) {
		t.Errorf("another namespace: %d %s", code, body)
	}

	req, _ := http.NewRequest("POST", base+"/api/appservices/shop/web/promote", nil)
	req.Header.Set("Origin", base)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "step 1 of 3 promoted (canary "+canaryHash+")") {
		t.Errorf("promote: %d %s", resp.StatusCode, b)
	}
	ps := patches(f.apps.Actions())
	if len(ps) != 1 || ps[0].Subresource != "status" || !strings.Contains(string(ps[0].Patch), `"action":"Promote"`) {
		t.Errorf("patches %+v", ps)
	}
	for action, want := range map[string]int{"retry": http.StatusConflict, "delete": http.StatusNotFound} {
		req, _ = http.NewRequest("POST", base+"/api/appservices/shop/web/"+action, nil)
		req.Header.Set("Origin", base)
		if resp, err = client.Do(req); err != nil || resp.StatusCode != want {
			t.Errorf("POST %s: %v %v; want %d", action, resp.StatusCode, err, want)
		}
		resp.Body.Close()
	}
	if ps := patches(f.apps.Actions()); len(ps) != 1 {
		t.Errorf("%d patches after a refused retry and an unknown action; want the promote's only", len(ps))
	}

	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("exit %d on interrupt, stderr %q", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dashboard did not end within 10 s of its context")
	}
}

// A user who may not read Events: the page shows the rest, and says why
// the Events are missing.
func TestDashboardWithoutEvents(t *testing.T) {
	f := newFakes(gatedSnapshot())
	f.kube.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "", errors.New("RBAC"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nw := watchNamespace(ctx, f.clients(), ns)
	select {
	case <-nw.w.synced(ctx):
	case err := <-nw.w.failed:
		t.Fatalf("a refused Events watch ended the dashboard: %v", err)
	case <-ctx.Done():
		t.Fatal("the caches did not sync within 10 s")
	}
	src := &dashboardSource{c: f.clients(), nw: nw, namespace: ns, now: func() time.Time { return now }}
	v, err := src.View(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := v.(DetailView)
	if !ok || len(d.Tree) != 9 || len(d.Events) != 0 ||
		d.EventsProblem != `forbidden: cannot watch events in namespace "shop": the ClusterRole appservice-viewer grants it (docs/plugin.md#rbac)` {
		t.Errorf("view: %d tree rows, events %v, problem %q", len(d.Tree), d.Events, d.EventsProblem)
	}
}

func TestDeliveryViews(t *testing.T) {
	st := &appv1.NotificationsStatus{Edges: []appv1.NotificationEdge{{Edge: appv1.EdgeStep, Step: new(int32(1)), Steps: 3, Time: ago(time.Minute),
		Deliveries: []appv1.Delivery{{Destination: "ops", Result: appv1.DeliveryDelivered, Attempts: 2, Time: new(ago(50 * time.Second))}}}}}
	got := deliveryViews(st, now)
	want := []DeliveryView{{Edge: "Step (step 2 of 3)", Destination: "ops", Result: "Delivered", Attempts: 2, Age: "60s", When: "10s after"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deliveryViews = %+v, want %+v", got, want)
	}
	if deliveryViews(nil, now) != nil {
		t.Error("no notifications: want no deliveries")
	}
}
