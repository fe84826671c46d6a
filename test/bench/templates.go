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
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TemplatesRun: N canaries held at a routed step, each measuring the
// three metrics of analysisMetrics every 10 s, written inline in each
// AppService (Mode "inline") or in one ClusterAnalysisTemplate that each
// AppService names (Mode "template", issue 70), once every canary has a
// first round in its status (its pins among it): the controller's memory,
// and an AppService's size as JSON.
type TemplatesRun struct {
	Mode string `json:"mode"`
	N    int    `json:"n"`
	// HeapInuseBytes and RSSBytes: the controller's Go heap in use and
	// resident memory, 20 s (two rounds) after every canary's first.
	HeapInuseBytes int64 `json:"heapInuseBytes"`
	RSSBytes       int64 `json:"rssBytes"`
	// SpecBytes and ObjectBytes: the mean size as JSON of an AppService's
	// spec, and of the whole object as the API server returns it (its
	// status with the pins), without managedFields.
	SpecBytes   float64 `json:"specBytes"`
	ObjectBytes float64 `json:"objectBytes"`
	// FirstRoundSeconds: from the image changes until every canary's
	// status holds a first round.
	FirstRoundSeconds float64 `json:"firstRoundSeconds"`
}

// benchTemplate names the ClusterAnalysisTemplate of the template runs.
const benchTemplate = "bench-judge"

// measureTemplates runs n canaries with their analysis inline, then the
// same with it in a template (see TemplatesRun), each on a cluster of its
// own.
func measureTemplates(o options, n int) ([]TemplatesRun, error) {
	var runs []TemplatesRun
	for _, mode := range []string{"inline", "template"} {
		a := &appv1.CanaryAnalysis{IntervalSeconds: 10}
		var before func(*env) error
		if mode == "inline" {
			a.Metrics = analysisMetrics()
		} else {
			a.Templates = []appv1.AnalysisTemplateRef{{Kind: appv1.KindClusterAnalysisTemplate, Name: benchTemplate}}
			before = func(e *env) error {
				_, err := e.apps.AppV1().ClusterAnalysisTemplates().Create(context.Background(), &appv1.ClusterAnalysisTemplate{
					ObjectMeta: metav1.ObjectMeta{Name: benchTemplate}, Spec: appv1.AnalysisTemplateSpec{Metrics: analysisMetrics()},
				}, metav1.CreateOptions{})
				return err
			}
		}
		logf("templates: %d canaries, their analysis %s", n, mode)
		run, err := measureTemplateRun(o, mode, n, a, before)
		if err != nil {
			return runs, fmt.Errorf("%s: %w", mode, err)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

func measureTemplateRun(o options, mode string, n int, a *appv1.CanaryAnalysis, before func(*env) error) (TemplatesRun, error) {
	res := TemplatesRun{Mode: mode, N: n}
	b, err := newCanaryBench(o, "templates-"+mode, n, a, before)
	if err != nil {
		return res, err
	}
	defer b.close()
	first, err := b.release(len(analysisMetrics()))
	if err != nil {
		return res, err
	}
	res.FirstRoundSeconds = first.Seconds()
	time.Sleep(20 * time.Second)
	m, err := readMemory(b.ctrl)
	if err != nil {
		return res, err
	}
	res.HeapInuseBytes, res.RSSBytes = m.heap, m.rss
	list, err := b.e.apps.AppV1().AppServices(benchNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return res, err
	}
	var spec, whole int
	for i := range list.Items {
		as := &list.Items[i]
		as.ManagedFields = nil
		if mode == "template" && (as.Status.Canary == nil || len(as.Status.Canary.Templates) != 1) {
			return res, fmt.Errorf("%s: status.canary.templates %v, want the template pinned", as.Name, as.Status.Canary)
		}
		s, err := json.Marshal(as.Spec)
		if err != nil {
			return res, err
		}
		w, err := json.Marshal(as)
		if err != nil {
			return res, err
		}
		spec, whole = spec+len(s), whole+len(w)
	}
	res.SpecBytes, res.ObjectBytes = float64(spec)/float64(len(list.Items)), float64(whole)/float64(len(list.Items))
	return res, nil
}

// templatesMarkdown is the row of the template runs.
func templatesMarkdown(runs []TemplatesRun) string {
	if len(runs) == 0 {
		return ""
	}
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = fmt.Sprintf("%s: %s, %s; %.0f B, %.0f B", r.Mode, mib(r.HeapInuseBytes), mib(r.RSSBytes), r.SpecBytes, r.ObjectBytes)
	}
	return fmt.Sprintf("| %d canaries held at a routed step, 3 metrics every 10 s, inline in each AppService vs in one ClusterAnalysisTemplate "+
		"each names (pinned in each status): the controller's heap in use and RSS two rounds after the first; an AppService's spec and "+
		"whole object as JSON | %s |\n", runs[0].N, strings.Join(parts, " vs "))
}
