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
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
)

// prometheusOperator is the Prometheus Operator release whose ServiceMonitor
// CRD the ServiceMonitor component is checked against (from the Go module
// proxy, like every other dependency).
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

// The one-file install and the image, on a control plane of its own: `make
// build-installer` with every optional component, then one `kubectl apply
// -f` creates everything (the API server accepts the NetworkPolicy, the
// dashboard's ConfigMap, and the ServiceMonitor and the PrometheusRule once
// the Prometheus Operator's CRDs are there). `make image` builds the image
// for this machine's platform (hack/image's tests check every platform of
// a release, without cross-compiling the controller); its layers are
// unpacked into a folder and its entrypoint is run as the bundle's Pod
// would run it: with the bundle's ServiceAccount and the arguments of the
// bundle's Deployment. It becomes ready and makes an AppService Available;
// it may not write CRDs, and does not try.
func TestInstallBundle(t *testing.T) {
	parallel(t)
	entrypoint := unpackImage(t)
	dist := t.TempDir()
	build := exec.Command("make", "--no-print-directory", "build-installer", "DIST="+dist,
		"IMG=registry.example.com/appservice-controller:e2e", "COMPONENTS=network-policy service-monitor prometheus-rule grafana-dashboard")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build-installer: %v\n%s", err, out)
	}
	bundle := filepath.Join(dist, "install.yaml")
	objects := readManifests(t, bundle)

	fresh := startFreshCluster(t)
	kubectlOn, kubectlRun := fresh.mustKubectl, fresh.kubectl

	kubectlOn("create", "-f", prometheusOperatorCRD(t, "servicemonitors"), "-f", prometheusOperatorCRD(t, "prometheusrules"))
	kubectlOn("wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
	out := kubectlOn("apply", "-f", bundle)
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/appservices.app.example.com created",
		"customresourcedefinition.apiextensions.k8s.io/activities.app.example.com created",
		"customresourcedefinition.apiextensions.k8s.io/analysistemplates.app.example.com created",
		"customresourcedefinition.apiextensions.k8s.io/clusteranalysistemplates.app.example.com created",
		"customresourcedefinition.apiextensions.k8s.io/notificationdestinations.app.example.com created",
		"namespace/appservice-system created",
		"clusterrole.rbac.authorization.k8s.io/appservice-controller-metrics-reader created",
		"deployment.apps/appservice-controller created",
		"networkpolicy.networking.k8s.io/appservice-controller-allow-metrics created",
		"servicemonitor.monitoring.coreos.com/appservice-controller created",
		"prometheusrule.monitoring.coreos.com/appservice-controller created",
		"configmap/appservice-controller-dashboard created",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply -f install.yaml did not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "crd-install") {
		t.Errorf("the bundle carries the CRD-install RBAC:\n%s", out)
	}
	kubectlOn("wait", "--for=condition=Established", "--timeout=60s", "crd/appservices.app.example.com", "crd/activities.app.example.com",
		"crd/analysistemplates.app.example.com", "crd/clusteranalysistemplates.app.example.com",
		"crd/notificationdestinations.app.example.com")
	// kwok runs the bundle's Pods as fakes: they pass admission (the
	// namespace enforces the restricted Pod Security Standard) and are
	// scheduled.
	kubectlOn("-n", controllerNamespace, "wait", "--for=condition=Available", "--timeout=90s", "deployment/appservice-controller")

	args, image := controllerArgs(t, objects)
	if image != "registry.example.com/appservice-controller:e2e" {
		t.Errorf("the bundle's image is %q, want the IMG it was built with", image)
	}
	if !slices.Contains(args, "--install-crd=false") {
		t.Fatalf("the bundle's controller arguments %v lack --install-crd=false", args)
	}
	started := time.Now()
	fresh.runAs("bundle", entrypoint, controllerNamespace, controllerServiceAccount, args)
	kubectlOn("apply", "-f", filepath.Join(repoRoot, "artifacts", "examples", "example-appservice.yaml"))
	kubectlOn("wait", "--for=condition=Available", "--timeout=90s", "appservice/example-app")

	// The ServiceAccount may not write CRDs, and the controller did not try.
	for _, verb := range []string{"create", "update"} {
		answer, _ := kubectlRun("auth", "can-i", verb, "customresourcedefinitions/appservices.app.example.com",
			"--as=system:serviceaccount:"+controllerNamespace+":"+controllerServiceAccount)
		// (After a warning that CRDs have no namespace.)
		if lines := strings.Fields(answer); len(lines) == 0 || lines[len(lines)-1] != "no" {
			t.Errorf("may the bundle's ServiceAccount %s the CRD? %q, want no", verb, answer)
		}
	}
	writes, err := fresh.Writes("system:serviceaccount:"+controllerNamespace+":"+controllerServiceAccount, started)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		if w.ObjectRef != nil && w.ObjectRef.APIGroup == "apiextensions.k8s.io" {
			t.Errorf("the controller wrote a CRD: %s", w)
		}
	}
}

