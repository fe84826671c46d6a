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

package admission

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The generator. Each field is drawn from values an experienced user might
// write near the edges the API server checks (formats, ranges, lengths,
// units, combinations such as requests against limits, value against
// valueFrom, nodePort against serviceType, names across ports); now and then
// (bad) from values it refuses, in the proportions generate chooses: however
// many fields the spec has, both outcomes stay common, and a refused spec
// is often refused for one field alone.

// specRand is the generator's source of randomness for one spec.
type specRand struct {
	*rand.Rand
	badOdds int // one in badOdds draws of bad is true; 0: never
}

func pick[T any](r *specRand, values ...T) T { return values[r.IntN(len(values))] }

// bad reports whether this field gets a value from its invalid pool.
func bad(r *specRand) bool { return r.badOdds > 0 && r.IntN(r.badOdds) == 0 }

func generate(rng *rand.Rand) corpusCase {
	r := &specRand{Rand: rng}
	// A third of the specs draw no bad value; a third one in six fields or
	// so; a third have one group of fields only (besides the name and
	// image), with one bad draw in three: many pools mix good values with
	// bad, and in a spec with every field some other field would often
	// refuse it before a rule missing in the group is noticed.
	// The containers (11) twice as often as any other group: their rules
	// span the most fields.
	mode, focus := rng.IntN(3), min(1+rng.IntN(12), 11)
	group := func(g int) bool {
		switch {
		case mode == 1:
			r.badOdds = 6
		case mode == 2 && g == focus:
			r.badOdds = 3
		default:
			r.badOdds = 0
		}
		return mode != 2 || g == focus || g == 0
	}
	group(0)
	c := corpusCase{Name: pick(r, "app", "web-1", "a", strings.Repeat("x", 63), "nginx-app", "api")}
	if bad(r) {
		c.Name = pick(r, strings.Repeat("x", 64), "Upper", "1abc", "a-", "a.b")
	}
	s := &c.Spec
	if r.IntN(4) > 0 {
		s.Size = new(pick(r, int32(0), 1, 3, 100, 2147483647))
		if bad(r) {
			s.Size = new(pick(r, int32(-1), -2147483648))
		}
	}
	s.Image = pick(r, "nginx:1.27", "nginx", "registry.example.com:5000/team/app:v2", "nginx@sha256:"+strings.Repeat("ab", 32), "nginx:latest")
	if bad(r) {
		s.Image = pick(r, "", " nginx", "nginx ", "ngi nx", "nginx\t", strings.Repeat("i", 5000))
	}
	if r.IntN(4) == 0 {
		s.ImagePullPolicy = pick(r, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)
		if bad(r) {
			s.ImagePullPolicy = pick[corev1.PullPolicy](r, "always", "Sometimes")
		}
	}
	if group(1) {
		genCommand(r, s)
	}
	if group(2) {
		for _, probe := range []**corev1.Probe{&s.LivenessProbe, &s.ReadinessProbe, &s.StartupProbe} {
			if r.IntN(4) == 0 {
				*probe = genProbe(r)
			}
		}
	}
	if group(3) {
		genRollout(r, s)
	}
	if group(4) {
		genPodFields(r, s)
	}
	if group(5) {
		genVolumes(r, s)
	}
	if group(6) {
		genLifecycleAndSecurity(r, s)
	}
	if group(7) {
		genScheduling(r, s)
	}
	if group(8) {
		genChildren(r, s)
	}
	if group(9) {
		if r.IntN(2) == 0 {
			s.Resources = genResources(r)
		}
		for range r.IntN(4) {
			s.Envs = append(s.Envs, genEnv(r))
		}
		if r.IntN(4) == 0 {
			for range 1 + r.IntN(3) {
				s.EnvFrom = append(s.EnvFrom, genEnvFrom(r))
			}
		}
	}
	if group(10) {
		for i := range r.IntN(4) {
			s.Ports = append(s.Ports, genPort(r, i))
		}
		if r.IntN(3) == 0 {
			s.ServiceType = pick(r, corev1.ServiceTypeNodePort, corev1.ServiceTypeClusterIP, corev1.ServiceTypeLoadBalancer)
			if bad(r) {
				s.ServiceType = pick[corev1.ServiceType](r, corev1.ServiceTypeExternalName, "nodeport")
			}
		}
	}
	if group(11) {
		genContainers(r, c.Name, s)
	}
	s.Suspend = genSuspend(c)
	genGRPCRoute(&c, r.badOdds)
	s.Canary = genCanary(c, r.badOdds == 0)
	return c
}

