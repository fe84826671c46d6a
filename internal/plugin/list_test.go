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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// listApps are one AppService in each state, in two namespaces.
func listApps() []appv1.AppService {
	named := func(s *Snapshot, name, namespace string, age time.Duration) appv1.AppService {
		as := *s.AppService
		as.Name, as.Namespace, as.CreationTimestamp = name, namespace, ago(age)
		return as
	}
	promoting := gatedSnapshot()
	promoting.AppService.Status.Canary.Step, promoting.AppService.Status.Canary.Weight = new(int32(3)), 100
	setConditions(promoting.AppService, appv1.ReasonCanaryPromoting, "promoted", metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse)
	return []appv1.AppService{
		named(healthySnapshot(), "web", "shop", 48*time.Hour),
		named(gatedSnapshot(), "cart", "shop", 3*time.Hour),
		named(pausingSnapshot(), "api", "shop", 90*time.Second),
		named(abortedSnapshot(), "pay", "bank", 26*time.Hour),
		named(suspendedSnapshot(), "batch", "bank", 10*time.Minute),
		named(promoting, "search", "shop", 5*time.Minute),
		named(byPodsSnapshot(), "seed", "shop", time.Hour),
	}
}

func TestRows(t *testing.T) {
	want := [][]string{
		{"NAME", "STATUS", "STEP", "WEIGHT", "AGE"},
		{"batch", "Suspended", "-", "-", "10m"},
		{"pay", "Degraded", "-", "-", "26h"},
		{"api", "Progressing", "2/3", "50% by route", "90s"},
		{"cart", "Gated", "1/3", "10% by route", "3h"},
		{"search", "Progressing", "3/3", "100% by route", "5m"},
		{"seed", "Gated", "1/3", "33% by Pods (1/3)", "60m"},
		{"web", "Healthy", "-", "-", "2d"},
	}
	if diff := cmp.Diff(want, Rows(listApps(), false, now)); diff != "" {
		t.Errorf("Rows (-want +got):\n%s", diff)
	}
	all := Rows(listApps(), true, now)
	if diff := cmp.Diff([]string{"NAMESPACE", "NAME", "STATUS", "STEP", "WEIGHT", "AGE"}, all[0]); diff != "" {
		t.Errorf("Rows -A header (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"bank", "batch", "Suspended", "-", "-", "10m"}, all[1]); diff != "" {
		t.Errorf("Rows -A first row (-want +got):\n%s", diff)
	}
	// A canary held at its start for its route claims no step and no
	// weight: it says what it waits for.
	// A step whose test runs says so.
	tested := Rows([]appv1.AppService{*testingSnapshot().AppService}, false, now)
	if diff := cmp.Diff([]string{"web", "Progressing", "2/3 testing", "10% by route", "2d"}, tested[1]); diff != "" {
		t.Errorf("Rows of a step testing (-want +got):\n%s", diff)
	}
	held := Rows([]appv1.AppService{*awaitingRouteApp()}, false, now)
	if diff := cmp.Diff([]string{"web", "Degraded", "0/3", "waits for route", "2d"}, held[1]); diff != "" {
		t.Errorf("Rows of a canary held for its route (-want +got):\n%s", diff)
	}
}

func TestList(t *testing.T) {
	f := newFakes(gatedSnapshot())
	for _, as := range listApps() {
		if as.Namespace != ns || as.Name == name {
			continue
		}
		if _, err := f.apps.AppV1().AppServices(ns).Create(context.Background(), &as, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := f.run(context.Background(), "list")
	want := `NAME     STATUS        STEP   WEIGHT              AGE
api      Progressing   2/3    50% by route        90s
cart     Gated         1/3    10% by route        3h
search   Progressing   3/3    100% by route       5m
seed     Gated         1/3    33% by Pods (1/3)   60m
web      Gated         1/3    10% by route        2d
`
	if code != ExitOK || out != want {
		t.Errorf("list: exit %d, stderr %q:\n%s\nwant\n%s", code, errOut, out, want)
	}

	out, _, code = f.run(context.Background(), "list", "-o", "json")
	if code != ExitOK || !strings.Contains(out, `"kind": "AppServiceList"`) || strings.Count(out, `"kind": "AppService"`) != 5 {
		t.Errorf("list -o json: exit %d:\n%.400s", code, out)
	}

	empty := newFakes(gatedSnapshot())
	if err := empty.apps.AppV1().AppServices(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := empty.run(context.Background(), "list"); code != ExitOK || out != "" || errOut != "No AppServices found in namespace \"shop\".\n" {
		t.Errorf("list of none: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if err := empty.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := empty.run(context.Background(), "list"); code != ExitNotFound || errOut != "Error: namespace \"shop\" not found\n" {
		t.Errorf("list in a missing namespace: exit %d, stderr %q", code, errOut)
	}
}
