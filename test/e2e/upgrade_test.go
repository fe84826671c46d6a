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
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/harness"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// upgradeFrom is the earlier commit the upgrade test starts from: the last
// one landed before (2026-11-26), the release the current build replaces.
// Move it forward now and then; the test builds it from the repository's
// history, with the current build's dependencies where its go.mod names the
// same (on a new machine, an older commit's other dependencies are compiled
// from scratch: the one before this linked k8s.io/apiserver).
const upgradeFrom = "ff8b75055c1db8d02605489248598092fe45d610"

// earlierShape is everyShape as the earlier build's CRD admits it: its
// steps of weight 0 without a mirror are refused there, so the blue-green
// shape is a canary of one 20% step, whose blueGreen would be pruned.
func earlierShape(i int) *appv1.AppService {
	as := everyShape(i)
	if c := as.Spec.Canary; c != nil && c.BlueGreen != nil {
		c.BlueGreen = nil
		for j := range c.Steps {
			c.Steps[j].Weight = 20
		}
	}
	return as
}

// TestUpgradeRestartsNoApp: the controller built from an earlier commit runs
// a hundred AppServices of every shape until they are Available; replaced
// by the current build, it changes no Pod template. The audit log shows no
// write to a Deployment or another child but one to each HTTPRoute, which
// names its rules (and changes nothing else of it), and at most one status
// write per AppService; the ReplicaSets are the ones the earlier build's templates
// made. A builder change that altered every template would roll every app
// in the cluster at once on an upgrade: this is the test that says so.
func TestUpgradeRestartsNoApp(t *testing.T) {
	serial(t, 2)
	earlier := buildAt(t, upgradeFrom)
	ns := newNamespace(t)
	setUpEveryShape(t, ns)

	// The earlier build replaces the suite's controller (as a rollback
	// would), installs its own CRD, and makes the children.
	old := swapControllerTo(t, "earlier", earlier)
	const n = 60 // every shape of everyShape once
	createEveryShape(t, ns, n, earlierShape)
	replicaSetsBefore := replicaSetUIDs(t, ns)
	routesBefore, err := gatewayAPI(t).GatewayV1().HTTPRoutes(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := metricsToken(t, ns)

	// The upgrade: the current build in its place, which installs its CRD.
	if _, err := old.Stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping the earlier build: %v", err)
	}
	current, err := newControllerProcess("upgraded")
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	if err := current.Start(); err != nil {
		t.Fatal(err)
	}
	ctrl = current
	t.Cleanup(func() { _, _ = current.Stop(syscall.SIGTERM) })
	// Every AppService synced by the current build twice at least: as its
	// caches filled, and at a resync (-resync-period=10s).
	waitReconciled(t, current, token, map[string]int{"appservice": 2 * n})

	statusWrites, routeWrites := map[string]int{}, map[string]int{}
	for _, w := range controllerWrites(t, since, ns) {
		switch {
		case w.ObjectRef == nil:
			t.Errorf("write by the upgraded controller: %s", w)
		case w.ObjectRef.Resource == "appservices" && w.ObjectRef.Subresource == "status":
			statusWrites[w.ObjectRef.Name]++
		case w.ObjectRef.Resource == "httproutes":
			// The earlier build named no rule: each route gets its
			// names and the record of its filters, once. A patch the
			// API server refused as stale (409: a sync ran before the
			// informer brought the first write back, once in a cold
			// run) changed nothing, and is not counted.
			if w.ResponseStatus == nil || w.ResponseStatus.Code != http.StatusConflict {
				routeWrites[w.ObjectRef.Name]++
			}
		case slices.Contains([]string{"tokenreviews", "subjectaccessreviews", "events"}, w.ObjectRef.Resource):
			// /metrics reviewing the test's scrapes; an Event would
			// come with a child's write, and is reported with it.
		default:
			t.Errorf("write by the upgraded controller: %s (an upgrade writes no child)", w)
		}
	}
	for name, count := range statusWrites {
		if count > 1 {
			t.Errorf("AppService %s: %d status writes on the upgrade, want one at most", name, count)
		}
	}
	checkRoutesNamedOnce(t, ns, routesBefore.Items, routeWrites)
	if after := replicaSetUIDs(t, ns); !slices.Equal(after, replicaSetsBefore) {
		t.Errorf("the ReplicaSets changed on the upgrade: %d before, %d after (a Pod template changed)", len(replicaSetsBefore), len(after))
	}
	t.Logf("upgrade from %.7s: %d status writes over %d AppServices, %d routes named, no other child written", upgradeFrom, len(statusWrites), n, len(routeWrites))
}

