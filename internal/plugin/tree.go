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
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Snapshot is what get shows of an AppService: the objects as one read
// (or the watches' caches) had them.
type Snapshot struct {
	AppService  *appv1.AppService
	Deployments []appsv1.Deployment
	ReplicaSets []appsv1.ReplicaSet
	Pods        []corev1.Pod
	// Route is the AppService's HTTPRoute (nil: none).
	Route *gatewayv1.HTTPRoute
	// RouteProblem says why the route could not be read ("": it could).
	RouteProblem string
	// GRPCRoute is the AppService's GRPCRoute (nil: none), and
	// GRPCRouteProblem why it could not be read.
	GRPCRoute        *gatewayv1.GRPCRoute
	GRPCRouteProblem string
	// Activities are the AppService's canary's tests, Jobs and Pods
	// (among Pods) theirs and maybe other Activities'.
	Activities []appv1.Activity
	Jobs       []batchv1.Job
}

// Render writes get's view of the snapshot at now: the AppService's
// state, its canary, route, analysis and conditions, then the tree of its
// children. It has no blank line, so that get --watch's frames, separated
// by one, can be told apart.
func Render(w io.Writer, s *Snapshot, now time.Time) error {
	as := s.AppService
	state := StateOf(as)
	c := CanaryOf(as)
	var b strings.Builder
	field := func(name, value string) { fmt.Fprintf(&b, "%-13s%s\n", name+":", value) }

	field("Name", as.Name)
	field("Namespace", as.Namespace)
	field("Status", state.Symbol()+" "+string(state))
	if msg := stateMessage(as); msg != "" {
		field("Message", msg)
	}
	field("Image", as.Spec.Image)
	field("Replicas", replicasLine(as))
	if as.Spec.Canary != nil {
		field("Canary", canaryLine(as, c, now))
		if st := as.Status.Canary; st != nil {
			templates := "stable " + orNone(st.StableTemplateHash)
			if st.CanaryTemplateHash != "" {
				templates = "canary " + st.CanaryTemplateHash + ", " + templates
			}
			field("  Templates", templates)
			if len(st.Templates) > 0 {
				field("  Analysis", pinsLine(st.Templates))
			}
			if r := st.Request; r != nil {
				field("  Request", requestLine(r))
			}
		}
		field("  Steps", stepsLine(as, c))
		if n := as.Status.Notifications; n != nil && len(n.Edges) > 0 {
			field("  Notifications", notificationsLine(n))
		}
	}
	field("Route", routeLine(as, s))
	if st := as.Status.Canary; st != nil && len(st.Analysis) > 0 {
		b.WriteString("Analysis:\n")
		renderAnalysis(&b, st.Analysis, now)
	}
	if len(as.Status.Conditions) > 0 {
		b.WriteString("Conditions:\n")
		renderConditions(&b, as.Status.Conditions)
	}
	renderTree(&b, s, state, c, now)
	// The tables pad an empty last cell: no trailing spaces.
	lines := strings.SplitAfter(b.String(), "\n")
	for i, l := range lines {
		if trimmed := strings.TrimRight(l, " \n"); trimmed != strings.TrimSuffix(l, "\n") {
			lines[i] = trimmed + "\n"
		}
	}
	_, err := io.WriteString(w, strings.Join(lines, ""))
	return err
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func desiredReplicas(as *appv1.AppService) int32 {
	switch {
	case as.Spec.Suspend != nil && *as.Spec.Suspend:
		return 0
	case as.Status.Replicas > 0 && as.Spec.Autoscaling != nil:
		return as.Status.Replicas
	case as.Spec.Size != nil:
		return *as.Spec.Size
	}
	return 1
}

// stateMessage is the message of the condition that explains the state:
// Stalled's when True, else Reconciling's when True, else Ready's when
// False.
func stateMessage(as *appv1.AppService) string {
	for _, t := range []string{appv1.ConditionStalled, appv1.ConditionReconciling} {
		if c := meta.FindStatusCondition(as.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return c.Message
		}
	}
	if c := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
		return c.Message
	}
	return ""
}