// genCanary sets spec.canary on one spec with a route in three, and
// on one without in six (a canary by Pods; with tester headers, refused:
// testers need the route), with step weights and pauses in and out of
// bounds and too many steps now and then.
// Like genSuspend, it is drawn from a hash of the spec, not from the
// random source, so that every other field keeps its corpus values. In a
// clean spec (one that draws no bad value), the testers, the
// shrinkStable and the route's tools take only values the spec admits
// (genRouteTools), so that canaries by route with them are admitted, and
// their routes dry-run created, as often as the rest of the spec allows.
func genCanary(c corpusCase, clean bool) *appv1.Canary {
	spec, err := json.Marshal(c.Spec)
	if err != nil {
		panic(err) // a struct of the API's types always encodes
	}
	h := fnv.New64a()
	h.Write([]byte("canary"))
	h.Write([]byte(c.Name))
	h.Write(spec)
	x := h.Sum64()
	draw := func(n uint64) uint64 { v := x % n; x /= n; return v }
	routed := c.Spec.HTTPRoute != nil || c.Spec.GRPCRoute != nil
	if routed && draw(3) != 0 || !routed && draw(6) != 0 {
		return nil
	}
	canary := &appv1.Canary{Abort: draw(6) == 0}
	steps := 1 + draw(4)
	if draw(15) == 0 {
		steps = 21
	}
	for range steps {
		step := appv1.CanaryStep{Weight: int32(1 + draw(100)), PauseSeconds: int32(draw(4) * 30), Gate: draw(3) == 0}
		switch draw(25) {
		case 0:
			step.Weight = []int32{0, 101, -5}[draw(3)]
		case 1:
			step.PauseSeconds = []int32{-1, 86401}[draw(2)]
		}
		canary.Steps = append(canary.Steps, step)
	}
	canary.Analysis = genAnalysis(h.Sum64() ^ 0x9e3779b97f4a7c15)
	// Tester headers: names a rule's match may have too (in another case),
	// names that are not header names, empty values, more than fit.
	n := []int{0, 0, 1, 2, 3, 9}[draw(6)]
	if clean && (n > 3 || !routed) {
		n = 0
	}
	for i := range n {
		name := []string{"x-canary", "x-tester", "X-Env", "bad name", "x-qa"}[draw(5)]
		if n > 3 || name == "x-qa" || clean {
			name = fmt.Sprintf("x-qa-%d", i)
		}
		value := []string{"qa", "1", ""}[draw(3)]
		if clean && value == "" {
			value = "qa"
		}
		canary.TesterHeaders = append(canary.TesterHeaders, appv1.TesterHeader{Name: gatewayv1.HTTPHeaderName(name), Value: value})
	}
	canary.RollbackWindow = []int32{0, 0, 1, 3, 10, -1, 11}[draw(7)]
	canary.ShrinkStable = draw(4) == 0
	if clean {
		canary.RollbackWindow = max(0, min(canary.RollbackWindow, 10))
		canary.ShrinkStable = canary.ShrinkStable && !routed && c.Spec.Autoscaling == nil
	}
	genTests(h.Sum64()^0x7f4a7c159e3779b9, canary.Steps, false)
	genRouteTools(h.Sum64()^0x3c6ef372fe94f82b, canary, clean, c.Spec)
	genBlueGreen(h.Sum64()^0xa54ff53a5f1d36f1, canary, clean, false, c.Spec.HTTPRoute != nil)
	return canary
}

// genBlueGreen makes one canary in four a blue-green release, from its own
// draws (x): a preview's size and a scale-down delay in and out of bounds,
// anti-affinity one time in two. Steps of a weight, sticky users and a
// stable that shrinks are refused beside it, and drawn as they were; in a
// clean spec (clean) the steps' weights are 0 and neither of the others is
// set. Always: every canary is made one. A preview hostname one time in
// two, now and then not a hostname; in a clean spec only with the
// httpRoute (routed).
func genBlueGreen(x uint64, canary *appv1.Canary, clean, always, routed bool) {
	draw := drawer(x)
	if draw(4) != 0 && !always {
		return
	}
	bg := &appv1.BlueGreen{AntiAffinity: draw(2) == 0}
	if n := []int32{0, 1, 3, -1, -2}[draw(5)]; n != 0 {
		bg.PreviewReplicas = &n
	}
	if d := []int32{-2, 0, 30, 86400, 86401, -1}[draw(6)]; d != -2 {
		bg.ScaleDownDelaySeconds = &d
	}
	if draw(2) == 0 {
		bg.PreviewHostname = gatewayv1.Hostname([]string{"preview.example.com", "*.preview.example.com", "preview-1.example.com", "Bad_Host"}[draw(4)])
	}
	canary.BlueGreen = bg
	if clean && (!routed || bg.PreviewHostname == "Bad_Host") {
		bg.PreviewHostname = ""
	}
	if clean {
		if bg.PreviewReplicas != nil {
			bg.PreviewReplicas = new(max(1, *bg.PreviewReplicas))
		}
		if bg.ScaleDownDelaySeconds != nil {
			bg.ScaleDownDelaySeconds = new(max(0, min(*bg.ScaleDownDelaySeconds, 86400)))
		}
		for i := range canary.Steps {
			canary.Steps[i].Weight = 0
		}
		canary.Sticky, canary.ShrinkStable = nil, false
	}
}