// TestInstallThenKubectlApply: the design card's use on a fresh cluster,
// `go run . -kubeconfig ...` then `kubectl apply -f artifacts/examples`.
// The controller installs both CRDs with kubectl's last-applied annotation,
// as `kubectl create --save-config` would record them, so kubectl finds
// them unchanged (the annotation is what it computes, byte for byte: a
// difference would make it patch them, "configured") and prints nothing on
// standard error: no warning that the annotation is missing. An API server
// and etcd of its own are enough: no Pod needs to run.
func TestInstallThenKubectlApply(t *testing.T) {
	parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fresh := startBareCluster(t)
	admin, err := localcluster.RESTConfig(fresh.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	p, err := harness.NewController("design-card", controllerBinary, filepath.Join(fresh.LogDir, "appservice-controller.log"),
		"-kubeconfig", fresh.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Stop(syscall.SIGTERM) })
	if err := harness.WaitForCRDs(ctx, clientset.NewForConfigOrDie(admin), p, time.Minute); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl"), "apply", "-f", filepath.Join(repoRoot, "artifacts", "examples"))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+fresh.Kubeconfig)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl apply -f artifacts/examples: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("kubectl apply -f artifacts/examples wrote to standard error:\n%s", stderr.String())
	}
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/appservices.app.example.com unchanged",
		"customresourcedefinition.apiextensions.k8s.io/activities.app.example.com unchanged",
		"customresourcedefinition.apiextensions.k8s.io/analysistemplates.app.example.com unchanged",
		"customresourcedefinition.apiextensions.k8s.io/clusteranalysistemplates.app.example.com unchanged",
		"customresourcedefinition.apiextensions.k8s.io/notificationdestinations.app.example.com unchanged",
		"appservice.app.example.com/example-app created",
		"activity.app.example.com/sleep-once created",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("kubectl apply -f artifacts/examples did not say %q:\n%s", want, stdout.String())
		}
	}
}

// startBareCluster starts an etcd and an API server of the test's own,
// nothing else: for tests of what is installed, where no Pod need run.
func startBareCluster(t *testing.T) *localcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ownCPUReport(t, c)
	return c
}

