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