// genRouteTools gives a step in four a mirror (now and then out of
// bounds, or at weight 0), and a canary in three a sticky cookie (its name
// now and then empty, too long or not a token, its max age out of bounds),
// from their own draws (x), so that the other generators' draws stay as
// they were. Whether the spec has the route they need is the spec's draw.
// The routes a sticky canary has no room in are regression cases
// (testdata). In a clean spec (clean) they take only values spec admits:
// a mirror in bounds and only with a route, a weight of 0 only beside a
// mirror, a sticky cookie only with the httpRoute, named and kept in
// bounds; the same draws are made, so the other draws stay as they were.
func genRouteTools(x uint64, canary *appv1.Canary, clean bool, spec appv1.AppServiceSpec) {
	draw := func(n uint64) uint64 { v := x % n; x /= n; return v }
	routed := spec.HTTPRoute != nil || spec.GRPCRoute != nil
	for i := range canary.Steps {
		if draw(4) != 0 {
			continue
		}
		mirror, zero := []int32{1, 20, 50, 100, 0, 101}[draw(6)], draw(3) == 0
		if clean && (!routed || mirror == 0 || mirror > 100) {
			continue
		}
		canary.Steps[i].Mirror = mirror
		if zero {
			canary.Steps[i].Weight = 0
		}
	}
	if draw(3) != 0 {
		return
	}
	sticky := &appv1.CanarySticky{
		CookieName:    []string{"canary", "app_canary-1", "", "bad name", strings.Repeat("c", 65)}[draw(5)],
		MaxAgeSeconds: []int32{0, 0, 3600, 2592000, -1, 2592001}[draw(6)],
	}
	if clean {
		if spec.HTTPRoute == nil {
			return
		}
		if strings.Trim(sticky.CookieName, "abcdefghijklmnopqrstuvwxyz_-1") != "" || sticky.CookieName == "" || len(sticky.CookieName) > 64 {
			sticky.CookieName = "canary"
		}
		sticky.MaxAgeSeconds = max(0, min(sticky.MaxAgeSeconds, 2592000))
	}
	canary.Sticky = sticky
}

// genOnRoutes puts spec's canary (its tests kept) on routes with all their
// tools, from draws of its own (x): the spec's httpRoute or one of its
// own, and a grpcRoute one time in two (alone one time in four); a mirror
// step of weight 0 and a step with both; testers and sticky users each one
// time in two (sticky only with the httpRoute). All in bounds: a spec
// admitted without them is admitted with them, and its routes split with
// every tool must be created.
func genOnRoutes(x uint64, spec *appv1.AppServiceSpec) {
	draw := drawer(x)
	if len(spec.Ports) == 0 {
		spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}}
	}
	spec.Canary.ShrinkStable = false
	grpc, alone := draw(2) == 0, draw(2) == 0
	if spec.HTTPRoute == nil && (!grpc || !alone) {
		spec.HTTPRoute = &appv1.HTTPRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}, Rules: []appv1.HTTPRouteRule{
			{Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchExact), Value: new("/api")},
				Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x-env", Value: "prod"}}}}},
			{},
		}}
	}
	if grpc && spec.GRPCRoute == nil {
		spec.GRPCRoute = &appv1.GRPCRoute{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}, Rules: []appv1.GRPCRouteRule{
			{Matches: []gatewayv1.GRPCRouteMatch{{Method: &gatewayv1.GRPCMethodMatch{Service: new("shop.Cart")},
				Headers: []gatewayv1.GRPCHeaderMatch{{Name: "x-env", Value: "prod"}}}}},
			{},
		}}
	}
	steps := spec.Canary.Steps
	steps[0].Weight, steps[0].Mirror = 0, []int32{1, 20, 100}[draw(3)]
	steps[1].Mirror = []int32{10, 50}[draw(2)]
	if draw(2) == 0 {
		spec.Canary.TesterHeaders = []appv1.TesterHeader{{Name: "x-qa", Value: "qa"}}
	}
	if draw(2) == 0 && spec.HTTPRoute != nil {
		spec.Canary.Sticky = &appv1.CanarySticky{CookieName: "canary", MaxAgeSeconds: []int32{0, 3600}[draw(2)]}
	}
	if spec.Canary.BlueGreen != nil {
		// Its steps carry no weight, and keep no users.
		for i := range steps {
			steps[i].Weight = 0
		}
		spec.Canary.Sticky = nil
	}
}

// genTests gives one step in three tests (every step: all),
// from their own draws (x), each field in and out of bounds now and then:
// names that repeat or are not DNS labels, a moment that is not one,
// commands empty or with unknown placeholders, images with spaces, envs
// whose names are empty or repeat or too many, requests above limits,
// ServiceAccount names that are not names, deadlines past their bounds,
// and too many tests.
func genTests(x uint64, steps []appv1.CanaryStep, all bool) {
	draw := drawer(x)
	for i := range steps {
		if draw(3) != 0 && !all {
			continue
		}
		n := 1 + draw(2)
		if draw(20) == 0 {
			n = 3
		}
		for j := range n {
			t := appv1.CanaryTest{
				Name:    []string{"smoke", "load", fmt.Sprintf("t%d", j), fmt.Sprintf("t%d", j)}[draw(4)],
				When:    []appv1.CanaryTestMoment{appv1.CanaryTestBefore, appv1.CanaryTestDuring}[draw(2)],
				Command: []string{"curl -fsS $CANARY_URL/healthz", "wget -qO- {{ target }}.{{namespace}}", "exit 0"}[draw(3)],
				Image:   []string{"", "curlimages/curl:8.11.0", "busybox:1.37"}[draw(3)],
			}
			if draw(3) == 0 {
				t.Envs = []string{"TOKEN=abc", "RATE=10"}
			}
			if draw(3) == 0 {
				t.DeadlineSeconds = int32(1 + draw(3600))
			}
			if draw(4) == 0 {
				t.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse([]string{"100m", "100m", "100m", "300m"}[draw(4)])}}
			}
			if draw(4) == 0 {
				t.ServiceAccountName = []string{"tester", "tester", "tester", "Bad_SA"}[draw(4)]
			}
			switch draw(60) {
			case 0:
				t.Name = []string{"Bad_Name", "a-name-longer-than-twenty"}[draw(2)]
			case 1:
				t.When = "After"
			case 2:
				t.Command = []string{"", "echo {{ url }}"}[draw(2)]
			case 3:
				t.Image = "bad image"
			case 4:
				t.Envs = []string{[]string{"=x", "NOEQUALS", "A=1"}[draw(3)], "A=2"}
			case 5:
				for k := range 17 {
					t.Envs = append(t.Envs, fmt.Sprintf("E%d=x", k))
				}
			case 6:
				t.DeadlineSeconds = []int32{-1, 86401}[draw(2)]
			}
			steps[i].Tests = append(steps[i].Tests, t)
		}
	}
}

