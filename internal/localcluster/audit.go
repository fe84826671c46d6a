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
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// AuditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type AuditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	// RequestURI is the request's path and query.
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// String is a one-line summary, for test failures.
func (e AuditEvent) String() string {
	s := fmt.Sprintf("%s %s", e.User.Username, e.Verb)
	if r := e.ObjectRef; r != nil {
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		s += fmt.Sprintf(" %s %s/%s", res, r.Namespace, r.Name)
	}
	if e.ResponseStatus != nil {
		s += fmt.Sprintf(" → %d", e.ResponseStatus.Code)
	}
	return s
}

// Writes returns the completed write requests (every request the audit
// policy records) that user sent at or after since. A request is placed by
// when the API server received it, not when it completed: a slow request of
// a process stopped before since is not that process's successor's.
func (c *Cluster) Writes(user string, since time.Time) ([]AuditEvent, error) {
	return c.events(user, since, func(e *AuditEvent) bool { return e.Stage == "ResponseComplete" })
}

// Requests returns the requests user sent at or after since, as each was
// started: a watch's events of stage ResponseStarted (its end, if it has
// ended, is among Writes), any other request's of stage ResponseComplete.
func (c *Cluster) Requests(user string, since time.Time) ([]AuditEvent, error) {
	return c.events(user, since, func(e *AuditEvent) bool {
		return e.Stage == "ResponseComplete" && e.Verb != "watch" || e.Stage == "ResponseStarted"
	})
}

// events returns the audit events of user's requests received at or
// after since that keep says to keep.
func (c *Cluster) events(user string, since time.Time, keep func(*AuditEvent) bool) ([]AuditEvent, error) {
	t, err := c.TailAudit()
	if err != nil {
		return nil, err
	}
	defer t.Close()
	all, err := t.Next()
	if err != nil {
		return nil, err
	}
	var out []AuditEvent
	for i := range all {
		if e := &all[i]; keep(e) && e.User.Username == user && !e.RequestReceivedTimestamp.Before(since) {
			out = append(out, *e)
		}
	}
	return out, nil
}

// AuditTail follows the audit log as the API server writes it: each Next
// returns the events of the lines completed since the previous call, so
// that a caller polling the log reads each line once.
type AuditTail struct {
	f *os.File
	r *bufio.Reader
	// partial is the start of a line the API server was still writing.
	partial []byte
}

// TailAudit follows the audit log from its first line.
func (c *Cluster) TailAudit() (*AuditTail, error) {
	f, err := os.Open(c.AuditLog)
	if err != nil {
		return nil, err
	}
	return &AuditTail{f: f, r: bufio.NewReaderSize(f, 1<<20)}, nil
}

// Next returns the events of the lines completed since the last call.
func (t *AuditTail) Next() ([]AuditEvent, error) {
	var out []AuditEvent
	for {
		line, err := t.r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A last line without its newline is one the API server is
			// still writing: its request is not logged yet. The reader
			// reads the file again on the next call.
			t.partial = append(t.partial, line...)
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(t.partial) > 0 {
			line, t.partial = append(t.partial, line...), nil
		}
		var e AuditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", t.f.Name(), err)
		}
		out = append(out, e)
	}
}

// Close closes the log.
func (t *AuditTail) Close() error { return t.f.Close() }

// LongestRenewalGap is the longest time between user's Lease renewals
// (updates answered 200) from since to until, the ends included: a
// renewal late by the renew deadline is a Lease lost.
func (c *Cluster) LongestRenewalGap(user string, since, until time.Time) (time.Duration, error) {
	writes, err := c.Writes(user, since.Add(-5*time.Second))
	if err != nil {
		return 0, err
	}
	last, gap := since, time.Duration(0)
	for _, w := range writes {
		if w.ObjectRef == nil || w.ObjectRef.Resource != "leases" || w.Verb != "update" ||
			w.ResponseStatus == nil || w.ResponseStatus.Code != http.StatusOK {
			continue
		}
		at := w.RequestReceivedTimestamp
		if at.After(until) {
			break
		}
		if at.After(last) {
			gap, last = max(gap, at.Sub(last)), at
		}
	}
	return max(gap, until.Sub(last)), nil
}

// Reviews counts the TokenReviews and SubjectAccessReviews among writes
// received before until.
func Reviews(writes []AuditEvent, until time.Time) int {
	n := 0
	for _, w := range writes {
		if w.ObjectRef != nil && (w.ObjectRef.Resource == "tokenreviews" || w.ObjectRef.Resource == "subjectaccessreviews") &&
			w.RequestReceivedTimestamp.Before(until) {
			n++
		}
	}
	return n
}
