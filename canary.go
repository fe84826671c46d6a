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
	"errors"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"example.com/appservice-controller/internal/analysis"
	"example.com/appservice-controller/internal/appstatus"
	"example.com/appservice-controller/internal/canary"
	"example.com/appservice-controller/internal/children"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The canary (spec.canary), as the sync of one AppService carries it out:
// decideCanary reads what internal/canary's decision needs from the caches
// and makes it; the Deployments, the Services and the HTTPRoute follow it;
// pruneCanary deletes the canary's objects once the route no longer sends
// them traffic. An AppService that never had spec.canary (nor a canary
// status, nor a canary Deployment) takes none of these paths: nothing
// about it changes.

// decideCanary makes the sync's canary decision for desired, the
// Deployment the spec asks for (with its config digest). When it cannot
// read the caches, the stable Deployment keeps its template (a canary
// must not be skipped for a read error), and canaryUnknown says so: the
// canary's objects, its tests' Activities and a preview hostname's route
// stay as they are.
func (s *appSync) decideCanary(ctx context.Context, desired *appsv1.Deployment) (err error) {
	defer func() {
		if err != nil {
			s.canary, s.canaryUnknown = canary.Decision{HoldStable: true}, true
		}
	}()
	in := canary.Input{Spec: s.as.Spec.Canary, Status: s.as.Status.Canary, Now: time.Now(),
		RouteMissing: s.c.routes.routeMissing(s.as), NoRoute: s.as.Spec.HTTPRoute == nil && s.as.Spec.GRPCRoute == nil}
	if children.Suspended(s.as) {
		// No Pods to protect: a template change goes to the Deployment at
		// 0 replicas, as without a canary.
		in.Spec = nil
	}
	if in.Spec == nil {
		s.canary = canary.Decide(in)
		return nil
	}
	key := cache.MetaObjectToName(s.as)
	if in.Spec.Analysis != nil {
		// Only a canary with an analysis reads the runner (and its lock).
		in.Analysis = canary.Analysis{Configured: s.c.analysis.Configured(), Measurements: s.c.analysis.Results(key)}
	}
	in.Hash = children.TemplateHash(desired)
	// Its analysis's templates (templates.go): in.Spec becomes a copy
	// with their metrics.
	pins := s.resolveAnalysis(&in)
	in.ProgressDeadline = time.Duration(*desired.Spec.ProgressDeadlineSeconds) * time.Second
	in.StableReplicas = *desired.Spec.Replicas
	live, found, err := s.c.deployments.Get(desired.Namespace, desired.Name)
	if err != nil {
		return err
	}
	in.StableInLine = !found || !children.TemplateChanges(live, desired)
	if !in.StableInLine {
		// A release pending or under way: what its route needs of the
		// Gateways (routes.go).
		in.RouteUnsupported = s.c.routes.unsupported(ctx, s.as)
	}
	if found {
		in.StableAvailable = live.Status.AvailableReplicas
		in.Stable = &canary.Pods{Observed: live.Status.ObservedGeneration >= live.Generation, Replicas: ptr.Deref(live.Spec.Replicas, 1),
			Total: live.Status.Replicas, Updated: live.Status.UpdatedReplicas, Available: live.Status.AvailableReplicas}
		if children.Autoscaled(s.as) {
			in.StableReplicas = *children.AutoscaledReplicas(s.as, live.Spec.Replicas)
		}
		// Rolled out at the spec's count: a stable that gave up Pods to a
		// canary (shrinkStable) is not, until it has them back.
		progress := appstatus.Progress(s.as, live)
		in.StableRolledOut = progress.Done && ptr.Deref(live.Spec.Replicas, 1) >= in.StableReplicas
		in.StableStuck = progress.Stalled
	}
	c, found, err := s.c.deployments.Get(desired.Namespace, children.CanaryName(s.as))
	if err != nil {
		return err
	}
	// Its Pods count only when it is ours and runs the spec's template,
	// labelled for how it carries its share.
	serve := canary.PodsServe(in)
	ours := found && metav1.IsControlledBy(c, s.as)
	if ours && c.Spec.Template.Labels[appv1.LabelAppService] == s.as.Name {
		in.CanaryServing, in.CanaryServingAvailable = ptr.Deref(c.Spec.Replicas, 1), c.Status.AvailableReplicas
	}
	if ours && !children.TemplateChanges(c, children.NewCanaryDeployment(s.as, desired, 1, serve)) {
		stuck := appstatus.DeploymentCondition(c, appsv1.DeploymentProgressing)
		in.Pods = &canary.Pods{
			Observed: c.Status.ObservedGeneration >= c.Generation, Replicas: ptr.Deref(c.Spec.Replicas, 1),
			Total: c.Status.Replicas, Updated: c.Status.UpdatedReplicas, Available: c.Status.AvailableReplicas,
			DeadlineExceeded: stuck != nil && stuck.Reason == appv1.ReasonProgressDeadlineExceeded,
		}
	}
	if err := s.readTests(&in); err != nil {
		return err
	}
	s.canary = canary.Decide(in)
	s.pinAnalysis(pins, in.Hash)
	switch r := s.canary.Round; {
	case r != nil:
		// Measured in the background; its end wakes this AppService.
		s.c.analysis.Start(key, s.as, in.Spec.Analysis, *r, children.CanaryName(s.as))
	case s.canary.Phase != canary.Running:
		// No step to judge: the last results are in the status, or of no
		// use any more.
		s.c.analysis.Forget(key)
	}
	return nil
}

