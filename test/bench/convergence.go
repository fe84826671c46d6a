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
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	appinformers "example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// Convergence: N AppServices created at once and brought in line (the
// controller timed from its start to its last write, beside the fastest
// any client can make the same writes: measureLimit), then the steady
// state and a restart over them.

// Convergence of N AppServices created at once, against the limit.
type Convergence struct {
	N                    int     `json:"n"`
	Runs                 int     `json:"runs"`
	LimitSeconds         float64 `json:"limitSeconds"`
	ConvergenceSeconds   float64 `json:"convergenceSeconds"`
	Ratio                float64 `json:"ratio"`
	BacklogSeconds       float64 `json:"backlogSeconds"`
	BacklogRatio         float64 `json:"backlogRatio"`
	WritesPerAppService  float64 `json:"writesPerAppService"`
	RSSBytes             int64   `json:"rssBytes"`
	BaselineRSSBytes     int64   `json:"baselineRssBytes"`
	RSSPerAppServiceByte float64 `json:"rssPerAppServiceBytes"`
	CPUSeconds           float64 `json:"cpuSeconds"`
}

// Steady state: writes when nothing changes.
type Steady struct {
	N                           int     `json:"n"`
	WindowSeconds               float64 `json:"windowSeconds"`
	Writes                      int     `json:"writes"`
	WritesPerAppServicePerHour  float64 `json:"writesPerAppServicePerHour"`
	ResyncPeriodSeconds         float64 `json:"resyncPeriodSeconds"`
	ResyncsInWindowPerAppServic int     `json:"resyncsInWindow"`
}

// Restart over N AppServices in sync.
type Restart struct {
	N            int     `json:"n"`
	ReadySeconds float64 `json:"readySeconds"`
	Writes       int     `json:"writes"`
}

// measureConvergences runs the limit, convergence and backlog runs of each
// of -sizes, -runs times below 5000 (the medians are reported), into res;
// the largest size's last run carries on into the steady state and the
// restart.
func measureConvergences(o options, res *Results) error {
	largest := slices.Max(o.sizes)
	for _, n := range o.sizes {
		runs := o.runs
		if n >= 5000 {
			runs = 1
		}
		var limits, convs, backlogs []float64
		var last Convergence
		for i := range runs {
			logf("limit, n=%d, run %d/%d", n, i+1, runs)
			l, err := measureLimit(o, n, false)
			if err != nil {
				return err
			}
			limits = append(limits, l.Seconds)
			logf("convergence, n=%d, run %d/%d", n, i+1, runs)
			// The largest size's last run carries on into the restart.
			c, err := measureConvergence(o, n, n == largest && i == runs-1 && !o.skip["steady"], res)
			if err != nil {
				return err
			}
			convs = append(convs, c.ConvergenceSeconds)
			last = c
			logf("backlog, n=%d, run %d/%d", n, i+1, runs)
			b, err := measureBacklog(o, n)
			if err != nil {
				return err
			}
			backlogs = append(backlogs, b.Seconds)
		}
		last.Runs = runs
		last.LimitSeconds = median(limits)
		last.ConvergenceSeconds = median(convs)
		last.Ratio = last.ConvergenceSeconds / last.LimitSeconds
		last.BacklogSeconds = median(backlogs)
		last.BacklogRatio = last.BacklogSeconds / last.LimitSeconds
		res.Convergence = append(res.Convergence, last)
		logf("n=%d: limit %.2fs, convergence %.2fs (%.2fx), backlog %.2fs (%.2fx), %.2f writes/AppService, RSS %s",
			n, last.LimitSeconds, last.ConvergenceSeconds, last.Ratio, last.BacklogSeconds, last.BacklogRatio, last.WritesPerAppService, mib(last.RSSBytes))
	}
	return nil
}

