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
	"path/filepath"
	"reflect"
	"runtime"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/localcluster"
)

// What the CRD costs the API server: n AppServices against n Deployments
// of the same Pod template (measureCRDCost); and an object's sizes as
// stored, as the caches keep it and in the heap (objectSizes).

// ObjectSize is the size of one AppService's object of a kind, as JSON:
// as the API server holds it (without managedFields) and as the
// controller's cache keeps it (children.Trim).
type ObjectSize struct {
	Kind      string `json:"kind"`
	JSONBytes int    `json:"jsonBytes"`
	// The encoded part of the cached child (children.Cached.Data), 0 for
	// an AppService, which is cached whole.
	CachedBytes int `json:"cachedEncodedBytes"`
	// The Go heap one such object holds once decoded: whole (without
	// managedFields, as the caches held every object before children.Trim)
	// and as the controller's cache keeps it now.
	HeapBytes       float64 `json:"heapBytes"`
	CachedHeapBytes float64 `json:"cachedHeapBytes"`
}

// CRDCost: the time to create N AppServices against N Deployments with the
// same Pod template, on a control plane without the controller.
type CRDCost struct {
	N                  int     `json:"n"`
	AppServicesSeconds float64 `json:"appServicesSeconds"`
	DeploymentsSeconds float64 `json:"deploymentsSeconds"`
	Ratio              float64 `json:"ratio"`
	// From the API server's metrics: the mean time it took to serve one
	// create of each (apiserver_request_duration_seconds).
	AppServiceCreateMillis float64 `json:"appServiceCreateMilliseconds"`
	DeploymentCreateMillis float64 `json:"deploymentCreateMilliseconds"`
	// From its CPU profile of the AppService creates: the share of its
	// CPU time in the CEL rules (cel.Validator.Validate) and in the
	// OpenAPI schema's validation. (Its metric
	// apiserver_cel_evaluation_duration_seconds cannot say: it observes
	// every node of the object the rules walk, nested in one another.)
	CELShare    float64 `json:"celShareOfCPU"`
	SchemaShare float64 `json:"schemaShareOfCPU"`
	// The same validation, offline (measureValidation).
	Validation Validation `json:"validation"`
}

// measureCRDCost is what the CRD costs the API server: n AppServices
// created with parallel clients on a fresh control plane without the
// controller, against n Deployments carrying the same Pod template.
func measureCRDCost(o options, n int) (CRDCost, error) {
	c := CRDCost{N: n}
	e, err := newEnvWith(o, "crd-cost", localcluster.Options{Profiling: true})
	if err != nil {
		return c, err
	}
	defer e.cluster.Stop()
	if err := installCRD(o, e); err != nil {
		return c, err
	}
	ctx := context.Background()
	// A first create of each, untimed: the first writes of a just
	// established CRD are slow for reasons of their own.
	warm := appService(n)
	warm.Name = "warm-up"
	if _, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, warm, metav1.CreateOptions{}); err != nil {
		return c, err
	}
	// Each half under a CPU profile of the API server, saved for `go tool
	// pprof`: where its time goes (BENCHMARKS.md).
	appServicesProfile := filepath.Join(o.out, "apiserver-cpu-appservices-"+specKind+".pb.gz")
	if c.AppServicesSeconds, err = profiled(e, appServicesProfile, func() error {
		return inParallel(n, func(i int) error {
			_, err := e.apps.AppV1().AppServices(benchNamespace).Create(ctx, appService(i), metav1.CreateOptions{})
			return err
		})
	}); err != nil {
		return c, err
	}
	if c.DeploymentsSeconds, err = profiled(e, filepath.Join(o.out, "apiserver-cpu-deployments-"+specKind+".pb.gz"), func() error {
		return inParallel(n, func(i int) error {
			d, _ := ownedChildren(i)
			_, err := e.kube.AppsV1().Deployments(benchNamespace).Create(ctx, d, metav1.CreateOptions{})
			return err
		})
	}); err != nil {
		return c, err
	}
	c.Ratio = c.AppServicesSeconds / c.DeploymentsSeconds
	metrics, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return c, err
	}
	c.AppServiceCreateMillis = 1000 * meanOf(string(metrics), "apiserver_request_duration_seconds", `resource="appservices"`, `verb="POST"`)
	c.DeploymentCreateMillis = 1000 * meanOf(string(metrics), "apiserver_request_duration_seconds", `resource="deployments"`, `verb="POST"`)
	shares, err := cpuShares(appServicesProfile, "schema/cel.(*Validator).Validate", "validation.ValidateCustomResource")
	if err != nil {
		return c, err
	}
	c.CELShare, c.SchemaShare = shares[0], shares[1]
	c.Validation, err = measureValidation(appService(0))
	return c, err
}

// objectSizes reads the AppService name and its children, and measures
// each as JSON, whole and as the controller caches it.
func objectSizes(ctx context.Context, e *env, name string) ([]ObjectSize, error) {
	gets := []func() (kruntime.Object, error){
		func() (kruntime.Object, error) {
			return e.apps.AppV1().AppServices(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.AppsV1().Deployments(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.CoreV1().Services(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.CoreV1().ServiceAccounts(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.NetworkingV1().Ingresses(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.gateway.GatewayV1().HTTPRoutes(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.PolicyV1().PodDisruptionBudgets(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
		func() (kruntime.Object, error) {
			return e.kube.AutoscalingV2().HorizontalPodAutoscalers(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		},
	}
	var out []ObjectSize
	for _, get := range gets {
		obj, err := get()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		obj.(metav1.Object).SetManagedFields(nil)
		whole, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		trimmed, err := children.Trim(obj.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		size := ObjectSize{Kind: reflect.TypeOf(obj).Elem().Name(), JSONBytes: len(whole)}
		if c, ok := trimmed.(*children.Cached); ok {
			size.CachedBytes = len(c.Data)
		}
		if size.HeapBytes, err = heapBytes(obj, whole, nil); err != nil {
			return nil, err
		}
		if size.CachedHeapBytes, err = heapBytes(obj, whole, children.Trim); err != nil {
			return nil, err
		}
		out = append(out, size)
	}
	return out, nil
}

// heapBytes is the Go heap that one object of obj's type, decoded from
// data and passed through transform (nil: none), holds: measured over
// a thousand of them, after a collection.
func heapBytes(obj kruntime.Object, data []byte, transform cache.TransformFunc) (float64, error) {
	const n = 1000
	kept := make([]any, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range kept {
		o := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
		if err := json.Unmarshal(data, o); err != nil {
			return 0, err
		}
		kept[i] = o
		if transform != nil {
			t, err := transform(o)
			if err != nil {
				return 0, err
			}
			kept[i] = t
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(after.HeapAlloc-before.HeapAlloc) / n, nil
}
