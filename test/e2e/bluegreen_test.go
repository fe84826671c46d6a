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
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/owner"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestBlueGreen: spec.canary.blueGreen, in four namespaces at once, each
// asserted from what watches recorded.
//   - service: the seeds' NodePort AppService (no route) with a preview of
//     1 Pod, kept off the stable Pods' nodes (antiAffinity), waits at its
//     gate, writing nothing; promoted, the preview grows to 2, the
//     Service's selector switches to it in one write (its EndpointSlices
//     go from the 2 old Pods to the 2 preview Pods, never empty nor
//     mixed, and it keeps its UID, ClusterIP and nodePort), the old Pods
//     stay at full size for the scale-down delay, then roll to the new
//     template, and the Service selects them again; the preview's own
//     Service held only preview Pods. Then not one write.
//   - route: behind an HTTPRoute, at its gate (writing nothing) the
//     testers and its preview hostname's route reach the preview; promoted,
//     the users' backend goes from the Service to the preview's in one
//     route write, then back to the Service once the stable Pods run the
//     new template, and the hostname's route goes.
//   - abort: aborted at its gate, the preview goes: no user endpoint was
//     ever one of its Pods, and the Service's selector never changed;
//     behind a route, no version of the route sent users to it, and its
//     hostname's route went with it.
//   - switchback: its analysis fails after the switch: the Service's
//     selector goes back within the scale-down delay, to the old Pods,
//     which were at full size all along; kstatus read it InProgress once
//     switched, Failed once switched back.
func TestBlueGreen(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	t.Run("service", func(t *testing.T) { t.Parallel(); testBlueGreenService(t) })
	t.Run("route", func(t *testing.T) { t.Parallel(); testBlueGreenRoute(t) })
	t.Run("abort", func(t *testing.T) { t.Parallel(); testBlueGreenAbort(t) })
	t.Run("switchback", func(t *testing.T) { t.Parallel(); testBlueGreenSwitchBack(t) })
}

// seedSize is the seeds' AppService's size; the route case's is the same.
const seedSize = 2

// seedBlueGreen is the seeds' AppService (2 nginx Pods behind a NodePort
// Service), its nodePort left to the cluster (the tests run side by side),
// released blue-green by these steps.
func seedBlueGreen(t *testing.T, bg appv1.BlueGreen, steps ...appv1.CanaryStep) appv1.AppServiceSpec {
	t.Helper()
	data, err := os.ReadFile(seedManifest(t))
	if err != nil {
		t.Fatal(err)
	}
	var seed appv1.AppService
	if err := yaml.Unmarshal(data, &seed); err != nil {
		t.Fatal(err)
	}
	spec := seed.Spec
	for i := range spec.Ports {
		spec.Ports[i].NodePort = 0
	}
	spec.Canary = &appv1.Canary{Steps: steps, BlueGreen: &bg}
	return spec
}

// blueGreenRecord is what watches recorded of a blue-green release: the
// AppService, its Service and the preview's, their EndpointSlices, and
// the stable and preview Deployments.
type blueGreenRecord struct {
	*canaryRecord
	name, preview            string
	service, previewService  *recording[version[*corev1.Service]]
	endpoints, previewSlices *slicesRecord
}

func recordBlueGreen(t *testing.T, ns, name string, size int) *blueGreenRecord {
	t.Helper()
	preview := children.CanaryName(&appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appv1.AppServiceSpec{Canary: &appv1.Canary{BlueGreen: &appv1.BlueGreen{}}}})
	deployments, services := kube.AppsV1().Deployments(ns).Watch, kube.CoreV1().Services(ns).Watch
	return &blueGreenRecord{
		canaryRecord: &canaryRecord{
			app:    record[*appv1.AppService](t, apps.AppV1().AppServices(ns).Watch, name),
			route:  record[*gatewayv1.HTTPRoute](t, gatewayAPI(t).GatewayV1().HTTPRoutes(ns).Watch, name),
			stable: record[*appsv1.Deployment](t, deployments, name),
			canary: record[*appsv1.Deployment](t, deployments, preview),
		},
		name: name, preview: preview,
		service:        record[*corev1.Service](t, services, name),
		previewService: record[*corev1.Service](t, services, preview),
		endpoints:      recordServing(t, ns, name, size),
		previewSlices:  recordSlices(t, ns, preview),
	}
}