// measureLimit times the writes the controller makes for n new
// AppServices, made directly with parallel clients: every child the spec
// asks for (built by the controller's own builders), the status of a new
// AppService, and one Event. The AppServices are created first, untimed
// (their status is a subresource of theirs), after the controller has
// installed the CRD. It also returns the CPU the API server, etcd and the
// writers used meanwhile, and saves the API server's CPU profile
// (limit-apiserver-cpu-<spec>-<N>.pb.gz). Watched, the benchmark first
// starts the informers the controller starts (watchAsTheController), timed,
// and makes the writes once they have listed, as the controller does; the
// informers run until the last write is answered (the profile is
// limit-watched-apiserver-cpu-<spec>-<N>.pb.gz), and what they listed
// is read from the audit log.
func measureLimit(o options, n int, watched bool) (limitResult, error) {
	var r limitResult
	name := "limit"
	if watched {
		name = "limit-watched"
	}
	e, err := newEnvWith(o, fmt.Sprintf("%s-%d", name, n), localcluster.Options{Profiling: true})
	if err != nil {
		return r, err
	}
	defer e.cluster.Stop()
	if err := installCRD(o, e); err != nil {
		return r, err
	}
	ctx := context.Background()
	created := make([]*appv1.AppService, n)
	if err := inParallel(n, func(i int) error {
		as, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, appService(i), metav1.CreateOptions{})
		created[i] = as
		return err
	}); err != nil {
		return r, err
	}
	before, err := cpuTimes(e)
	if err != nil {
		return r, err
	}
	profiled := profileAPIServer(e, filepath.Join(o.out, fmt.Sprintf("%s-apiserver-cpu-%s-%d.pb.gz", name, specKind, n)), profileSeconds(n))
	startWatching := func() error { return nil }
	if watched {
		var stopWatching func()
		if startWatching, stopWatching, err = watchAsTheController(e); err != nil {
			return r, err
		}
		defer stopWatching()
	}
	start := time.Now()
	if err := startWatching(); err != nil {
		return r, err
	}
	err = inParallel(n, func(i int) error {
		as := created[i]
		d, s := children.NewDeployment(as), children.NewService(as)
		if _, err := e.kube.AppsV1().Deployments(benchNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := e.kube.CoreV1().Services(benchNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := createOtherChildren(ctx, e, as); err != nil {
			return err
		}
		as = as.DeepCopy()
		as.Status = newAppServiceStatus(as)
		if _, err := e.apps.AppV1().AppServices(benchNamespace).UpdateStatus(ctx, as, metav1.UpdateOptions{}); err != nil {
			return err
		}
		_, err := e.kube.CoreV1().Events(benchNamespace).Create(ctx, createdEvent(as), metav1.CreateOptions{})
		return err
	})
	r.Seconds = time.Since(start).Seconds()
	if err != nil {
		return r, err
	}
	after, err := cpuTimes(e)
	if err != nil {
		return r, err
	}
	r.CPU = after.minus(before)
	if watched {
		requests, err := e.cluster.Requests(watcherUser, start)
		if err != nil {
			return r, err
		}
		r.Listed = listed(requests)
	}
	return r, <-profiled
}

// limitResult is one run of measureLimit: its time, the CPU the API
// server, etcd and the benchmark used, and, watched, what the informers
// listed (listed).
type limitResult struct {
	Seconds float64
	CPU     CPUTimes
	Listed  []string
}

// newAppServiceStatus is the status the controller writes for a new
// AppService, whose Deployment has not reported yet (appstatus.New
// in that case).
func newAppServiceStatus(as *appv1.AppService) appv1.AppServiceStatus {
	now := metav1.Now()
	cond := func(t string, st metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: st, ObservedGeneration: as.Generation, LastTransitionTime: now, Reason: reason, Message: message}
	}
	waiting := fmt.Sprintf("Waiting for the Deployment's controller to observe generation %d", 1)
	return appv1.AppServiceStatus{
		ObservedGeneration: as.Generation,
		Selector:           appv1.LabelAppService + "=" + as.Name,
		Conditions: []metav1.Condition{
			cond(appv1.ConditionAvailable, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, "The Deployment has not reported this condition yet"),
			cond(appv1.ConditionProgressing, metav1.ConditionUnknown, appv1.ReasonAwaitingDeploymentStatus, "The Deployment has not reported this condition yet"),
			cond(appv1.ConditionDegraded, metav1.ConditionFalse, appv1.ReasonAsExpected, "Every child matches the spec"),
			cond(appv1.ConditionReady, metav1.ConditionFalse, appv1.ReasonRollingOut, waiting),
			cond(appv1.ConditionReconciling, metav1.ConditionTrue, appv1.ReasonRollingOut, waiting),
			cond(appv1.ConditionStalled, metav1.ConditionFalse, appv1.ReasonAsExpected, "Nothing needs the user"),
		},
	}
}

// createdEvent is the Event the controller sends for a new AppService's
// children, as its broadcaster writes it.
func createdEvent(as *appv1.AppService) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: as.Name + ".", Namespace: as.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "AppService", APIVersion: appv1.SchemeGroupVersion.String(), Namespace: as.Namespace, Name: as.Name,
			UID: as.UID, ResourceVersion: as.ResourceVersion,
		},
		Reason: appv1.ReasonCreated, Message: fmt.Sprintf("Created Deployment %s, Service %s", as.Name, as.Name),
		Source: corev1.EventSource{Component: "appservice-controller"}, Type: corev1.EventTypeNormal,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
}

// tracker follows the AppServices and their children through informers,
// which cost the API server one watch each, not repeated lists.
type tracker struct {
	deployments, services, statuses atomic.Int64
	deploymentSeen                  sync.Map // name → time.Time
	stop                            chan struct{}
}

