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
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// Config rollouts: N AppServices reading one ConfigMap, changed once,
// under the controller's cap on config rollouts at a time
// (measureConfigRollouts).

// ConfigRollouts: N AppServices (one replica each) read one ConfigMap
// with rolloutOnConfigChange, on a cluster that runs their Pods; the
// ConfigMap is edited once. How long until every Deployment has rolled out
// the new template, and the most that were rolling at once (a Deployment
// on the new digest, replacing its Pods), seen through a watch.
type ConfigRollouts struct {
	N int `json:"n"`
	// Cap is -max-config-rollouts (0: none).
	Cap     int     `json:"cap"`
	Seconds float64 `json:"seconds"`
	Peak    int     `json:"peak"`
}

// measureConfigRollouts creates n AppServices of one replica reading one
// ConfigMap, on a cluster that runs their Pods, with a controller capped at
// maxRollouts config rollouts (0: none); once all run, it edits the
// ConfigMap and watches the Deployments roll.
func measureConfigRollouts(o options, n, maxRollouts int) (ConfigRollouts, error) {
	const shared = "shared" // the ConfigMap every AppService reads
	cr := ConfigRollouts{N: n, Cap: maxRollouts}
	e, err := newEnvWith(o, fmt.Sprintf("config-rollouts-%d", maxRollouts), localcluster.Options{ControllerManager: true, Scheduler: true, Nodes: 2})
	if err != nil {
		return cr, err
	}
	defer e.cluster.Stop()
	ctrl, err := startController(o, e, fmt.Sprintf("-max-config-rollouts=%d", maxRollouts))
	if err != nil {
		return cr, err
	}
	defer func() { stop(ctrl) }()
	if _, err := waitReady(ctrl); err != nil {
		return cr, err
	}
	ctx := context.Background()
	if _, err := e.kube.CoreV1().ConfigMaps(benchNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: shared}, Data: map[string]string{"ca.crt": "v1"},
	}, metav1.CreateOptions{}); err != nil {
		return cr, err
	}

	// The Deployments as a watch shows them: by name, the digest of their
	// template and whether they rolled it out.
	type state struct {
		digest string
		// done: rolled out; midway: replacing its Pods (generation not
		// observed, replicas not all updated, or old ones still running).
		done, midway bool
	}
	var mu sync.Mutex
	states := map[string]state{}
	observe := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return
		}
		want := *d.Spec.Replicas
		st := d.Status
		mu.Lock()
		states[d.Name] = state{
			digest: d.Spec.Template.Annotations[appv1.AnnotationConfigDigest],
			done:   st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want,
			midway: st.ObservedGeneration < d.Generation || st.UpdatedReplicas < want || st.Replicas > want,
		}
		mu.Unlock()
	}
	stopInformer := make(chan struct{})
	defer close(stopInformer)
	kf := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(benchNamespace))
	if _, err := kf.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return cr, err
	}
	kf.Start(stopInformer)
	kf.WaitForCacheSync(stopInformer)
	// count returns how many Deployments run digest, rolled out, and how
	// many are rolling to a digest other than old.
	count := func(digest, old string) (done, rolling int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range states {
			switch {
			case s.digest == digest && s.done:
				done++
			case s.digest != old && s.midway:
				rolling++
			}
		}
		return done, rolling
	}
	firstDigest := func() string {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range states {
			return s.digest
		}
		return ""
	}

	if err := inParallel(n, func(i int) error {
		_, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, &appv1.AppService{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%05d", i)},
			Spec: appv1.AppServiceSpec{
				Size: new(int32(1)), Image: benchImage, RolloutOnConfigChange: true,
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: shared}}}},
			},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return cr, err
	}
	wait := func(what string, done func() bool) error {
		deadline := time.Now().Add(15 * time.Minute)
		for !done() {
			if time.Now().After(deadline) {
				return fmt.Errorf("after 15m: %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	}
	var old string
	if err := wait("the AppServices running", func() bool {
		old = firstDigest()
		done, _ := count(old, "")
		return old != "" && done == n
	}); err != nil {
		return cr, err
	}

	start := time.Now()
	if _, err := e.kube.CoreV1().ConfigMaps(benchNamespace).Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: shared}, Data: map[string]string{"ca.crt": "v2"},
	}, metav1.UpdateOptions{}); err != nil {
		return cr, err
	}
	if err := wait("the config rollouts", func() bool {
		var current string
		mu.Lock()
		for _, s := range states {
			if s.digest != old {
				current = s.digest
				break
			}
		}
		mu.Unlock()
		done, rolling := count(current, old)
		cr.Peak = max(cr.Peak, rolling)
		return current != "" && done == n
	}); err != nil {
		return cr, err
	}
	cr.Seconds = time.Since(start).Seconds()
	return cr, nil
}