// startBlueGreen creates the AppService, waits until it is available, and
// starts recording its releases once its Service serves them all; it
// returns the record and its Service as created.
func startBlueGreen(t *testing.T, ns, name string, spec appv1.AppServiceSpec) (*blueGreenRecord, *corev1.Service) {
	t.Helper()
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, *spec.Size)
	svc, err := getService(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return recordBlueGreen(t, ns, name, int(*spec.Size)), svc
}

// stacks says which Pods a state of the Service's endpoints holds: the
// old ones (blue, the stable Pods seen before the first preview Pod), the
// preview's, and new stable ones (green, rolled after the switch).
func (r *blueGreenRecord) stacks(states []endpointsState) []string {
	blue := map[string]bool{}
	for _, s := range states {
		if slices.ContainsFunc(s.pods, func(p string) bool { return strings.HasPrefix(p, r.preview+"-") }) {
			break
		}
		for _, p := range s.pods {
			blue[p] = true
		}
	}
	out := make([]string, len(states))
	for i, s := range states {
		var kinds []string
		for _, p := range s.pods {
			kind := "green"
			switch {
			case strings.HasPrefix(p, r.preview+"-"):
				kind = "preview"
			case blue[p]:
				kind = "blue"
			}
			if !slices.Contains(kinds, kind) {
				kinds = append(kinds, kind)
			}
		}
		slices.Sort(kinds)
		out[i] = strings.Join(kinds, "+")
		if out[i] == "" {
			out[i] = "none"
		}
	}
	return out
}

