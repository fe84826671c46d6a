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
	f, err := os.Open(c.AuditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A last line without its newline is one the API server is
			// still writing: its request is not logged yet.
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var e AuditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", c.AuditLog, err)
		}
		if !keep(&e) || e.User.Username != user || e.RequestReceivedTimestamp.Before(since) {
			continue
		}
		out = append(out, e)
	}
}

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
