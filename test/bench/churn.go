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
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Load around the controller: how long an AppService created at a steady
// rate takes to get its Deployment, the memory it keeps beside objects it
// does not own, and what a config change costs in writes and memory
// (measureLatency, measureUnrelated, measureConfig).

// Latency of create → Deployment exists at a steady arrival rate.
type Latency struct {
	RatePerSecond float64 `json:"ratePerSecond"`
	Count         int     `json:"count"`
	P50Seconds    float64 `json:"p50Seconds"`
	P99Seconds    float64 `json:"p99Seconds"`
	MaxSeconds    float64 `json:"maxSeconds"`
	// Of that, the create request itself (until the API server answered).
	CreateP50Seconds float64 `json:"createP50Seconds"`
	CreateP99Seconds float64 `json:"createP99Seconds"`
}

// Unrelated objects: RSS next to many Deployments and Services that are not
// the controller's.
type Unrelated struct {
	N                int     `json:"n"`
	Unrelated        int     `json:"unrelatedDeploymentsAndServices"`
	RSSEmptyBytes    int64   `json:"rssEmptyClusterBytes"`
	RSSCrowdedBytes  int64   `json:"rssCrowdedClusterBytes"`
	DifferencePct    float64 `json:"differencePercent"`
	ConvergenceEmpty float64 `json:"convergenceEmptySeconds"`
	ConvergenceBusy  float64 `json:"convergenceCrowdedSeconds"`
}

// Config is what rolloutOnConfigChange costs: RSS with N AppServices using
// it, alone and next to many ConfigMaps and Secrets they do not read (in
// another namespace, and in theirs, where they are watched as metadata),
// and the writes one config change makes.
type Config struct {
	N                      int            `json:"n"`
	Unrelated              int            `json:"unrelatedConfigMapsAndSecretsEach"`
	ObjectBytes            int            `json:"unrelatedObjectDataBytes"`
	RSSAloneBytes          int64          `json:"rssAloneBytes"`
	RSSOtherNamespaceBytes int64          `json:"rssOtherNamespaceBytes"`
	RSSSameNamespaceBytes  int64          `json:"rssSameNamespaceBytes"`
	OtherNamespacePct      float64        `json:"otherNamespaceDifferencePercent"`
	SameNamespacePct       float64        `json:"sameNamespaceDifferencePercent"`
	SameNamespacePerObject float64        `json:"sameNamespaceBytesPerObject"`
	WritesPerChange        map[string]int `json:"writesPerDataChange"`
	WritesPerLabelEdit     int            `json:"writesPerLabelOnlyEdit"`
}