// canaryChildren reports whether the AppService may have a canary's
// objects: spec.canary is set, its status says it was, or its canary's
// Deployment is still there (one by Pods held until the stable Pods are
// back: canaryHeld).
func (s *appSync) canaryChildren() bool {
	if s.as.Spec.Canary != nil || s.as.Status.Canary != nil {
		return true
	}
	_, found, err := s.c.deployments.Get(s.as.Namespace, children.CanaryName(s.as))
	return found || err != nil
}

// canaryHeld is the canary's Deployment when the decision no longer asks
// for it but its Pods must stay: they serve behind the AppService's
// Service (a canary by Pods) and the stable Deployment is not rolled out
// at the spec's count (an abort, a rollback or spec.canary removed, the
// stable Pods coming back, or rolling), nor stuck past its progress
// deadline. Deleting it then would take serving Pods away before their
// replacements are available. Nil when it may go (or is not there);
// suspended, it may: no Pods are promised.
// The stable Deployment's status changes wake the sync that lets it go.
func (s *appSync) canaryHeld(desired *appsv1.Deployment) *appsv1.Deployment {
	if children.Suspended(s.as) {
		return nil
	}
	c, found, err := s.c.deployments.Get(desired.Namespace, children.CanaryName(s.as))
	if err != nil || !found || !metav1.IsControlledBy(c, s.as) || c.Spec.Template.Labels[appv1.LabelAppService] != s.as.Name {
		return nil
	}
	live, found, err := s.c.deployments.Get(desired.Namespace, desired.Name)
	if err != nil || !found {
		// Unreadable, or gone: the canary's may be the only Pods serving.
		return c
	}
	want := ptr.Deref(desired.Spec.Replicas, 1)
	if children.Autoscaled(s.as) {
		want = *children.AutoscaledReplicas(s.as, live.Spec.Replicas)
	}
	// Past its progress deadline (no room for its Pods, say), the stable
	// will not come back by waiting: the canary's Pods go, making room.
	if p := appstatus.Progress(s.as, live); p.Stalled || (p.Done && ptr.Deref(live.Spec.Replicas, 1) >= want) {
		return nil
	}
	return c
}

// canaryDeployment is the canary's Deployment the decision asks for (nil:
// none).
func (s *appSync) canaryDeployment(desired *appsv1.Deployment) *appsv1.Deployment {
	if s.canary.CanaryReplicas == 0 || s.canary.HoldCanary {
		// Held, it stays as it is: pruneCanary keeps it (canaryHeld).
		return nil
	}
	return children.NewCanaryDeployment(s.as, desired, s.canary.CanaryReplicas, s.canary.PodsServe)
}

