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
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/dashboard"
	"example.com/appservice-controller/internal/localcluster"
	plug "example.com/appservice-controller/internal/plugin"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestDashboard: kubectl appservice dashboard, the plugin built as users
// build it, run by a user bound to appservice-viewer, then also to
// appservice-releaser, whose every request the audit log records, in
// headless Chromium (Debian's package, hack/ensure-chromium.sh) driven by
// chromedp. In the browser, with a
// recorder in the page (a MutationObserver: what the page drew, in order):
//   - the page, opened before the canary starts, draws it move from step 1
//     (a pause) to step 2 (a gate) as the controller advances it, without
//     a reload;
//   - at the gate, a screenshot (docs/images/dashboard-gate.png with
//     APPSERVICE_UPDATE_SCREENSHOT=1); Promote, clicked by a viewer, shows
//     RBAC's refusal in the plugin's words, naming appservice-releaser;
//     bound to it, Promote passes the gate (step 3);
//   - Abort sends the route back: "web 100%";
//   - a form of another origin (another port of 127.0.0.1) that posts
//     abort is refused, and no request reaches the API server;
//   - an Event whose message holds markup and script shows as text, and
//     no script runs; nor does a name that holds them (which the API
//     server refuses: the same page, served with such data in-process);
//   - at a phone's width the page does not overflow sideways, and every
//     button has a label.
//
// The audit log: the dashboard listed and watched once per informer, before
// it printed its URL, whatever the three pages open; after it, only the
// three clicks' requests (a get and a patch of the status each, the first
// refused).
func TestDashboard(t *testing.T) {
	parallel(t)
	chromium := os.Getenv("APPSERVICE_CHROMIUM")
	if chromium == "" {
		t.Fatal("APPSERVICE_CHROMIUM is not set: hack/test-e2e.sh sets it from hack/ensure-chromium.sh")
	}
	installGatewayAPI(t)
	applyPluginRoles(t)
	ns := newNamespace(t)
	const name = "web"
	createAppService(t, ns, name, canarySpec(appv1.CanaryStep{Weight: 10, PauseSeconds: 3}, appv1.CanaryStep{Weight: 50, Gate: true},
		appv1.CanaryStep{Weight: 80, Gate: true}, appv1.CanaryStep{Weight: 100}))
	as := waitAvailable(t, ns, name, 1)

	user := "dashboard-" + ns
	kubeconfig, err := cluster.MintUser(user, localcluster.AuditReadsGroup)
	if err != nil {
		t.Fatal(err)
	}
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}
	bindRole(t, ns, "appservice-viewer", subject)
	// Started before the authorizer saw the binding, its first watches
	// would be refused and made again (a loaded make test's were).
	waitAllowed(t, user, ns, dashboardReads()...)
	dash := (&plugin{t: t, kubeconfig: kubeconfig, ns: ns}).start("dashboard", "--port", "0")
	var url string
	dash.out.wait(t, time.Minute, func(lines []string) error {
		for _, l := range lines {
			if m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=\S+`).FindString(l); m != "" {
				url = m
				return nil
			}
		}
		return fmt.Errorf("no URL printed yet: %q, stderr %s", lines, dash.stderr.String())
	})
	served := time.Now()
	base := url[:strings.Index(url, "/?")]

	b := newBrowser(t, chromium)
	list := b.tab(t, url) // the list: the token's page
	detail := b.tab(t, base+"/appservices/"+ns+"/"+name)
	b.do(t, list, chromedp.WaitVisible(chromedp.CSS(`a[href="/appservices/`+ns+`/`+name+`"]`)))
	b.do(t, detail, chromedp.WaitVisible(chromedp.CSS(`#fact-route`)))
	recordPage(t, detail)

	// The canary starts; the page draws its steps as the controller
	// passes them.
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	b.waitRecorded(t, detail, "step 2 gated", `r.step === "2" && r.gated`, 2*time.Minute)
	b.do(t, detail, chromedp.EmulateViewport(1280, 800), chromedp.WaitVisible(chromedp.CSS(`button[data-action="promote"]:not([disabled])`)))
	saveScreenshot(t, run(t, detail, chromedp.CaptureScreenshot()))

	// A form on another origin posts abort with the user's cookie (the
	// same site: 127.0.0.1): refused.
	hostile := hostileSite(t, base+"/api/appservices/"+ns+"/"+name+"/abort")
	other := b.tab(t, hostile)
	b.do(t, other, chromedp.Poll[chromedp.Void](`document.body && document.body.innerText.includes("refused")`, chromedp.WithPollingTimeout(30*time.Second)))
	refusal := run(t, other, chromedp.Evaluate[string](`document.body.innerText`))
	if want := "refused: the request came from " + strings.TrimSuffix(hostile, "/") + ", not from this dashboard"; !strings.Contains(refusal, want) {
		t.Errorf("the other origin's post: %q; want %q", refusal, want)
	}

	// Promote at the gate as a viewer: RBAC refuses it, and the page says
	// so in the plugin's words. Then as a releaser: it passes.
	b.do(t, detail, chromedp.Click(chromedp.CSS(`button[data-action="promote"]:not([disabled])`)))
	b.waitNotice(t, detail, `forbidden: cannot patch appservices/status in namespace "`+ns+`" (user "`+user+`"): `+
		"the ClusterRole appservice-releaser grants it (docs/plugin.md#rbac)")
	bindRole(t, ns, "appservice-releaser", subject)
	waitAllowed(t, user, ns, promoteAttrs)
	b.do(t, detail, chromedp.Click(chromedp.CSS(`button[data-action="promote"]:not([disabled])`)))
	b.waitRecorded(t, detail, "step 3 gated", `r.step === "3" && r.gated`, time.Minute)
	b.waitNotice(t, detail, "step 2 of 4 promoted")
	b.do(t, detail, chromedp.Click(chromedp.CSS(`button[data-action="abort"]:not([disabled])`)))
	b.waitRecorded(t, detail, "aborted, the route back", `r.phase === "aborted" && r.route === "web 100%"`, time.Minute)

	// Markup in an Event's message: text.
	const markup = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`
	if _, err := kube.CoreV1().Events(ns).Create(context.Background(), &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: appv1.SchemeGroupVersion.String(), Kind: "AppService", Namespace: ns, Name: name,
			UID: as.UID},
		Type: corev1.EventTypeWarning, Reason: "Hostile", Message: markup, Count: 1, LastTimestamp: metav1.Now(), FirstTimestamp: metav1.Now(),
		Source: corev1.EventSource{Component: "e2e"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, detail, "table.events", markup)

	// The whole recording: steps 1, 2, 3 in order, then aborted, in one
	// page that never reloaded.
	steps := run(t, detail, chromedp.Evaluate[[]string](`window.__rec.map(r => r.phase + ":" + r.step).filter((s, i, a) => i === 0 || a[i-1] !== s)`))
	marker := run(t, detail, chromedp.Evaluate[string](`String(window.__marker)`))
	if marker != "kept" {
		t.Errorf("the page reloaded (its marker is %q)", marker)
	}
	if want := []string{"none:", "running:1", "running:2", "running:3", "aborted:"}; !isSubsequence(want, steps) {
		t.Errorf("the page drew %v; want in order %v", steps, want)
	}

	// A name and message of markup, in the same page served in-process.
	hostileName(t, b)

	// A phone's width: nothing overflows sideways; the buttons are named.
	b.do(t, detail, chromedp.EmulateViewport(390, 844))
	fits := run(t, detail, chromedp.Poll[bool](`document.documentElement.scrollWidth <= window.innerWidth`, chromedp.WithPollingTimeout(10*time.Second)))
	labelled := run(t, detail, chromedp.Evaluate[bool](`[...document.querySelectorAll("button")].every(b => (b.getAttribute("aria-label") || "").length > 0)`))
	if !fits || !labelled {
		t.Errorf("at 390 px: fits %v; every button labelled %v", fits, labelled)
	}
	b.noScriptRan(t)

	// What the dashboard asked of the API server.
	if code := dash.stop(t); code != 0 {
		t.Errorf("the dashboard ended by SIGTERM: exit %d, stderr %s", code, dash.stderr.String())
	}
	// The page says it lost the dashboard.
	b.waitText(t, detail, "#live", "Reconnecting")
	reqs := auditedRequestsEnded(t, user)
	wantWatches := map[string]int{"appservices": 1, "deployments": 1, "replicasets": 2, "pods": 3, "httproutes": 1, "grpcroutes": 1, "activities": 1, "jobs": 1,
		"events": 1}
	gotWatches, lists := map[string]int{}, 0
	var after []string
	for _, r := range reqs {
		switch {
		case (r.Verb == "watch" || r.Verb == "list") && r.RequestReceivedTimestamp.After(served.Add(5*time.Minute)):
			// client-go ends a watch after 5 to 10 minutes and starts
			// another: no page's doing.
			continue
		case r.RequestReceivedTimestamp.After(served):
			req := r.Verb + " " + r.resource() + subresource(r)
			if r.ResponseStatus.Code != http.StatusOK {
				req += fmt.Sprintf(" %d", r.ResponseStatus.Code)
			}
			after = append(after, req)
			continue
		case r.Verb == "list":
			lists++
		case r.Verb == "watch":
			gotWatches[r.resource()]++
		default:
			t.Errorf("the dashboard sent %s %s before it served", r.Verb, r.RequestURI)
		}
	}
	if diff := cmp.Diff(wantWatches, gotWatches); diff != "" || lists > len(wantWatches)+2 {
		t.Errorf("the dashboard's watches by resource (-want +got):\n%s%d lists (at most one per watch)", diff, lists)
	}
	want := []string{"get appservices", "patch appservices/status 403", "get appservices", "patch appservices/status", "get appservices", "patch appservices/status"}
	if !cmp.Equal(want, after) {
		t.Errorf("the dashboard's requests once it served three pages (-want +got):\n%s", cmp.Diff(want, after))
	}
	t.Logf("dashboard: %d lists and %d watches before it served, then %v", lists, len(reqs)-lists-len(after), after)
}

// waitAllowed waits until the API server's authorizer lets the user do
// each of what in the namespace: a RoleBinding just made (and the
// ClusterRole it binds) reaches the authorizer's caches a moment later,
// and a request made before then is refused.
func waitAllowed(t *testing.T, user, ns string, what ...authorizationv1.ResourceAttributes) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		for _, attrs := range what {
			attrs.Namespace = ns
			r, err := kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs},
			}, metav1.CreateOptions{})
			switch {
			case err != nil:
				return err
			case !r.Status.Allowed:
				return fmt.Errorf("%s may not %s %s %s/%s yet: %s", user, attrs.Verb, attrs.Group, attrs.Resource, attrs.Subresource, r.Status.Reason)
			}
		}
		return nil
	})
}

// promoteAttrs is the request a promotion or an abort makes: a patch of
// the AppService's status, which appservice-releaser grants.
var promoteAttrs = authorizationv1.ResourceAttributes{Verb: "patch", Group: appv1.SchemeGroupVersion.Group, Resource: "appservices", Subresource: "status"}

// dashboardReads are what the dashboard (and kubectl appservice get
// --watch, which shares its informers) lists and watches in a namespace:
// what its user must be allowed before it starts.
func dashboardReads() []authorizationv1.ResourceAttributes {
	var reads []authorizationv1.ResourceAttributes
	for _, r := range []authorizationv1.ResourceAttributes{
		{Group: appv1.SchemeGroupVersion.Group, Resource: "appservices"},
		{Group: appv1.SchemeGroupVersion.Group, Resource: "activities"},
		{Group: "apps", Resource: "deployments"},
		{Group: "apps", Resource: "replicasets"},
		{Resource: "pods"},
		{Resource: "events"},
		{Group: "batch", Resource: "jobs"},
		{Group: "gateway.networking.k8s.io", Resource: "httproutes"},
		{Group: "gateway.networking.k8s.io", Resource: "grpcroutes"},
	} {
		for _, verb := range []string{"list", "watch"} {
			r.Verb = verb
			reads = append(reads, r)
		}
	}
	return reads
}

func subresource(r pluginRequest) string {
	if r.ObjectRef != nil && r.ObjectRef.Subresource != "" {
		return "/" + r.ObjectRef.Subresource
	}
	return ""
}

// isSubsequence: want's items appear in got, in order.
func isSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// browser is a headless Chromium and what its pages did that they should
// not: a dialog opened, an exception thrown.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	bad  []string
	tabs []context.Context
}

func newBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	// The flags this machine's closed network needs: no background
	// connections, no component updates, no QUIC.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.WindowSize(1280, 800))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil {
		cancelAlloc()
		t.Fatalf("start %s: %v", chromium, err)
	}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return &browser{ctx: ctx}
}

// tab opens url in a new tab, watching for dialogs and exceptions.
func (b *browser) tab(t *testing.T, url string) context.Context {
	t.Helper()
	ctx, _ := chromedp.NewContext(b.ctx)
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			b.note(fmt.Sprintf("a %s dialog opened on %s: %q", e.Type, url, e.Message))
			// Dismissed, or the page would stall.
			go func() { _, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{}) }()
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			b.note(fmt.Sprintf("an exception on %s at %s:%d: %s", url, d.URL, d.LineNumber+1, msg))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	b.do(t, ctx, chromedp.Navigate(url))
	b.tabs = append(b.tabs, ctx)
	return ctx
}

func (b *browser) note(s string) {
	b.mu.Lock()
	b.bad = append(b.bad, s)
	b.mu.Unlock()
}

// noScriptRan: no dialog opened and no exception was thrown in any tab,
// and no injected script set window.__xss.
func (b *browser) noScriptRan(t *testing.T) {
	t.Helper()
	for _, ctx := range b.tabs {
		if xss := run(t, ctx, chromedp.Evaluate[string](`String(window.__xss)`)); xss != "undefined" {
			t.Errorf("an injected script ran: window.__xss is %s", xss)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.bad {
		t.Error(s)
	}
}

// do runs the actions in the tab, within a minute.
func (b *browser) do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		t.Fatalf("chromedp: %v\n%s", err, b.describe(ctx))
	}
}

// describe is what the tab shows, and what went wrong in the tabs, for a
// failure's message.
func (b *browser) describe(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.documentElement.outerHTML`))
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("the tab (%v): %s\nnoted: %q", err, shown, b.bad)
}