// canaryLine says where the canary stands: its step, weight, and what it
// waits for (its Pods, its pause, its gate, its analysis).
func canaryLine(as *appv1.AppService, c Canary, now time.Time) string {
	switch c.Phase {
	case CanaryRunning:
		head := fmt.Sprintf("step %s, %s", c.StepString(), c.Traffic())
		step := as.Spec.Canary.Steps[c.Step]
		switch left := c.PauseLeft(as, now); {
		case c.gated(as):
			return head + ", waits at its gate (kubectl appservice promote " + as.Name + ")"
		case !c.Routed && len(c.Testing) > 0:
			return fmt.Sprintf("%s, runs its test %s before its weight (then a %d%% step)", head, strings.Join(c.Testing, ", "), step.Weight)
		case !c.Routed:
			return fmt.Sprintf("%s, waits for its Pods (then a %d%% step)", head, step.Weight)
		case left > 0:
			then := ""
			if step.Gate {
				then = ", then its gate"
			}
			until := c.Since.Add(time.Duration(step.PauseSeconds) * time.Second).UTC().Format(time.RFC3339)
			return fmt.Sprintf("%s, pauses: %s left (until %s)%s", head, shortDuration(left), until, then)
		}
		if what := controllerWhat(as); what != "" {
			return head + ", " + what
		}
		return head
	case CanaryPromoting:
		return fmt.Sprintf("promoted, %s until the stable Pods all run it", c.Traffic())
	case CanarySwitched:
		if c.Weight < 100 {
			return "past its steps: its preview grows to full size, then the traffic switches to it"
		}
		if what := controllerWhat(as); what != "" {
			return fmt.Sprintf("switched, %s: %s", c.Traffic(), what)
		}
		return fmt.Sprintf("switched, %s", c.Traffic())
	case CanaryAwaitingRoute:
		return c.awaitingRoute()
	case CanaryAwaitingAnalysis:
		return awaitingAnalysis + c.Held
	case CanaryAborted:
		if c.SpecAbort {
			return "aborted: spec.canary.abort is true"
		}
		return "aborted (kubectl appservice retry " + as.Name + " starts it again)"
	}
	if c.SpecAbort {
		return "none: spec.canary.abort is true"
	}
	return "none"
}

// awaitingRouteAPI is where a canary held for the Gateway API stands.
const awaitingRouteAPI = "holds at its start, no step and no traffic: waits for its route (the cluster serves no HTTPRoutes)"

// awaitingRoute is what a canary held for its route waits for: the Gateway
// API, or a feature a Gateway's class does not support.
func (c Canary) awaitingRoute() string {
	if c.Unsupported != "" {
		return "holds at its start, no step and no traffic: its route needs what the Gateway does not support: " + c.Unsupported
	}
	return awaitingRouteAPI
}

// awaitingAnalysis, then why, is a canary held for its analysis's
// templates.
const awaitingAnalysis = "holds at its start, no step and no traffic: its analysis cannot be resolved: "

// controllerWhat is what the controller's message says the step does,
// after "...% of the traffic by ...: ".
func controllerWhat(as *appv1.AppService) string {
	c := meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionReconciling)
	if c == nil || c.Status != metav1.ConditionTrue {
		c = meta.FindStatusCondition(as.Status.Conditions, appv1.ConditionStalled)
	}
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	_, rest, ok := strings.Cut(c.Message, " of the traffic")
	if !ok {
		return ""
	}
	_, what, ok := strings.Cut(rest, ": ")
	if !ok {
		return ""
	}
	return what
}