// measureLatency creates AppServices at a steady rate and records how long
// each took until its Deployment existed.
func measureLatency(o options, rate float64, d time.Duration) (Latency, error) {
	e, err := newEnv(o, "latency")
	if err != nil {
		return Latency{}, err
	}
	defer e.cluster.Stop()
	ctrl, err := startController(o, e)
	if err != nil {
		return Latency{}, err
	}
	defer stop(ctrl)
	if _, err := waitReady(ctrl); err != nil {
		return Latency{}, err
	}
	tr, err := newTracker(e)
	if err != nil {
		return Latency{}, err
	}
	defer tr.close()
	// The first creates of a freshly established CRD take the API server
	// about 2 s (seen in the audit log: the create itself, before any
	// controller is involved). Warm it up, so that the figure is the
	// controller's.
	warm := appService(0)
	warm.Name = "warm-up"
	if _, err := e.apps.AppV1().AppServices(benchNamespace).Create(context.Background(), warm, metav1.CreateOptions{}); err != nil {
		return Latency{}, err
	}
	if err := tr.waitAll(1, time.Minute); err != nil {
		return Latency{}, err
	}
	tr.deployments.Store(0)
	tr.services.Store(0)
	tr.statuses.Store(0)

	n := int(rate * d.Seconds())
	created := make([]time.Time, n)
	// The create request's own share: until the API server answered.
	answered := make([]float64, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := range n {
		<-tick.C
		wg.Go(func() {
			as := appService(i)
			created[i] = time.Now()
			if _, err := e.apps.AppV1().AppServices(benchNamespace).Create(context.Background(), as, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
			answered[i] = time.Since(created[i]).Seconds()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return Latency{}, err
	}
	if err := tr.waitAll(n, 5*time.Minute); err != nil {
		return Latency{}, err
	}
	var lat []float64
	for i := range n {
		seen, ok := tr.deploymentSeen.Load(appService(i).Name)
		if !ok {
			return Latency{}, fmt.Errorf("no Deployment seen for %s", appService(i).Name)
		}
		lat = append(lat, seen.(time.Time).Sub(created[i]).Seconds())
	}
	slices.Sort(lat)
	slices.Sort(answered)
	return Latency{
		RatePerSecond: rate, Count: n, P50Seconds: percentile(lat, 0.50), P99Seconds: percentile(lat, 0.99), MaxSeconds: lat[len(lat)-1],
		CreateP50Seconds: percentile(answered, 0.50), CreateP99Seconds: percentile(answered, 0.99),
	}, nil
}

// measureUnrelated compares the controller's memory with n AppServices in
// an empty cluster and in one holding many Deployments and Services that are
// not the controller's.
func measureUnrelated(o options, n, unrelated int) (Unrelated, error) {
	u := Unrelated{N: n, Unrelated: unrelated}
	for _, crowded := range []bool{false, true} {
		name := "unrelated-empty"
		if crowded {
			name = "unrelated-crowded"
		}
		e, err := newEnv(o, name)
		if err != nil {
			return u, err
		}
		err = func() error {
			defer e.cluster.Stop()
			ctx := context.Background()
			if crowded {
				others := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: othersNamespace}}
				if _, err := e.kube.CoreV1().Namespaces().Create(ctx, others, metav1.CreateOptions{}); err != nil {
					return err
				}
				if err := inParallel(unrelated, func(i int) error {
					d, s := unrelatedChildren(i, othersNamespace)
					if _, err := e.kube.AppsV1().Deployments(othersNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
						return err
					}
					_, err := e.kube.CoreV1().Services(othersNamespace).Create(ctx, s, metav1.CreateOptions{})
					return err
				}); err != nil {
					return err
				}
			}
			ctrl, err := startController(o, e)
			if err != nil {
				return err
			}
			defer stop(ctrl)
			if _, err := waitReady(ctrl); err != nil {
				return err
			}
			tr, err := newTracker(e)
			if err != nil {
				return err
			}
			defer tr.close()
			start := time.Now()
			if err := inParallel(n, func(i int) error {
				_, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, appService(i), metav1.CreateOptions{})
				return err
			}); err != nil {
				return err
			}
			if err := tr.waitAll(n, 5*time.Minute); err != nil {
				return err
			}
			took := time.Since(start).Seconds()
			time.Sleep(settle)
			rss, _, err := ctrl.Usage()
			if err != nil {
				return err
			}
			if crowded {
				u.RSSCrowdedBytes, u.ConvergenceBusy = rss, took
			} else {
				u.RSSEmptyBytes, u.ConvergenceEmpty = rss, took
			}
			return nil
		}()
		if err != nil {
			return u, err
		}
	}
	u.DifferencePct = 100 * float64(u.RSSCrowdedBytes-u.RSSEmptyBytes) / float64(u.RSSEmptyBytes)
	return u, nil
}

// measureConfig runs n AppServices with rolloutOnConfigChange three times:
// alone, next to unrelated ConfigMaps and as many Secrets of size bytes
// each in another namespace, and next to them in the AppServices' own
// namespace. On the first run it also counts the writes of one ConfigMap's
// data edit and of a label-only edit.
func measureConfig(o options, n, unrelated, size int) (Config, error) {
	c := Config{N: n, Unrelated: unrelated, ObjectBytes: size}
	for _, placement := range []string{"", othersNamespace, benchNamespace} {
		e, err := newEnv(o, "config-"+placement)
		if err != nil {
			return c, err
		}
		rss, err := func() (int64, error) {
			defer e.cluster.Stop()
			ctx := context.Background()
			if placement != "" {
				if err := createUnrelatedConfig(ctx, e, placement, unrelated, size); err != nil {
					return 0, err
				}
			}
			// What the realistic AppServices read: a shared ConfigMap in
			// envFrom, and one of their own mounted as a volume.
			if err := inParallel(n+1, func(i int) error {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"LOG_LEVEL": "info"}}
				if i < n {
					cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: appService(i).Name + "-config"}, Data: map[string]string{"app.conf": "v1"}}
				}
				_, err := e.kube.CoreV1().ConfigMaps(benchNamespace).Create(ctx, cm, metav1.CreateOptions{})
				return err
			}); err != nil {
				return 0, err
			}
			ctrl, err := startController(o, e)
			if err != nil {
				return 0, err
			}
			defer stop(ctrl)
			if _, err := waitReady(ctrl); err != nil {
				return 0, err
			}
			tr, err := newTracker(e)
			if err != nil {
				return 0, err
			}
			defer tr.close()
			if err := inParallel(n, func(i int) error {
				as := appService(i)
				as.Spec.RolloutOnConfigChange = true
				_, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, as, metav1.CreateOptions{})
				return err
			}); err != nil {
				return 0, err
			}
			if err := tr.waitAll(n, 5*time.Minute); err != nil {
				return 0, err
			}
			time.Sleep(settle)
			rss, _, err := ctrl.Usage()
			if err != nil || placement != "" {
				return rss, err
			}
			c.WritesPerChange, err = configChangeWrites(ctx, e, appService(0).Name, `{"data":{"app.conf":"v2"}}`)
			if err != nil {
				return rss, err
			}
			labelEdit, err := configChangeWrites(ctx, e, appService(0).Name, `{"metadata":{"labels":{"edited":"by-hand"}}}`)
			for _, w := range labelEdit {
				c.WritesPerLabelEdit += w
			}
			return rss, err
		}()
		if err != nil {
			return c, err
		}
		switch placement {
		case "":
			c.RSSAloneBytes = rss
		case othersNamespace:
			c.RSSOtherNamespaceBytes = rss
		default:
			c.RSSSameNamespaceBytes = rss
		}
	}
	pct := func(b int64) float64 { return 100 * float64(b-c.RSSAloneBytes) / float64(c.RSSAloneBytes) }
	c.OtherNamespacePct, c.SameNamespacePct = pct(c.RSSOtherNamespaceBytes), pct(c.RSSSameNamespaceBytes)
	c.SameNamespacePerObject = float64(c.RSSSameNamespaceBytes-c.RSSAloneBytes) / float64(2*unrelated)
	return c, nil
}