// run runs the action in the tab, within 3 minutes, and returns its value.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("chromedp: %v", err)
	}
	return v
}

// recordPage installs the page's recorder: what it drew, each time it drew
// (window.__rec), every notice it showed (window.__notices: they clear
// after a while), and a marker a reload would lose.
func recordPage(t *testing.T, ctx context.Context) {
	t.Helper()
	const recorder = `(() => {
	  window.__marker = "kept";
	  window.__rec = [];
	  const v = document.getElementById("view");
	  const snap = () => {
	    const route = document.getElementById("fact-route");
	    const r = { step: v.dataset.step || "", phase: v.dataset.phase || "", gated: !!document.querySelector('button[data-action="promote"]:not([disabled])') &&
	      (document.getElementById("canary-line") || {}).textContent.includes("waits at its gate"), route: route ? route.textContent : "" };
	    const last = window.__rec[window.__rec.length - 1];
	    if (!last || JSON.stringify(last) !== JSON.stringify(r)) window.__rec.push(r);
	  };
	  snap();
	  new MutationObserver(snap).observe(v, { childList: true, subtree: true, attributes: true, characterData: true });
	  window.__notices = [];
	  const n = document.getElementById("notice");
	  new MutationObserver(() => { if (n.textContent) window.__notices.push(n.textContent); }).observe(n, { childList: true, subtree: true });
	  return true;
	})()`
	if !run(t, ctx, chromedp.Evaluate[bool](recorder)) {
		t.Fatal("the recorder did not start")
	}
}