// stepsLine lists the steps, the current one marked, with their tests:
// "10% gate → [50% 30s +smoke] → 100%".
func stepsLine(as *appv1.AppService, c Canary) string {
	parts := make([]string, 0, len(as.Spec.Canary.Steps))
	for i, s := range as.Spec.Canary.Steps {
		p := fmt.Sprintf("%d%%", s.Weight)
		if s.Mirror > 0 {
			p += fmt.Sprintf(" mirror %d%%", s.Mirror)
		}
		if s.PauseSeconds > 0 {
			p += " " + shortDuration(time.Duration(s.PauseSeconds)*time.Second)
		}
		if s.Gate {
			p += " gate"
		}
		for _, t := range s.Tests {
			p += " +" + t.Name
		}
		if c.Phase == CanaryRunning && int32(i) == c.Step {
			p = "[" + p + "]"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " → ")
}

func requestLine(r *appv1.CanaryRequest) string {
	s := string(r.Action)
	if r.Step != nil {
		s += fmt.Sprintf(" step %d", *r.Step+1)
	}
	return s + " of canary " + r.TemplateHash
}

// routeLine is the route's backends and their shares of the traffic of the
// controller's first rule (it gives every rule the same), its mirror, and
// its sticky users' rule.
func routeLine(as *appv1.AppService, s *Snapshot) string {
	switch {
	case s.RouteProblem != "":
		return s.RouteProblem
	case s.Route == nil && as.Spec.HTTPRoute == nil && (s.GRPCRoute != nil || as.Spec.GRPCRoute != nil):
		// gRPC alone: its GRPCRoute's.
		switch {
		case s.GRPCRouteProblem != "":
			return s.GRPCRouteProblem
		case s.GRPCRoute == nil:
			return "GRPCRoute: none yet"
		}
		return "GRPCRoute: " + grpcRouteWeights(s.GRPCRoute)
	case s.Route == nil && as.Spec.HTTPRoute == nil:
		if as.Spec.Canary != nil && as.Spec.Canary.BlueGreen != nil {
			return "none (no spec.httpRoute): the switch is the Service's selector"
		}
		if as.Spec.Canary != nil {
			return "none (no spec.httpRoute): the canary's share is its Pods' behind the Service"
		}
		return "none (no spec.httpRoute)"
	case s.Route == nil:
		return "none yet"
	}
	return routeWeights(s.Route)
}

func routeWeights(r *gatewayv1.HTTPRoute) string {
	// The controller's first rule; a route written before it named its
	// rules has none named so: its first.
	i := slices.IndexFunc(r.Spec.Rules, func(rule gatewayv1.HTTPRouteRule) bool {
		return rule.Name != nil && string(*rule.Name) == children.RuleName(0, "")
	})
	if i < 0 && len(r.Spec.Rules) > 0 && r.Spec.Rules[0].Name == nil {
		i = 0
	}
	if i < 0 || len(r.Spec.Rules[i].BackendRefs) == 0 {
		return "no backends"
	}
	rule := r.Spec.Rules[i]
	refs := make([]gatewayv1.BackendRef, 0, len(rule.BackendRefs))
	for _, ref := range rule.BackendRefs {
		refs = append(refs, ref.BackendRef)
	}
	parts := backendShares(refs)
	for _, f := range rule.Filters {
		if m := f.RequestMirror; m != nil && f.Type == gatewayv1.HTTPRouteFilterRequestMirror {
			parts = append(parts, mirrorPart(m))
		}
	}
	if slices.ContainsFunc(r.Spec.Rules, func(rule gatewayv1.HTTPRouteRule) bool {
		return rule.Name != nil && string(*rule.Name) == children.RuleName(0, "sticky")
	}) {
		parts = append(parts, "sticky users to the canary")
	}
	return strings.Join(parts, ", ")
}

// grpcRouteWeights is routeWeights of a GRPCRoute: the backends of the
// controller's first rule with their shares, and its mirror.
func grpcRouteWeights(r *gatewayv1.GRPCRoute) string {
	i := slices.IndexFunc(r.Spec.Rules, func(rule gatewayv1.GRPCRouteRule) bool {
		return rule.Name != nil && string(*rule.Name) == children.RuleName(0, "")
	})
	if i < 0 || len(r.Spec.Rules[i].BackendRefs) == 0 {
		return "no backends"
	}
	rule := r.Spec.Rules[i]
	refs := make([]gatewayv1.BackendRef, 0, len(rule.BackendRefs))
	for _, ref := range rule.BackendRefs {
		refs = append(refs, ref.BackendRef)
	}
	parts := backendShares(refs)
	for _, f := range rule.Filters {
		if m := f.RequestMirror; m != nil && f.Type == gatewayv1.GRPCRouteFilterRequestMirror {
			parts = append(parts, mirrorPart(m))
		}
	}
	return strings.Join(parts, ", ")
}

// backendShares is each backend's name and share of the weights, as "web
// 90%".
func backendShares(refs []gatewayv1.BackendRef) []string {
	total := int32(0)
	for _, ref := range refs {
		total += backendWeight(ref)
	}
	parts := make([]string, 0, len(refs))
	for _, ref := range refs {
		share := int32(0)
		if total > 0 {
			share = backendWeight(ref) * 100 / total
		}
		parts = append(parts, fmt.Sprintf("%s %d%%", ref.Name, share))
	}
	return parts
}

// mirrorPart says a mirror filter: "a copy of 20% to web-canary".
func mirrorPart(m *gatewayv1.HTTPRequestMirrorFilter) string {
	percent := int32(100)
	if m.Percent != nil {
		percent = *m.Percent
	}
	return fmt.Sprintf("a copy of %d%% to %s", percent, m.BackendRef.Name)
}

// backendWeight is a backendRef's weight, 1 when unset (the Gateway API's
// default).
func backendWeight(ref gatewayv1.BackendRef) int32 {
	if ref.Weight == nil {
		return 1
	}
	return *ref.Weight
}

// metricSymbol is a measurement's symbol: passed, failed, or neither (no
// data, an error).
func metricSymbol(r appv1.MetricResult) string {
	switch r {
	case appv1.MetricPassed:
		return symbolHealthy
	case appv1.MetricFailed:
		return symbolFailed
	}
	return symbolWarning
}

// replicasLine is get's Replicas line.
func replicasLine(as *appv1.AppService) string {
	return fmt.Sprintf("%d desired, %d updated, %d ready, %d available",
		desiredReplicas(as), as.Status.UpdatedReplicas, as.Status.ReadyReplicas, as.Status.AvailableReplicas)
}

func renderAnalysis(b *strings.Builder, ms []appv1.MetricStatus, now time.Time) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  METRIC\tRESULT\tVALUE\tFAILURES\tERRORS\tCHANGED\tMESSAGE")
	for _, m := range ms {
		fmt.Fprintf(tw, "  %s %s\t%s\t%s\t%d\t%d\t%s ago\t%s\n", metricSymbol(m.Result), m.Name, m.Result, orNone(m.Value), m.Failures, m.Errors,
			age(m.Time.Time, now), m.Message)
	}
	_ = tw.Flush()
}

