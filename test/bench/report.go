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
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The results as BENCHMARKS.md's tables (markdown, peerMarkdown).

func (r *Results) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s. Date: %s. Spec: %s. Controller flags: defaults%s.",
		r.Machine, r.Date, r.Spec, strings.TrimSpace(" "+strings.Join(r.Controller, " ")))
	if len(r.ControllerEnv) > 0 {
		fmt.Fprintf(&b, " Controller environment: %s.", strings.Join(r.ControllerEnv, " "))
	}
	b.WriteString("\n")
	if len(r.Convergence) > 0 {
		b.WriteString("\n| AppServices | runs | limit (s) | convergence, created live (s) | ratio | convergence, backlog (s) | ratio | " +
			"writes / AppService | RSS | RSS / AppService | CPU (s) |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range r.Convergence {
			fmt.Fprintf(&b, "| %d | %d | %.2f | %.2f | %.2f× | %.2f | %.2f× | %.2f | %s | %.1f KiB | %.1f |\n",
				c.N, c.Runs, c.LimitSeconds, c.ConvergenceSeconds, c.Ratio, c.BacklogSeconds, c.BacklogRatio,
				c.WritesPerAppService, mib(c.RSSBytes), c.RSSPerAppServiceByte/1024, c.CPUSeconds)
		}
	}
	// The measures' table, without the rows of the measures left out.
	var m strings.Builder
	if l := r.Latency; l.Count > 0 {
		fmt.Fprintf(&m, "| create → Deployment at %.0f/s (%d AppServices) | p50 %.0f ms, p99 %.0f ms, max %.0f ms |\n",
			l.RatePerSecond, l.Count, l.P50Seconds*1000, l.P99Seconds*1000, l.MaxSeconds*1000)
		fmt.Fprintf(&m, "| of which the AppService's create request (until the API server answered) | p50 %.0f ms, p99 %.0f ms |\n",
			l.CreateP50Seconds*1000, l.CreateP99Seconds*1000)
	}
	if s := r.Steady; s.N > 0 {
		fmt.Fprintf(&m, "| steady state, %d AppServices, %.0f s, resync every %.0f s | %d writes = %.2f writes / AppService / hour |\n",
			s.N, s.WindowSeconds, s.ResyncPeriodSeconds, s.Writes, s.WritesPerAppServicePerHour)
	}
	if rs := r.Restart; rs.N > 0 {
		fmt.Fprintf(&m, "| restart over %d AppServices in sync | ready in %.2f s, %d writes |\n", rs.N, rs.ReadySeconds, rs.Writes)
	}
	if u := r.Unrelated; u.N > 0 {
		fmt.Fprintf(&m, "| RSS, %d AppServices: empty cluster vs %d unrelated Deployments + Services | %s vs %s (%+.1f%%) |\n",
			u.N, u.Unrelated, mib(u.RSSEmptyBytes), mib(u.RSSCrowdedBytes), u.DifferencePct)
	}
	for _, obj := range r.Objects {
		fmt.Fprintf(&m, "| %s of one AppService: JSON (without managedFields); encoded in the cache; Go heap whole vs as cached | %d; %d; %.0f vs %.0f bytes |\n",
			obj.Kind, obj.JSONBytes, obj.CachedBytes, obj.HeapBytes, obj.CachedHeapBytes)
	}
	if c := r.CRDCost; c.N > 0 {
		fmt.Fprintf(&m, "| create %d AppServices vs %d Deployments of the same Pod template, 16 clients, no controller | %.2f s vs %.2f s (%.2f×) |\n",
			c.N, c.N, c.AppServicesSeconds, c.DeploymentsSeconds, c.Ratio)
		fmt.Fprintf(&m, "| the API server's mean time per create: AppService vs Deployment; "+
			"its CPU in the AppServices' CEL rules, OpenAPI schema | %.1f ms vs %.1f ms; %.0f%%, %.0f%% |\n",
			c.AppServiceCreateMillis, c.DeploymentCreateMillis, 100*c.CELShare, 100*c.SchemaShare)
		v := c.Validation
		fmt.Fprintf(&m, "| one AppService validated offline: OpenAPI schema; CEL rules (cost units, rules evaluated; allocations) | "+
			"%.0f µs; %.0f µs (%d, %d rules; %.0f allocations, %.0f KiB) |\n",
			v.SchemaMicros, v.CELMicros, v.CELCost, v.CELRules, v.CELAllocs, v.CELAllocBytes/1024)
		for _, r := range v.TopRules {
			rule := strings.ReplaceAll(strings.Join(strings.Fields(r.Rule), " "), "|", "\\|")
			fmt.Fprintf(&m, "| CEL rule alone, at `%s`: `%s` | %.1f µs, cost %d |\n", r.Path, rule, r.Micros, r.Cost)
		}
	}
	if a := r.Activities; a.N > 0 {
		fmt.Fprintf(&m, "| %d Activities created at once, each run by its Job to Succeeded: time; writes / Activity; RSS, RSS / Activity | "+
			"%.1f s; %.2f; %s, %.1f KiB |\n", a.N, a.SucceededSeconds, a.WritesPerActivity, mib(a.RSSBytes), a.RSSPerActivityByte/1024)
		fmt.Fprintf(&m, "| restart over %d finished Activities, %.0f s | %d writes |\n", a.N, a.RestartWindowSeconds, a.RestartWrites)
	}
	for _, cr := range r.ConfigRollouts {
		limit := fmt.Sprintf("a cap of %d", cr.Cap)
		if cr.Cap == 0 {
			limit = "no cap"
		}
		fmt.Fprintf(&m, "| one edit of a ConfigMap %d AppServices read, %s: time until all rolled out; most rolling at once | %.1f s; %d |\n",
			cr.N, limit, cr.Seconds, cr.Peak)
	}
	for _, c := range []Canaries{r.Canaries, r.CanariesByPods, r.CanariesBlueGreen} {
		if c.N == 0 {
			continue
		}
		by, what, steps := "by route", "canaries", "of three steps (10%, 50%, 100%, no pause)"
		switch {
		case c.BlueGreen:
			by, what, steps = "by the Service's selector (no route)", "blue-green releases", "of one step, a scale-down delay of 0"
		case c.ByPods:
			by = "by Pods (no route)"
		}
		fmt.Fprintf(&m, "| %d %s %s %s started at once: spec change to the first weighted traffic, "+
			"median and slowest; until all promoted | %.1f s, %.1f s; %.1f s |\n", c.N, what, by, steps, c.FirstWeightMedian, c.FirstWeightMax, c.PromotedSeconds)
		writes := make([]string, 0, len(c.Writes))
		for _, k := range slices.Sorted(maps.Keys(c.Writes)) {
			writes = append(writes, fmt.Sprintf("%s %.1f", k, float64(c.Writes[k])/float64(c.N)))
		}
		fmt.Fprintf(&m, "| writes per release %s %s: all; of the children (%s) | %.1f; %.1f |\n",
			by, steps, strings.Join(writes, ", "), c.WritesPerCanary, c.ChildWritesPerCanary)
	}
	if a := r.Analysis; a.N > 0 {
		fmt.Fprintf(&m, "| %d canaries held at a routed step, an analysis of %d metrics every %d s each, a fake Prometheus answering at once, "+
			"over %.0f s: queries / s (expected %.0f), most in flight; controller CPU s / s (idle before: %.3f); status writes / s; "+
			"still passing at the end | %.1f, %d; %.3f; %.1f; %d of %d |\n",
			a.N, a.Metrics, a.IntervalSeconds, a.WindowSeconds, a.ExpectedPerSecond, a.IdleCPUPerSecond,
			a.QueriesPerSecond, a.MostQueriesInFlight, a.CPUPerSecond, a.StatusWritesPerSecond, a.Passing, a.N)
		writes := make([]string, 0, len(a.Writes))
		for _, k := range slices.Sorted(maps.Keys(a.Writes)) {
			writes = append(writes, fmt.Sprintf("%s %d", k, a.Writes[k]))
		}
		fmt.Fprintf(&m, "| the controller's writes over those %.0f s (%s); from the image changes to a first round in every status | %.1f / s; %.1f s |\n",
			a.WindowSeconds, strings.Join(writes, ", "), a.WritesPerSecond, a.FirstRoundSeconds)
	}
	m.WriteString(templatesMarkdown(r.Templates))
	m.WriteString(notifyMarkdown(r.Notifications))
	m.WriteString(eventsMarkdown(r.EventsLags))
	if sp := r.SlowPrometheus; sp.N > 0 {
		fmt.Fprintf(&m, "| convergence of %d AppServices without an analysis, median of %d: -prometheus-url a Prometheus answering after %.0f s "+
			"vs none (writes / AppService; queries it received) | %.2f s vs %.2f s (%.2f×; %.2f vs %.2f; %d) |\n",
			sp.N, sp.Runs, sp.DelaySeconds, sp.WithSeconds, sp.WithoutSeconds, sp.Ratio, sp.WithWrites, sp.WithoutWrites, sp.Queries)
	}
	if c := r.Config; c.N > 0 {
		fmt.Fprintf(&m, "| RSS, %d AppServices with rolloutOnConfigChange: alone vs %d unrelated ConfigMaps + %d Secrets of %d KiB "+
			"in another namespace vs in theirs | %s vs %s (%+.1f%%) vs %s (%+.1f%%, %.0f bytes per object) |\n",
			c.N, c.Unrelated, c.Unrelated, c.ObjectBytes>>10, mib(c.RSSAloneBytes), mib(c.RSSOtherNamespaceBytes), c.OtherNamespacePct,
			mib(c.RSSSameNamespaceBytes), c.SameNamespacePct, c.SameNamespacePerObject)
		writes := make([]string, 0, len(c.WritesPerChange))
		for _, k := range slices.Sorted(maps.Keys(c.WritesPerChange)) {
			writes = append(writes, fmt.Sprintf("%d %s", c.WritesPerChange[k], k))
		}
		fmt.Fprintf(&m, "| writes per config change (one AppService's ConfigMap: its data; its labels only) | %s; %d |\n",
			strings.Join(writes, ", "), c.WritesPerLabelEdit)
	}
	if m.Len() > 0 {
		b.WriteString("\n| measure | result |\n|---|---|\n")
		b.WriteString(m.String())
	}
	b.WriteString(r.limitsMarkdown())
	b.WriteString(r.peerMarkdown())
	b.WriteString(r.floodMarkdown())
	b.WriteString(r.Capacity.markdown())
	return b.String()
}