// canaryService is the canary's Service the decision asks for (nil: none;
// by Pods, the AppService's Service sends the canary its share, and only
// its tests need one, to reach the canary alone).
func (s *appSync) canaryService() *corev1.Service {
	if s.canary.CanaryReplicas == 0 || (s.canary.TrafficBy == appv1.CanaryByPods && !canary.HasTests(s.as.Spec.Canary)) {
		return nil
	}
	return children.NewCanaryService(s.as)
}

// readTests gives the decision what the cache has of the Activities of the
// tests the status records as running, and how to name a new one's.
func (s *appSync) readTests(in *canary.Input) error {
	hash := in.Hash
	in.TestActivity = func(step int32, test string, begin metav1.Time) string {
		return children.TestActivityName(s.as, hash, step, test, begin)
	}
	if in.Status == nil {
		return nil
	}
	for _, rec := range in.Status.Tests {
		if rec.Phase != appv1.TestRunning {
			continue
		}
		act, found, err := s.c.activities.Get(s.as.Namespace, rec.Activity)
		if err != nil {
			return err
		}
		if !found || !metav1.IsControlledBy(act, s.as) {
			continue
		}
		run := canary.TestRun{Phase: act.Status.Prosta, ExitCode: act.Status.ExitCode,
			Message: testMessage(act.Status.Message), StartTime: act.Status.StartTime, CompletionTime: act.Status.CompletionTime}
		if f := meta.FindStatusCondition(act.Status.Conditions, appv1.ConditionFailed); f != nil && f.Status == metav1.ConditionTrue {
			run.Reason = f.Reason
		}
		if in.Tests == nil {
			in.Tests = map[string]canary.TestRun{}
		}
		in.Tests[rec.Activity] = run
	}
	return nil
}

// testMessage is what a failed test's record keeps of its Activity's
// message: its first line (the exit code) and its log's last lines, about
// 1 KB in all.
func testMessage(m string) string {
	const limit = 1024
	if len(m) <= limit {
		return m
	}
	head, rest, _ := strings.Cut(m, "\n")
	head = children.LastLines(head, limit/4)
	return head + "\n" + children.LastLines(rest, limit-len(head)-1)
}