// drawer draws numbers below n from x, a hash's bits, as a mixed radix;
// once they run low, x is stirred (a multiplicative hash) for more.
func drawer(x uint64) func(n uint64) uint64 {
	return func(n uint64) uint64 {
		if x < n {
			x = x*0x9e3779b97f4a7c15 + 1
		}
		v := x % n
		x /= n
		return v
	}
}

// genAnalysis sets spec.canary.analysis on one canary in two, from its own
// draws (x), with each field in and out of bounds now and then: queries
// with placeholders known and unknown, thresholds that are decimals and
// that are not, min above max, names that repeat or are not DNS labels,
// and limits past their bounds.
func genAnalysis(x uint64) *appv1.CanaryAnalysis {
	draw := drawer(x)
	if draw(2) == 0 {
		return nil
	}
	a := &appv1.CanaryAnalysis{IntervalSeconds: int32(1 + draw(120)), FailureLimit: int32(draw(4))}
	switch draw(30) {
	case 0:
		a.IntervalSeconds = []int32{-1, 3601}[draw(2)]
	case 1:
		a.FailureLimit = []int32{-1, 101}[draw(2)]
	case 2:
		a.ErrorLimit = new([]int32{-2, 101}[draw(2)])
	case 3:
		a.NoData = "Maybe"
	case 4:
		a.ErrorLimit = new(int32(draw(10)))
	case 5:
		a.NoData = []appv1.AnalysisNoData{appv1.AnalysisNoDataHold, appv1.AnalysisNoDataFail}[draw(2)]
	}
	n := 1 + draw(3)
	if draw(25) == 0 {
		n = []uint64{0, 11}[draw(2)]
	}
	goodQueries := []string{
		`sum(rate(gateway_requests_total{namespace="{{ namespace }}",service="{{ target }}",code=~"5.."}[{{ interval }}])) / sum(rate(gateway_requests_total{namespace="{{namespace}}",service="{{target}}"}[{{interval}}]))`,
		`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="{{ namespace }}",app="{{ name }}"}[1m])))`,
		`vector(1)`, `scalar(up{job="x"})`, `{__name__="up"} or vector(0)`,
	}
	badQueries := []string{"", `up{job="{{ job }}"}`, `sum(rate(x[{{interval}}]))) {{`, strings.Repeat("a", 2049), `x{{{ name }}}`}
	decimals := []string{"0", "0.05", "0.99", "-1.5", "100", "250.125"}
	notDecimals := []string{"", "1e3", ".5", "5.", "abc", "0.5s", "+1", "１"}
	for i := range n {
		m := appv1.AnalysisMetric{Name: fmt.Sprintf("metric-%d", i), Query: goodQueries[draw(uint64(len(goodQueries)))]}
		switch draw(3) {
		case 0:
			m.Min = new(decimals[draw(uint64(len(decimals)))])
		case 1:
			m.Max = new(decimals[draw(uint64(len(decimals)))])
		default:
			m.Min, m.Max = new(decimals[draw(3)]), new(decimals[3+draw(3)])
		}
		m.DryRun = draw(4) == 0
		switch draw(40) {
		case 0:
			m.Name = []string{"", "Errors", "error_rate", "-x", "metric-0", strings.Repeat("m", 64)}[draw(6)]
		case 1:
			m.Query = badQueries[draw(uint64(len(badQueries)))]
		case 2:
			m.Min = new(notDecimals[draw(uint64(len(notDecimals)))])
		case 3:
			m.Max = new(notDecimals[draw(uint64(len(notDecimals)))])
		case 4:
			m.Min, m.Max = nil, nil
		case 5:
			m.Min, m.Max = new("1"), new("0.5")
		}
		a.Metrics = append(a.Metrics, m)
	}
	// Templates, after the metrics' draws (which keep their values): a
	// reference now and then, its kind, name and arguments good and bad,
	// and an inline query that uses an argument (refused: arguments are
	// a template's).
	for range draw(3) {
		ref := appv1.AnalysisTemplateRef{Name: []string{"success-rate", "p99.latency", "judge"}[draw(3)],
			Kind: []appv1.AnalysisTemplateKind{"", appv1.KindAnalysisTemplate, appv1.KindClusterAnalysisTemplate}[draw(3)]}
		if draw(2) == 0 {
			ref.Args = map[string]string{"service": "{{ target }}", "quantile": "0.99"}
		}
		switch draw(12) {
		case 0:
			ref.Name = []string{"", "Bad", "-x", strings.Repeat("a", 254)}[draw(4)]
		case 1:
			ref.Kind = "Template"
		case 2:
			ref.Args = map[string]string{[]string{"", "9x", "a-b", strings.Repeat("a", 64)}[draw(4)]: "v"}
		case 3:
			ref.Args = map[string]string{"service": strings.Repeat("v", 1025)}
		}
		a.Templates = append(a.Templates, ref)
	}
	if len(a.Metrics) > 0 && draw(30) == 0 {
		a.Metrics[0].Query = `x{a="{{ args.service }}"}`
	}
	return a
}