// ownController runs the controller binary on cluster c as a user of its
// own (in system:masters), to tell its writes apart in the audit log, with
// args, until the test ends; and returns it once it serves its CRDs, with
// admin clients of c.
func ownController(t *testing.T, c *localcluster.Cluster, user string, args ...string) (*harness.Controller, kubernetes.Interface, clientset.Interface) {
	t.Helper()
	admin, err := localcluster.RESTConfig(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin.QPS, admin.Burst = 500, 1000
	kube, apps := kubernetes.NewForConfigOrDie(admin), clientset.NewForConfigOrDie(admin)
	kubeconfig, err := c.MintUser(user, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	p, err := harness.NewController(user, controllerBinary, filepath.Join(c.LogDir, "appservice-controller.log"),
		append([]string{"-kubeconfig", kubeconfig, "-v=2"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Stop(syscall.SIGTERM) })
	if err := harness.WaitForCRDs(context.Background(), apps, p, time.Minute); err != nil {
		t.Fatal(err)
	}
	return p, kube, apps
}

// freshCluster is a control plane of a test's own, with kwok running Pods.
type freshCluster struct {
	*localcluster.Cluster
	t    *testing.T
	kube kubernetes.Interface
}

func startFreshCluster(t *testing.T) *freshCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir, Dir: t.TempDir(), ControllerManager: true, Scheduler: true, Nodes: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ownCPUReport(t, c)
	admin, err := localcluster.RESTConfig(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return &freshCluster{Cluster: c, t: t, kube: kubernetes.NewForConfigOrDie(admin)}
}

func (f *freshCluster) kubectl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (f *freshCluster) mustKubectl(args ...string) string {
	f.t.Helper()
	out, err := f.kubectl(args...)
	if err != nil {
		f.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runAs runs the controller binary bin as a Pod of the manifests would:
// with a token of the ServiceAccount namespace/sa, the Lease in that
// namespace, and args; and waits until it is ready.
func (f *freshCluster) runAs(process, bin, namespace, sa string, args []string) *harness.Controller {
	f.t.Helper()
	tr, err := f.kube.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	kubeconfig, err := f.KubeconfigForToken(process, tr.Status.Token)
	if err != nil {
		f.t.Fatal(err)
	}
	p, err := harness.NewController(process, bin, filepath.Join(f.LogDir, "appservice-controller-"+process+".log"),
		append(args, "-kubeconfig="+kubeconfig, "-leader-election-namespace="+namespace)...)
	if err != nil {
		f.t.Fatal(err)
	}
	p.RestartOnLostLease(true) // as its kubelet would: see newControllerProcess
	if err := p.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _, _ = p.Stop(syscall.SIGTERM) })
	if err := p.WaitReady(90 * time.Second); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// controllerArgs returns the arguments of the controller's container in
// the manifests' Deployment, less the bind addresses (the harness picks
// free ports), and its image.
func controllerArgs(t *testing.T, objects []*unstructured.Unstructured) (args []string, image string) {
	t.Helper()
	for _, o := range objects {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		c, _ := containers[0].(map[string]any)
		image, _ = c["image"].(string)
		for _, a := range c["args"].([]any) {
			s := a.(string)
			if !strings.HasPrefix(s, "--metrics-bind-address=") && !strings.HasPrefix(s, "--health-probe-bind-address=") {
				args = append(args, s)
			}
		}
		return args, image
	}
	t.Fatal("no Deployment in the manifests")
	return nil, ""
}

// unpackImage builds the image of this machine's platform with `make
// image` (which checks that its binary is static, for this machine, and run
// as non-root), pushes it with `make image-push`, and returns the path of its
// entrypoint in a folder holding its unpacked layers.
func unpackImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	build := exec.Command("make", "--no-print-directory", "image", "IMAGE_DIR="+dir, "PLATFORMS="+platform.String())
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	l, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := l.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("the layout's index: %v %+v, want one image index", err, m)
	}
	index, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(index); err != nil {
		t.Fatalf("the image index is not valid: %v", err)
	}
	// make image-push, to a registry in this process (go-containerregistry's).
	reg := httptest.NewServer(registry.New())
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/appservice-controller:e2e"
	push := exec.Command("make", "--no-print-directory", "image-push", "IMAGE_DIR="+dir, "IMG="+ref)
	push.Dir = repoRoot
	if out, err := push.CombinedOutput(); err != nil {
		t.Fatalf("make image-push: %v\n%s", err, out)
	}
	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pushed, err := remote.Index(tag)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := digest(t, pushed), digest(t, index); got != want {
		t.Errorf("the registry holds %s, want the layout's %s", got, want)
	}
	imgs, err := partial.FindImages(index, match.Platforms(platform))
	if err != nil || len(imgs) != 1 {
		t.Fatalf("%s images: %d %v, want 1", platform, len(imgs), err)
	}
	cfg, err := imgs[0].ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] == "" {
		t.Errorf("%s image config: labels %v, want the version's", platform, cfg.Config.Labels)
	}
	root := t.TempDir()
	extract(t, mutate.Extract(imgs[0]), root)
	return filepath.Join(root, cfg.Config.Entrypoint[0])
}

func digest(t *testing.T, index v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// extract writes the regular files and folders of a tar stream under dir.
func extract(t *testing.T, rc io.ReadCloser, dir string) {
	t.Helper()
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			var f *os.File
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode)); err == nil {
					_, err = io.Copy(f, tr)
					f.Close()
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// prometheusOperatorCRD returns the path of one of the Prometheus
// Operator's CRDs (servicemonitors, prometheusrules) in its module,
// downloaded through the module proxy.
func prometheusOperatorCRD(t *testing.T, resource string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", prometheusOperator)
	cmd.Dir = t.TempDir() // outside this module
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v\n%s", prometheusOperator, err, stderr.String())
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Error != "" {
		t.Fatalf("go mod download %s: %v %s", prometheusOperator, err, mod.Error)
	}
	return filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+resource+".yaml")
}

// readManifests decodes a multi-document YAML file.
func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var objects []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var o unstructured.Unstructured
		err := dec.Decode(&o.Object)
		if errors.Is(err, io.EOF) {
			return objects
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(o.Object) > 0 {
			objects = append(objects, &o)
		}
	}
}
