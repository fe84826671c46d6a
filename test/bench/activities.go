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
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	appinformers "example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// Activities: N Activities run at once as Jobs until every one Succeeded,
// the controller's writes and memory, and a restart over them
// (measureActivities).

// Activities: N Activities (the second kind) created at once, each run to
// Succeeded by its Job on the fake nodes, then a restart over them.
type Activities struct {
	N                  int     `json:"n"`
	SucceededSeconds   float64 `json:"succeededSeconds"`
	WritesPerActivity  float64 `json:"writesPerActivity"`
	RSSBytes           int64   `json:"rssBytes"`
	BaselineRSSBytes   int64   `json:"baselineRssBytes"`
	RSSPerActivityByte float64 `json:"rssPerActivityBytes"`
	// A restart over the finished Activities: writes in the window after
	// it is ready.
	RestartWindowSeconds float64 `json:"restartWindowSeconds"`
	RestartWrites        int     `json:"restartWrites"`
}

// measureActivities creates n Activities at once on a cluster that runs
// Jobs (the Job controller, the scheduler, kwok's nodes, whose Pods end at
// once with exit code 0), waits until every one has Succeeded, and counts
// the controller's writes and memory; then restarts it over them.
func measureActivities(o options, n int) (Activities, error) {
	a := Activities{N: n}
	e, err := newEnvWith(o, "activities", localcluster.Options{ControllerManager: true, Scheduler: true, Nodes: 2})
	if err != nil {
		return a, err
	}
	defer e.cluster.Stop()
	ctrl, err := startController(o, e)
	if err != nil {
		return a, err
	}
	defer func() { stop(ctrl) }()
	if _, err := waitReady(ctrl); err != nil {
		return a, err
	}
	time.Sleep(settle)
	if a.BaselineRSSBytes, _, err = ctrl.Usage(); err != nil {
		return a, err
	}
	var succeeded atomic.Int64
	var seen sync.Map
	stopInformer := make(chan struct{})
	defer close(stopInformer)
	af := appinformers.NewSharedInformerFactoryWithOptions(e.apps, 0, appinformers.WithNamespace(benchNamespace))
	if _, err := af.App().V1().Activities().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if act := obj.(*appv1.Activity); act.Status.Prosta == appv1.ActivitySucceeded {
				if _, loaded := seen.LoadOrStore(act.Name, true); !loaded {
					succeeded.Add(1)
				}
			}
		},
	}); err != nil {
		return a, err
	}
	af.Start(stopInformer)
	af.WaitForCacheSync(stopInformer)

	ctx := context.Background()
	start := time.Now()
	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().Activities(benchNamespace).Create(ctx, &appv1.Activity{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("run-%05d", i)},
			Spec:       appv1.ActivitySpec{Command: "echo done", Envs: []string{"RUN=" + strconv.Itoa(i)}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return a, err
	}
	deadline := start.Add(15 * time.Minute)
	for succeeded.Load() < int64(n) {
		if time.Now().After(deadline) {
			return a, fmt.Errorf("after 15m: %d of %d Activities Succeeded", succeeded.Load(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.SucceededSeconds = time.Since(start).Seconds()
	// Counted after the settling time: the last Events are still on
	// their way (the broadcaster sends them asynchronously) when the last
	// status says Succeeded.
	time.Sleep(settle)
	writes, err := e.cluster.Writes(controllerUser, start)
	if err != nil {
		return a, err
	}
	a.WritesPerActivity = float64(len(writes)) / float64(n)
	if a.RSSBytes, _, err = ctrl.Usage(); err != nil {
		return a, err
	}
	a.RSSPerActivityByte = float64(a.RSSBytes-a.BaselineRSSBytes) / float64(n)

	stop(ctrl)
	if ctrl, err = startController(o, e); err != nil {
		return a, err
	}
	if _, err := waitReady(ctrl); err != nil {
		return a, err
	}
	since := ctrl.Started()
	const window = 15 * time.Second
	time.Sleep(window)
	if writes, err = e.cluster.Writes(controllerUser, since); err != nil {
		return a, err
	}
	a.RestartWindowSeconds, a.RestartWrites = window.Seconds(), len(writes)
	return a, nil
}