// conditionOrder puts kstatus's conditions first.
var conditionOrder = []string{appv1.ConditionReady, appv1.ConditionReconciling, appv1.ConditionStalled}

func renderConditions(b *strings.Builder, conds []metav1.Condition) {
	sorted := sortedConditions(conds)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range sorted {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	_ = tw.Flush()
}

// row is one line of the tree.
type row struct {
	depth                   int
	last                    bool
	name, kind, status, age string
	info                    string
}

// treeRows are the tree's rows: the AppService, its Deployments with
// their ReplicaSets and Pods, its tests' Activities, its route.
func treeRows(s *Snapshot, state State, c Canary, now time.Time) []row {
	as := s.AppService
	info := ""
	switch c.Phase {
	case CanaryRunning:
		info = fmt.Sprintf("step %d/%d, %s", c.Step+1, c.Steps, c.ShortTraffic())
	case CanaryPromoting:
		info = fmt.Sprintf("promoting, %s", c.ShortTraffic())
	case CanarySwitched:
		info = fmt.Sprintf("switched, %s", c.ShortTraffic())
	case CanaryAborted:
		info = "canary aborted"
	}
	rows := []row{{name: as.Name, kind: "AppService", status: state.Symbol() + " " + string(state), age: age(as.CreationTimestamp.Time, now), info: info}}

	deployments := ownedDeployments(s)
	var kids [][]row
	for _, d := range deployments {
		kids = append(kids, deploymentRows(s, &d, now))
	}
	kids = append(kids, testRows(s, now)...)
	if s.Route != nil {
		kids = append(kids, []row{{depth: 1, name: s.Route.Name, kind: "HTTPRoute", status: routeStatus(s.Route.Status.RouteStatus),
			age: age(s.Route.CreationTimestamp.Time, now), info: routeWeights(s.Route)}})
	}
	if s.GRPCRoute != nil {
		kids = append(kids, []row{{depth: 1, name: s.GRPCRoute.Name, kind: "GRPCRoute", status: routeStatus(s.GRPCRoute.Status.RouteStatus),
			age: age(s.GRPCRoute.CreationTimestamp.Time, now), info: grpcRouteWeights(s.GRPCRoute)}})
	}
	for i, k := range kids {
		k[0].last = i == len(kids)-1
		rows = append(rows, k...)
	}
	return rows
}

func renderTree(b *strings.Builder, s *Snapshot, state State, c Canary, now time.Time) {
	rows := treeRows(s, state, c, now)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSTATUS\tAGE\tINFO")
	// open[d]: the branch at depth d goes on below (draw "│").
	var open []bool
	for _, r := range rows {
		prefix := ""
		if r.depth > 0 {
			for d := 1; d < r.depth; d++ {
				if open[d] {
					prefix += "│   "
				} else {
					prefix += "    "
				}
			}
			if r.last {
				prefix += "└── "
			} else {
				prefix += "├── "
			}
			open = append(open[:r.depth], !r.last)
		} else {
			open = []bool{false}
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\n", prefix, r.name, r.kind, r.status, r.age, r.info)
	}
	_ = tw.Flush()
}

// ownedDeployments are the AppService's stable and canary Deployments,
// the stable one first.
func ownedDeployments(s *Snapshot) []appsv1.Deployment {
	var out []appsv1.Deployment
	for _, name := range []string{s.AppService.Name, children.CanaryName(s.AppService)} {
		for _, d := range s.Deployments {
			if d.Name == name && controlledBy(&d, s.AppService.UID) {
				out = append(out, d)
			}
		}
	}
	return out
}

func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// deploymentRows are a Deployment's row (depth 1) and those of its
// ReplicaSets that have or want Pods (the newest at least), newest first,
// each with its Pods.
func deploymentRows(s *Snapshot, d *appsv1.Deployment, now time.Time) []row {
	role := "stable"
	switch {
	case d.Name != s.AppService.Name && children.BlueGreen(s.AppService):
		role = "preview"
	case d.Name != s.AppService.Name:
		role = "canary"
	}
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	image := ""
	if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
		image = " " + cs[0].Image
	}
	deployment := row{depth: 1, name: d.Name, kind: "Deployment", status: deploymentStatus(d), age: age(d.CreationTimestamp.Time, now),
		info: fmt.Sprintf("%s%s ready:%d/%d", role, image, d.Status.ReadyReplicas, desired)}

	var sets []appsv1.ReplicaSet
	for _, rs := range s.ReplicaSets {
		if controlledBy(&rs, d.UID) {
			sets = append(sets, rs)
		}
	}
	slices.SortFunc(sets, func(a, b appsv1.ReplicaSet) int { return cmp.Compare(revision(&b), revision(&a)) })
	shown := 0
	for i, rs := range sets {
		if i > 0 && replicasOf(&rs) == 0 && rs.Status.Replicas == 0 {
			continue
		}
		sets[shown] = rs
		shown++
	}
	sets = sets[:shown]
	rows := make([]row, 0, 1+2*len(sets))
	rows = append(rows, deployment)
	for i := range sets {
		rs := &sets[i]
		rows = append(rows, row{depth: 2, last: i == len(sets)-1, name: rs.Name, kind: "ReplicaSet", status: replicaSetStatus(rs),
			age: age(rs.CreationTimestamp.Time, now), info: fmt.Sprintf("revision:%d ready:%d/%d", revision(rs), rs.Status.ReadyReplicas, replicasOf(rs))})
		rows = append(rows, podRows(s, rs.UID, now, func(st podStatus) string {
			info := fmt.Sprintf("ready:%d/%d", st.ready, st.total)
			if st.restarts > 0 {
				info += fmt.Sprintf(" restarts:%d", st.restarts)
			}
			return info
		})...)
	}
	return rows
}

// podRows are the rows (depth 3) of the Pods the owner of this UID
// controls, by name, each with info about it.
func podRows(s *Snapshot, owner types.UID, now time.Time, info func(podStatus) string) []row {
	var pods []corev1.Pod
	for _, p := range s.Pods {
		if controlledBy(&p, owner) {
			pods = append(pods, p)
		}
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	rows := make([]row, 0, len(pods))
	for j := range pods {
		p := &pods[j]
		st := podState(p)
		rows = append(rows, row{depth: 3, last: j == len(pods)-1, name: p.Name, kind: "Pod", status: st.symbol + " " + st.reason,
			age: age(p.CreationTimestamp.Time, now), info: info(st)})
	}
	return rows
}

func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// revision is the Deployment's revision a ReplicaSet carries.
func revision(rs *appsv1.ReplicaSet) int64 {
	n, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
	return n
}

func deploymentStatus(d *appsv1.Deployment) string {
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return symbolFailed + " Degraded"
		}
	}
	st := d.Status
	switch {
	case d.Spec.Paused:
		return symbolPaused + " Paused"
	case desired == 0 && st.Replicas == 0:
		return symbolPaused + " ScaledDown"
	case st.ObservedGeneration >= d.Generation && st.Replicas == desired && st.UpdatedReplicas == desired && st.AvailableReplicas == desired:
		return symbolHealthy + " Healthy"
	}
	return symbolProgressing + " Progressing"
}