// genSuspend sets spec.suspend on one spec in five, true or false: the
// Deployment at 0 replicas and no autoscaler, whatever else the spec asks
// for (a boolean, so nothing to refuse). It is drawn from a hash of what
// the spec already holds, not from the random source, so that every other
// field keeps the values the mutation test's corpus was chosen with.
func genSuspend(c corpusCase) *bool {
	spec, err := json.Marshal(c.Spec)
	if err != nil {
		panic(err) // a struct of the API's types always encodes
	}
	h := fnv.New32a()
	h.Write([]byte(c.Name))
	h.Write(spec)
	switch h.Sum32() % 10 {
	case 0:
		return new(true)
	case 1:
		return new(false)
	}
	return nil
}

// genCommand: the entrypoint, its arguments and the working directory, with
// env references, empty strings and long lists.
func genCommand(r *specRand, s *appv1.AppServiceSpec) {
	words := func() []string {
		var out []string
		for range r.IntN(4) {
			out = append(out, pick(r, "nginx", "-g", "daemon off;", "$(POD_NAME)", "$$(literal)", "", "--port=8080", strings.Repeat("w", 300)))
		}
		return out
	}
	if r.IntN(4) == 0 {
		s.Command = words()
		if bad(r) {
			s.Command = make([]string, 257)
		}
	}
	if r.IntN(4) == 0 {
		s.Args = words()
		if bad(r) {
			s.Args = make([]string, 1025)
		}
	}
	if r.IntN(5) == 0 {
		s.WorkingDir = pick(r, "/srv", "/", "relative/dir", "/with space", "C:\\app")
		if bad(r) {
			s.WorkingDir = "/" + strings.Repeat("d", 4096)
		}
	}
}

// genRollout: the Deployment's rollout fields, near their bounds and each
// other (minReadySeconds against progressDeadlineSeconds and its default).
func genRollout(r *specRand, s *appv1.AppServiceSpec) {
	if r.IntN(4) == 0 {
		s.MinReadySeconds = new(pick(r, int32(0), 5, 599, 600, 2147483646))
		if bad(r) {
			s.MinReadySeconds = new(int32(-1))
		}
	}
	if r.IntN(3) == 0 {
		s.Strategy = genStrategy(r)
	}
	if r.IntN(4) == 0 {
		s.RevisionHistoryLimit = new(pick(r, int32(0), 1, 10, 2147483647))
		if bad(r) {
			s.RevisionHistoryLimit = new(int32(-1))
		}
	}
	if r.IntN(4) == 0 {
		s.ProgressDeadlineSeconds = new(pick(r, int32(1), 6, 600, 601, 2147483647))
		if bad(r) {
			s.ProgressDeadlineSeconds = new(pick(r, int32(0), -5))
		}
	}
}

// genEnvFrom: a ConfigMap or Secret (now and then both or neither), with
// names as prefixes may be (a trailing '-') and prefixes with odd but
// allowed characters.
func genEnvFrom(r *specRand) corev1.EnvFromSource {
	name := pick(r, "config", "app.settings", "name-", strings.Repeat("n", 253))
	if bad(r) {
		name = pick(r, "", "Config", "a_b", "-a", strings.Repeat("n", 254), "a..b")
	}
	e := corev1.EnvFromSource{Prefix: pick(r, "", "APP_", "my.prefix-", "1_", "a b")}
	if bad(r) {
		e.Prefix = pick(r, "A=B", "tab\t", "é")
	}
	cm := &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: pick(r, nil, new(true))}
	secret := &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
	switch {
	case bad(r):
		e.ConfigMapRef, e.SecretRef = cm, secret
	case bad(r):
	case r.IntN(2) == 0:
		e.ConfigMapRef = cm
	default:
		e.SecretRef = secret
	}
	return e
}

