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
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/appservice-controller/internal/dashboard"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The dashboard's views: what its page shows, as JSON, in the words and
// symbols of get and list. They are built from the caches at each push,
// and hold data only: the page makes text of every string.

// ListView is the page of a namespace's AppServices (every namespace's
// when Namespace is empty).
type ListView struct {
	Namespace string     `json:"namespace"`
	Items     []ListItem `json:"items"`
}

// ListItem is one AppService in the list: list's columns, and the message
// that explains its state.
type ListItem struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	State     State  `json:"state"`
	Symbol    string `json:"symbol"`
	Step      string `json:"step"`
	Weight    string `json:"weight"`
	Age       string `json:"age"`
	Message   string `json:"message,omitempty"`
}

// DetailView is the page of one AppService.
type DetailView struct {
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	State     State        `json:"state"`
	Symbol    string       `json:"symbol"`
	Message   string       `json:"message,omitempty"`
	Image     string       `json:"image"`
	Replicas  string       `json:"replicas"`
	Canary    *CanaryView  `json:"canary,omitempty"`
	Route     string       `json:"route"`
	Analysis  []MetricView `json:"analysis,omitempty"`
	// Deliveries are the last release's edges, each to each destination
	// that hears of it (status.notifications).
	Deliveries []DeliveryView  `json:"deliveries,omitempty"`
	Tree       []TreeRow       `json:"tree"`
	Conditions []ConditionView `json:"conditions,omitempty"`
	Events     []EventView     `json:"events,omitempty"`
	// EventsProblem says why no Events are shown ("": they are).
	EventsProblem string `json:"eventsProblem,omitempty"`
	// Actions are the buttons: enabled, or why not.
	Actions []ActionView `json:"actions,omitempty"`
}

// CanaryView is where the canary stands.
type CanaryView struct {
	// Line is get's Canary line: "step 2 of 3, 50% of the traffic by
	// route, waits at its gate (...)".
	Line  string `json:"line"`
	Phase string `json:"phase"`
	Hash  string `json:"hash,omitempty"`
	// Traffic is the share and how it is carried, while one runs.
	Traffic string     `json:"traffic,omitempty"`
	Steps   []StepView `json:"steps"`
	// PauseUntil is when the step's pause ends (RFC 3339), while it
	// pauses: the page counts down to it.
	PauseUntil string `json:"pauseUntil,omitempty"`
	Gated      bool   `json:"gated,omitempty"`
	Request    string `json:"request,omitempty"`
	Stable     string `json:"stable,omitempty"`
	// Templates are the analysis's templates as the canary pinned them
	// (get's Analysis line).
	Templates string `json:"templates,omitempty"`
}

// DeliveryView is an edge's delivery to a NotificationDestination.
type DeliveryView struct {
	Edge        string `json:"edge"`
	Destination string `json:"destination"`
	Result      string `json:"result"`
	Attempts    int32  `json:"attempts"`
	// Age is the edge's; When when it was delivered or given up.
	Age     string `json:"age"`
	When    string `json:"when,omitempty"`
	Message string `json:"message,omitempty"`
}

// StepView is one step; Current marks the canary's.
type StepView struct {
	Number  int      `json:"number"`
	Weight  int32    `json:"weight"`
	Mirror  int32    `json:"mirror,omitempty"`
	Pause   string   `json:"pause,omitempty"`
	Gate    bool     `json:"gate,omitempty"`
	Tests   []string `json:"tests,omitempty"`
	Current bool     `json:"current,omitempty"`
	Passed  bool     `json:"passed,omitempty"`
}

// MetricView is an analysis metric's last measurement and its bounds.
type MetricView struct {
	Name     string `json:"name"`
	Symbol   string `json:"symbol"`
	Result   string `json:"result"`
	Value    string `json:"value"`
	Bounds   string `json:"bounds"`
	Failures int32  `json:"failures"`
	Errors   int32  `json:"errors"`
	Changed  string `json:"changed"`
	Message  string `json:"message,omitempty"`
}