func replicaSetStatus(rs *appsv1.ReplicaSet) string {
	want, st := replicasOf(rs), rs.Status
	switch {
	case want == 0 && st.Replicas == 0:
		return symbolPaused + " ScaledDown"
	case st.Replicas == want && st.AvailableReplicas == want:
		return symbolHealthy + " Healthy"
	}
	return symbolProgressing + " Progressing"
}

// routeStatus is whether the route's Gateways accepted it.
func routeStatus(r gatewayv1.RouteStatus) string {
	accepted, refused := 0, 0
	for _, p := range r.Parents {
		switch c := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionAccepted)); {
		case c == nil:
		case c.Status == metav1.ConditionTrue:
			accepted++
		default:
			refused++
		}
	}
	switch {
	case refused > 0:
		return symbolWarning + " NotAccepted"
	case accepted > 0:
		return symbolHealthy + " Accepted"
	}
	return symbolProgressing + " Pending"
}

// podStatus is a Pod's state as kubectl get pods says it (its STATUS
// column), with the symbol for it.
type podStatus struct {
	symbol, reason string
	ready, total   int
	restarts       int32
}

const podRunning = string(corev1.PodRunning)

// failedReasons are the Pod states the tree marks failed.
var failedReasons = []string{"CrashLoopBackOff", "Error", "ImagePullBackOff", "ErrImagePull", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "OOMKilled", "Failed", "Evicted",
	"ContainerStatusUnknown", "StartError"}