// genProbe: one handler (now and then none or two), ports by number and by
// name, headers, timings at zero and past it, and the fields that are only
// allowed on some probes or that an API server drops.
func genProbe(r *specRand) *corev1.Probe {
	port := func() intstr.IntOrString {
		v := pick(r, intstr.FromInt32(1), intstr.FromInt32(8080), intstr.FromInt32(65535), intstr.FromString("http"), intstr.FromString("metrics-port-15"))
		if bad(r) {
			v = pick(r, intstr.FromInt32(0), intstr.FromInt32(65536), intstr.FromInt32(-1), intstr.FromString("HTTP"), intstr.FromString("a--b"), intstr.FromString("123"), intstr.FromString(""), intstr.FromString("sixteen-chars-xx"))
		}
		return v
	}
	handler := func(p *corev1.Probe) {
		switch r.IntN(4) {
		case 0:
			p.Exec = &corev1.ExecAction{Command: pick(r, []string{"true"}, []string{"sh", "-c", "test -f /tmp/ok"})}
			if bad(r) {
				p.Exec.Command = nil
			}
		case 1:
			p.HTTPGet = &corev1.HTTPGetAction{Path: pick(r, "", "/", "/healthz", "relative"), Port: port(), Host: pick(r, "", "localhost")}
			if r.IntN(3) == 0 {
				p.HTTPGet.Scheme = pick(r, corev1.URISchemeHTTP, corev1.URISchemeHTTPS)
			}
			if r.IntN(3) == 0 {
				p.HTTPGet.HTTPHeaders = []corev1.HTTPHeader{{Name: pick(r, "X-Probe", "Accept", "x_custom!"), Value: pick(r, "", "1", "a b")}}
			}
			if bad(r) {
				p.HTTPGet.Scheme = "FTP"
			}
			if bad(r) {
				p.HTTPGet.HTTPHeaders = []corev1.HTTPHeader{{Name: pick(r, "", "Bad Header", "a:b")}}
			}
			if bad(r) {
				p.HTTPGet.Protocol = new(corev1.HTTPProtocolHTTP2)
			}
		case 2:
			p.TCPSocket = &corev1.TCPSocketAction{Port: port()}
		default:
			p.GRPC = &corev1.GRPCAction{Port: pick(r, int32(1), 9090, 65535)}
			if r.IntN(2) == 0 {
				p.GRPC.Service = new(pick(r, "", "grpc.health.v1.Health"))
			}
			if bad(r) {
				p.GRPC.Port = pick(r, int32(0), 65536)
			}
			if bad(r) {
				p.GRPC.Mode = new(corev1.GRPCProbeModeTLS)
			}
		}
	}
	p := &corev1.Probe{}
	if !bad(r) {
		handler(p)
	}
	if bad(r) {
		handler(p) // a second handler, or the same one again
	}
	for _, f := range []*int32{&p.InitialDelaySeconds, &p.TimeoutSeconds, &p.PeriodSeconds, &p.SuccessThreshold, &p.FailureThreshold} {
		if r.IntN(4) == 0 {
			*f = pick(r, int32(0), 1, 3, 60)
			if bad(r) {
				*f = -1
			}
		}
	}
	if r.IntN(6) == 0 {
		p.TerminationGracePeriodSeconds = new(pick(r, int64(1), 30))
		if bad(r) {
			p.TerminationGracePeriodSeconds = new(int64(0))
		}
	}
	return p
}

// genPodFields: the Pod-level fields, with names at their length limits and
// label keys with and without prefixes.
func genPodFields(r *specRand, s *appv1.AppServiceSpec) {
	subdomain := func() string {
		v := pick(r, "web", "a.b-c", strings.Repeat("s", 253), "system-node-critical")
		if bad(r) {
			v = pick(r, "Web", "a_b", strings.Repeat("s", 254), "-a", "a.", "a..b")
		}
		return v
	}
	if r.IntN(5) == 0 {
		s.ServiceAccountName = subdomain()
	}
	if r.IntN(5) == 0 {
		s.PriorityClassName = subdomain()
	}
	if r.IntN(5) == 0 {
		for range 1 + r.IntN(3) {
			s.ImagePullSecrets = append(s.ImagePullSecrets, corev1.LocalObjectReference{Name: pick(r, "registry", "a.b", "", "Weird_Name", strings.Repeat("n", 300))})
		}
	}
	if r.IntN(5) == 0 {
		s.TerminationGracePeriodSeconds = new(pick(r, int64(0), 1, 30, 3600, 9223372036854775807))
		if bad(r) {
			s.TerminationGracePeriodSeconds = new(int64(-1))
		}
	}
	if r.IntN(4) == 0 {
		s.PodLabels = map[string]string{}
		for range 1 + r.IntN(3) {
			k := pick(r, "tier", "app.kubernetes.io/name", "example.com/team", strings.Repeat("k", 63))
			v := pick(r, "web", "", "v1.2_3-x", strings.Repeat("v", 63))
			if bad(r) {
				k = pick(r, appv1.LabelAppService, "pod-template-hash", "-a", "a/", "UPPER.example.com/x", strings.Repeat("k", 64))
			}
			if bad(r) {
				v = pick(r, "a b", strings.Repeat("v", 64), "-x")
			}
			s.PodLabels[k] = v
		}
	}
	if r.IntN(4) == 0 {
		s.PodAnnotations = map[string]string{}
		for range 1 + r.IntN(3) {
			k := pick(r, "prometheus.io/scrape", "Example.COM/Mixed_Case", "kubectl.kubernetes.io/default-container", "sidecar.istio.io/inject", "note")
			if bad(r) {
				k = pick(r, "kubernetes.io/config.mirror", "scheduler.alpha.kubernetes.io/tolerations", "controller.kubernetes.io/pod-deletion-cost",
					"seccomp.security.alpha.kubernetes.io/pod", "container.apparmor.security.beta.kubernetes.io/app", "a b", "/x", strings.Repeat("k", 64),
					"pod.beta.kubernetes.io/init-containers", "Pod.Alpha.Kubernetes.io/init-container-statuses", "kubectl.kubernetes.io/restartedAt",
					appv1.AnnotationConfigDigest)
			}
			s.PodAnnotations[k] = pick(r, "true", "", "any text: {\"json\": 1}", strings.Repeat("v", 4096))
		}
	}
	s.RolloutOnConfigChange = r.IntN(2) == 0
	for range r.IntN(3) {
		s.Tolerations = append(s.Tolerations, genToleration(r))
	}
	if r.IntN(4) == 0 {
		s.NodeSelector = map[string]string{}
		for range 1 + r.IntN(3) {
			k := pick(r, "disktype", "kubernetes.io/arch", "topology.kubernetes.io/zone", "a", "A_b.C", strings.Repeat("k", 63), strings.Repeat("p", 253)+"/"+strings.Repeat("n", 63))
			v := pick(r, "ssd", "", "amd64", "a.b_c-D", strings.Repeat("v", 63))
			if bad(r) {
				k = pick(r, "", "-a", "a/", "/a", "a/b/c", strings.Repeat("k", 64), strings.Repeat("p", 254)+"/n", "UPPER.example.com/x", "a b")
			}
			if bad(r) {
				v = pick(r, "-a", "a-", "a b", strings.Repeat("v", 64), "a/b")
			}
			s.NodeSelector[k] = v
		}
	}
}

