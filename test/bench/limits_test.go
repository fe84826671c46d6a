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

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"example.com/appservice-controller/internal/localcluster"
)

// TestWaitWritten: the backlog ends when the audit log shows, for every
// AppService, its Deployment and Service created and its status written by
// the controller, answered with success, since its start; at the latest of
// those answers. Anything else does not count: other users, earlier
// requests, failures, reads, other kinds, a second write of the same one.
func TestWaitWritten(t *testing.T) {
	line := func(user, verb, resource, sub, name string, code int, received, answered string) string {
		return `{"stage":"ResponseComplete","verb":"` + verb + `","user":{"username":"` + user + `"},` +
			`"objectRef":{"resource":"` + resource + `","subresource":"` + sub + `","name":"` + name + `"},` +
			`"responseStatus":{"code":` + strconv.Itoa(code) + `},` +
			`"requestReceivedTimestamp":"2026-11-28T10:00:` + received + `Z","stageTimestamp":"2026-11-28T10:00:` + answered + `Z"}`
	}
	lines := []string{
		line("ctrl", "create", "deployments", "", "a", 201, "01", "02"),
		line("ctrl", "create", "services", "", "a", 201, "02", "03"),
		line("ctrl", "update", "appservices", "status", "a", 200, "03", "04"),
		line("ctrl", "create", "deployments", "", "b", 201, "04", "05"),
		line("ctrl", "create", "services", "", "b", 201, "05", "06"),
		// Not b's status: refused, another user's, before the start, a read.
		line("ctrl", "update", "appservices", "status", "b", 409, "06", "50"),
		line("other", "update", "appservices", "status", "b", 200, "06", "51"),
		line("ctrl", "update", "appservices", "status", "b", 200, "00", "00"),
		line("ctrl", "get", "appservices", "status", "b", 200, "06", "52"),
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &localcluster.Cluster{AuditLog: log}
	since := time.Date(2026, 11, 28, 10, 0, 1, 0, time.UTC)
	if _, err := waitWritten(c, "ctrl", since, 2, 0); err == nil || !strings.Contains(err.Error(), "2 Deployments, 2 Services, 1 statuses") {
		t.Errorf("without b's status, waitWritten returned %v, want a timeout that counts 2, 2 and 1", err)
	}

	// b's status, then a's written again later: the end is b's status.
	lines = append(lines, line("ctrl", "update", "appservices", "status", "b", 200, "07", "08"),
		line("ctrl", "update", "appservices", "status", "a", 200, "09", "30"))
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	end, err := waitWritten(c, "ctrl", since, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 28, 10, 0, 8, 0, time.UTC); !end.Equal(want) {
		t.Errorf("waitWritten ended at %v, want %v (b's status answered)", end, want)
	}
}

// TestListed: what informers list, by kind, namespace and label selector,
// each once, whether by a list or by a watch (a streaming list); not gets,
// writes or requests with no object.
func TestListed(t *testing.T) {
	lines := []string{
		`{"verb":"watch","requestURI":"/apis/apps/v1/deployments?labelSelector=app.example.com%2Fappservice&sendInitialEvents=true&watch=true","objectRef":{"resource":"deployments","apiGroup":"apps"}}`,
		`{"verb":"watch","requestURI":"/apis/apps/v1/deployments?labelSelector=app.example.com%2Fappservice&resourceVersion=12&watch=true","objectRef":{"resource":"deployments","apiGroup":"apps"}}`,
		`{"verb":"list","requestURI":"/api/v1/namespaces/bench/services?limit=500","objectRef":{"resource":"services","namespace":"bench"}}`,
		`{"verb":"get","requestURI":"/api/v1/namespaces/bench/services/a","objectRef":{"resource":"services","namespace":"bench","name":"a"}}`,
		`{"verb":"create","requestURI":"/api/v1/namespaces/bench/services","objectRef":{"resource":"services","namespace":"bench"}}`,
		`{"verb":"get","requestURI":"/apis"}`,
	}
	var requests []localcluster.AuditEvent
	for _, l := range lines {
		var e localcluster.AuditEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		requests = append(requests, e)
	}
	want := []string{"/services bench ", "apps/deployments  app.example.com/appservice"}
	if got := listed(requests); !slices.Equal(got, want) {
		t.Errorf("listed = %q, want %q", got, want)
	}
}

// TestBaseline: each turn's backlog is compared with the baseline's of the
// same turn, and the median of those ratios is the verdict, not the ratio
// of the two sides' medians (turns a minute apart share the machine's
// speed; turns ten minutes apart may not). The breakdown is the median
// turn's.
func TestBaseline(t *testing.T) {
	r := LimitRun{Spec: specRealistic, N: 1000, Runs: 3, Limits: []float64{10, 12, 10}, Backlogs: []float64{10, 12, 11}, BacklogSeconds: 11, Ratio: 1.1,
		Backlog: Backlog{Writes: 3500, ControllerCPU: 4.5, Server: CPUTimes{APIServer: 24}}}
	r.setBaseline("5bdf953", []Backlog{{Seconds: 10, Writes: 3400}, {Seconds: 10, Writes: 3401}, {Seconds: 12, Writes: 3402}})
	if want := []float64{1, 1.2, 11.0 / 12}; !slices.Equal(r.BaselineRatios, want) {
		t.Errorf("the turns' ratios %v, want %v", r.BaselineRatios, want)
	}
	if r.VsBaseline != 1 || r.BaselineSeconds != 10 || r.BaselineBacklog.Writes != 3400 {
		t.Errorf("this / baseline %.2f, baseline %.2f s, the median turn's writes %d; want 1, 10 and turn 1's 3400",
			r.VsBaseline, r.BaselineSeconds, r.BaselineBacklog.Writes)
	}
	md := (&Results{Limits: []LimitRun{r}}).limitsMarkdown()
	for _, want := range []string{"(5bdf953, -baseline)", "| realistic | 1000 | 3 | 10.00 | 11.00 | **1.00×** | 1.00×, 1.20×, 0.92× | 1.00× | 1.10× | 3.50 / 3.40 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the results lack %q:\n%s", want, md)
		}
	}
}