// checkStacks checks that the Service's endpoints went through want, each
// state of them all of one stack, never fewer than the seeds' size once
// served; consecutive repeats count once.
func (r *blueGreenRecord) checkStacks(t *testing.T, want ...string) {
	t.Helper()
	states := endpointStates(r.endpoints.snapshot())
	var got []string
	for i, k := range r.stacks(states) {
		if strings.Contains(k, "+") {
			t.Errorf("the Service's endpoints held a mix at resourceVersion %d: %v", states[i].v.rv, states[i].pods)
		}
		if k == "none" && len(got) == 0 {
			continue
		}
		if len(got) == 0 || got[len(got)-1] != k {
			got = append(got, k)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the Service's endpoints went %v, want %v", got, want)
	}
	checkNeverBelow(t, states, seedSize)
	if t.Failed() {
		for _, s := range states {
			t.Logf("resourceVersion %d: slice %s, %d ready %v", s.v.rv, s.v.obj.Name, s.ready, s.pods)
		}
	}
}

// checkService checks that the Service kept its UID, ClusterIP and
// nodePort, and that its selector went through want.
func (r *blueGreenRecord) checkService(t *testing.T, svc *corev1.Service, want ...map[string]string) {
	t.Helper()
	var selectors []map[string]string
	for _, v := range r.service.snapshot() {
		s := v.obj
		if v.deleted || s.UID != svc.UID || s.Spec.ClusterIP != svc.Spec.ClusterIP || s.Spec.Ports[0].NodePort != svc.Spec.Ports[0].NodePort {
			t.Errorf("the Service changed (resourceVersion %d): uid %s, clusterIP %s, nodePort %d; was %s, %s, %d",
				v.rv, s.UID, s.Spec.ClusterIP, s.Spec.Ports[0].NodePort, svc.UID, svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort)
		}
		if len(selectors) == 0 || !maps.Equal(selectors[len(selectors)-1], s.Spec.Selector) {
			selectors = append(selectors, s.Spec.Selector)
		}
	}
	if !slices.EqualFunc(selectors, want, maps.Equal) {
		t.Errorf("the Service's selector went %v, want %v", selectors, want)
	}
}

// checkPreviewAlone checks that the preview's Service only ever held the
// preview's Pods, and held them.
func (r *blueGreenRecord) checkPreviewAlone(t *testing.T) {
	t.Helper()
	served := false
	for _, s := range endpointStates(r.previewSlices.snapshot()) {
		for _, p := range s.pods {
			served = true
			if !strings.HasPrefix(p, r.preview+"-") {
				t.Errorf("the preview's Service held %s (resourceVersion %d), which is not the preview's", p, s.v.rv)
			}
		}
	}
	if !served {
		t.Errorf("the preview's Service never held a Pod")
	}
}

// stableKept checks that the stable Deployment ran image at full size
// (the seeds' size available) in every version before its template changed, and
// returns when it changed (zero: never).
func (r *blueGreenRecord) stableKept(t *testing.T, image string) time.Time {
	t.Helper()
	for _, v := range r.stable.snapshot() {
		if appImage(v.obj) != image {
			return v.at
		}
		if v.obj.Status.AvailableReplicas < seedSize {
			t.Errorf("the old Pods fell to %d available (resourceVersion %d) before the promotion, want %d", v.obj.Status.AvailableReplicas, v.rv, seedSize)
		}
	}
	return time.Time{}
}

// rolledAt is the time the server recorded, in whole seconds, for the
// controller's write that gave the stable Deployment a template other than
// image: its managed fields' latest time in the first such version.
func (r *blueGreenRecord) rolledAt(image string) time.Time {
	for _, v := range r.stable.snapshot() {
		if appImage(v.obj) == image {
			continue
		}
		var at time.Time
		for _, m := range v.obj.ManagedFields {
			if m.Manager == owner.FieldManager && m.Time != nil && m.Time.After(at) {
				at = m.Time.Time
			}
		}
		return at
	}
	return time.Time{}
}

// switchedAt is the version of the AppService that records the switch.
func (r *blueGreenRecord) switchedAt(t *testing.T, steps int32) version[*appv1.AppService] {
	t.Helper()
	for _, e := range canaryEdges(r.app.snapshot()) {
		if e.name == fmt.Sprintf("%d@100%%", steps) {
			return e.v
		}
	}
	t.Fatalf("no switch recorded: edges %v", edgeNames(canaryEdges(r.app.snapshot())))
	return version[*appv1.AppService]{}
}

func testBlueGreenService(t *testing.T) {
	ns := newNamespace(t)
	const name = "nginx-app"
	delay := int32(5)
	rec, svc := startBlueGreen(t, ns, name, seedBlueGreen(t, appv1.BlueGreen{PreviewReplicas: int32p(1), ScaleDownDelaySeconds: &delay, AntiAffinity: true},
		appv1.CanaryStep{Weight: 0, Gate: true}))
	events := recordEvents(t, ns, name)

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.8" })
	gate := rec.waitAtGate(t, 0)
	hash := gate.obj.Status.Canary.CanaryTemplateHash
	preview, err := getDeployment(ns, rec.preview)
	if err != nil {
		t.Fatal(err)
	}
	if *preview.Spec.Replicas != 1 || preview.Spec.Template.Labels[appv1.LabelTemplate] != hash || appImage(preview) != "nginx:1.8" {
		t.Errorf("the preview at the gate: %d replicas, labels %v, image %s; want 1, %s=%s, nginx:1.8",
			*preview.Spec.Replicas, preview.Spec.Template.Labels, appImage(preview), appv1.LabelTemplate, hash)
	}
	rec.previewSlices.wait(t, time.Minute, func(vs []version[*discoveryv1.EndpointSlice]) error {
		if states := endpointStates(vs); len(states) == 0 || states[len(states)-1].ready != 1 {
			return fmt.Errorf("the preview's Service has no ready endpoint yet")
		}
		return nil
	})
	if a := preview.Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		!maps.Equal(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels, svc.Spec.Selector) {
		t.Errorf("the preview's affinity %+v: want a preference against the stable Pods' nodes", a)
	}
	// Held at its gate, preview and all: not one write.
	held := time.Now()
	waitSyncs(t, ns, name)
	for _, w := range canaryWrites(t, held, ns) {
		t.Errorf("write by the controller while the preview waits at its gate: %s", w)
	}
	requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryPromote, TemplateHash: hash, Step: new(int32(0))})
	waitCanaryDone(t, ns, name)
	waitDeploymentGone(t, ns, rec.preview)

	rec.checkEdges(t, name, "0@0%", "0@0%+ready", "1@0%", "1@100%", "2@100%")
	rec.checkStacks(t, "blue", "preview", "green")
	rec.checkService(t, svc, svc.Spec.Selector, children.SwitchedSelector(&appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name}}, hash),
		svc.Spec.Selector)
	rec.checkPreviewAlone(t)
	switched := rec.switchedAt(t, 1)
	if rec.stableKept(t, "nginx:1.7.9").IsZero() {
		t.Fatalf("the stable Deployment never got the new template")
	}
	// By the server's clock, not the watches' (either may lag the other):
	// the switch's stepStartTime and the time the server recorded for the
	// controller's write of the new template, both in whole seconds. The
	// controller waits from the recorded second, so the write's second is
	// at least the delay after it.
	if kept := rec.rolledAt("nginx:1.7.9").Sub(switched.obj.Status.Canary.StepStartTime.Time); kept < time.Duration(delay)*time.Second {
		t.Errorf("the old Pods kept the old template %s after the switch, by the server's times, want the scale-down delay (%ds)", kept, delay)
	}
	// The preview's size: 1 through the steps, 2 for the switch.
	var replicas []int32
	for _, v := range rec.canary.snapshot() {
		if n := *v.obj.Spec.Replicas; len(replicas) == 0 || replicas[len(replicas)-1] != n {
			replicas = append(replicas, n)
		}
	}
	if !slices.Equal(replicas, []int32{1, 2}) {
		t.Errorf("the preview's replicas went %v, want [1 2]", replicas)
	}
	// One Event for the switch's edge.
	n := 0
	for _, e := range events.snapshot() {
		if e.Reason == appv1.ReasonCanarySwitched {
			n += int(max(e.Count, 1))
		}
	}
	if n != 1 {
		t.Errorf("%d %s Events, want 1", n, appv1.ReasonCanarySwitched)
	}

	// In line again: not one write.
	waitInLine(t, ns, name)
	steady := time.Now()
	waitSyncs(t, ns, name)
	for _, w := range canaryWrites(t, steady, ns) {
		t.Errorf("write by the controller once promoted and in line: %s", w)
	}
}

