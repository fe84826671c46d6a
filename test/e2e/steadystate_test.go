//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/harness"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// 6. Zero writes: a restart of the controller over 120 AppServices in sync,
// every shape of everyShape twice (forty with every field,
// rolloutOnConfigChange, an init container and a sidecar among them; twelve
// suspended) and Activities in every state (finished, running, pending, blocked),
// then nothing changing while the controller syncs every one of them at
// least four times (the start, and three resyncs: its reconcile counts say
// when), and the audit log shows not one write by the controller but the
// leader's Lease renewals. A controller comparing the desired objects
// naively with the defaulted live ones fails here.
func TestNoWritesInSteadyState(t *testing.T) {
	serial(t, 2)
	if testing.Short() {
		t.Skip("takes over a minute")
	}
	ns := newNamespace(t)
	setUpEveryShape(t, ns)
	createEveryShape(t, ns, 120, everyShape)

	// An autoscaled Deployment at a count the autoscaler chose (set here
	// through the scale subresource, as it does): the restarted controller
	// and its resyncs leave it there. A request a starved API server timed
	// out is sent again, as the autoscaler's next sync would.
	const scaled = "app-003"
	if err := retry.OnError(retry.DefaultBackoff, timedOut, func() error {
		_, err := kube.AppsV1().Deployments(ns).UpdateScale(context.Background(), scaled, &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: scaled, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 2},
		}, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, ns, scaled, 2)
	waitInLine(t, ns, scaled)

	// Activities in every state a restart can find them in: finished
	// (Succeeded, Failed), running, pending on a node that does not exist,
	// and blocked by someone's Job of the name.
	createActivities(t, ns)

	appServices, err := apps.AppV1().AppServices(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	activities, err := apps.AppV1().Activities(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := metricsToken(t, ns)

	if _, err := ctrl.Stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping the controller: %v", err)
	}
	since := time.Now()
	if err := ctrl.Start(); err != nil {
		t.Fatal(err)
	}
	// Every object synced at least four times by the restarted process:
	// once as its caches filled, then at three resyncs (-resync-period=10s),
	// whatever else queued it meanwhile. Its counters start at zero.
	waitReconciled(t, ctrl, token, map[string]int{"appservice": 4 * len(appServices.Items), "activity": 4 * len(activities.Items)})
	if left := 30*time.Second - time.Since(since); left > 0 {
		time.Sleep(left) // three resync periods at least, whatever else queued the objects
	}
	for _, w := range controllerWrites(t, since, "") {
		// Renewing the leader's Lease is the one write that never stops.
		// The reviews are /metrics authenticating and authorizing this
		// test's scrapes: answers the API server computes, never stored.
		if w.ObjectRef != nil && slices.Contains([]string{"leases", "tokenreviews", "subjectaccessreviews"}, w.ObjectRef.Resource) {
			continue
		}
		t.Errorf("write by the controller in steady state: %s", w)
	}
	if d, err := getDeployment(ns, scaled); err != nil || *d.Spec.Replicas != 2 {
		t.Errorf("the autoscaled Deployment after a restart: %v, want the autoscaler's 2 replicas", err)
	}
}

// 8. SIGTERM stops the controller within seconds: the queue is shut down,
// running syncs finish, the process exits 0.

// createActivities makes Activities in each state a restart can meet, and
// waits until the status of each says so.
func createActivities(t *testing.T, ns string) {
	t.Helper()
	theirs := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "act-blocked"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "theirs", Image: "busybox:1.37", Command: []string{"/bin/sh", "-c", "sleep 3600"}}},
		}}},
	}
	if _, err := kube.BatchV1().Jobs(ns).Create(context.Background(), theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]appv1.ActivityPhase{}
	for i, c := range []struct {
		spec  appv1.ActivitySpec
		phase appv1.ActivityPhase
	}{
		{appv1.ActivitySpec{Command: "true", Envs: []string{"A=1"}, ExecUser: "1000:1000", ExecCwd: "/tmp"}, appv1.ActivitySucceeded},
		{appv1.ActivitySpec{Command: "true", ActiveDeadlineSeconds: new(int64(600)), TTLSecondsAfterFinished: new(int32(86400))}, appv1.ActivitySucceeded},
		{appv1.ActivitySpec{Command: "exit 3"}, appv1.ActivityFailed},
		{appv1.ActivitySpec{Command: "sleep 3600", Host: "kwok-node-0"}, appv1.ActivityRunning},
		{appv1.ActivitySpec{Command: "true", Host: "no-such-node"}, appv1.ActivityPending},
		{appv1.ActivitySpec{Command: "true"}, appv1.ActivityPending}, // act-blocked: someone's Job has its name
	} {
		name := fmt.Sprintf("act-%d", i)
		if i == 5 {
			name = "act-blocked"
		}
		want[name] = c.phase
		if _, err := apps.AppV1().Activities(ns).Create(context.Background(), &appv1.Activity{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: c.spec}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, time.Minute, func() error {
		for name, phase := range want {
			act, err := apps.AppV1().Activities(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if act.Status.Prosta != phase || act.Status.ObservedGeneration != act.Generation {
				return fmt.Errorf("Activity %s is %q, want %q", name, act.Status.Prosta, phase)
			}
			if name == "act-blocked" && !meta.IsStatusConditionTrue(act.Status.Conditions, appv1.ConditionStalled) {
				return fmt.Errorf("Activity %s is not Stalled by someone's Job: %+v", name, act.Status.Conditions)
			}
			if phase.Finished() {
				// Its outcome recorded, its Job is released.
				job, err := kube.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
				if err != nil || slices.Contains(job.Finalizers, appv1.FinalizerActivityStatus) {
					return fmt.Errorf("the Job of finished Activity %s is still held (%v)", name, err)
				}
			}
		}
		return nil
	})
}

// everyShape is the i-th AppService of the steady-state and upgrade tests:
// a third with every optional field and child (an init container and a
// sidecar, an HTTPRoute, a GRPCRoute one time in two, autoscaled one time
// in two), the others plain
// with either Service type, one in ten suspended. It reads the ConfigMap
// app, the Secret db (setUpEveryShape) and the missing Secret tls.
func everyShape(i int) *appv1.AppService {
	as := &appv1.AppService{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%03d", i)},
		Spec: appv1.AppServiceSpec{
			Size: int32p(int32(i % 2)), Image: "nginx:1.27",
			Envs: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.1"), corev1.ResourceMemory: resource.MustParse("1024Mi")},
			},
			Ports:       []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}},
			ServiceType: []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort}[i%2],
		},
	}
	if i%3 == 0 {
		// Every optional field, each with the API server's
		// defaults in play.
		s := &as.Spec
		s.ImagePullPolicy = corev1.PullIfNotPresent
		s.RolloutOnConfigChange = true
		s.Command, s.Args, s.WorkingDir = []string{"nginx"}, []string{"-g", "daemon off;"}, "/srv"
		s.MinReadySeconds, s.RevisionHistoryLimit, s.ProgressDeadlineSeconds = int32p(1), int32p(3), int32p(300)
		s.Strategy = &appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: new(intstr.FromInt32(1))}}
		s.ServiceAccount = &appv1.ServiceAccount{
			Create: true, AutomountToken: new(false),
			Annotations: map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/" + as.Name},
		}
		s.DisruptionBudget = &appv1.DisruptionBudget{MaxUnavailable: new(intstr.FromString("25%"))}
		s.HTTPRoute = &appv1.HTTPRoute{
			ParentRefs: []gatewayv1.ParentReference{{Name: "public", Namespace: new(gatewayv1.Namespace("infra")), SectionName: new(gatewayv1.SectionName("https"))}},
			Hostnames:  []gatewayv1.Hostname{gatewayv1.Hostname(as.Name + ".example.com")},
			Rules: []appv1.HTTPRouteRule{
				{Matches: []gatewayv1.HTTPRouteMatch{{
					Path:    &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchPathPrefix), Value: new("/api")},
					Headers: []gatewayv1.HTTPHeaderMatch{{Name: "x-canary", Value: "true"}},
				}}, Filters: []gatewayv1.HTTPRouteFilter{{
					Type:       gatewayv1.HTTPRouteFilterURLRewrite,
					URLRewrite: &gatewayv1.HTTPURLRewriteFilter{Path: &gatewayv1.HTTPPathModifier{Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: new("/")}},
				}}, Timeouts: &gatewayv1.HTTPRouteTimeouts{Request: new(gatewayv1.Duration("10s"))}, Port: new(intstr.FromString("http"))},
				{},
			},
		}
		if i%6 == 0 {
			// A GRPCRoute beside the HTTPRoute, with the API server's
			// defaults in its matches. (The upgrade test's earlier
			// build, whose CRD has none, has it pruned.)
			s.GRPCRoute = &appv1.GRPCRoute{
				ParentRefs: []gatewayv1.ParentReference{{Name: "public", Namespace: new(gatewayv1.Namespace("infra"))}},
				Hostnames:  []gatewayv1.Hostname{gatewayv1.Hostname(as.Name + "-grpc.example.com")},
				Rules: []appv1.GRPCRouteRule{
					{Matches: []gatewayv1.GRPCRouteMatch{{
						Method:  &gatewayv1.GRPCMethodMatch{Service: new("shop.Cart")},
						Headers: []gatewayv1.GRPCHeaderMatch{{Name: "x-tenant", Value: "a"}},
					}}, Filters: []gatewayv1.GRPCRouteFilter{{
						Type:                  gatewayv1.GRPCRouteFilterRequestHeaderModifier,
						RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-from", Value: "gateway"}}},
					}}, Port: new(intstr.FromString("http"))},
					{},
				},
			}
		}
		if i%12 == 0 {
			// A canary for the next template change, with a mirror
			// and sticky users: none under way. (The upgrade test's
			// earlier build, whose CRD has neither, has them pruned.)
			s.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 20, Mirror: 10, PauseSeconds: 60}, {Weight: 100}},
				Sticky: &appv1.CanarySticky{CookieName: "canary", MaxAgeSeconds: 600}}
		}
		if i%12 == 6 {
			// A blue-green release for the next template change, its
			// scale-down delay defaulted: none under way. (The upgrade
			// test's earlier build gets a canary instead: earlierShape.)
			s.Canary = &appv1.Canary{Steps: []appv1.CanaryStep{{Weight: 0, Mirror: 10, PauseSeconds: 60}},
				BlueGreen: &appv1.BlueGreen{PreviewReplicas: int32p(1), AntiAffinity: true}}
		}
		s.Ingress = &appv1.Ingress{
			ClassName:   "nginx",
			Annotations: map[string]string{"cert-manager.io/cluster-issuer": "letsencrypt"},
			Hosts: []appv1.IngressHost{
				{Host: as.Name + ".example.com", Paths: []appv1.IngressPath{{}, {Path: "/dns", PathType: networkingv1.PathTypeExact, Port: new(intstr.FromString("dns"))}}},
				{Paths: []appv1.IngressPath{{Path: "/" + as.Name, PathType: networkingv1.PathTypeImplementationSpecific, Port: new(intstr.FromInt32(80))}}},
			},
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"*.example.com"}, SecretName: "wildcard"}},
		}
		if i%2 == 1 {
			// Autoscaled from the size, 1, with every behavior
			// field defaulted by the API server in one direction.
			s.Autoscaling = &appv1.Autoscaling{
				MaxReplicas: 3, TargetCPUUtilizationPercentage: int32p(70), TargetMemoryUtilizationPercentage: int32p(80),
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
					StabilizationWindowSeconds: int32p(60), Tolerance: new(resource.MustParse("0.05")),
				}},
			}
		}
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
		s.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
		s.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(30))}}
		s.TerminationGracePeriodSeconds = new(int64(5))
		s.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
		s.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}}
		s.PodLabels = map[string]string{"tier": "web"}
		s.PodAnnotations = map[string]string{"example.com/note": "steady"}
		s.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}
		s.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, FailureThreshold: 30}
		s.Lifecycle = &corev1.Lifecycle{
			PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}},
			PreStop:   &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}},
		}
		s.SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: new(false), ReadOnlyRootFilesystem: new(true), RunAsNonRoot: new(true),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
		s.PodSecurityContext = &corev1.PodSecurityContext{
			RunAsUser: new(int64(65532)), RunAsGroup: new(int64(65532)), FSGroup: new(int64(65532)),
			FSGroupChangePolicy: new(corev1.FSGroupChangeOnRootMismatch), SupplementalGroups: []int64{1000},
			Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}},
		}
		s.Affinity = &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}}},
			}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{appv1.LabelAppService: as.Name}}, MatchLabelKeys: []string{"pod-template-hash"}},
			}}},
		}
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{appv1.LabelAppService: as.Name}}, MatchLabelKeys: []string{"pod-template-hash"},
		}}
		s.Volumes = []appv1.Volume{
			{Name: "config", ConfigMap: &appv1.ConfigMapVolumeSource{Name: "app", Items: []appv1.KeyToPath{{Key: "app.conf", Path: "app.conf"}}}},
			{Name: "tls", Secret: &appv1.SecretVolumeSource{SecretName: "tls", DefaultMode: new(int32(0o400))}},
			{Name: "cache", EmptyDir: &appv1.EmptyDirVolumeSource{SizeLimit: new(resource.MustParse("512Mi"))}},
			{Name: "data", PersistentVolumeClaim: &appv1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}},
			{Name: "token", Projected: &appv1.ProjectedVolumeSource{Sources: []appv1.VolumeProjection{
				{ServiceAccountToken: &appv1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"}},
				{DownwardAPI: &appv1.DownwardAPIProjection{Items: []appv1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &appv1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			}}},
			{Name: "podinfo", DownwardAPI: &appv1.DownwardAPIVolumeSource{Items: []appv1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &appv1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "cpu", ResourceFieldRef: &appv1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: "1m"}},
			}}},
		}
		s.VolumeMounts = []appv1.VolumeMount{
			{Name: "config", MountPath: "/etc/app", ReadOnly: true},
			{Name: "tls", MountPath: "/etc/tls", ReadOnly: true, RecursiveReadOnly: new(corev1.RecursiveReadOnlyIfPossible)},
			{Name: "cache", MountPath: "/var/cache/app", SubPath: "nginx"},
			{Name: "data", MountPath: "/data"},
			{Name: "token", MountPath: "/var/run/secrets/vault"},
			{Name: "podinfo", MountPath: "/etc/podinfo"},
		}
		// An init container and a sidecar with every field the
		// API server defaults in a container (terminationMessage*,
		// probe timings, an httpGet's scheme, a fieldRef's
		// apiVersion, a port's protocol).
		s.InitContainers = []appv1.Container{{
			Name: "migrate", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo migrated"},
			Env:             []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			EnvFrom:         []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}},
			Resources:       corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
			VolumeMounts:    []appv1.VolumeMount{{Name: "cache", MountPath: "/cache"}},
			SecurityContext: &corev1.SecurityContext{RunAsNonRoot: new(true)},
		}}
		s.Sidecars = []appv1.Container{{
			Name: "shipper", Image: "fluent/fluent-bit:3.1", Args: []string{"-c", "/etc/app/fluent-bit.conf"},
			Ports:          []appv1.ContainerPort{{Name: "metrics", ContainerPort: 2020}, {ContainerPort: 5170, Protocol: corev1.ProtocolUDP}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("metrics")}}},
			LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(2020)}}, PeriodSeconds: 30},
			StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
			Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 2}}},
			Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.05")}},
			VolumeMounts:   []appv1.VolumeMount{{Name: "cache", MountPath: "/var/cache/app", ReadOnly: true}, {Name: "config", MountPath: "/etc/app"}},
		}}
	}
	if i%3 == 1 {
		as.Spec.Strategy = &appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		as.Spec.ServiceAccountName = "default"
	}
	if i%10 == 5 {
		// Suspended: plain ones, and autoscaled ones with every
		// field (15, 45, ...): at 0 replicas, without an autoscaler.
		as.Spec.Suspend = new(true)
	}
	return as
}

