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
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"example.com/appservice-controller/internal/appcache"
	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

func TestSyncHandlerCreatesChildren(t *testing.T) {
	as := fixtures.AppService()
	f := newFixture(t, as)
	f.expectCreate(fixtures.DesiredDeployment())
	f.expectCreate(fixtures.DesiredService())
	f.expectStatusUpdate(withStatus(as, appv1.AppServiceStatus{
		ObservedGeneration: fixtures.Generation,
		Selector:           fixtures.Selector,
		Conditions:         newDeploymentConditions(),
	}))
	// One Event for both children.
	f.events = []string{
		fixtures.Normal(appv1.ReasonCreated, "Created Deployment nginx-app, Service nginx-app"),
	}
	if err := f.run(testKey); err != nil {
		t.Fatalf("syncHandler: %v", err)
	}
}

// TestSyncHandlerWaitsForItsOwnStatus: a sync that reads the AppService
// from the cache before the controller's own last status write reached it
// would decide from the status before that write (a canary's route back to
// the step before): it writes nothing, and is retried as a stale view.
func TestSyncHandlerWaitsForItsOwnStatus(t *testing.T) {
	f := newFixture(t, fixtures.AppService())
	f.appReactors = append(f.appReactors, reactor{"update", "appservices", fixtures.NewStatusVersion})
	_, ctx := ktesting.NewTestContext(t)
	c := f.newController(ctx)
	if err := c.syncHandler(ctx, testKey); err != nil {
		t.Fatalf("syncHandler: %v", err)
	}
	if _, written := f.writtenStatus(); !written {
		t.Fatal("the first sync wrote no status")
	}
	kube, app := len(f.kubeClient.Actions()), len(f.appClient.Actions())

	// The cache still holds the version the status write replaced.
	if err := c.syncHandler(ctx, testKey); !syncerr.IsStale(err) {
		t.Errorf("syncHandler on the AppService before its own status write: %v, want a stale view", err)
	}
	for client, actions := range map[string][]core.Action{"kube": f.kubeClient.Actions()[kube:], "app": f.appClient.Actions()[app:]} {
		if got := filterInformerActions(actions); len(got) > 0 {
			t.Errorf("the %s client's actions of a sync on a stale AppService: %v, want none", client, got)
		}
	}
}