func testBlueGreenRoute(t *testing.T) {
	ns := newNamespace(t)
	const name = "routed"
	const host = "preview.canary.example.com"
	spec := canarySpec(appv1.CanaryStep{Weight: 0, Gate: true})
	spec.Size = int32p(2)
	spec.Canary.BlueGreen = &appv1.BlueGreen{ScaleDownDelaySeconds: int32p(2), PreviewHostname: host}
	spec.Canary.TesterHeaders = []appv1.TesterHeader{{Name: "X-Tester", Value: "yes"}}
	rec, _ := startBlueGreen(t, ns, name, spec)
	previewRoute := record[*gatewayv1.HTTPRoute](t, gatewayAPI(t).GatewayV1().HTTPRoutes(ns).Watch, rec.preview)

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.28" })
	gate := rec.waitAtGate(t, 0)
	// At its gate, its hostname's route to the preview, and not one write.
	previewRoute.wait(t, time.Minute, func(vs []version[*gatewayv1.HTTPRoute]) error {
		if len(vs) == 0 || vs[len(vs)-1].deleted {
			return fmt.Errorf("no route %s yet", rec.preview)
		}
		r := vs[len(vs)-1].obj
		if len(r.Spec.Hostnames) != 1 || r.Spec.Hostnames[0] != host || len(r.Spec.Rules) != 1 || len(r.Spec.Rules[0].BackendRefs) != 1 ||
			string(r.Spec.Rules[0].BackendRefs[0].Name) != rec.preview {
			return fmt.Errorf("the route %s: hostnames %v, rules %+v; want %s to %s", rec.preview, r.Spec.Hostnames, r.Spec.Rules, host, rec.preview)
		}
		return nil
	})
	held := time.Now()
	waitSyncs(t, ns, name)
	for _, w := range canaryWrites(t, held, ns) {
		t.Errorf("write by the controller while the preview waits at its gate: %s", w)
	}
	requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryPromote, TemplateHash: gate.obj.Status.Canary.CanaryTemplateHash, Step: new(int32(0))})
	waitCanaryDone(t, ns, name)
	waitDeploymentGone(t, ns, rec.preview)
	previewRoute.wait(t, time.Minute, func(vs []version[*gatewayv1.HTTPRoute]) error {
		if len(vs) == 0 || !vs[len(vs)-1].deleted {
			return fmt.Errorf("the route %s is not deleted", rec.preview)
		}
		return nil
	})
	// Deleted before the preview's Service, which it sent its host to.
	if d, ok := before(rec.canary.snapshot(), previewRoute.snapshot()[len(previewRoute.snapshot())-1].rv); !ok || d.deleted {
		t.Errorf("the preview's Deployment was gone before its hostname's route")
	}
	rec.route.wait(t, time.Minute, func(vs []version[*gatewayv1.HTTPRoute]) error {
		return wantPrefix(t, "the route's preview weights", weightsOf(rec.weightChanges()), []int32{0, 100, 0})
	})

	rec.checkEdges(t, name, "0@0%", "0@0%+ready", "1@0%", "1@100%", "2@100%")
	testersSeen, switchRV := false, int64(0)
	for _, v := range rec.route.snapshot() {
		if slices.Contains(v.obj.Spec.Hostnames, host) {
			t.Errorf("the AppService's route took the preview's hostname (resourceVersion %d)", v.rv)
		}
		rules := v.obj.Spec.Rules
		backends := rules[0].BackendRefs
		if w := routeWeight(v.obj); w != 0 && w != 100 {
			t.Errorf("the route sent the preview %d%% (resourceVersion %d): users get all of it or none", w, v.rv)
		}
		if routeWeight(v.obj) == 100 && switchRV == 0 {
			switchRV = v.rv
			if string(backends[1].Name) != rec.preview || *backends[0].Weight != 0 {
				t.Errorf("the switch's route version %d: backends %+v, want the Service at 0 and %s at 100", v.rv, backends, rec.preview)
			}
		}
		for _, rule := range rules[1:] {
			if len(rule.BackendRefs) == 1 && string(rule.BackendRefs[0].Name) == rec.preview && switchRV == 0 {
				testersSeen = true
			}
		}
	}
	if !testersSeen {
		t.Errorf("the testers never had a rule to %s before the switch", rec.preview)
	}
	// The switch came once the preview had its 2 Pods available.
	if d, ok := before(rec.canary.snapshot(), switchRV); !ok || d.obj.Status.AvailableReplicas < 2 {
		t.Errorf("the route switched (resourceVersion %d) before the preview had 2 available Pods", switchRV)
	}
	if rolled := rec.stableKept(t, "nginx:1.27"); rolled.IsZero() {
		t.Errorf("the stable Deployment never got the new template")
	}
	if vs := rec.endpoints.snapshot(); len(vs) > 0 {
		for _, s := range endpointStates(vs) {
			for _, p := range s.pods {
				if strings.HasPrefix(p, rec.preview+"-") {
					t.Errorf("behind a route, the Service selected the preview's %s", p)
				}
			}
		}
	}
}