// setUpEveryShape makes what everyShape's AppServices need in ns: the
// Gateway API (for their HTTPRoutes), a bound claim, the ConfigMap app and
// the Secret db.
func setUpEveryShape(t *testing.T, ns string) {
	t.Helper()
	// Every child includes an HTTPRoute: the Gateway API's CRDs, from the
	// pinned module (TestHTTPRoute may have installed them already).
	installGatewayAPI(t)
	// The claim the every-field AppServices mount, bound ahead to a volume
	// of its own: the scheduler places no Pod with an unbound claim.
	createBoundClaim(t, ns, "data")
	// What the every-field AppServices read, with rolloutOnConfigChange:
	// the ConfigMap app and Secret db exist, the Secret tls does not (a
	// missing required object).
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"app.conf": "steady"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"PASSWORD": "steady"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createEveryShape creates n AppServices in ns, made by shape, 16 at a
// time, and waits until every one is Available (at 0 replicas, suspended)
// with every child in line.
func createEveryShape(t *testing.T, ns string, n int, shape func(i int) *appv1.AppService) {
	t.Helper()
	if err := sixteenAtATime(n, func(i int) error {
		_, err := apps.AppV1().AppServices(ns).Create(context.Background(), shape(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The deadline is for a controller that stopped converging: on a
	// machine the other groups load, 300 took over 3 minutes.
	eventually(t, 6*time.Minute, func() error {
		list, err := apps.AppV1().AppServices(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		deployments, err := kube.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		byName := map[string]*appsv1.Deployment{}
		for i := range deployments.Items {
			byName[deployments.Items[i].Name] = &deployments.Items[i]
		}
		for _, as := range list.Items {
			// Available, and every child in line (an HTTPRoute waits
			// for the controller to discover the Gateway API installed
			// above).
			avail, degraded := condition(&as, appv1.ConditionAvailable), condition(&as, appv1.ConditionDegraded)
			want := *as.Spec.Size
			if as.Spec.Suspend != nil && *as.Spec.Suspend {
				want = 0
			}
			if as.Status.ObservedGeneration != as.Generation || avail == nil || avail.Status != metav1.ConditionTrue ||
				degraded == nil || degraded.Status != metav1.ConditionFalse || as.Status.AvailableReplicas != want || as.Status.Replicas != want {
				return fmt.Errorf("%s not converged: %+v", as.Name, as.Status)
			}
			// And in line: no status update of its Deployment is still
			// to come, and none of the AppService's.
			d, ok := byName[as.Name]
			if !ok {
				return fmt.Errorf("%s has no Deployment", as.Name)
			}
			if err := inLine(&as, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// waitReconciled waits until the controller process p has counted at least
// want[controller] successful syncs of each kind since it started (its
// counters start at zero), read from its /metrics with token.
func waitReconciled(t *testing.T, p *harness.Controller, token string, want map[string]int) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error {
		code, body, err := p.Metrics(token)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/metrics: %d %v", code, err)
		}
		for controller, n := range want {
			got, _ := metricValue(body, `controller_runtime_reconcile_total{controller="`+controller+`",result="success"}`)
			if int(got) < n {
				return fmt.Errorf("%s: %v successful syncs since the start, want %d", controller, got, n)
			}
		}
		return nil
	})
}

// timedOut reports an API server's answer that it could not finish a
// request in time (the request may or may not have taken effect).
func timedOut(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}