// podState follows kubectl's printPod: the Pod's reason or phase, then
// an init container's or a container's waiting or terminated reason,
// Terminating while it is deleted.
func podState(p *corev1.Pod) podStatus {
	st := podStatus{reason: string(p.Status.Phase), total: len(p.Spec.Containers)}
	if p.Status.Reason != "" {
		st.reason = p.Status.Reason
	}
	initializing := initState(p, &st)
	if !initializing {
		running := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := p.Status.ContainerStatuses[i]
			st.restarts += c.RestartCount
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				st.reason = c.State.Waiting.Reason
			case c.State.Terminated != nil:
				st.reason = cmp.Or(c.State.Terminated.Reason, fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode))
			case c.Ready && c.State.Running != nil:
				running = true
				st.ready++
			}
		}
		if st.reason == "Completed" && running {
			st.reason = podRunning
		}
	}
	if p.DeletionTimestamp != nil {
		st.reason = "Terminating"
	}
	reason := strings.TrimPrefix(st.reason, "Init:")
	switch {
	case slices.Contains(failedReasons, reason) || strings.HasPrefix(reason, "ExitCode:"):
		st.symbol = symbolFailed
	case st.reason == podRunning && st.ready == st.total && st.restarts > 0:
		st.symbol = symbolWarning
	case st.reason == podRunning && st.ready == st.total, st.reason == "Succeeded", st.reason == "Completed":
		st.symbol = symbolHealthy
	default:
		st.symbol = symbolProgressing
	}
	return st
}

// initState is the state of the Pod's first init container that has
// not finished (a sidecar that started counts as finished), and whether
// there is one.
func initState(p *corev1.Pod, st *podStatus) bool {
	for i, c := range p.Status.InitContainerStatuses {
		st.restarts += c.RestartCount
		restartable := i < len(p.Spec.InitContainers) && p.Spec.InitContainers[i].RestartPolicy != nil &&
			*p.Spec.InitContainers[i].RestartPolicy == corev1.ContainerRestartPolicyAlways
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case restartable && c.Started != nil && *c.Started:
			continue
		case c.State.Terminated != nil:
			st.reason = "Init:" + cmp.Or(c.State.Terminated.Reason, fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode))
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			st.reason = "Init:" + c.State.Waiting.Reason
		default:
			st.reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		return true
	}
	return false
}