func TestSyncHandlerNoop(t *testing.T) {
	deleting := fixtures.AppService()
	deleting.DeletionTimestamp = &lastTransition
	deleting.Finalizers = []string{"foregroundDeletion"}
	tests := []struct {
		name string
		as   []*appv1.AppService
	}{
		{"AppService being deleted", []*appv1.AppService{deleting}},
		{"AppService gone", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := newFixture(t, tc.as...).run(testKey); err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
	}
}

// childCase is a sync of the seed (with currentStatus) against its live
// children: the spec and the live children may be changed first; the
// expected updates are changes to copies of the live children.
type childCase struct {
	name       string
	spec       func(*appv1.AppServiceSpec)
	liveDeploy func(*appsv1.Deployment)
	liveSvc    func(*corev1.Service)
	wantDeploy func(*appsv1.Deployment) // nil: no update
	wantSvc    func(*corev1.Service)    // nil: no update
	// wantStatus changes currentStatus into the status written; nil: none
	// (the generation does not change here, so only the rollout's
	// progress can call for a write).
	wantStatus func(*appv1.AppServiceStatus)
	events     []string
}

func (tc childCase) run(t *testing.T) {
	as := withStatus(fixtures.AppService(), currentStatus())
	fixtures.Tweak(tc.spec, &as.Spec)
	d := fixtures.LiveDeployment()
	fixtures.Tweak(tc.liveDeploy, d)
	s := fixtures.LiveService()
	fixtures.Tweak(tc.liveSvc, s)

	f := newFixture(t, as)
	f.deployments = []*appsv1.Deployment{d}
	f.services = []*corev1.Service{s}
	if tc.wantDeploy != nil {
		want := d.DeepCopy()
		tc.wantDeploy(want)
		f.expectUpdate(want)
	}
	if tc.wantSvc != nil {
		want := s.DeepCopy()
		tc.wantSvc(want)
		f.expectUpdate(want)
	}
	if tc.wantStatus != nil {
		st := currentStatus()
		tc.wantStatus(&st)
		f.expectStatusUpdate(withStatus(as, st))
	}
	f.events = tc.events
	if err := f.run(testKey); err != nil {
		t.Errorf("syncHandler: %v", err)
	}
}

func TestSyncHandlerSteadyState(t *testing.T) {
	tests := []childCase{
		{name: "children as defaulted by the API server"},
		{
			name: "equal quantities in another form, defaulted fieldRef apiVersion",
			spec: func(s *appv1.AppServiceSpec) {
				s.Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1.5")},
				}
				s.Envs = []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				}
			},
			liveDeploy: func(d *appsv1.Deployment) {
				fixtures.Container(d).Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m"), corev1.ResourceMemory: resource.MustParse("134217728")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
				}
				fixtures.Container(d).Env = []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				}
			},
		},
		{
			name:       "a label someone else added to the Deployment",
			liveDeploy: func(d *appsv1.Deployment) { d.Labels["team"] = "web" },
		},
		{
			name:    "spec nodePort 0: the server-assigned nodePort is kept",
			spec:    func(s *appv1.AppServiceSpec) { s.Ports[0].NodePort = 0 },
			liveSvc: func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 31234 },
		},
		{
			// The API server rounds every quantity of a Pod template's
			// resources up to milli precision (SetDefaults_ResourceList).
			name: "sub-milli CPU request, rounded up by the API server",
			spec: func(s *appv1.AppServiceSpec) {
				s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100u")}
			},
			liveDeploy: func(d *appsv1.Deployment) {
				fixtures.Container(d).Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func TestSyncHandlerUpdates(t *testing.T) {
	var (
		deploymentUpdated = fixtures.Normal(appv1.ReasonUpdated, "Updated Deployment nginx-app: ")
		serviceUpdated    = fixtures.Normal(appv1.ReasonUpdated, "Updated Service nginx-app: ")
	)
	tests := []childCase{
		{
			name:       "size",
			spec:       func(s *appv1.AppServiceSpec) { s.Size = new(int32(3)) },
			wantDeploy: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(3)) },
			// A third replica to start: the rollout is under way again.
			wantStatus: func(st *appv1.AppServiceStatus) {
				for _, c := range reconcilingConditions(appv1.ReasonRollingOut, "2 of 3 replicas updated") {
					setCondition(st, c)
				}
			},
			events: []string{deploymentUpdated + "replicas"},
		},
		{
			name:       "image, same pull policy",
			spec:       func(s *appv1.AppServiceSpec) { s.Image = "nginx:1.9.1" },
			wantDeploy: func(d *appsv1.Deployment) { fixtures.Container(d).Image = "nginx:1.9.1" },
			events:     []string{deploymentUpdated + "image"},
		},
		{
			name: "image to :latest flips the pull policy to Always",
			spec: func(s *appv1.AppServiceSpec) { s.Image = "nginx:latest" },
			wantDeploy: func(d *appsv1.Deployment) {
				fixtures.Container(d).Image = "nginx:latest"
				fixtures.Container(d).ImagePullPolicy = corev1.PullAlways
			},
			events: []string{deploymentUpdated + "image, imagePullPolicy"},
		},
		{
			name: "env",
			spec: func(s *appv1.AppServiceSpec) {
				s.Envs = []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				}
			},
			wantDeploy: func(d *appsv1.Deployment) {
				fixtures.Container(d).Env = []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
				}
			},
			events: []string{deploymentUpdated + "env"},
		},
		{
			name: "resources",
			spec: func(s *appv1.AppServiceSpec) {
				s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
				s.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}
			},
			wantDeploy: func(d *appsv1.Deployment) {
				fixtures.Container(d).Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				}
			},
			events: []string{deploymentUpdated + "resources"},
		},
		{
			name:       "target port: container port and Service port",
			spec:       func(s *appv1.AppServiceSpec) { s.Ports[0].TargetPort = intstr.FromInt32(8080) },
			wantDeploy: func(d *appsv1.Deployment) { fixtures.Container(d).Ports[0].ContainerPort = 8080 },
			wantSvc:    func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(8080) },
			events:     []string{deploymentUpdated + "ports; Service nginx-app: ports"},
		},
		{
			name: "a second, named port",
			spec: func(s *appv1.AppServiceSpec) {
				s.Ports[0].Name = "http"
				s.Ports = append(s.Ports, corev1.ServicePort{Name: "metrics", Port: 9090, TargetPort: intstr.FromString("metrics")})
			},
			wantDeploy: func(d *appsv1.Deployment) {
				fixtures.Container(d).Ports = []corev1.ContainerPort{
					{ContainerPort: 80, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
				}
			},
			wantSvc: func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(80), NodePort: 30002},
					{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromString("metrics")},
				}
			},
			events: []string{deploymentUpdated + "ports; Service nginx-app: ports"},
		},
		{
			name: "serviceType ClusterIP drops the nodePort",
			spec: func(s *appv1.AppServiceSpec) {
				s.ServiceType = corev1.ServiceTypeClusterIP
				s.Ports[0].NodePort = 0
			},
			wantSvc: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeClusterIP
				s.Spec.Ports[0].NodePort = 0
			},
			events: []string{serviceUpdated + "type, ports"},
		},
		{
			name:    "serviceType LoadBalancer keeps clusterIP and the server-assigned nodePort",
			spec:    func(s *appv1.AppServiceSpec) { s.ServiceType = corev1.ServiceTypeLoadBalancer; s.Ports[0].NodePort = 0 },
			liveSvc: func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 31234 },
			wantSvc: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				// Spelled out, though s is a copy of the live Service.
				s.Spec.ClusterIP = fixtures.ClusterIP
				s.Spec.Ports[0].NodePort = 31234
			},
			events: []string{serviceUpdated + "type"},
		},
		{
			name:       "drift: replicas changed by someone else",
			liveDeploy: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(5)) },
			wantDeploy: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(2)) },
			events:     []string{deploymentUpdated + "replicas"},
		},
		{
			name: "drift: image changed by someone else",
			liveDeploy: func(d *appsv1.Deployment) {
				fixtures.Container(d).Image = "nginx:latest"
				fixtures.Container(d).ImagePullPolicy = corev1.PullAlways
			},
			wantDeploy: func(d *appsv1.Deployment) {
				fixtures.Container(d).Image = "nginx:1.7.9"
				fixtures.Container(d).ImagePullPolicy = corev1.PullIfNotPresent
			},
			events: []string{deploymentUpdated + "image, imagePullPolicy"},
		},
		{
			name: "drift: a foreign label is kept when replicas are set back",
			liveDeploy: func(d *appsv1.Deployment) {
				d.Labels["team"] = "web"
				d.Spec.Replicas = new(int32(0))
			},
			wantDeploy: func(d *appsv1.Deployment) {
				d.Labels = map[string]string{appv1.LabelAppService: fixtures.Name, "team": "web"}
				d.Spec.Replicas = new(int32(2))
			},
			events: []string{deploymentUpdated + "replicas"},
		},
		{
			name: "drift: Service type and selector changed by someone else",
			liveSvc: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeClusterIP
				s.Spec.Selector = map[string]string{"app": "other"}
			},
			wantSvc: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.Selector = fixtures.Labels() },
			events:  []string{serviceUpdated + "type, selector"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// TestSyncHandlerServiceWithoutPorts: with no ports there is no Service; an
// owned one is deleted, one in the way is left alone without complaint.
func TestSyncHandlerServiceWithoutPorts(t *testing.T) {
	tests := []struct {
		name  string
		owned bool
	}{
		{"owned Service deleted", true},
		{"unowned Service left alone", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := withStatus(fixtures.AppService(), currentStatus())
			as.Spec.Ports = nil
			d := fixtures.LiveDeployment()
			fixtures.Container(d).Ports = nil
			s := fixtures.LiveService()
			if !tc.owned {
				s.OwnerReferences = nil
			}
			f := newFixture(t, as)
			f.deployments = []*appsv1.Deployment{d}
			f.services = []*corev1.Service{s}
			if tc.owned {
				uid := s.UID
				f.expectDelete(servicesResource, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
				f.events = []string{fixtures.Normal(appv1.ReasonDeleted, "Deleted Service nginx-app: the spec has no ports")}
			}
			if err := f.run(testKey); err != nil {
				t.Errorf("syncHandler: %v", err)
			}
		})
	}
}

// queued drains the controller's queue.
func queued(c *Controller) []cache.ObjectName {
	var out []cache.ObjectName
	for c.queue.Len() > 0 {
		key, _ := c.queue.Get()
		c.queue.Done(key)
		out = append(out, key)
	}
	return out
}

func newTestController(t *testing.T) *Controller {
	_, ctx := ktesting.NewTestContext(t)
	return newFixture(t).newController(ctx)
}

func TestHandleAppService(t *testing.T) {
	tests := []struct {
		name string
		obj  interface{}
		want []cache.ObjectName
	}{
		{"AppService", fixtures.AppService(), []cache.ObjectName{testKey}},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "default/nginx-app", Obj: fixtures.AppService()}, []cache.ObjectName{testKey}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestController(t)
			c.handleAppService(tc.obj)
			c.handleAppService(tc.obj) // de-duplicated by the queue
			if got := queued(c); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRunStoppedBeforeCachesSync: a shutdown that comes while the caches are
// still syncing is a clean stop, not a failure (the process exits 0).
func TestRunStoppedBeforeCachesSync(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	c := newFixture(t).newController(ctx) // informers never started: never synced
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Run(ctx, 1); err != nil {
		t.Errorf("Run: %v, want nil", err)
	}
}

// BenchmarkCachesHeld is the heap the controller's caches hold for each
// realistic AppService with its Deployment and Service (issue 74): the
// encoded objects, the metadata kept decoded, the stores' maps and the
// indexes (the controller's, the config watch's, the templates'), after a
// collection (held-bytes/appservice). Each object reaches its informer's
// store as a watch hands it over: decoded from the wire, then through the
// informer's transform. The capacity row of `make bench` measures the
// whole process; this is the part that grows with the AppServices, alone.
func BenchmarkCachesHeld(b *testing.B) {
	const n = 5000
	var held uint64
	for b.Loop() {
		_, ctx := ktesting.NewTestContext(b)
		f := newFixture(b)
		f.newController(ctx)
		appServices := f.appInformers.App().V1().AppServices().Informer().GetIndexer()
		deployments := f.kubeInformers.Apps().V1().Deployments().Informer().GetIndexer()
		services := f.kubeInformers.Core().V1().Services().Informer().GetIndexer()
		// The caches' codec is made on first use: not counted.
		fixtures.MustAdd(b, services, trimmed(b, children.NewService(fixtures.RealisticAppService("first"))))
		before := heapAfterGC()
		for i := range n {
			as, d, s := watchedApp(b, i)
			cached, err := appcache.Transform(as)
			if err != nil {
				b.Fatal(err)
			}
			fixtures.MustAdd(b, appServices, cached)
			fixtures.MustAdd(b, deployments, trimmed(b, d))
			fixtures.MustAdd(b, services, trimmed(b, s))
		}
		held += heapAfterGC() - before
		runtime.KeepAlive(f)
	}
	b.ReportMetric(float64(held)/float64(b.N)/n, "held-bytes/appservice")
}

// watchedApp returns the i-th of many realistic AppServices, its
// Deployment (with an available rollout's status) and its Service, each
// as a watch decodes it: with its own UID and resourceVersion, and every
// string of its own.
func watchedApp(b *testing.B, i int) (*appv1.AppService, *appsv1.Deployment, *corev1.Service) {
	b.Helper()
	as := fixtures.RealisticAppService(fmt.Sprintf("web-%05d", i))
	as.UID = types.UID(fmt.Sprintf("6b1a5c3e-0000-4000-8000-%012d", i))
	as.ResourceVersion = strconv.Itoa(3*i + 1)
	d := children.NewDeployment(as)
	d.UID, d.ResourceVersion = types.UID(fmt.Sprintf("7b1a5c3e-0000-4000-8000-%012d", i)), strconv.Itoa(3*i+2)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", as.Name+"-5d4f8b7c9")},
		}}
	s := children.NewService(as)
	s.UID, s.ResourceVersion = types.UID(fmt.Sprintf("8b1a5c3e-0000-4000-8000-%012d", i)), strconv.Itoa(3*i+3)
	// The built-in kinds come as protobuf, the AppServices as JSON.
	wireD, err := d.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	wireS, err := s.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	wireAS, err := json.Marshal(as)
	if err != nil {
		b.Fatal(err)
	}
	as, d, s = &appv1.AppService{}, &appsv1.Deployment{}, &corev1.Service{}
	if err := errors.Join(d.Unmarshal(wireD), s.Unmarshal(wireS), json.Unmarshal(wireAS, as)); err != nil {
		b.Fatal(err)
	}
	return as, d, s
}

// heapAfterGC is the heap's live bytes, once collected.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