// syncCanaryTests makes the Activities of the tests running as both the
// status recorded and the decision says, and deletes every other Activity
// the AppService controls, but those of the decision's records (the last
// canary's, kept for inspection until the next canary starts) and those
// the status recorded running: not when the decision could not be made
// (canaryUnknown). A test's record is written before its Activity is made, and
// its stop before its Activity is deleted, so that a status write that
// fails (a conflict) never leaves an Activity made that no record names,
// to be made again, nor deletes a running test's Activity that a record
// still waits for. An AppService with no canary, nor any test's Activity
// left (spec.canary removed after its last canary), takes no part.
func (s *appSync) syncCanaryTests(ctx context.Context) error {
	if s.canaryUnknown {
		return nil
	}
	if !s.canaryChildren() {
		if owned, err := s.c.activities.ControlledBy(s.as.UID); err != nil || len(owned) == 0 {
			return err
		}
	}
	keep := func(name string) *appv1.Activity { return &appv1.Activity{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	recorded := map[string]appv1.CanaryTestPhase{}
	var kept []*appv1.Activity
	if st := s.as.Status.Canary; st != nil {
		for _, rec := range st.Tests {
			recorded[rec.Activity] = rec.Phase
			if rec.Phase == appv1.TestRunning {
				kept = append(kept, keep(rec.Activity))
			}
		}
	}
	var errs []error
	if st, spec := s.canary.Status, s.as.Spec.Canary; st != nil && spec != nil {
		for _, rec := range st.Tests {
			switch {
			case rec.Phase == appv1.TestRunning && recorded[rec.Activity] == appv1.TestRunning:
				if desired := s.testActivity(spec, rec); desired != nil {
					_, err := s.activities().Ensure(ctx, &s.Sync, desired)
					errs = append(errs, err)
				}
			case rec.Phase == appv1.TestStopped:
				continue
			}
			kept = append(kept, keep(rec.Activity))
		}
	}
	return errors.Join(append(errs, s.activities().Prune(ctx, &s.Sync, kept...))...)
}

// testActivity is the Activity of a test's record (nil when the spec no
// longer has the test).
func (s *appSync) testActivity(spec *appv1.Canary, rec appv1.CanaryTestStatus) *appv1.Activity {
	if rec.Step < 0 || int(rec.Step) >= len(spec.Steps) {
		return nil
	}
	step := spec.Steps[rec.Step]
	for i := range step.Tests {
		t := &step.Tests[i]
		if t.Name != rec.Name {
			continue
		}
		vars := analysis.Vars{Namespace: s.as.Namespace, Name: s.as.Name, Target: children.CanaryName(s.as)}
		if spec.Analysis != nil {
			vars.Interval = canary.AnalysisInterval(spec.Analysis)
		}
		return children.NewCanaryTest(s.as, t, rec.Activity, rec.Step, step.Weight, analysis.Render(t.Command, vars))
	}
	return nil
}

// syncDeployments creates or updates the stable Deployment and, while
// the decision asks for one, the canary's. It returns the stable one.
func (s *appSync) syncDeployments(ctx context.Context, desired *appsv1.Deployment) (*appsv1.Deployment, error) {
	stable, err := s.deployments().Ensure(ctx, &s.Sync, desired)
	if c := s.canaryDeployment(desired); c != nil {
		_, canaryErr := s.canaryDeployments().Ensure(ctx, &s.Sync, c)
		err = errors.Join(err, canaryErr)
	}
	return stable, err
}

// syncServices creates or updates the Service and, while the decision
// asks for one, the canary's; a blue-green release's switch is the
// Service's selector. Without a canary, the Service's Sync also
// deletes one the spec no longer asks for, as it always did; with one,
// pruneCanary does, after the route.
func (s *appSync) syncServices(ctx context.Context) error {
	desired := children.NewService(s.as)
	if desired != nil && s.canary.SwitchService {
		// A blue-green release switched without a route: the one write
		// that sends the users to the preview, or back.
		desired.Spec.Selector = children.SwitchedSelector(s.as, s.canary.Status.CanaryTemplateHash)
	}
	if !s.canaryChildren() {
		_, err := s.services().Sync(ctx, &s.Sync, desired)
		return err
	}
	var errs []error
	for _, svc := range []*corev1.Service{desired, s.canaryService()} {
		if svc != nil {
			_, err := s.services().Ensure(ctx, &s.Sync, svc)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pruneCanary deletes the canary's Deployment and Service once the
// decision no longer asks for them, and the Services the spec no longer
// asks for: after the route, and only once the route is written
// (routeErr nil), so that no traffic goes to a Service that is gone; not
// at all when the decision could not be made (canaryUnknown).
func (s *appSync) pruneCanary(ctx context.Context, desired *appsv1.Deployment, routeErr error) error {
	if !s.canaryChildren() || s.canaryUnknown || routeErr != nil {
		return nil
	}
	deployments, services := s.deployments(), s.services()
	service := children.NewService(s.as)
	if service != nil {
		services.Unwanted = "the canary ended"
	}
	deployments.Unwanted = "the canary ended"
	keep := s.canaryDeployment(desired)
	switch {
	case s.canary.HoldCanary:
		// Held by the decision, as it is.
		keep, _, _ = s.c.deployments.Get(desired.Namespace, children.CanaryName(s.as))
	case keep == nil:
		keep = s.canaryHeld(desired)
	}
	return errors.Join(
		deployments.Prune(ctx, &s.Sync, desired, keep),
		services.Prune(ctx, &s.Sync, service, s.canaryService()),
	)
}

// analysisValue is the value an AppService's canary metric had in its last
// round, which /metrics reports (appservice_canary_metric_analysis) though
// the status records it only when the round changes what it shows.
func (c *Controller) analysisValue(namespace, name, metric string) (float64, bool) {
	return c.analysis.Value(cache.ObjectName{Namespace: namespace, Name: name}, metric)
}