// abortAtGate releases image, aborts the release at its first step's gate
// (kubectl appservice abort) and waits until the preview is gone.
func (r *blueGreenRecord) abortAtGate(t *testing.T, ns, name, image string) {
	t.Helper()
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = image })
	gate := r.waitAtGate(t, 0)
	requestCanary(t, ns, name, appv1.CanaryRequest{Action: appv1.CanaryAbort, TemplateHash: gate.obj.Status.Canary.CanaryTemplateHash})
	waitStalled(t, ns, name, appv1.ReasonCanaryAborted, "aborted on request")
	waitDeploymentGone(t, ns, r.preview)
}

func testBlueGreenAbort(t *testing.T) {
	ns := newNamespace(t)
	const name = "nginx-app"
	rec, svc := startBlueGreen(t, ns, name, seedBlueGreen(t, appv1.BlueGreen{}, appv1.CanaryStep{Weight: 0, Gate: true}))

	rec.abortAtGate(t, ns, name, "nginx:1.8")
	eventually(t, time.Minute, func() error {
		if _, err := getService(ns, rec.preview); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the preview's Service: %v, want it gone", err)
		}
		return nil
	})

	rec.checkStacks(t, "blue")
	rec.checkService(t, svc, svc.Spec.Selector)
	rec.checkPreviewAlone(t)
	if rolled := rec.stableKept(t, "nginx:1.7.9"); !rolled.IsZero() {
		t.Errorf("an aborted preview's template reached the stable Deployment")
	}

	// Behind a route: no version of the route sent users to the preview,
	// and its hostname's route went with it.
	const routed = "routed"
	spec := canarySpec(appv1.CanaryStep{Weight: 0, Gate: true})
	spec.Size = int32p(seedSize)
	spec.Canary.BlueGreen = &appv1.BlueGreen{PreviewHostname: "preview.abort.example.com"}
	rrec, _ := startBlueGreen(t, ns, routed, spec)
	rrec.abortAtGate(t, ns, routed, "nginx:1.28")
	eventually(t, time.Minute, func() error {
		if _, err := gatewayAPI(t).GatewayV1().HTTPRoutes(ns).Get(context.Background(), rrec.preview, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the preview hostname's route: %v, want it gone", err)
		}
		return nil
	})
	if vs := rrec.route.snapshot(); len(vs) == 0 {
		t.Errorf("no version of the route %s recorded", routed)
	}
	for _, v := range rrec.route.snapshot() {
		if w := routeWeight(v.obj); w != 0 {
			t.Errorf("the route sent the users %d%% to an aborted preview (resourceVersion %d)", w, v.rv)
		}
	}
	rrec.checkStacks(t, "blue")
}