// peerMarkdown is the section of measurePeer's runs: one table, a row per
// measure and, per N, this controller, the peer and their ratio.
func (r *Results) peerMarkdown() string {
	if len(r.Peer) == 0 {
		return ""
	}
	type pair struct{ ours, peer *PeerRun }
	type key struct {
		spec string
		n    int
	}
	var specs []string
	sizes := map[string][]int{}
	runs := map[key]*pair{}
	for i := range r.Peer {
		p := &r.Peer[i]
		k := key{p.Spec, p.N}
		if runs[k] == nil {
			runs[k] = &pair{}
			if len(sizes[p.Spec]) == 0 {
				specs = append(specs, p.Spec)
			}
			sizes[p.Spec] = append(sizes[p.Spec], p.N)
		}
		if p.Controller == sidePeer {
			runs[k].peer = p
		} else {
			runs[k].ours = p
		}
	}
	const oneDecimal, twoDecimals = "%.1f", "%.2f"
	rows := []struct {
		name, format string
		value        func(p *PeerRun) float64
	}{
		{"convergence, created live (s)", twoDecimals, func(p *PeerRun) float64 { return p.ConvergenceSeconds }},
		{"writes / AppService", twoDecimals, func(p *PeerRun) float64 { return p.WritesPerAppService }},
		{"idle RSS (MiB)", oneDecimal, func(p *PeerRun) float64 { return float64(p.IdleRSSBytes) / (1 << 20) }},
		{"RSS / AppService (KiB)", oneDecimal, func(p *PeerRun) float64 { return p.RSSPerAppServiceBytes / 1024 }},
		{"Go heap in use, idle (MB)", oneDecimal, func(p *PeerRun) float64 { return float64(p.IdleHeapInuseBytes) / 1e6 }},
		{"Go heap in use, after convergence (MB)", oneDecimal, func(p *PeerRun) float64 { return float64(p.HeapInuseBytes) / 1e6 }},
		{"RSS after convergence (MiB)", oneDecimal, func(p *PeerRun) float64 { return float64(p.RSSBytes) / (1 << 20) }},
		{"CPU (s)", oneDecimal, func(p *PeerRun) float64 { return p.CPUSeconds }},
		{"binary size (MB)", oneDecimal, func(p *PeerRun) float64 { return float64(p.BinaryBytes) / 1e6 }},
	}
	var b strings.Builder
	b.WriteString("\n### The peer (controller-runtime, kubebuilder's scaffold)\n\n")
	b.WriteString("N AppServices created live, each controller alone on a fresh control plane (test/bench/peer; ratio: ours / peer).\n\n")
	for _, spec := range specs {
		ns := sizes[spec]
		fmt.Fprintf(&b, "#### %s\n\n| measure |", spec)
		for _, n := range ns {
			fmt.Fprintf(&b, " ours, %d | peer, %d | ratio |", n, n)
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|---:|---:|", len(ns)) + "\n")
		for _, row := range rows {
			fmt.Fprintf(&b, "| %s |", row.name)
			for _, n := range ns {
				ours, peer := runs[key{spec, n}].ours, runs[key{spec, n}].peer
				cell := func(p *PeerRun) string {
					if p == nil {
						return "–"
					}
					return fmt.Sprintf(row.format, row.value(p))
				}
				ratio := "–"
				if ours != nil && peer != nil && row.value(peer) != 0 {
					ratio = fmt.Sprintf("%.2f×", row.value(ours)/row.value(peer))
				}
				fmt.Fprintf(&b, " %s | %s | %s |", cell(ours), cell(peer), ratio)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}
