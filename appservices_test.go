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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// realisticAppService is a web app as users write one (the benchmark's
// realistic spec: probes, a preStop sleep, envFrom, resources, a ConfigMap
// volume), with the status the controller writes for it.
func realisticAppService(name string) *appv1.AppService {
	as := fixtures.AppService()
	as.Name = name
	as.Labels = map[string]string{"team": "shop"}
	as.Annotations = map[string]string{"owner": "shop@example.com"}
	as.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	s := &as.Spec
	s.Ports[0].NodePort = 0
	s.ServiceType = corev1.ServiceTypeClusterIP
	health := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)}}
	s.ReadinessProbe = &corev1.Probe{ProbeHandler: health, PeriodSeconds: 5}
	s.LivenessProbe = &corev1.Probe{ProbeHandler: health, InitialDelaySeconds: 5, PeriodSeconds: 20}
	s.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
	s.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	s.RolloutOnConfigChange = true
	s.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	s.Volumes = []appv1.Volume{{Name: "config", ConfigMap: &appv1.ConfigMapVolumeSource{Name: name + "-config"}}}
	s.VolumeMounts = []appv1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true}}
	as.Status = appv1.AppServiceStatus{ObservedGeneration: as.Generation, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
		UpdatedReplicas: 2, Selector: appv1.LabelAppService + "=" + name}
	for _, c := range []string{"Available", "Progressing", "Degraded", "Ready", "Reconciling", "Stalled"} {
		as.Status.Conditions = append(as.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue,
			Reason: "AsExpected", Message: "The Deployment has 2 of 2 Pods available", ObservedGeneration: as.Generation,
			LastTransitionTime: metav1.Unix(1700000000, 0)})
	}
	return as
}

// TestAppServiceCache: the AppServices' cache keeps each encoded, and what
// reads it (the lister, the config watch's indexes, the handlers' keys)
// gets the AppService back, managedFields aside.
func TestAppServiceCache(t *testing.T) {
	informer := cache.NewSharedIndexInformer(nil, &appv1.AppService{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := informer.AddIndexers(configIndexers); err != nil {
		t.Fatal(err)
	}
	web, other, plain := realisticAppService("web"), realisticAppService("other"), realisticAppService("plain")
	other.Namespace, other.Labels = "elsewhere", nil
	plain.Namespace, plain.Labels, plain.Spec.RolloutOnConfigChange = "elsewhere", nil, false
	for _, as := range []*appv1.AppService{web, other, plain} {
		cached, err := cacheAppService(as.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cached.(*children.Cached); !ok {
			t.Fatalf("cached as %T, want *children.Cached", cached)
		}
		if name, err := cache.ObjectToName(cached); err != nil || name.Name != as.Name || name.Namespace != as.Namespace {
			t.Errorf("the handlers' key of the cached %s: %v, %v", as.Name, name, err)
		}
		fixtures.MustAdd(t, informer.GetIndexer(), cached)
	}
	want := web.DeepCopy()
	want.ManagedFields = nil

	lister := newAppServiceLister(informer)
	got, err := lister.AppServices(web.Namespace).Get("web")
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("Get decoded\n%+v\nwant\n%+v", got, want)
	}
	if _, err := lister.AppServices(web.Namespace).Get("missing"); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing AppService: %v, want NotFound", err)
	}
	all, err := lister.List(labels.Everything())
	if err != nil || len(all) != 3 {
		t.Errorf("List: %d AppServices, %v; want 3", len(all), err)
	}
	shop, err := lister.List(labels.SelectorFromSet(labels.Set{"team": "shop"}))
	if err != nil || len(shop) != 1 || shop[0].Name != "web" {
		t.Errorf("List team=shop: %v, %v; want web", shop, err)
	}
	inNamespace, err := lister.AppServices("elsewhere").List(labels.Everything())
	if err != nil || len(inNamespace) != 2 {
		t.Errorf("List in elsewhere: %v, %v; want other and plain", inNamespace, err)
	}
	readers, err := informer.GetIndexer().ByIndex(configRefIndex, configKey{kind: children.ConfigMapRef, namespace: web.Namespace, name: "settings"}.String())
	if err != nil || len(readers) != 1 {
		t.Errorf("the config index by the ConfigMap web reads: %d AppServices, %v; want 1", len(readers), err)
	}
	if users, err := informer.GetIndexer().ByIndex(configNamespaceIndex, "elsewhere"); err != nil || len(users) != 1 {
		t.Errorf("the config index by namespace: %d AppServices, %v; want 1 (other; plain has no rolloutOnConfigChange)", len(users), err)
	}
}

// BenchmarkAppServiceCache is what the encoded cache costs a sync (one
// decode) and saves (bytes held), for a realistic AppService.
func BenchmarkAppServiceCache(b *testing.B) {
	cached, err := cacheAppService(realisticAppService("web"))
	if err != nil {
		b.Fatal(err)
	}
	informer := cache.NewSharedIndexInformer(nil, &appv1.AppService{}, 0, cache.Indexers{})
	fixtures.MustAdd(b, informer.GetIndexer(), cached)
	lister := newAppServiceLister(informer).AppServices(fixtures.Namespace)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lister.Get("web"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(cached.(*children.Cached).Data)), "encoded-bytes")
}
