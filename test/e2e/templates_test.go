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
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The analyses' templates (AnalysisTemplate, ClusterAnalysisTemplate), end
// to end, on the suite's Prometheus (analysis_test.go's gateway series).

// rateTemplate is a template of successRate's query for the Service its
// argument service names, passing at min.
func rateTemplate(metric, min string) appv1.AnalysisTemplateSpec {
	return appv1.AnalysisTemplateSpec{
		Args: []appv1.AnalysisArg{{Name: "service"}},
		Metrics: []appv1.AnalysisMetric{{Name: metric, Min: new(min),
			Query: `sum(rate(gateway_requests_total{namespace="{{ namespace }}",service="{{ args.service }}",code!~"5.."}[5s]))` +
				` / sum(rate(gateway_requests_total{namespace="{{ namespace }}",service="{{ args.service }}"}[5s]))`}},
	}
}

// templatedSpec is canarySpec's AppService judged by these templates only,
// every 2 s.
func templatedSpec(refs []appv1.AnalysisTemplateRef, steps ...appv1.CanaryStep) appv1.AppServiceSpec {
	spec := canarySpec(steps...)
	spec.Canary.Analysis = &appv1.CanaryAnalysis{IntervalSeconds: 2, Templates: refs}
	return spec
}

func createTemplate(t *testing.T, ns, name string, spec appv1.AnalysisTemplateSpec) {
	t.Helper()
	_, err := apps.AppV1().AnalysisTemplates(ns).Create(context.Background(),
		&appv1.AnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// editTemplate sets the min of the first metric of ns's AnalysisTemplate.
func editTemplate(t *testing.T, ns, name, min string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		at, err := apps.AppV1().AnalysisTemplates(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		at.Spec.Metrics[0].Min = new(min)
		_, err = apps.AppV1().AnalysisTemplates(ns).Update(context.Background(), at, metav1.UpdateOptions{})
		return err
	})
}

// pinsOf is a version's status.canary.templates.
func pinsOf(as *appv1.AppService) []appv1.PinnedTemplate {
	if as.Status.Canary == nil {
		return nil
	}
	return as.Status.Canary.Templates
}

// release changes the AppService's image: a new canary.
func release(t *testing.T, ns, name, image string) {
	t.Helper()
	updateAppService(t, ns, name, func(as *appv1.AppService) { as.Spec.Image = image })
}

// TestAnalysisTemplates: a fleet's judge defined once, in four namespaces
// at once.
//   - missing: a canary whose template does not exist holds at its start,
//     with no Pods and no traffic, Stalled with a reason of its own and a
//     Warning Event; once the template is created it starts by itself and
//     is promoted.
//   - args: two templates that both declare the argument service, given
//     different values by their references: each query gets its own; once
//     promoted, the audit log records no write in steady state.
//   - edited: a template edited in the middle of a release leaves the
//     running canary's queries as they were (it is promoted with no
//     failure though the edit fails every value), says so by a Normal
//     Event and in its status; the next release runs the edit, and fails.
//   - fleet: six AppServices judged by one ClusterAnalysisTemplate with
//     a bound no value meets are all aborted by it; once it is fixed, the
//     next releases of all six pass.
//   - plugin: kubectl appservice analysis tries the judge before a
//     release, on the suite's Prometheus: exit 0 while the canary's
//     Service would pass, 6 once it answers errors; through the API
//     server's service proxy, a viewer is refused (exit 4) and a Service
//     with no Prometheus behind it is a failed query (exit 6).
func TestAnalysisTemplates(t *testing.T) {
	parallel(t)
	installGatewayAPI(t)
	applyPluginRoles(t)
	t.Run("missing", func(t *testing.T) { t.Parallel(); testTemplateMissing(t) })
	t.Run("args", func(t *testing.T) { t.Parallel(); testTemplateArgs(t) })
	t.Run("edited", func(t *testing.T) { t.Parallel(); testTemplateEdited(t) })
	t.Run("fleet", func(t *testing.T) { t.Parallel(); testTemplateFleet(t) })
	t.Run("plugin", func(t *testing.T) { t.Parallel(); testTemplatePlugin(t) })
}

func testTemplateMissing(t *testing.T) {
	ns := newNamespace(t)
	const name = "held"
	serve(ns, name, 10, 0)
	createAppService(t, ns, name, templatedSpec([]appv1.AnalysisTemplateRef{{Name: "judge", Args: map[string]string{"service": name + "-canary"}}},
		appv1.CanaryStep{Weight: 20}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	release(t, ns, name, "nginx:1.28")

	waitStalled(t, ns, name, appv1.ReasonCanaryAnalysisUnresolved, "AnalysisTemplate "+ns+"/judge does not exist")
	waitEvent(t, ns, name, corev1.EventTypeWarning, appv1.ReasonCanaryAnalysisUnresolved, "AnalysisTemplate "+ns+"/judge does not exist")
	created := time.Now()
	createTemplate(t, ns, "judge", rateTemplate("success-rate", "0.95"))

	as := waitCanaryDone(t, ns, name)
	rec.waitWeights(t, 0, 20, 100, 0)
	// Held, it had no Pods and no weight: the canary's Deployment and the
	// first weight came after the template.
	for _, v := range rec.canary.snapshot() {
		if v.at.Before(created) {
			t.Errorf("the canary's Deployment (resourceVersion %d) before its template existed", v.rv)
		}
	}
	for _, v := range rec.route.snapshot() {
		if routeWeight(v.obj) > 0 && v.at.Before(created) {
			t.Errorf("route weight %d (resourceVersion %d) before the template existed", routeWeight(v.obj), v.rv)
		}
	}
	if ms := analysisOf(as); len(ms) != 1 || ms[0].Name != "success-rate" || ms[0].Result != appv1.MetricPassed {
		t.Errorf("status.canary.analysis once promoted: %s, want the template's success-rate Passed", metricsString(ms))
	}
	if pins := pinsOf(as); len(pins) != 1 || pins[0].Name != "judge" || pins[0].Kind != appv1.KindAnalysisTemplate || len(pins[0].Digest) != 16 {
		t.Errorf("status.canary.templates %+v, want judge pinned with its digest", pins)
	}
}

func testTemplateArgs(t *testing.T) {
	ns := newNamespace(t)
	const name = "twice"
	serve(ns, name, 10, 0)
	createTemplate(t, ns, "rate-a", rateTemplate("success-rate", "0.95"))
	b := rateTemplate("elsewhere-rate", "0.95")
	b.Metrics[0].DryRun = true
	createTemplate(t, ns, "rate-b", b)
	createAppService(t, ns, name, templatedSpec([]appv1.AnalysisTemplateRef{
		{Name: "rate-a", Args: map[string]string{"service": name + "-canary"}},
		{Name: "rate-b", Args: map[string]string{"service": "elsewhere"}},
	}, appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	release(t, ns, name, "nginx:1.28")

	as := waitCanaryDone(t, ns, name)
	rec.waitWeights(t, 0, 50, 100, 0)
	pins := pinsOf(as)
	if len(pins) != 2 {
		t.Fatalf("status.canary.templates %+v, want rate-a and rate-b", pins)
	}
	for i, want := range []string{`service="` + name + `-canary"`, `service="elsewhere"`} {
		if q := pins[i].Metrics[0].Query; !strings.Contains(q, want) || strings.Contains(q, "args.") {
			t.Errorf("%s's query %q, want its own argument, %s", pins[i].Name, q, want)
		}
	}
	results := map[string]appv1.MetricResult{}
	for _, m := range analysisOf(as) {
		results[m.Name] = m.Result
	}
	// rate-b's Service has no traffic: no data, and a dry run holds nothing.
	if results["success-rate"] != appv1.MetricPassed || results["elsewhere-rate"] != appv1.MetricNoData {
		t.Errorf("status.canary.analysis %s, want success-rate Passed and elsewhere-rate NoData", metricsString(analysisOf(as)))
	}

	// Promoted, its pins kept in the status: not one write while it
	// syncs, the templates read at each sync.
	waitInLine(t, ns, name)
	steady := time.Now()
	waitSyncs(t, ns, name)
	for _, w := range canaryWrites(t, steady, ns) {
		t.Errorf("write by the controller once promoted and in line: %s", w)
	}
}

func testTemplateEdited(t *testing.T) {
	ns := newNamespace(t)
	const name = "pinned"
	serve(ns, name, 10, 0)
	createTemplate(t, ns, "judge", rateTemplate("success-rate", "0.95"))
	spec := templatedSpec([]appv1.AnalysisTemplateRef{{Name: "judge", Args: map[string]string{"service": name + "-canary"}}},
		appv1.CanaryStep{Weight: 20, PauseSeconds: 10}, appv1.CanaryStep{Weight: 100})
	createAppService(t, ns, name, spec)
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	release(t, ns, name, "nginx:1.28")

	// A measurement passed at the first step: then the edit, which no
	// success rate meets.
	digest := waitPinnedPass(t, rec)
	editTemplate(t, ns, "judge", "2")
	// The Event comes once the status records the edit, and may trail it
	// under the parallel group's load: checkPinKept below reads the
	// status's record from the watch.
	waitEventWithin(t, 2*time.Minute, ns, name, corev1.EventTypeNormal, appv1.ReasonAnalysisTemplateChanged,
		"AnalysisTemplate judge changed")

	as := waitCanaryDone(t, ns, name)
	rec.waitWeights(t, 0, 20, 100, 0)
	latest := checkPinKept(t, rec, digest)
	if latest == "" || latest == digest {
		t.Errorf("no version of the status recorded the edit's digest (latest %q, pinned %q)", latest, digest)
	}
	if ms := analysisOf(as); len(ms) != 1 || ms[0].Result != appv1.MetricPassed {
		t.Errorf("status.canary.analysis once promoted: %s", metricsString(ms))
	}

	// The next release runs the edit: no value reaches 2.
	release(t, ns, name, "nginx:1.29")
	as = waitStalled(t, ns, name, appv1.ReasonCanaryAnalysisFailed, "below min 2")
	if pins := pinsOf(as); len(pins) != 1 || pins[0].Digest != latest {
		t.Errorf("the next canary pinned %+v, want the edit's digest %s", pins, latest)
	}
}

// testTemplateFleet: the fleet case above. Each AppService of the fleet is
// checked, so six prove what twenty did, with a third of the Pods (twenty
// made a tenth of the parallel group's API requests).
func testTemplateFleet(t *testing.T) {
	ns := newNamespace(t)
	const fleet = 6
	judge := "fleet-" + ns
	bad := rateTemplate("success-rate", "2")
	_, err := apps.AppV1().ClusterAnalysisTemplates().Create(context.Background(),
		&appv1.ClusterAnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: judge}, Spec: bad}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = apps.AppV1().ClusterAnalysisTemplates().Delete(context.Background(), judge, metav1.DeleteOptions{})
	})
	names := make([]string, fleet)
	for i := range names {
		names[i] = fmt.Sprintf("app-%02d", i)
		serve(ns, names[i], 10, 0)
		createAppService(t, ns, names[i], templatedSpec([]appv1.AnalysisTemplateRef{{Kind: appv1.KindClusterAnalysisTemplate, Name: judge,
			Args: map[string]string{"service": names[i] + "-canary"}}}, appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100}))
	}
	for _, name := range names {
		waitAvailable(t, ns, name, 1)
	}
	for _, name := range names {
		release(t, ns, name, "nginx:1.28")
	}
	for _, name := range names {
		waitStalled(t, ns, name, appv1.ReasonCanaryAnalysisFailed, "below min 2")
	}

	// Fixed once, for all of them: their next releases pass.
	eventually(t, 30*time.Second, func() error {
		cat, err := apps.AppV1().ClusterAnalysisTemplates().Get(context.Background(), judge, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cat.Spec.Metrics[0].Min = new("0.95")
		_, err = apps.AppV1().ClusterAnalysisTemplates().Update(context.Background(), cat, metav1.UpdateOptions{})
		return err
	})
	for _, name := range names {
		release(t, ns, name, "nginx:1.29")
	}
	for _, name := range names {
		as := waitCanaryDone(t, ns, name)
		if ms := analysisOf(as); len(ms) != 1 || ms[0].Result != appv1.MetricPassed {
			t.Errorf("%s: status.canary.analysis once promoted: %s, want success-rate Passed", name, metricsString(ms))
		}
	}
}

// testAnalysisTemplateKilled: the controller killed (SIGKILL) in the
// middle of a release, and the canary's template edited while it is down:
// the restarted controller runs what the canary pinned, read from its
// status, and promotes it with no failure though the edit fails every
// value.
func testAnalysisTemplateKilled(t *testing.T) {
	ns := newNamespace(t)
	const name = "survivor"
	serve(ns, name, 10, 0)
	createTemplate(t, ns, "judge", rateTemplate("success-rate", "0.95"))
	createAppService(t, ns, name, templatedSpec([]appv1.AnalysisTemplateRef{{Name: "judge", Args: map[string]string{"service": name + "-canary"}}},
		appv1.CanaryStep{Weight: 20, PauseSeconds: 10}, appv1.CanaryStep{Weight: 100}))
	waitAvailable(t, ns, name, 1)
	rec := recordCanary(t, ns, name)
	release(t, ns, name, "nginx:1.28")

	digest := waitPinnedPass(t, rec)
	if _, err := ctrl.Stop(syscall.SIGKILL); err == nil {
		t.Fatal("the killed controller exited cleanly?")
	}
	editTemplate(t, ns, "judge", "2")
	if err := ctrl.Start(); err != nil {
		t.Fatal(err)
	}

	waitCanaryDone(t, ns, name)
	rec.waitWeights(t, 0, 20, 100, 0)
	checkPinKept(t, rec, digest)
}

// waitPinnedPass waits until the recorded canary's status holds one pin
// and a passed measurement of its one metric, and returns the pin's
// digest.
func waitPinnedPass(t *testing.T, rec *canaryRecord) string {
	t.Helper()
	var digest string
	rec.app.wait(t, 2*time.Minute, func(vs []version[*appv1.AppService]) error {
		last := vs[len(vs)-1].obj
		if ms, pins := analysisOf(last), pinsOf(last); len(ms) == 1 && ms[0].Result == appv1.MetricPassed && len(pins) == 1 {
			digest = pins[0].Digest
			return nil
		}
		return fmt.Errorf("no measurement passed yet")
	})
	return digest
}

// checkPinKept checks every version of the AppService the watch recorded:
// no measurement failed, and every pin stayed at digest, whatever the
// template became. It returns the last digest an edit recorded (latest).
func checkPinKept(t *testing.T, rec *canaryRecord, digest string) string {
	t.Helper()
	latest := ""
	for _, v := range rec.app.snapshot() {
		for _, m := range analysisOf(v.obj) {
			if m.Result == appv1.MetricFailed || m.Failures > 0 {
				t.Errorf("measurement %s: the canary must run the bound it pinned (resourceVersion %d)", metricString(m), v.rv)
			}
		}
		for _, p := range pinsOf(v.obj) {
			if p.Digest != digest {
				t.Errorf("pin %s@%s, want it kept at %s (resourceVersion %d)", p.Name, p.Digest, digest, v.rv)
			}
			if p.Latest != "" {
				latest = p.Latest
			}
		}
	}
	return latest
}

func testTemplatePlugin(t *testing.T) {
	ns := newNamespace(t)
	const name = "tried"
	createTemplate(t, ns, "judge", rateTemplate("success-rate", "0.95"))
	createAppService(t, ns, name, templatedSpec([]appv1.AnalysisTemplateRef{{Name: "judge", Args: map[string]string{"service": name + "-canary"}}},
		appv1.CanaryStep{Weight: 50}, appv1.CanaryStep{Weight: 100}))
	p := &plugin{t: t, kubeconfig: cluster.Kubeconfig, ns: ns}
	try := func(code int, out string, args ...string) {
		t.Helper()
		eventually(t, time.Minute, func() error {
			r := p.run(append([]string{"analysis", name}, args...)...)
			if r.code != code || !strings.Contains(r.stdout+r.stderr, out) {
				return fmt.Errorf("exit %d, want %d saying %q\nstdout:\n%sstderr:\n%s", r.code, code, out, r.stdout, r.stderr)
			}
			return nil
		})
	}
	serve(ns, name, 10, 0)
	try(0, "Passed", "--prometheus-url", prometheus.URL)
	serve(ns, name, 5, 5)
	try(6, "below min 0.95", "--prometheus-url", prometheus.URL)

	// Through the service proxy: a viewer may not use it; behind a
	// Service without endpoints, every query fails.
	_, err := kube.CoreV1().Services(ns).Create(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 9090}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	try(6, "Error", "--prometheus-service", ns+"/prometheus:9090")
	bindRole(t, ns, "appservice-viewer", rbacv1.Subject{Kind: "ServiceAccount", Name: "viewer", Namespace: ns})
	try(4, "cannot get services/proxy in namespace", "--prometheus-service", ns+"/prometheus:9090", "--as=system:serviceaccount:"+ns+":viewer")
}