// age is how long ago t was, as kubectl says it (5m, 2d3h).
func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}

// shortDuration is d as kubectl says an age, to the second.
func shortDuration(d time.Duration) string {
	return duration.HumanDuration(d.Round(time.Second))
}

// testRows are the rows of the canary's tests, as its status records them,
// oldest first: each test's Activity (depth 1), its Job and the Job's Pod.
func testRows(s *Snapshot, now time.Time) [][]row {
	st := s.AppService.Status.Canary
	if st == nil {
		return nil
	}
	var out [][]row
	for _, rec := range st.Tests {
		i := slices.IndexFunc(s.Activities, func(a appv1.Activity) bool {
			return a.Name == rec.Activity && controlledBy(&a, s.AppService.UID)
		})
		if i < 0 {
			continue
		}
		act := &s.Activities[i]
		info := fmt.Sprintf("test %s, step %d", rec.Name, rec.Step+1)
		if act.Status.ExitCode != nil {
			info += fmt.Sprintf(", exit %d", *act.Status.ExitCode)
		}
		rows := []row{{depth: 1, name: act.Name, kind: "Activity", status: activityStatus(act, rec), age: age(act.CreationTimestamp.Time, now), info: info}}
		for _, j := range s.Jobs {
			if !controlledBy(&j, act.UID) {
				continue
			}
			rows = append(rows, row{depth: 2, name: j.Name, kind: "Job", status: jobStatus(&j), age: age(j.CreationTimestamp.Time, now)})
			rows = append(rows, podRows(s, j.UID, now, func(podStatus) string { return "" })...)
		}
		if len(rows) > 1 {
			rows[1].last = true
		}
		out = append(out, rows)
	}
	return out
}

// activityStatus is a test's Activity's phase, with a symbol; a test the
// canary stopped says so.
func activityStatus(act *appv1.Activity, rec appv1.CanaryTestStatus) string {
	switch {
	case rec.Phase == appv1.TestStopped:
		return symbolPaused + " Stopped"
	case act.Status.Prosta == appv1.ActivitySucceeded:
		return symbolHealthy + " Succeeded"
	case act.Status.Prosta == appv1.ActivityFailed:
		return symbolFailed + " Failed"
	case act.Status.Prosta == appv1.ActivityRunning:
		return symbolProgressing + " Running"
	}
	return symbolProgressing + " Pending"
}

// jobStatus is a Job's state: Complete, Failed, or Running.
func jobStatus(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			if c.Type == batchv1.JobComplete {
				return symbolHealthy + " Complete"
			}
			return symbolFailed + " Failed"
		}
	}
	return symbolProgressing + " Running"
}

// pinsLine is the analysis's templates as the canary pinned them: "kind
// name@digest", and the digest an edit since gave ("next canary: ...").
func pinsLine(pins []appv1.PinnedTemplate) string {
	parts := make([]string, len(pins))
	for i, p := range pins {
		parts[i] = string(p.Kind) + " " + p.Name + "@" + p.Digest
		if p.Latest != "" {
			parts[i] += " (edited since: the next canary runs @" + p.Latest + ")"
		}
	}
	return "templates pinned at the canary's start: " + strings.Join(parts, ", ")
}

// notificationsLine counts the deliveries of the last release's edges by
// result, with why the first owed or given up one is: "release abc-1: 5
// delivered, 1 owed (ops, Aborted: Secret x not found)".
func notificationsLine(st *appv1.NotificationsStatus) string {
	counts := map[appv1.DeliveryResult]int{}
	why := ""
	for _, e := range st.Edges {
		for _, d := range e.Deliveries {
			counts[d.Result]++
			if why == "" && d.Message != "" && d.Result != appv1.DeliveryDelivered {
				why = fmt.Sprintf(" (%s, %s: %s)", d.Destination, e.Edge, d.Message)
			}
		}
	}
	var parts []string
	for _, r := range []struct {
		result appv1.DeliveryResult
		word   string
	}{{appv1.DeliveryDelivered, "delivered"}, {appv1.DeliveryPending, "owed"}, {appv1.DeliveryFailed, "given up"}} {
		if n := counts[r.result]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r.word))
		}
	}
	return "release " + orNone(st.Release) + ": " + strings.Join(parts, ", ") + why
}