func testBlueGreenSwitchBack(t *testing.T) {
	ns := newNamespace(t)
	const name = "nginx-app"
	delay := int32(120)
	spec := seedBlueGreen(t, appv1.BlueGreen{ScaleDownDelaySeconds: &delay}, appv1.CanaryStep{Weight: 0, PauseSeconds: 2})
	spec.Canary.Analysis = &appv1.CanaryAnalysis{IntervalSeconds: 1, Metrics: []appv1.AnalysisMetric{successRate()}}
	rec, svc := startBlueGreen(t, ns, name, spec)
	events := recordEvents(t, ns, name)
	// The preview answers well until the switch.
	gatewayMetrics.SetRate(ns, rec.preview, "200", 10)
	gatewayMetrics.SetRate(ns, rec.preview, "503", 0)

	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = "nginx:1.8" })
	rec.waitEdges(t, "0@0%", "0@0%+ready", "1@0%", "1@100%")
	switched := rec.switchedAt(t, 1)
	hash := switched.obj.Status.Canary.CanaryTemplateHash
	// Then it fails the users.
	gatewayMetrics.SetRate(ns, rec.preview, "200", 0)
	gatewayMetrics.SetRate(ns, rec.preview, "503", 10)
	back := waitStalled(t, ns, name, appv1.ReasonCanaryAnalysisFailed, "its analysis failed")
	if k := kstatusOf(t, ns, name); k != status.FailedStatus {
		t.Errorf("kstatus says %s of a release switched back, want Failed", k)
	}
	if k := kstatusOfObject(t, switched.obj); k != status.InProgressStatus {
		t.Errorf("kstatus says %s of a switched release, want InProgress", k)
	}
	waitDeploymentGone(t, ns, rec.preview)
	events.wait(t, time.Minute, func(es []*corev1.Event) error {
		for _, e := range es {
			if e.Type == corev1.EventTypeWarning && e.Reason == appv1.ReasonCanaryAnalysisFailed && strings.Contains(e.Message, "after the switch, which goes back") {
				return nil
			}
		}
		return fmt.Errorf("no Warning Event of the switch back")
	})

	var abortedAt time.Time
	for _, v := range rec.app.snapshot() {
		if c := v.obj.Status.Canary; c != nil && c.AbortedTemplateHash == hash && abortedAt.IsZero() {
			abortedAt = v.at
		}
	}
	if abortedAt.IsZero() || abortedAt.Sub(switched.at) >= time.Duration(delay)*time.Second {
		t.Errorf("switched back at %s, %s after the switch: want within the scale-down delay (%ds)", abortedAt, abortedAt.Sub(switched.at), delay)
	}
	rec.checkStacks(t, "blue", "preview", "blue")
	rec.checkService(t, svc, svc.Spec.Selector, children.SwitchedSelector(&appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: name}}, hash),
		svc.Spec.Selector)
	if rolled := rec.stableKept(t, "nginx:1.7.9"); !rolled.IsZero() {
		t.Errorf("the failed preview's template reached the stable Deployment")
	}
	if c := back.Status.Canary; c.Request != nil || c.CanaryTemplateHash != "" {
		t.Errorf("status.canary once switched back: %s", canaryString(c))
	}
}