// TreeRow is a row of get's tree: Depth 0 the AppService, 1 its children
// (Deployments, test Activities, the HTTPRoute), 2 ReplicaSets and Jobs,
// 3 Pods.
type TreeRow struct {
	Depth  int    `json:"depth"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	Age    string `json:"age"`
	Info   string `json:"info,omitempty"`
}

// ConditionView is a status condition.
type ConditionView struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// EventView is an Event of the AppService.
type EventView struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Count   int32  `json:"count"`
	Age     string `json:"age"`
}

// ActionView is a button: the request it sends, whether it applies now,
// and why not (the command's refusal).
type ActionView struct {
	Action  string `json:"action"`
	Label   string `json:"label"`
	Enabled bool   `json:"enabled"`
	Why     string `json:"why,omitempty"`
}

// recentEvents is how many Events the page shows, the latest first.
const recentEvents = 10

// actions are the buttons, by the dashboard's names.
type actionButton struct {
	name, label string
	action      appv1.CanaryAction
}

var actions = []actionButton{
	{verbPromote, "Promote", appv1.CanaryPromote},
	{"promote-full", "Promote to the end", appv1.CanaryPromoteFull},
	{"abort", "Abort", appv1.CanaryAbort},
	{"retry", "Retry", appv1.CanaryRetry},
}

// NewListView is the list of the AppServices (of namespace, or of all
// when it is empty).
func NewListView(items []appv1.AppService, namespace string, now time.Time) ListView {
	v := ListView{Namespace: namespace, Items: []ListItem{}}
	rows := Rows(items, true, now)[1:]
	byKey := map[string]*appv1.AppService{}
	for i := range items {
		byKey[items[i].Namespace+"/"+items[i].Name] = &items[i]
	}
	for _, r := range rows {
		as := byKey[r[0]+"/"+r[1]]
		state := StateOf(as)
		v.Items = append(v.Items, ListItem{Namespace: r[0], Name: r[1], State: state, Symbol: state.Symbol(), Step: r[3],
			Weight: r[4], Age: r[5], Message: stateMessage(as)})
	}
	return v
}

// NewDetailView is the page of the snapshot's AppService, with its
// Events.
func NewDetailView(s *Snapshot, events []corev1.Event, now time.Time) DetailView {
	as := s.AppService
	state := StateOf(as)
	v := DetailView{
		Namespace: as.Namespace, Name: as.Name, State: state, Symbol: state.Symbol(), Message: stateMessage(as),
		Image: as.Spec.Image, Route: routeLine(as, s), Replicas: replicasLine(as), Tree: []TreeRow{},
	}
	c := CanaryOf(as)
	if as.Spec.Canary != nil {
		v.Canary = canaryView(as, c, now)
		for _, a := range actions {
			av := ActionView{Action: a.name, Label: a.label, Enabled: true}
			if _, _, err := BuildRequest(as, a.action); err != nil {
				av.Enabled, av.Why = false, err.Error()
			}
			v.Actions = append(v.Actions, av)
		}
	}
	if st := as.Status.Canary; st != nil {
		v.Analysis = metricViews(as, st.Analysis, now)
	}
	v.Deliveries = deliveryViews(as.Status.Notifications, now)
	for _, r := range treeRows(s, state, c, now) {
		v.Tree = append(v.Tree, TreeRow{Depth: r.depth, Name: r.name, Kind: r.kind, Status: r.status, Age: r.age, Info: r.info})
	}
	for _, cond := range sortedConditions(as.Status.Conditions) {
		v.Conditions = append(v.Conditions, ConditionView{Type: cond.Type, Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message})
	}
	v.Events = eventViews(as, events, now)
	return v
}

func canaryView(as *appv1.AppService, c Canary, now time.Time) *CanaryView {
	v := &CanaryView{Line: canaryLine(as, c, now), Phase: canaryPhases[c.Phase], Hash: c.Hash, Gated: c.gated(as)}
	if c.Phase == CanaryRunning || c.Phase == CanaryPromoting || c.Phase == CanarySwitched {
		v.Traffic = c.Traffic()
	}
	if left := c.PauseLeft(as, now); left > 0 {
		v.PauseUntil = now.Add(left).UTC().Format(time.RFC3339)
	}
	if st := as.Status.Canary; st != nil {
		v.Stable = st.StableTemplateHash
		if len(st.Templates) > 0 {
			v.Templates = pinsLine(st.Templates)
		}
		if st.Request != nil {
			v.Request = requestLine(st.Request)
		}
	}
	for i, s := range as.Spec.Canary.Steps {
		sv := StepView{Number: i + 1, Weight: s.Weight, Mirror: s.Mirror, Gate: s.Gate}
		if s.PauseSeconds > 0 {
			sv.Pause = shortDuration(time.Duration(s.PauseSeconds) * time.Second)
		}
		for _, t := range s.Tests {
			sv.Tests = append(sv.Tests, t.Name)
		}
		switch c.Phase {
		case CanaryRunning:
			sv.Current, sv.Passed = int32(i) == c.Step, int32(i) < c.Step
		case CanaryPromoting, CanarySwitched:
			sv.Passed = true
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

var canaryPhases = map[CanaryPhase]string{
	NoCanary: "none", CanaryRunning: "running", CanaryPromoting: "promoting", CanarySwitched: "switched", CanaryAborted: "aborted",
	CanaryAwaitingRoute:    "awaiting-route",
	CanaryAwaitingAnalysis: "awaiting-analysis",
}

// metricViews are the analysis' metrics with their bounds from the spec.
func metricViews(as *appv1.AppService, ms []appv1.MetricStatus, now time.Time) []MetricView {
	bounds := map[string]string{}
	if a := as.Spec.Canary.Analysis; a != nil {
		for _, m := range a.Metrics {
			bounds[m.Name] = boundsText(m.Min, m.Max)
		}
	}
	if st := as.Status.Canary; st != nil {
		// The templates' metrics, as the canary pinned them.
		for _, p := range st.Templates {
			for _, m := range p.Metrics {
				bounds[m.Name] = boundsText(m.Min, m.Max)
			}
		}
	}
	out := make([]MetricView, 0, len(ms))
	for _, m := range ms {
		out = append(out, MetricView{Name: m.Name, Symbol: metricSymbol(m.Result), Result: string(m.Result), Value: orNone(m.Value),
			Bounds: cmp.Or(bounds[m.Name], "-"), Failures: m.Failures, Errors: m.Errors, Changed: age(m.Time.Time, now) + " ago", Message: m.Message})
	}
	return out
}

// eventViews are the AppService's latest Events (of this object, not of
// an earlier one of its name), the latest first.
func eventViews(as *appv1.AppService, events []corev1.Event, now time.Time) []EventView {
	var mine []corev1.Event
	for _, e := range events {
		if e.InvolvedObject.UID == as.UID {
			mine = append(mine, e)
		}
	}
	last := func(e corev1.Event) time.Time {
		switch {
		case !e.LastTimestamp.IsZero():
			return e.LastTimestamp.Time
		case e.Series != nil:
			return e.Series.LastObservedTime.Time
		case !e.EventTime.IsZero():
			return e.EventTime.Time
		}
		return e.CreationTimestamp.Time
	}
	slices.SortStableFunc(mine, func(a, b corev1.Event) int { return last(b).Compare(last(a)) })
	out := make([]EventView, 0, min(len(mine), recentEvents))
	for _, e := range mine[:min(len(mine), recentEvents)] {
		out = append(out, EventView{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1), Age: age(last(e), now)})
	}
	return out
}

// dashboardSource is the dashboard's data and requests.
type dashboardSource struct {
	c         *Clients
	nw        *namespaceWatch
	namespace string
	now       func() time.Time
	changed   chan struct{}
}

var _ dashboard.Source = (*dashboardSource)(nil)

// forward passes the caches' changes on to the dashboard.
func (d *dashboardSource) forward(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.nw.w.changed:
		}
		select {
		case d.changed <- struct{}{}:
		default:
		}
	}
}

func (d *dashboardSource) Changed() <-chan struct{} { return d.changed }

// inScope refuses a namespace the dashboard does not watch.
func (d *dashboardSource) inScope(ns string) error {
	if d.namespace != metav1.NamespaceAll && ns != d.namespace {
		return &dashboard.StatusError{Status: http.StatusNotFound,
			Err: fmt.Errorf("this dashboard shows namespace %q, not %q (kubectl appservice dashboard -n %s)", d.namespace, ns, ns)}
	}
	return nil
}

func (d *dashboardSource) View(ns, name string) (any, error) {
	if name == "" {
		if ns == "" {
			ns = d.namespace
		}
		if err := d.inScope(ns); err != nil {
			return nil, err
		}
		var items []appv1.AppService
		for _, as := range d.nw.appServices() {
			if ns == metav1.NamespaceAll || as.Namespace == ns {
				items = append(items, as)
			}
		}
		return NewListView(items, ns, d.now()), nil
	}
	if err := d.inScope(ns); err != nil {
		return nil, err
	}
	s := d.nw.snapshot(ns, name)
	if s == nil {
		return nil, &dashboard.StatusError{Status: http.StatusNotFound, Err: notFound(name, ns)}
	}
	events, problem := d.nw.eventsOf(ns, name)
	v := NewDetailView(s, events, d.now())
	v.EventsProblem = problem
	return v, nil
}

func (d *dashboardSource) Act(ctx context.Context, ns, name, action string) (string, error) {
	if err := d.inScope(ns); err != nil {
		return "", err
	}
	i := slices.IndexFunc(actions, func(a actionButton) bool { return a.name == action })
	if i < 0 {
		return "", &dashboard.StatusError{Status: http.StatusNotFound, Err: fmt.Errorf("unknown action %q", action)}
	}
	c := *d.c
	c.Namespace = ns
	done, err := c.sendRequest(ctx, name, actions[i].action)
	if err != nil {
		status := httpStatus[ExitCode(err)]
		if apierrors.IsConflict(err) {
			status = http.StatusConflict // it outlasted the retries
		}
		return "", &dashboard.StatusError{Status: status, Err: err}
	}
	return done, nil
}

// httpStatus is the answer to a refused request, by the command's exit
// code.
var httpStatus = map[int]int{
	ExitError: http.StatusBadGateway, ExitUsage: http.StatusBadRequest, ExitNotFound: http.StatusNotFound,
	ExitForbidden: http.StatusForbidden, ExitNotApplicable: http.StatusConflict,
}

// sortedConditions are the conditions, kstatus's first.
func sortedConditions(conds []metav1.Condition) []metav1.Condition {
	sorted := slices.Clone(conds)
	rank := func(t string) int {
		if i := slices.Index(conditionOrder, t); i >= 0 {
			return i
		}
		return len(conditionOrder)
	}
	slices.SortStableFunc(sorted, func(a, b metav1.Condition) int { return cmp.Compare(rank(a.Type), rank(b.Type)) })
	return sorted
}

// deliveryViews are the deliveries of st's edges, oldest first.
func deliveryViews(st *appv1.NotificationsStatus, now time.Time) []DeliveryView {
	if st == nil {
		return nil
	}
	var out []DeliveryView
	for _, e := range st.Edges {
		edge := string(e.Edge)
		if e.Step != nil {
			edge = fmt.Sprintf("%s (step %d of %d)", e.Edge, *e.Step+1, e.Steps)
		}
		for _, d := range e.Deliveries {
			dv := DeliveryView{Edge: edge, Destination: d.Destination, Result: string(d.Result), Attempts: d.Attempts,
				Age: shortDuration(now.Sub(e.Time.Time)), Message: d.Message}
			if d.Time != nil {
				dv.When = shortDuration(d.Time.Sub(e.Time.Time)) + " after"
			}
			out = append(out, dv)
		}
	}
	return out
}