// waitRecorded waits until the recording has a drawing for which cond
// (JavaScript of r) holds.
func (b *browser) waitRecorded(t *testing.T, ctx context.Context, what, cond string, timeout time.Duration) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := chromedp.Do(c, chromedp.Poll[chromedp.Void](`window.__rec.some(r => `+cond+`)`, chromedp.WithPollingTimeout(timeout))); err != nil {
		rec, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.__rec)`))
		t.Fatalf("the page never drew %s (%v); it drew %s", what, err, rec)
	}
}

// waitNotice waits until the page has shown a notice that holds s.
func (b *browser) waitNotice(t *testing.T, ctx context.Context, s string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(c, chromedp.Poll[chromedp.Void](fmt.Sprintf(`window.__notices.some(n => n.includes(%q))`, s),
		chromedp.WithPollingTimeout(time.Minute))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.__notices)`))
		t.Fatalf("the page never showed a notice with %q (%v); it showed %s", s, err, got)
	}
}

// waitText waits until the element's text holds s.
func (b *browser) waitText(t *testing.T, ctx context.Context, sel, s string) {
	t.Helper()
	js := fmt.Sprintf(`(document.querySelector(%q) || {}).textContent?.includes(%q) || false`, sel, s)
	c, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(c, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(time.Minute))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
		t.Fatalf("%s never showed %q (%v): %q", sel, s, err, got)
	}
}