// checkRoutesNamedOnce: each route the earlier build wrote (before) was
// written once by the upgrade (writes), and only its rules' names and the
// record of their filters changed: it routes as it did, and no request is
// dropped.
func checkRoutesNamedOnce(t *testing.T, ns string, before []gatewayv1.HTTPRoute, writes map[string]int) {
	t.Helper()
	if len(before) == 0 {
		t.Fatal("the earlier build made no HTTPRoute: every shape should include some")
	}
	for _, r := range before {
		if writes[r.Name] != 1 {
			t.Errorf("HTTPRoute %s: %d writes on the upgrade, want one (its rules named)", r.Name, writes[r.Name])
		}
		after, err := gatewayAPI(t).GatewayV1().HTTPRoutes(ns).Get(context.Background(), r.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		named := r.Spec.DeepCopy()
		for i := range named.Rules {
			named.Rules[i].Name = new(gatewayv1.SectionName(children.RuleName(i, "")))
		}
		if !equality.Semantic.DeepEqual(*named, after.Spec) {
			t.Errorf("HTTPRoute %s: the upgrade changed more than its rules' names:\n%s", r.Name, cmp.Diff(*named, after.Spec))
		}
		if _, ok := after.Annotations[appv1.AnnotationRouteFilters]; !ok && slices.ContainsFunc(after.Spec.Rules, func(rule gatewayv1.HTTPRouteRule) bool { return len(rule.Filters) > 0 }) {
			t.Errorf("HTTPRoute %s: its filters are not recorded (%s)", r.Name, appv1.AnnotationRouteFilters)
		}
	}
	for name := range writes {
		if !slices.ContainsFunc(before, func(r gatewayv1.HTTPRoute) bool { return r.Name == name }) {
			t.Errorf("HTTPRoute %s: written on the upgrade, though the earlier build had not made it", name)
		}
	}
}

// buildAt builds the controller as it was at commit, from the repository's
// history, into the binaries' cache (once per commit). It fails, never
// skips, when the checkout lacks that history: a shallow clone.
func buildAt(t *testing.T, commit string) string {
	t.Helper()
	cache := os.Getenv("APPSERVICE_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(dir, "appservice-controller")
	}
	bin := filepath.Join(cache, "controllers", commit, "appservice-controller")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", repoRoot}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := git("cat-file", "-e", commit+"^{commit}"); err != nil {
		shallow, _ := git("rev-parse", "--is-shallow-repository")
		t.Fatalf("the checkout lacks commit %s, which the upgrade test builds (git rev-parse --is-shallow-repository: %s): "+
			"clone the repository with its history: %v %s", commit, shallow, err, out)
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive %s | tar -x -C %q", repoRoot, commit, src))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	// As it built itself: make build, which stamps a version.
	tmp := filepath.Join(src, "appservice-controller")
	build := exec.Command("make", "--no-print-directory", "build", "BIN="+tmp, "VERSION=v0.0.0-"+commit[:12])
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", commit, err, out)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// swapControllerTo stops the suite's controller and runs bin in its place,
// as the leader, until the test ends; then the suite's controller runs
// again. The suite's controller is the current build; after the swap, bin
// is what the helpers watch.
func swapControllerTo(t *testing.T, name, bin string) *harness.Controller {
	t.Helper()
	saved := controllerBinary
	controllerBinary = bin
	defer func() { controllerBinary = saved }()
	return swapController(t, name)
}

// replicaSetUIDs are the UIDs of the ReplicaSets in ns, sorted.
func replicaSetUIDs(t *testing.T, ns string) []string {
	t.Helper()
	list, err := kube.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, rs := range list.Items {
		uids = append(uids, string(rs.UID))
	}
	slices.Sort(uids)
	return uids
}
