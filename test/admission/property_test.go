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

// Package admission holds the admission property test: generated AppService
// specs against a real kube-apiserver with the CRD, each child the
// controller builds from an admitted spec dry-run there too.
//
//	go test -tags e2e -run '^TestAdmissionProperty' ./test/admission   (make test-admission)
//
// It needs the local control plane's binaries (etcd and kube-apiserver):
// APPSERVICE_BIN_DIR names their folder, else hack/ensure-binaries.sh
// builds or finds them.
//
// It may import any package of this repository, the test helpers among them;
// nothing imports it.
package admission

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"example.com/appservice-controller/internal/analysis"
	"example.com/appservice-controller/internal/canary"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
)

// The property: for any AppService, the CRD admits it if and only if ... at
// least "only if" the API server accepts the children the controller builds
// from it. So, for every generated spec:
//
//   - the builders never panic, admitted or not;
//   - if the CRD admits it (server-side dry-run create), the Deployment and
//     the Service built from the admitted object (defaults applied) are
//     accepted by a server-side dry-run create too;
//   - and the controller's own diff (UpdateDeployment, UpdateService) finds
//     nothing to change between what it built and what the API server made
//     of it (defaults applied, node ports and clusterIP allocated): no spec
//     the CRD admits can make the controller write in a loop.
//
// A spec that breaks it is written to testdata as a regression
// case, the way go test -fuzz keeps its corpus, and every case there is
// checked first on each run.
//
// Two refusals of a child cannot be moved to admission, because they depend
// on the cluster rather than on the spec: a nodePort outside the cluster's
// --service-node-port-range and a nodePort some other Service holds. They are
// reported at run time (Degraded, CreateFailed) and are the only refusals
// accepted here.
//
// APPSERVICE_PROPERTY_SEED and APPSERVICE_PROPERTY_N change the seed (default
// 1) and the number of specs (default 1500).

var runtimeOnlyRefusals = []string{
	"provided port is not in the valid range",
	"provided port is already allocated",
}

const corpusDir = "testdata"

type corpusCase struct {
	Name string               `json:"name"`
	Spec appv1.AppServiceSpec `json:"spec"`
}

// regressionCase is a regression case (corpusDir) and its file.
type regressionCase struct {
	corpusCase
	file string
}

// regressionCases are the regression cases kept in corpusDir.
func regressionCases(t *testing.T) []regressionCase {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	cases := make([]regressionCase, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := regressionCase{file: f}
		if err := json.Unmarshal(data, &c.corpusCase); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cases = append(cases, c)
	}
	return cases
}