func newTracker(e *env) (*tracker, error) {
	t := &tracker{stop: make(chan struct{})}
	// Protobuf for the built-in kinds, as the controller's watches: the
	// API server encodes each event once for both.
	kf := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(benchNamespace))
	af := appinformers.NewSharedInformerFactoryWithOptions(e.apps, 0, appinformers.WithNamespace(benchNamespace))
	if _, err := kf.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			t.deployments.Add(1)
			t.deploymentSeen.LoadOrStore(obj.(*appsv1.Deployment).Name, time.Now())
		},
	}); err != nil {
		return nil, err
	}
	if _, err := kf.Core().V1().Services().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { t.services.Add(1) },
	}); err != nil {
		return nil, err
	}
	var seen sync.Map
	if _, err := af.App().V1().AppServices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			as := obj.(*appv1.AppService)
			if as.Status.ObservedGeneration == as.Generation {
				if _, loaded := seen.LoadOrStore(as.Name, true); !loaded {
					t.statuses.Add(1)
				}
			}
		},
	}); err != nil {
		return nil, err
	}
	kf.Start(t.stop)
	af.Start(t.stop)
	kf.WaitForCacheSync(t.stop)
	af.WaitForCacheSync(t.stop)
	return t, nil
}

func (t *tracker) waitAll(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		d, s, st := t.deployments.Load(), t.services.Load(), t.statuses.Load()
		if d >= int64(n) && s >= int64(n) && st >= int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %d Deployments, %d Services, %d statuses of %d", timeout, d, s, st, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (t *tracker) close() { close(t.stop) }

// measureConvergence creates n AppServices at once and waits until every
// child exists and every status is written. With last it also measures the
// steady state and a restart, into res.
func measureConvergence(o options, n int, last bool, res *Results) (Convergence, error) {
	e, err := newEnv(o, fmt.Sprintf("convergence-%d", n))
	if err != nil {
		return Convergence{}, err
	}
	defer e.cluster.Stop()
	c := Convergence{N: n}
	ctrl, err := startController(o, e)
	if err != nil {
		return c, err
	}
	defer func() { stop(ctrl) }()
	if _, err := waitReady(ctrl); err != nil {
		return c, err
	}
	time.Sleep(settle)
	if c.BaselineRSSBytes, _, err = ctrl.Usage(); err != nil {
		return c, err
	}
	if c.ConvergenceSeconds, c.WritesPerAppService, err = createAndConverge(e, n, 10*time.Minute); err != nil {
		return c, err
	}
	ctx := context.Background()
	time.Sleep(settle)
	if c.RSSBytes, c.CPUSeconds, err = ctrl.Usage(); err != nil {
		return c, err
	}
	c.RSSPerAppServiceByte = float64(c.RSSBytes-c.BaselineRSSBytes) / float64(n)
	if err := saveHeapProfile(ctrl, filepath.Join(o.out, fmt.Sprintf("heap-%s-%d.pb.gz", specKind, n))); err != nil {
		return c, err
	}
	if !last {
		return c, nil
	}
	if res.Objects, err = objectSizes(ctx, e, appService(0).Name); err != nil {
		return c, err
	}

	// Steady state: nothing changes for over a minute; the controller
	// resyncs every AppService on a short period and must write nothing.
	const resync = 20 * time.Second
	const window = 65 * time.Second
	logf("steady state over %s, n=%d", window, n)
	stop(ctrl)
	if ctrl, err = startController(o, e, "-resync-period="+resync.String()); err != nil {
		return c, err
	}
	ready, err := waitReady(ctrl)
	if err != nil {
		return c, err
	}
	since := ctrl.Started()
	time.Sleep(window)
	writes, err := e.cluster.Writes(controllerUser, since)
	if err != nil {
		return c, err
	}
	res.Restart = Restart{N: n, ReadySeconds: ready.Seconds(), Writes: len(writes)}
	res.Steady = Steady{
		N: n, WindowSeconds: window.Seconds(), Writes: len(writes), ResyncPeriodSeconds: resync.Seconds(),
		ResyncsInWindowPerAppServic: int(window / resync),
		WritesPerAppServicePerHour:  float64(len(writes)) / float64(n) / window.Hours(),
	}
	return c, nil
}

// createAndConverge creates n AppServices with 16 clients and waits until
// every Deployment, Service and status exists, watched by a tracker: the
// seconds from the first create, and the controller's writes per
// AppService in the audit log since then.
func createAndConverge(e *env, n int, timeout time.Duration) (seconds, writesPerAppService float64, err error) {
	tr, err := newTracker(e)
	if err != nil {
		return 0, 0, err
	}
	defer tr.close()
	start := time.Now()
	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Create(context.Background(), appService(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return 0, 0, err
	}
	if err := tr.waitAll(n, timeout); err != nil {
		return 0, 0, err
	}
	seconds = time.Since(start).Seconds()
	writes, err := e.cluster.Writes(controllerUser, start)
	if err != nil {
		return 0, 0, err
	}
	return seconds, float64(len(writes)) / float64(n), nil
}