// genToleration: keys with and without prefixes, or none (match all), the
// operators with and without values, effects and tolerationSeconds.
func genToleration(r *specRand) corev1.Toleration {
	t := corev1.Toleration{
		Key:      pick(r, "", "dedicated", "node.kubernetes.io/not-ready", "example.com/gpu", strings.Repeat("k", 63)),
		Operator: pick(r, corev1.TolerationOpEqual, corev1.TolerationOpExists, ""),
		Effect:   pick(r, "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute),
	}
	if t.Operator != corev1.TolerationOpExists {
		t.Value = pick(r, "", "web", "a.b_c-1", strings.Repeat("v", 63))
	}
	if t.Key == "" && t.Operator != corev1.TolerationOpExists {
		t.Operator = corev1.TolerationOpExists
		t.Value = ""
	}
	if t.Effect == corev1.TaintEffectNoExecute && r.IntN(2) == 0 {
		t.TolerationSeconds = new(pick(r, int64(0), 300, -1))
	}
	switch {
	case bad(r):
		t.Key = pick(r, "-a", "a/", strings.Repeat("k", 64), "a b")
	case bad(r):
		t.Operator = pick[corev1.TolerationOperator](r, "Lt", "Gt", "In", "exists")
	case bad(r):
		t.Key, t.Operator = "", corev1.TolerationOpEqual
	case bad(r):
		t.Operator, t.Value = corev1.TolerationOpExists, "x"
	case bad(r):
		t.Value = pick(r, "a b", "-a", strings.Repeat("v", 64))
	case bad(r):
		t.Effect = pick[corev1.TaintEffect](r, "NoScheduleNoAdmit", "noschedule")
	case bad(r):
		t.Effect, t.TolerationSeconds = corev1.TaintEffectNoSchedule, new(int64(60))
	}
	return t
}

// genStrategy: Recreate or a rolling update with integers and percentages
// near the Deployment's bounds (both zero, over 100%, leading zeros).
func genStrategy(r *specRand) *appsv1.DeploymentStrategy {
	value := func() *intstr.IntOrString {
		if r.IntN(3) == 0 {
			return nil
		}
		v := pick(r, intstr.FromInt32(0), intstr.FromInt32(1), intstr.FromInt32(3), intstr.FromInt32(2147483647),
			intstr.FromString("0%"), intstr.FromString("25%"), intstr.FromString("100%"), intstr.FromString("007%"), intstr.FromString("00%"))
		if bad(r) {
			v = pick(r, intstr.FromInt32(-1), intstr.FromString("101%"), intstr.FromString("150%"), intstr.FromString("1"), intstr.FromString("%"), intstr.FromString("a%"), intstr.FromString(""),
				intstr.FromString("99999999999999999999%"))
		}
		return &v
	}
	st := &appsv1.DeploymentStrategy{Type: pick(r, appsv1.RollingUpdateDeploymentStrategyType, appsv1.RecreateDeploymentStrategyType, "")}
	if bad(r) {
		st.Type = pick[appsv1.DeploymentStrategyType](r, "recreate", "BlueGreen")
	}
	if st.Type != appsv1.RecreateDeploymentStrategyType || bad(r) {
		if r.IntN(4) > 0 {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: value(), MaxSurge: value()}
		}
	}
	return st
}

func genResourceList(r *specRand) corev1.ResourceList {
	out := corev1.ResourceList{}
	for range 1 + r.IntN(3) {
		name := pick[corev1.ResourceName](r, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage)
		q := pick(r, "1", "2", "100m", "250m", "1.5", "1Gi", "64Mi", "0.0001", "1e3", "500Mi", "0")
		switch {
		case bad(r):
			name = pick[corev1.ResourceName](r, "pods", "storage", "requests.cpu", "kubernetes.io/widget", "Bad Name", "hugepages-0", "hugepages-x")
		case bad(r):
			q = pick(r, "-1", "-100m")
		case r.IntN(6) == 0:
			// Whole units (or not) of what cannot be overcommitted.
			name = pick[corev1.ResourceName](r, "hugepages-2Mi", "hugepages-1Gi", "example.com/gpu", "nvidia.com/gpu")
			q = pick(r, "1", "2", "2Mi", "4Mi", "1Gi", "100m", "3Mi")
		}
		out[name] = resource.MustParse(q)
	}
	return out
}