// hostileSite serves, on another port of 127.0.0.1, a page whose form
// posts to target at once; it returns its URL.
func hostileSite(t *testing.T, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id=f method=post action=%q></form><script>document.getElementById("f").submit()</script>`, target)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String() + "/"
}

// hostileName serves the dashboard's page in-process with an AppService
// whose name and messages hold markup (the API server refuses such a
// name; the page must not care), and checks the browser shows them as
// text.
func hostileName(t *testing.T, b *browser) {
	t.Helper()
	const markup = `<img src=x onerror="window.__xss=3">`
	as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: markup, Namespace: "shop", UID: "u"},
		Spec: appv1.AppServiceSpec{Image: "nginx</td><script>window.__xss=4</script>", Canary: &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 10}}}},
		Status: appv1.AppServiceStatus{Conditions: []metav1.Condition{{Type: appv1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "X",
			Message: "<script>window.__xss=5</script>"}}}}
	src := fixedSource{list: plug.NewListView([]appv1.AppService{*as}, "shop", time.Now()),
		detail: plug.NewDetailView(&plug.Snapshot{AppService: as}, nil, time.Now())}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := dashboard.New(src, l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Serve(ctx, l) }()
	base := "http://" + l.Addr().String()
	tab := b.tab(t, base+"/?token="+s.Token())
	b.waitText(t, tab, "table.list", markup)
	b.do(t, tab, chromedp.Navigate(base+"/appservices/shop/"+strings.NewReplacer("<", "%3C", ">", "%3E", `"`, "%22", " ", "%20").Replace(markup)))
	b.waitText(t, tab, "h1", markup)
	b.waitText(t, tab, "#fact-message", "<script>window.__xss=5</script>")
	b.waitText(t, tab, "#fact-image", "nginx</td><script>window.__xss=4</script>")
}

// fixedSource is a dashboard.Source of fixed views.
type fixedSource struct {
	list   plug.ListView
	detail plug.DetailView
}

func (f fixedSource) View(_, name string) (any, error) {
	if name == "" {
		return f.list, nil
	}
	return f.detail, nil
}

func (fixedSource) Act(context.Context, string, string, string) (string, error) {
	return "", &dashboard.StatusError{Status: http.StatusForbidden, Err: fmt.Errorf("read-only")}
}

func (fixedSource) Changed() <-chan struct{} { return nil }

// saveScreenshot keeps the page at its gate: in _output/dashboard, and
// with APPSERVICE_UPDATE_SCREENSHOT=1 as the docs' picture.
func saveScreenshot(t *testing.T, png []byte) {
	t.Helper()
	dir := filepath.Join(repoRoot, "_output", "dashboard")
	files := []string{filepath.Join(dir, "dashboard-gate.png")}
	if os.Getenv("APPSERVICE_UPDATE_SCREENSHOT") == "1" {
		files = append(files, filepath.Join(repoRoot, "docs", "images", "dashboard-gate.png"))
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("the page at its gate: %s", f)
	}
}
