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

package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestWritesSkipsTheLineBeingWritten: Writes reads the user's completed
// requests since a time, and not the last line while the API server is
// still writing it (no newline yet), which does not parse.
func TestWritesSkipsTheLineBeingWritten(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	lines := `{"stage":"ResponseComplete","verb":"update","user":{"username":"ctrl"},"requestReceivedTimestamp":"2026-11-28T10:00:01Z"}
{"stage":"ResponseComplete","verb":"patch","user":{"username":"other"},"requestReceivedTimestamp":"2026-11-28T10:00:02Z"}
{"stage":"ResponseStarted","verb":"watch","user":{"username":"ctrl"},"requestReceivedTimestamp":"2026-11-28T10:00:03Z"}
{"stage":"ResponseComplete","verb":"create","user":{"username":"ctrl"},"requestReceivedTimestamp":"2026-11-28T09:59:59Z"}
{"stage":"ResponseComplete","verb":"delete","user":{"username":"ctrl"},"requestReceivedTimestamp":"2026-11-28T10:00:04Z"}
{"stage":"ResponseComplete","verb":"patch","user":{"userna`
	if err := os.WriteFile(log, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{AuditLog: log}
	got, err := c.Writes("ctrl", time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, e := range got {
		verbs = append(verbs, e.Verb)
	}
	if len(verbs) != 2 || verbs[0] != "update" || verbs[1] != "delete" {
		t.Errorf("Writes read %v, want [update delete]", verbs)
	}

	// A whole line that does not parse is an error, not skipped.
	if err := os.WriteFile(log, []byte(lines+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Writes("ctrl", time.Time{}); err == nil {
		t.Error("Writes read a complete line that is not JSON without an error")
	}
}

// TestRequests: every request of the user since a time, a watch as it
// started (its end is logged later, when it ends), anything else as it
// completed.
func TestRequests(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	lines := `{"stage":"ResponseComplete","verb":"get","user":{"username":"ctrl"},"requestReceivedTimestamp":"2026-11-28T10:00:01Z"}
{"stage":"ResponseStarted","verb":"watch","user":{"username":"ctrl"},"requestReceivedTimestamp":"2026-11-28T10:00:02Z"}
{"stage":"ResponseComplete","verb":"create","user":{"username":"other"},"requestReceivedTimestamp":"2026-11-28T10:00:03Z"}
{"stage":"ResponseComplete","verb":"create","user":{"username":"ctrl"},"requestReceivedTimestamp":"2026-11-28T10:00:04Z"}
{"stage":"ResponseComplete","verb":"watch","user":{"username":"ctrl"},"requestReceivedTimestamp":"2026-11-28T10:00:02Z"}
{"stage":"ResponseComplete","verb":"list","user":{"username":"ctrl"},"requestReceivedTimestamp":"2026-11-28T09:59:59Z"}
`
	if err := os.WriteFile(log, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{AuditLog: log}
	got, err := c.Requests("ctrl", time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range got {
		seen = append(seen, e.Stage+" "+e.Verb)
	}
	want := []string{"ResponseComplete get", "ResponseStarted watch", "ResponseComplete create"}
	if !slices.Equal(seen, want) {
		t.Errorf("Requests read %v, want %v", seen, want)
	}
}

// TestAuditTail: a tail returns each line once, as it is completed: a line
// the API server is still writing comes whole on a later call.
func TestAuditTail(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &Cluster{AuditLog: log}
	tail, err := c.TailAudit()
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Close()
	next := func(written string, want ...string) {
		t.Helper()
		if _, err := f.WriteString(written); err != nil {
			t.Fatal(err)
		}
		got, err := tail.Next()
		if err != nil {
			t.Fatal(err)
		}
		var verbs []string
		for _, e := range got {
			verbs = append(verbs, e.Verb)
		}
		if !slices.Equal(verbs, want) {
			t.Errorf("after %q, Next read %v, want %v", written, verbs, want)
		}
	}
	next("")
	next(`{"verb":"create"}`+"\n"+`{"verb":"up`, "create")
	next(`date"}`+"\n", "update")
	next("")
	next(`{"verb":"patch"}`+"\n"+`{"verb":"delete"}`+"\n", "patch", "delete")
}