func genResources(r *specRand) corev1.ResourceRequirements {
	var res corev1.ResourceRequirements
	switch r.IntN(4) {
	case 0:
		res.Requests = genResourceList(r)
	case 1:
		res.Limits = genResourceList(r)
	case 2:
		res.Requests, res.Limits = genResourceList(r), genResourceList(r)
	default:
		// The same list for both: the common, valid shape, extended
		// resources and hugepages included.
		res.Requests = genResourceList(r)
		res.Limits = res.Requests.DeepCopy()
	}
	if bad(r) {
		res.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
	return res
}

func genEnv(r *specRand) corev1.EnvVar {
	e := corev1.EnvVar{Name: pick(r, "FOO", "LOG_LEVEL", "foo.bar", "a-b", "_X")}
	if bad(r) {
		e.Name = pick(r, "", "1X", "with space", "A=B", strings.Repeat("E", 300))
	}
	switch r.IntN(5) {
	case 0, 1:
		e.Value = pick(r, "1", "", "hello world", "$(FOO)")
	case 2:
		ref := &corev1.ObjectFieldSelector{
			APIVersion: pick(r, "", "v1"),
			FieldPath: pick(r, "metadata.name", "metadata.namespace", "metadata.labels['app']", "metadata.annotations['example.com/a']",
				"status.podIP", "status.hostIPs", "spec.nodeName", "spec.serviceAccountName", "metadata.uid"),
		}
		if bad(r) {
			ref.APIVersion = "v2"
		}
		if bad(r) {
			ref.FieldPath = pick(r, "metadata.foo", "status.phase", "metadata.labels", "", "metadata.labels['bad key']")
		}
		e.ValueFrom = &corev1.EnvVarSource{FieldRef: ref}
	case 3:
		ref := &corev1.ResourceFieldSelector{
			ContainerName: pick(r, "", "", "other"),
			Resource:      pick(r, "limits.cpu", "requests.memory", "limits.ephemeral-storage", "requests.cpu", "limits.hugepages-2Mi"),
		}
		if bad(r) {
			ref.Resource = pick(r, "limits.example.com/gpu", "cpu", "bogus")
		}
		if r.IntN(3) == 0 {
			ref.Divisor = resource.MustParse(pick(r, "1", "1m", "1Mi", "0", "1Ki"))
			if bad(r) {
				ref.Divisor = resource.MustParse(pick(r, "-1", "2", "10m"))
			}
		}
		e.ValueFrom = &corev1.EnvVarSource{ResourceFieldRef: ref}
	default:
		ref := corev1.LocalObjectReference{Name: pick(r, "settings", "app.config")}
		key := pick(r, "key", "app.conf", ".hidden", "A_B-c")
		if bad(r) {
			ref.Name = pick(r, "", "Bad_Name")
		}
		if bad(r) {
			key = pick(r, "", "bad/key", "..", ".", "..x")
		}
		if r.IntN(2) == 0 {
			e.ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref, Key: key}}
		} else {
			e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref, Key: key}}
		}
	}
	if e.ValueFrom != nil && bad(r) {
		// Both a value and a source, or a source with two references.
		if r.IntN(2) == 0 {
			e.Value = "x"
		} else {
			e.ValueFrom.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}
		}
	}
	return e
}

func genPort(r *specRand, i int) corev1.ServicePort {
	p := corev1.ServicePort{Port: pick(r, int32(80), 443, 8080, 53, 65535, 1)}
	if bad(r) {
		p.Port = pick(r, int32(0), -1, 65536)
	}
	p.Name = pick(r, "http", "web", "metrics", fmt.Sprintf("p%d", i), fmt.Sprintf("p%d", i), fmt.Sprintf("p%d", i))
	if r.IntN(4) == 0 {
		p.Name = "" // allowed for a single port
	}
	if bad(r) {
		p.Name = pick(r, "HTTP", "a_b", strings.Repeat("n", 64), "-x")
	}
	switch r.IntN(4) {
	case 0:
		p.TargetPort = intstr.FromInt32(pick(r, int32(8080), 80, 9090, 0, 65535))
		if bad(r) {
			p.TargetPort = intstr.FromInt32(pick(r, int32(70000), -1))
		}
	case 1:
		p.TargetPort = intstr.FromString(pick(r, "http", "web", "a-b", "metrics-15chars"))
		if bad(r) {
			p.TargetPort = intstr.FromString(pick(r, "Http", "1234", strings.Repeat("t", 16), "a--b", "-a"))
		}
	}
	if r.IntN(4) == 0 {
		p.Protocol = pick[corev1.Protocol](r, "TCP", "UDP", "SCTP")
		if bad(r) {
			p.Protocol = "HTTP"
		}
	}
	if r.IntN(4) == 0 {
		p.NodePort = pick(r, int32(30080+i), 32767, 30000)
		if bad(r) {
			p.NodePort = pick(r, int32(1), 40000, 65536)
		}
	}
	if r.IntN(5) == 0 {
		p.AppProtocol = new(pick(r, "http", "https", "kubernetes.io/h2c", "kubernetes.io/ws", "example.com/custom", "HTTP", "grpc"))
		if bad(r) {
			p.AppProtocol = new(pick(r, "kubernetes.io/bogus", "bad proto", "-x", "example.com/"))
		}
	}
	return p
}