// createUnrelatedConfig creates n ConfigMaps and n Secrets of size bytes of
// data each in namespace (created if need be).
func createUnrelatedConfig(ctx context.Context, e *env, namespace string, n, size int) error {
	if namespace != benchNamespace {
		if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	value := strings.Repeat("x", size)
	return inParallel(2*n, func(i int) error {
		name := fmt.Sprintf("unrelated-%05d", i/2)
		var err error
		if i%2 == 0 {
			_, err = e.kube.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"data": value}}, metav1.CreateOptions{})
		} else {
			_, err = e.kube.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"data": []byte(value)}}, metav1.CreateOptions{})
		}
		return err
	})
}

// configChangeWrites patches the ConfigMap app's AppService mounts, waits
// for the controller's writes to end (none for 3 s, after at least 3 s),
// and returns them by verb and resource (those the API server refused, a
// conflict retried, apart).
func configChangeWrites(ctx context.Context, e *env, app, patch string) (map[string]int, error) {
	since := time.Now()
	if _, err := e.kube.CoreV1().ConfigMaps(benchNamespace).Patch(ctx, app+"-config", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		time.Sleep(time.Second)
		writes, err := e.cluster.Writes(controllerUser, since)
		if err != nil {
			return nil, err
		}
		quiet := len(writes) == 0 || time.Since(writes[len(writes)-1].StageTimestamp) > 3*time.Second
		if time.Since(since) > 3*time.Second && quiet {
			out := map[string]int{}
			for _, w := range writes {
				res := w.ObjectRef.Resource
				if w.ObjectRef.Subresource != "" {
					res += "/" + w.ObjectRef.Subresource
				}
				if w.ResponseStatus != nil && w.ResponseStatus.Code >= 300 {
					res += fmt.Sprintf(" (refused, %d)", w.ResponseStatus.Code)
				}
				out[w.Verb+" "+res]++
			}
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the controller still writes a minute after %s", patch)
		}
	}
}
