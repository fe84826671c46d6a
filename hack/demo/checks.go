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
	"fmt"
	"strconv"
	"strings"
)

// The steps' checks and befores (steps.go has the tour itself), and the
// helpers they share.

// event waits for an Event about the AppService name with the reason and a
// message containing want.
func (t *tour) event(ctx context.Context, name, reason, want string) error {
	return t.eventually(ctx, func() (bool, string, error) {
		out, err := t.run(ctx, "get", "events", "--field-selector",
			"involvedObject.kind=AppService,involvedObject.name="+name+",reason="+reason,
			"-o", `jsonpath={range .items[*]}{.message}{"\n"}{end}`)
		if err != nil {
			return false, "", fmt.Errorf("kubectl get events: %v: %s", err, out)
		}
		return strings.Contains(out, want), fmt.Sprintf("%s Events %q, want one with %q", reason, out, want), nil
	})
}

// warning waits for a Warning Event about the AppService name with the
// reason and a message containing each of want.
func (t *tour) warning(ctx context.Context, name, reason string, want ...string) error {
	return t.eventually(ctx, func() (bool, string, error) {
		out, err := t.run(ctx, "get", "events", "--field-selector",
			"type=Warning,involvedObject.kind=AppService,involvedObject.name="+name+",reason="+reason,
			"-o", `jsonpath={range .items[*]}{.message}{"\n"}{end}`)
		if err != nil {
			return false, "", fmt.Errorf("kubectl get events: %v: %s", err, out)
		}
		for line := range strings.SplitSeq(out, "\n") {
			if containsAll(line, want) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("Warning %s Events %q, want one with %q", reason, out, want), nil
	})
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// seriesAsNarrated checks the metrics step: the series it shows say what
// its narration says.
func seriesAsNarrated(_ context.Context, t *tour) error {
	for _, want := range []string{
		`appservice_info{name="nginx-app",namespace="default",reason="RolloutComplete",state="Ready"} 1`,
		`appservice_info{name="shop",namespace="default",reason="CanaryAborted",state="Stalled"} 1`,
		`appservice_info{name="checkout",namespace="default",reason="CanaryAnalysisFailed",state="Stalled"} 1`,
		`activity_info{name="sleep-once",namespace="default",prosta="Succeeded"} 1`,
	} {
		if !strings.Contains(t.last[0], want) {
			return fmt.Errorf("/metrics has no %s", want)
		}
	}
	return nil
}

// promotedThenAborted checks the second canary step: nginx:1.28 promoted,
// the route to shop alone, nginx:1.29's canary aborted and gone.
func promotedThenAborted(ctx context.Context, t *tour) error {
	if err := t.equals(ctx, "deployment/shop", "{.spec.template.spec.containers[0].image}", "nginx:1.28"); err != nil {
		return err
	}
	if err := t.equals(ctx, "httproute/shop", "{.spec.rules[0].backendRefs[*].name}", "shop"); err != nil {
		return err
	}
	if err := t.event(ctx, "shop", "CanaryAborted", "spec.canary.abort is true"); err != nil {
		return err
	}
	return t.eventually(ctx, func() (bool, string, error) {
		name, err := t.get(ctx, "deployment/shop-canary", "{.metadata.name}")
		return err == nil && name == "", "deployment/shop-canary: " + name, err
	})
}

// routeSplits: the watch of shop's route showed each step's split.
func routeSplits(_ context.Context, t *tour) error {
	watched := strings.Join(strings.Fields(t.last[len(t.last)-1]), " ")
	for _, split := range []string{"shop,shop-canary 90,10", "shop,shop-canary 50,50", "shop,shop-canary 0,100"} {
		if !strings.Contains(watched, split) {
			return fmt.Errorf("the route's watch did not show %q: %q", split, watched)
		}
	}
	return nil
}

// canaryByPods: nginx-app's canary went by Pods, 1 of 4 then 3 of 6, and
// was promoted behind the same Service.
func canaryByPods(ctx context.Context, t *tour) error {
	for _, share := range []string{"25% of the traffic by Pods (1 of 4), for a 25% step", "50% of the traffic by Pods (3 of 6), for a 50% step"} {
		if err := t.event(ctx, "nginx-app", "CanaryStep", share); err != nil {
			return err
		}
	}
	if err := t.equals(ctx, "service/nginx-app", "{.metadata.uid}/{.spec.clusterIP}", t.marks["service"]); err != nil {
		return err
	}
	if err := t.equals(ctx, "service/nginx-app", "{.spec.ports[0].nodePort}", "30002"); err != nil {
		return err
	}
	return t.equals(ctx, "deployment/nginx-app",
		"{.status.updatedReplicas}/{.status.availableReplicas}/{.spec.template.spec.containers[0].image}", "3/3/nginx:1.28")
}

// testedRelease: nginx-app's tests each ran once, as an Activity it owns,
// and passed; the canary was promoted.
func testedRelease(ctx context.Context, t *tour) error {
	for _, msg := range []string{"test smoke passed", "test load passed"} {
		if err := t.event(ctx, "nginx-app", "CanaryTest", msg); err != nil {
			return err
		}
	}
	if err := t.equals(ctx, "appservice/nginx-app", "{.status.canary.tests[*].phase}", "Succeeded Succeeded"); err != nil {
		return err
	}
	for _, test := range []string{"smoke", "load"} {
		name, err := t.get(ctx, "appservice/nginx-app", `{.status.canary.tests[?(@.name=="`+test+`")].activity}`)
		if err != nil {
			return err
		}
		if err := t.equals(ctx, "activity/"+name, "{.status.prosta}/{.metadata.ownerReferences[0].kind}", "Succeeded/AppService"); err != nil {
			return err
		}
	}
	return t.equals(ctx, "deployment/nginx-app", "{.status.updatedReplicas}/{.spec.template.spec.containers[0].image}", "3/nginx:1.29")
}

// blueGreenSwitched: at nginx-app's gate its preview's Service held the
// preview's Pod alone and the users' Service none of it (the third
// command's output); promoted, one switch's Event, nginx:1.30 on every
// Pod, the preview gone, and the same Service.
func blueGreenSwitched(ctx context.Context, t *tour) error {
	for _, line := range strings.Split(t.last[2], "\n") {
		switch {
		case strings.HasPrefix(line, "nginx-app-preview ") && !strings.Contains(line, "nginx-app-preview-"):
			return fmt.Errorf("at the gate, the preview's Service held no preview Pod: %q", line)
		case strings.HasPrefix(line, "nginx-app ") && strings.Contains(line, "nginx-app-preview-"):
			return fmt.Errorf("at the gate, the users' Service held a preview Pod: %q", line)
		}
	}
	if err := t.event(ctx, "nginx-app", "CanarySwitched", "100% of the traffic by the Service's selector, to its 3 Pods"); err != nil {
		return err
	}
	if err := t.equals(ctx, "service/nginx-app", "{.metadata.uid}/{.spec.clusterIP}", t.marks["service"]); err != nil {
		return err
	}
	if err := t.equals(ctx, "service/nginx-app", "{.spec.ports[0].nodePort}/{.spec.selector}", `30002/{"app.example.com/appservice":"nginx-app"}`); err != nil {
		return err
	}
	if err := t.equals(ctx, "deployment/nginx-app", "{.status.updatedReplicas}/{.spec.template.spec.containers[0].image}", "3/nginx:1.30"); err != nil {
		return err
	}
	return t.eventually(ctx, func() (bool, string, error) {
		name, err := t.get(ctx, "deployment/nginx-app-preview", "{.metadata.name}")
		return err == nil && name == "", "deployment/nginx-app-preview: " + name, err
	})
}

// releasedByHand: storefront's canary waited at its gate with the testers'
// rule, and the plugin's promotion ended it: promoted.
func releasedByHand(ctx context.Context, t *tour) error {
	if len(t.last) < 5 || !strings.Contains(t.last[4], "x-canary -> storefront-canary=1") {
		return fmt.Errorf("the route at the gate has no testers' rule to storefront-canary")
	}
	if err := t.equals(ctx, "deployment/storefront", "{.spec.template.spec.containers[0].image}", "nginx:1.28"); err != nil {
		return err
	}
	if err := t.event(ctx, "storefront", "CanaryRequested", "promoted on request past step 1 of 2"); err != nil {
		return err
	}
	return t.eventually(ctx, func() (bool, string, error) {
		name, err := t.get(ctx, "deployment/storefront-canary", "{.metadata.name}")
		return err == nil && name == "", "deployment/storefront-canary: " + name, err
	})
}

// shadowed: at shadow's gate, its route mirrored to the canary with no
// weight, had the sticky twin and kept the maintenance rule someone else
// added, and its GRPCRoute mirrored alike; the promotion took off the
// mirrors and the sticky rule, and kept the maintenance rule.
func shadowed(ctx context.Context, t *tour) error {
	if len(t.last) < 7 {
		return fmt.Errorf("the routes at the gate were not printed")
	}
	gate, grpc := t.last[5], t.last[6]
	for _, want := range []string{"appservice-0: RequestMirror -> shadow=1", "appservice-0-sticky: -> shadow-canary=1", "maintenance: -> shadow="} {
		if !strings.Contains(gate, want) {
			return fmt.Errorf("the route at the gate has no %q:\n%s", want, gate)
		}
	}
	if !strings.Contains(grpc, "appservice-0: RequestMirror -> shadow=1") || strings.Contains(grpc, "sticky") {
		return fmt.Errorf("the GRPCRoute at the gate does not mirror alone:\n%s", grpc)
	}
	if err := t.eventually(ctx, func() (bool, string, error) {
		image, err := t.get(ctx, "deployment/shadow", "{.spec.template.spec.containers[0].image}")
		return err == nil && image == "nginx:1.28", "deployment/shadow's image: " + image, err
	}); err != nil {
		return err
	}
	if err := t.eventually(ctx, func() (bool, string, error) {
		rules, err := t.get(ctx, "httproute/shadow", routeNamedRules[len("jsonpath="):])
		done := err == nil && !strings.Contains(rules, "RequestMirror") && !strings.Contains(rules, "sticky") &&
			strings.Contains(rules, "maintenance:") && !strings.Contains(rules, "shadow-canary")
		return done, "the route's rules:\n" + rules, err
	}); err != nil {
		return err
	}
	return t.eventually(ctx, func() (bool, string, error) {
		rules, err := t.get(ctx, "grpcroute/shadow", routeNamedRules[len("jsonpath="):])
		done := err == nil && !strings.Contains(rules, "RequestMirror") && !strings.Contains(rules, "shadow-canary")
		return done, "the GRPCRoute's rules:\n" + rules, err
	})
}

// rolledBack: storefront went back to nginx:1.27 without a canary.
func rolledBack(ctx context.Context, t *tour) error {
	if err := t.equals(ctx, "deployment/storefront", "{.spec.template.spec.containers[0].image}", "nginx:1.27"); err != nil {
		return err
	}
	if err := t.event(ctx, "storefront", "CanaryRolledBack", "Rolled back to"); err != nil {
		return err
	}
	name, err := t.get(ctx, "deployment/storefront-canary", "{.metadata.name}")
	if err != nil || name != "" {
		return fmt.Errorf("deployment/storefront-canary after the rollback: %q, %v", name, err)
	}
	return nil
}

// serveErrors is the analysis step's before: the stand-in gateway counts,
// per second, 10 requests to checkout answered 200, and to checkout-canary
// 8 answered 200 and 2 answered 503, a success rate of 0.8.
func serveErrors(_ context.Context, t *tour) error {
	if t.gateway == nil {
		return fmt.Errorf("no stand-in gateway: the step needs the tour's own controller")
	}
	t.gateway.SetRate("default", "checkout", "200", 10)
	t.gateway.SetRate("default", "checkout-canary", "200", 8)
	t.gateway.SetRate("default", "checkout-canary", "503", 2)
	fmt.Fprintln(t.out, t.say(text{
		"\n(the stand-in gateway now counts, per second: checkout 10 answered 200; checkout-canary 8 answered 200, 2 answered 503)",
		"\n（替身网关现在每秒计数：checkout 10 个以 200 应答；checkout-canary 8 个以 200 应答，2 个以 503 应答）",
	}))
	return nil
}

// serveCart is the template step's before: the stand-in gateway counts,
// per second, 10 requests to cart-canary answered 200.
func serveCart(_ context.Context, t *tour) error {
	if t.gateway == nil {
		return fmt.Errorf("no stand-in gateway: the step needs the tour's own controller")
	}
	t.gateway.SetRate("default", "cart-canary", "200", 10)
	fmt.Fprintln(t.out, t.say(text{
		"\n(the stand-in gateway now counts, per second: cart-canary 10 answered 200)",
		"\n（替身网关现在每秒计数：cart-canary 10 个以 200 应答）",
	}))
	return nil
}

// judgedByTemplate checks the template step: the pin of the promoted
// canary and its metric passed, as kubectl appservice get showed them
// (the seventh command), then the hold: nginx:1.28 still stable, no
// canary Deployment, and the Warning Event naming the template.
func judgedByTemplate(ctx context.Context, t *tour) error {
	if len(t.last) < 7 || !containsAll(t.last[6], []string{"templates pinned at the canary's start: ClusterAnalysisTemplate success-rate@",
		"success-rate  Passed"}) {
		return fmt.Errorf("kubectl appservice get cart shows no pinned template whose metric passed")
	}
	if err := t.equals(ctx, "deployment/cart", "{.spec.template.spec.containers[0].image}", "nginx:1.28"); err != nil {
		return err
	}
	if err := t.equals(ctx, "deployment/cart-canary", "{.metadata.name}", ""); err != nil {
		return err
	}
	return t.warning(ctx, "cart", "CanaryAnalysisUnresolved", "ClusterAnalysisTemplate no-such-judge does not exist")
}

// abortedByAnalysis checks the analysis step: Stalled, CanaryAnalysisFailed,
// the measurements kept in the status, the route to checkout alone, the
// canary's Deployment gone and a Warning Event with the metric, its value
// and the threshold.
func abortedByAnalysis(ctx context.Context, t *tour) error {
	if err := t.equals(ctx, "appservice/checkout", `{.status.conditions[?(@.type=="Stalled")].status}/{.status.conditions[?(@.type=="Stalled")].reason}`,
		"True/CanaryAnalysisFailed"); err != nil {
		return err
	}
	if err := t.equals(ctx, "appservice/checkout", "{.status.canary.analysis[0].name}/{.status.canary.analysis[0].result}/{.status.canary.analysis[0].failures}",
		"success-rate/Failed/2"); err != nil {
		return err
	}
	// 8 of 10 requests answered 200, as Prometheus computes it.
	value, err := t.get(ctx, "appservice/checkout", "{.status.canary.analysis[0].value}")
	if v, perr := strconv.ParseFloat(value, 64); err != nil || perr != nil || v < 0.75 || v > 0.85 {
		return fmt.Errorf("success-rate measured %q (%v), want about 0.8", value, err)
	}
	if err := t.equals(ctx, "httproute/checkout", "{.spec.rules[0].backendRefs[*].name}", "checkout"); err != nil {
		return err
	}
	if err := t.equals(ctx, "deployment/checkout-canary", "{.metadata.name}", ""); err != nil {
		return err
	}
	return t.warning(ctx, "checkout", "CanaryAnalysisFailed",
		"metric success-rate failed 2 times, more than its failureLimit of 1", "is below min 0.95")
}

// resumedAsBefore checks the suspension step: the same Service (UID,
// cluster IP, node port) as before it, and the Deployment back at 3.
func resumedAsBefore(ctx context.Context, t *tour) error {
	if err := t.equals(ctx, "service/nginx-app", "{.metadata.uid}/{.spec.clusterIP}", t.marks["service"]); err != nil {
		return err
	}
	if err := t.equals(ctx, "service/nginx-app", "{.spec.ports[0].nodePort}", "30002"); err != nil {
		return err
	}
	if err := t.equals(ctx, "appservice/nginx-app", `{.status.conditions[?(@.type=="Suspended")].reason}`, "Resumed"); err != nil {
		return err
	}
	return t.equals(ctx, "deployment/nginx-app", "{.spec.replicas}", "3")
}

// mark is a step's before: it keeps what a JSONPath reads of an object, as
// t.marks[name], for the step's check to compare with.
func mark(name, object, path string) func(context.Context, *tour) error {
	return func(ctx context.Context, t *tour) error {
		v, err := t.get(ctx, object, path)
		t.marks[name] = v
		return err
	}
}