func TestAdmissionProperty(t *testing.T) {
	ctx := context.Background()
	kube, apps := startAPIServer(t)
	const ns = "property"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(c corpusCase) (string, error) {
		return checkSpec(ctx, kube, apps, ns, c)
	}

	cases := regressionCases(t)
	if len(cases) == 0 {
		t.Fatalf("no regression cases in %s", corpusDir)
	}
	for _, c := range cases {
		if _, err := check(c.corpusCase); err != nil {
			t.Errorf("%s: %v", c.file, err)
		}
	}

	seed, n := uint64(1), 1500
	if s := os.Getenv("APPSERVICE_PROPERTY_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	if s := os.Getenv("APPSERVICE_PROPERTY_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		n = v
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	outcomes := map[string]int{}
	found := 0
	for i := range n {
		c := generate(rng)
		outcome, err := check(c)
		outcomes[outcome]++
		if err == nil && outcome == "admitted" && c.Spec.Canary == nil && len(c.Name) <= 56 {
			// The generator admits few canaries: each admitted spec
			// without one is checked again with a canary whose every
			// step has tests, in and out of bounds.
			v := c
			v.Spec = *c.Spec.DeepCopy()
			v.Spec.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 20}, {Weight: 50}}}
			genTests(seed^uint64(i+1)*0x9e3779b97f4a7c15, v.Spec.Canary.Steps, true)
			outcome, err = check(v)
			outcomes["with tests, "+outcome]++
			c = v
			if err == nil && outcome == "admitted" && len(c.Name) <= 55 {
				// And as a blue-green release: its preview, its Service
				// and the Service switched to it must be created too.
				v.Spec = *c.Spec.DeepCopy()
				genBlueGreen(seed^uint64(i+1)*0x94d049bb133111eb, v.Spec.Canary, true, true, v.Spec.HTTPRoute != nil)
				outcome, err = check(v)
				outcomes["blue-green, "+outcome]++
				if err != nil {
					c = v
				}
			}
			if err == nil && outcome == "admitted" {
				// And with a canary on routes, with all the routes'
				// tools, which a random spec is rarely admitted with.
				v.Spec = *c.Spec.DeepCopy()
				genOnRoutes(seed^uint64(i+1)*0xbf58476d1ce4e5b9, &v.Spec)
				outcome, err = check(v)
				outcomes["on routes, "+outcome]++
				c = v
				if err == nil && outcome == "admitted" && len(c.Name) <= 55 {
					// And on routes as a blue-green release, its preview's
					// hostname one time in two.
					v.Spec = *c.Spec.DeepCopy()
					genBlueGreen(seed^uint64(i+1)*0xd6e8feb86659fd93, v.Spec.Canary, true, true, v.Spec.HTTPRoute != nil)
					outcome, err = check(v)
					outcomes["blue-green on routes, "+outcome]++
					if v.Spec.Canary.BlueGreen.PreviewHostname != "" {
						outcomes["blue-green with a preview hostname, "+outcome]++
					}
					c = v
				}
			}
		}
		if err == nil {
			continue
		}
		found++
		path := saveCase(t, c)
		t.Errorf("seed %d, case %d (saved as %s): %v", seed, i, path, err)
		if found >= 20 {
			t.Fatal("stopping after 20 failures")
		}
	}
	var summary []string
	for k, v := range outcomes {
		summary = append(summary, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(summary)
	t.Logf("seed %d, %d specs: %s", seed, n, strings.Join(summary, ", "))
	if outcomes["with tests, admitted"] < n/30 || outcomes["with tests, refused"] < n/100 {
		t.Errorf("the generator is lopsided for a canary's tests (%v): it must produce both kinds", outcomes)
	}
	if outcomes["blue-green, admitted"] < n/30 || outcomes["blue-green on routes, admitted"] < n/30 || outcomes["blue-green with a preview hostname, admitted"] < n/100 {
		t.Errorf("the generator admits too few blue-green releases (%v)", outcomes)
	}
	if outcomes["on routes, admitted"] < n/30 {
		t.Errorf("the generator admits too few canaries on routes (%v)", outcomes)
	}
	if outcomes["admitted"] < n/10 || outcomes["refused"] < n/10 {
		t.Errorf("the generator is lopsided (%v): it must produce both kinds of spec", outcomes)
	}
}

// checkSpec runs one case: the builders on the raw spec, the CRD's dry-run
// admission, and the children's dry-run creates. It returns the outcome
// ("admitted", "refused", "runtime-only") and an error when the property
// does not hold.
func checkSpec(ctx context.Context, kube kubernetes.Interface, apps clientset.Interface, ns string, c corpusCase) (outcome string, err error) {
	as := &appv1.AppService{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: ns, UID: "00000000-0000-4000-8000-000000000001"}, Spec: c.Spec}
	if err := buildAll(as); err != nil {
		return "panic", err
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	admitted, err := apps.AppV1().AppServices(ns).Create(ctx, as, dryRun)
	if err != nil {
		if !apierrors.IsInvalid(err) {
			return "error", fmt.Errorf("creating the AppService: %w", err)
		}
		if !strings.Contains(err.Error(), "spec") && !strings.Contains(err.Error(), "metadata.name") {
			return "refused", fmt.Errorf("refused without naming the field: %v", err)
		}
		return "refused", nil
	}
	admitted.UID = as.UID // dry-run leaves it empty; owner references need one
	if err := buildAll(admitted); err != nil {
		return "panic", err
	}
	errs := []error{
		dryRunChild(ctx, "Deployment", kube.AppsV1().Deployments(ns).Create, children.NewDeployment(admitted), children.UpdateDeployment),
		dryRunChild(ctx, "Service", kube.CoreV1().Services(ns).Create, children.NewService(admitted), children.UpdateService),
		dryRunChild(ctx, "ServiceAccount", kube.CoreV1().ServiceAccounts(ns).Create, children.NewServiceAccount(admitted), children.UpdateServiceAccount),
		dryRunChild(ctx, "Ingress", kube.NetworkingV1().Ingresses(ns).Create, children.NewIngress(admitted), children.UpdateIngress),
		dryRunChild(ctx, "HTTPRoute", gateway.GatewayV1().HTTPRoutes(ns).Create, children.NewHTTPRoute(admitted), children.UpdateHTTPRoute),
		dryRunChild(ctx, "GRPCRoute", gateway.GatewayV1().GRPCRoutes(ns).Create, children.NewGRPCRoute(admitted), children.UpdateGRPCRoute),
		dryRunChild(ctx, "PodDisruptionBudget", kube.PolicyV1().PodDisruptionBudgets(ns).Create, children.NewDisruptionBudget(admitted), children.UpdateDisruptionBudget),
		dryRunChild(ctx, "HorizontalPodAutoscaler", kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Create, children.NewAutoscaler(admitted), children.UpdateAutoscaler),
	}
	if steps := admitted.Spec.Canary; steps != nil && (admitted.Spec.HTTPRoute != nil || admitted.Spec.GRPCRoute != nil) {
		// The canary's children by route, at its first step's weight, and
		// the route with all a canary can add to it: a weight, a mirror,
		// the testers' and the sticky users' rules.
		first := steps.Steps[0].Weight
		stable := children.NewDeployment(admitted)
		route := children.NewHTTPRoute(admitted)
		split := children.RouteSplit{Weight: max(first, 1), Testers: len(steps.TesterHeaders) > 0}
		for _, s := range steps.Steps {
			split.Mirror = max(split.Mirror, s.Mirror)
		}
		if steps.Sticky != nil {
			split.Sticky = "5d8f6b7c9"
		}
		children.SplitHTTPRoute(route, admitted, split)
		grpcRoute := children.NewGRPCRoute(admitted)
		children.SplitGRPCRoute(grpcRoute, admitted, split)
		errs = append(errs,
			dryRunChild(ctx, "canary Deployment", kube.AppsV1().Deployments(ns).Create,
				children.NewCanaryDeployment(admitted, stable, canary.CanaryReplicas(*stable.Spec.Replicas, first), false), children.UpdateDeployment),
			dryRunChild(ctx, "canary Service", kube.CoreV1().Services(ns).Create, children.NewCanaryService(admitted), children.UpdateService),
			dryRunChild(ctx, "HTTPRoute split with the canary", gateway.GatewayV1().HTTPRoutes(ns).Create, route, children.UpdateHTTPRoute),
			dryRunChild(ctx, "GRPCRoute split with the canary", gateway.GatewayV1().GRPCRoutes(ns).Create, grpcRoute, children.UpdateGRPCRoute),
		)
	} else if steps != nil && steps.BlueGreen == nil {
		// By Pods: its Deployment, labelled for the AppService's Service.
		stable := children.NewDeployment(admitted)
		errs = append(errs, dryRunChild(ctx, "canary Deployment by Pods", kube.AppsV1().Deployments(ns).Create,
			children.NewCanaryDeployment(admitted, stable, canary.PodReplicas(*stable.Spec.Replicas, steps.Steps[0].Weight), true),
			children.UpdateDeployment))
	}
	if steps := admitted.Spec.Canary; steps != nil && steps.BlueGreen != nil {
		// Blue-green: the preview at full size, its Service, and the
		// AppService's Service switched to it by its template's label.
		stable := children.NewDeployment(admitted)
		preview := children.NewCanaryDeployment(admitted, stable, max(1, *stable.Spec.Replicas), false)
		switched := children.NewService(admitted)
		if switched != nil {
			switched.Spec.Selector = children.SwitchedSelector(admitted, preview.Spec.Template.Labels[appv1.LabelTemplate])
		}
		errs = append(errs,
			dryRunChild(ctx, "preview Deployment", kube.AppsV1().Deployments(ns).Create, preview, children.UpdateDeployment),
			dryRunChild(ctx, "preview Service", kube.CoreV1().Services(ns).Create, children.NewCanaryService(admitted), children.UpdateService),
			dryRunChild(ctx, "Service switched to the preview", kube.CoreV1().Services(ns).Create, switched, children.UpdateService),
			dryRunChild(ctx, "preview's HTTPRoute", gateway.GatewayV1().HTTPRoutes(ns).Create, children.NewPreviewHTTPRoute(admitted), children.UpdateHTTPRoute))
	}
	if c := admitted.Spec.Canary; c != nil && c.Analysis != nil {
		errs = append(errs, analysisRuns(c.Analysis))
	}
	errs = append(errs, testsRun(ctx, apps, kube, admitted)...)
	outcome = "admitted"
	for _, err := range errs {
		var refused *childRefused
		switch {
		case errors.As(err, &refused) && refused.runtimeOnly():
			outcome = "runtime-only"
		case err != nil:
			return "admitted", fmt.Errorf("admitted, but %v\nspec: %s", err, specJSON(admitted))
		}
	}
	return outcome, nil
}

// testsRun dry-run creates the Activity of each test of an admitted
// canary, as the controller makes it, and the Job its controller makes of
// it: what the AppService admits, neither refuses.
func testsRun(ctx context.Context, apps clientset.Interface, kube kubernetes.Interface, as *appv1.AppService) []error {
	if as.Spec.Canary == nil {
		return nil
	}
	var errs []error
	for i, step := range as.Spec.Canary.Steps {
		for _, t := range step.Tests {
			name := children.TestActivityName(as, "5d4f8b7c9", int32(i), t.Name, metav1.Now())
			vars := analysis.Vars{Namespace: as.Namespace, Name: as.Name, Target: children.CanaryName(as), Interval: time.Minute}
			act := children.NewCanaryTest(as, &t, name, int32(i), step.Weight, analysis.Render(t.Command, vars))
			errs = append(errs, dryRunChild(ctx, "test's Activity", apps.AppV1().Activities(as.Namespace).Create, act, children.UpdateActivity))
			act.UID = "00000000-0000-4000-8000-000000000002"
			errs = append(errs, dryRunChild(ctx, "test's Job", kube.BatchV1().Jobs(as.Namespace).Create, children.NewJob(act), children.UpdateJob))
		}
	}
	return errs
}

// analysisRuns checks an admitted analysis as the controller reads it:
// thresholds that are numbers, min not above max, and queries whose
// placeholders all render. (PromQL itself is Prometheus's to check, at
// run time: a query it refuses is a measurement error that names the
// metric.)
func analysisRuns(a *appv1.CanaryAnalysis) error {
	for _, m := range a.Metrics {
		lo, hi, err := canary.Thresholds(&m)
		switch {
		case err != nil:
			return fmt.Errorf("its metric %s: %w", m.Name, err)
		case lo > hi:
			return fmt.Errorf("its metric %s: min %v is above max %v", m.Name, lo, hi)
		case m.Min == nil && m.Max == nil:
			return fmt.Errorf("its metric %s has neither min nor max", m.Name)
		}
		q := analysis.Render(m.Query, analysis.Vars{Namespace: "ns", Name: "app", Target: "app-canary", Interval: time.Minute})
		if strings.Contains(q, "{{") {
			return fmt.Errorf("its metric %s's query %q renders as %q, with a placeholder left", m.Name, m.Query, q)
		}
	}
	// Each template it names can be found, and declare its arguments.
	for _, ref := range a.Templates {
		if k := analysis.Kind(ref); k != appv1.KindAnalysisTemplate && k != appv1.KindClusterAnalysisTemplate {
			return fmt.Errorf("its template %s is of kind %q", ref.Name, ref.Kind)
		}
		if errs := validation.IsDNS1123Subdomain(ref.Name); len(errs) > 0 {
			return fmt.Errorf("its template %q cannot be named: %s", ref.Name, strings.Join(errs, "; "))
		}
		for k := range ref.Args {
			if !argName.MatchString(k) {
				return fmt.Errorf("its template %s gets argument %q, which no template can declare", ref.Name, k)
			}
		}
	}
	return nil
}

// argName is a template argument's name, as the AnalysisTemplate's CRD
// admits it.
var argName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,62}$`)

// dryRunChild dry-runs the create of one child (none when desired is nil)
// and runs the controller's diff between desired and what the API server
// made of it.
func dryRunChild[T interface {
	comparable
	metav1.Object
}](ctx context.Context, kind string, create func(context.Context, T, metav1.CreateOptions) (T, error), desired T, diff func(live, desired T) (T, []string)) error {
	var none T
	if desired == none {
		return nil
	}
	live, err := create(ctx, desired, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return &childRefused{kind: kind, err: err}
	}
	if _, changed := diff(live, desired); changed != nil {
		return fmt.Errorf("the controller would update its own %s on every sync (%v differ once defaulted)", kind, changed)
	}
	return nil
}

// childRefused is a child's dry-run create refused by the API server.
type childRefused struct {
	kind string
	err  error
}

func (e *childRefused) Error() string { return fmt.Sprintf("its %s is refused: %v", e.kind, e.err) }

// runtimeOnly reports whether the refusal depends on the cluster, not the
// spec.
func (e *childRefused) runtimeOnly() bool {
	for _, s := range runtimeOnlyRefusals {
		if strings.Contains(e.err.Error(), s) {
			return true
		}
	}
	return false
}

// buildAll runs every builder on as and turns a panic into an error.
func buildAll(as *appv1.AppService) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("builder panicked: %v\nspec: %s", r, specJSON(as))
		}
	}()
	d := children.NewDeployment(as)
	children.UpdateDeployment(d, children.NewDeployment(as))
	if s := children.NewService(as); s != nil {
		children.UpdateService(s, children.NewService(as))
	}
	if sa := children.NewServiceAccount(as); sa != nil {
		children.UpdateServiceAccount(sa, children.NewServiceAccount(as))
	}
	if in := children.NewIngress(as); in != nil {
		children.UpdateIngress(in, children.NewIngress(as))
		children.IngressURL(in)
	}
	if r := children.NewHTTPRoute(as); r != nil {
		children.UpdateHTTPRoute(r, children.NewHTTPRoute(as))
		children.HTTPRouteURL(r)
		children.SplitHTTPRoute(r, as, children.RouteSplit{Weight: 50, Mirror: 20, Testers: true, Sticky: "5d8f6b7c9"})
	}
	if r := children.NewGRPCRoute(as); r != nil {
		children.UpdateGRPCRoute(r, children.NewGRPCRoute(as))
		children.SplitGRPCRoute(r, as, children.RouteSplit{Weight: 50, Mirror: 20, Testers: true})
	}
	if as.Spec.Canary != nil {
		byPods := as.Spec.HTTPRoute == nil && as.Spec.GRPCRoute == nil
		c := children.NewCanaryDeployment(as, d, 1, byPods)
		children.UpdateDeployment(c, children.NewCanaryDeployment(as, d, 1, byPods))
		children.NewCanaryService(as)
		children.TemplateHash(d)
	}
	if b := children.NewDisruptionBudget(as); b != nil {
		children.UpdateDisruptionBudget(b, children.NewDisruptionBudget(as))
	}
	if a := children.NewAutoscaler(as); a != nil {
		children.UpdateAutoscaler(a, children.NewAutoscaler(as))
	}
	return nil
}

func specJSON(as *appv1.AppService) string {
	data, _ := json.Marshal(as.Spec)
	return string(data)
}

func saveCase(t *testing.T, c corpusCase) string {
	t.Helper()
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	path := filepath.Join(corpusDir, fmt.Sprintf("%x.json", sum[:8]))
	if err := os.MkdirAll(corpusDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// repoRoot is the repository's top, from this package's folder (where go
// test runs it).
const repoRoot = "../.."

// gateway is the Gateway API's client on the property test's API server.
var gateway gatewayclient.Interface

// restConfig is the API server's, for the tests that change the CRD.
var restConfig *rest.Config

// startAPIServer runs etcd and kube-apiserver (no other components: only
// admission is under test) with the controller's CRD and the Gateway API's
// installed.
func startAPIServer(t *testing.T) (kubernetes.Interface, clientset.Interface) {
	t.Helper()
	binDir := os.Getenv("APPSERVICE_BIN_DIR")
	if binDir == "" {
		out, err := exec.Command(filepath.Join(repoRoot, "hack/ensure-binaries.sh")).Output()
		if err != nil {
			t.Fatalf("hack/ensure-binaries.sh: %v", err)
		}
		binDir = strings.TrimSpace(string(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	cfg, err := localcluster.RESTConfig(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit
	if err := localcluster.InstallCRDs(ctx, cfg, filepath.Join(repoRoot, "artifacts/examples/crd.yaml"), filepath.Join(repoRoot, "artifacts/examples/crd-activity.yaml"),
		filepath.Join(repoRoot, "artifacts/examples/crd-analysistemplate.yaml"), filepath.Join(repoRoot, "artifacts/examples/crd-clusteranalysistemplate.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := localcluster.InstallGatewayAPI(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	gateway = gatewayclient.NewForConfigOrDie(cfg)
	restConfig = cfg
	return kubernetes.NewForConfigOrDie(cfg), clientset.NewForConfigOrDie(cfg)
}
