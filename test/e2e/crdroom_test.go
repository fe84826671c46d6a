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
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"example.com/appservice-controller/internal/crdbudget"
	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
)

// The paths that install or update the AppService CRD, each on a real API
// server (one of its own, the CRD deleted between paths), and what each
// leaves on it: the annotations, as the API server counts them against its
// 256 KiB, and the managed fields and the whole object, against the 1.5 MiB
// a stored object may hold. A path that keeps the CRD in kubectl's
// last-applied annotation may add at most crdbudget.Reserve beside it: the
// room TestCRDRoom counts on. The table it logs is the one in
// docs/design.md ("The CRD's room").
//
// Argo CD and Flux do not run here: their applies are made as they make
// them, with their field managers, Argo CD's tracking annotation (its
// default tracking since 3.0) and Flux's labels. cert-manager's CA injector
// is its annotation on the CRD and its patch of a conversion webhook's
// caBundle (the CRD has no webhook: this is what one would cost), on the
// client-side path, whose limit binds. Every write of the CRD costs its API
// server seconds of CPU (its 350 CEL rules compiled, its OpenAPI
// published): the paths are few, and it runs alone (make test-crd-paths),
// not beside the groups' tests, whose waits that CPU made miss.
func TestCRDInstallPaths(t *testing.T) {
	alone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := startBareCluster(t)
	admin, err := localcluster.RESTConfig(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	crds := apiextensionsclient.NewForConfigOrDie(admin).ApiextensionsV1().CustomResourceDefinitions()
	const name = "appservices.app.example.com"
	manifest := filepath.Join(repoRoot, "artifacts", "examples", "crd.yaml")
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	size, err := crdbudget.Size(data)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// variant writes the manifest with more annotations and labels, as a
	// tool adds them before it applies, and returns its path.
	variant := func(file string, annotations, labels map[string]string, spec map[string]any) string {
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		meta := obj["metadata"].(map[string]any)
		for key, add := range map[string]map[string]string{"annotations": annotations, "labels": labels} {
			if len(add) == 0 {
				continue
			}
			m, _ := meta[key].(map[string]any)
			if m == nil {
				m = map[string]any{}
			}
			for k, v := range add {
				m[k] = v
			}
			meta[key] = m
		}
		for k, v := range spec {
			obj["spec"].(map[string]any)[k] = v
		}
		out, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	run := func(bin string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
		}
	}
	kubectlBin := filepath.Join(binDir, "kubectl")
	kubectl := func(args ...string) { t.Helper(); run(kubectlBin, args...) }
	out, err := exec.Command(filepath.Join(repoRoot, "hack", "ensure-helm.sh")).Output()
	if err != nil {
		t.Fatalf("hack/ensure-helm.sh: %v", err)
	}
	helm := func(args ...string) { t.Helper(); run(strings.TrimSpace(string(out)), args...) }
	// controller runs the controller until it serves its CRDs, then stops
	// it (a running one would install them again once deleted).
	controller := func() {
		t.Helper()
		p, err := harness.NewController("crd-install", controllerBinary, filepath.Join(c.LogDir, "appservice-controller.log"),
			"-kubeconfig", c.Kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0")
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = p.Stop(syscall.SIGTERM) }()
		if err := harness.WaitForCRD(ctx, clientset.NewForConfigOrDie(admin), p, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// A chart of the user's own with the CRD in crds/, which Helm installs
	// before the templates and never upgrades.
	chart := filepath.Join(dir, "chart")
	for file, content := range map[string]string{
		"Chart.yaml":    "apiVersion: v2\nname: appservice-crds\nversion: 0.1.0\n",
		"crds/crd.yaml": string(data),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(chart, file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chart, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ourChart := filepath.Join(repoRoot, "charts", "appservice-controller")
	// Argo CD's tracking annotation, APP:GROUP/KIND:NAMESPACE/NAME, with
	// an application name of 253 characters, the longest Argo CD takes.
	longApp := strings.Repeat("a", 253)
	argo := variant("argocd.yaml", map[string]string{
		"argocd.argoproj.io/tracking-id": longApp + ":apiextensions.k8s.io/CustomResourceDefinition:/" + name}, nil, nil)
	flux := variant("flux.yaml", nil, map[string]string{
		"kustomize.toolkit.fluxcd.io/name": "appservice-controller", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil)
	webhook := variant("webhook.yaml", map[string]string{"cert-manager.io/inject-ca-from": "appservice-system/appservice-controller-webhook"}, nil,
		map[string]any{"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
			"conversionReviewVersions": []string{"v1"},
			"clientConfig": map[string]any{"service": map[string]any{
				"namespace": "appservice-system", "name": "appservice-controller-webhook", "path": "/convert"}}}}})
	injectCA := func() {
		t.Helper()
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{
			"clientConfig": map[string]any{"caBundle": base64.StdEncoding.EncodeToString(caBundle(t))}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := crds.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "cert-manager-cainjector"}); err != nil {
			t.Fatal(err)
		}
	}

	// Each path is steps on one CRD, measured after each, and deleted at
	// the end. lastApplied: the path keeps the CRD in kubectl's
	// annotation.
	type step struct {
		name string
		do   func()
	}
	paths := []struct {
		lastApplied bool
		steps       []step
	}{
		{true, []step{
			{"kubectl apply", func() { kubectl("apply", "-f", manifest) }},
			{"kubectl apply --server-side over it", func() { kubectl("apply", "--server-side", "-f", manifest) }},
		}},
		{false, []step{{"kubectl apply --server-side", func() { kubectl("apply", "--server-side", "-f", manifest) }}}},
		{true, []step{
			{"the controller's install", controller},
			{"kubectl apply -f artifacts/examples over it", func() { kubectl("apply", "-f", filepath.Join(repoRoot, "artifacts", "examples")) }},
			{"Helm 4: the chart installed and upgraded (it holds no CRD: its controller installs it)", func() {
				helm("install", "appservice", ourChart, "--namespace", "appservice-system", "--create-namespace")
				helm("upgrade", "appservice", ourChart, "--namespace", "appservice-system", "--set", "extraArgs={--workers=4}")
			}},
		}},
		{false, []step{
			{"Helm 4: the CRD in a chart's crds/, installed", func() { helm("install", "crds", chart, "--namespace", "default") }},
			{"Helm 4: that chart upgraded", func() { helm("upgrade", "crds", chart, "--namespace", "default") }},
		}},
		{true, []step{{"Argo CD-style, client-side", func() { kubectl("apply", "-f", argo) }}}},
		{false, []step{{"Argo CD-style, server-side", func() {
			kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", argo)
		}}}},
		{false, []step{{"Flux-style, server-side", func() {
			kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=kustomize-controller", "-f", flux)
		}}}},
		{true, []step{
			{"kubectl apply, with a conversion webhook", func() { kubectl("apply", "-f", webhook) }},
			{"cert-manager's CA injected", injectCA},
		}},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "the CRD as JSON: %d bytes\n| path | annotations | beside the CRD's copy | managed fields | object | room under its tightest limit |\n|---|---:|---:|---:|---:|---:|\n", size)
	for _, p := range paths {
		for _, s := range p.steps {
			s.do()
			raw, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			annotations := 0
			for k, v := range raw.Annotations {
				annotations += len(k) + len(v)
			}
			managed, err := json.Marshal(raw.ManagedFields)
			if err != nil {
				t.Fatal(err)
			}
			object, err := json.Marshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			_, kept := raw.Annotations["kubectl.kubernetes.io/last-applied-configuration"]
			if kept != p.lastApplied {
				t.Errorf("%s: kubectl's last-applied annotation kept %v, want %v", s.name, kept, p.lastApplied)
			}
			beside, room := "", crdbudget.ObjectLimit-len(object)
			if kept {
				// The room here is the annotation's: what the path adds
				// beside the CRD's copy comes out of crdbudget.Reserve.
				extra := annotations - size
				beside, room = fmt.Sprint(extra), min(room, crdbudget.AnnotationLimit-annotations)
				if extra > crdbudget.Reserve {
					t.Errorf("%s adds %d bytes of annotations beside the CRD's copy, more than crdbudget.Reserve (%d): "+
						"the CRD's room (TestCRDRoom) counts on less", s.name, extra, crdbudget.Reserve)
				}
			}
			fmt.Fprintf(&table, "| %s | %d | %s | %d | %d | %d |\n", s.name, annotations, beside, len(managed), len(object), room)
		}
		kubectl("delete", "crd", name, "activities.app.example.com", "--ignore-not-found", "--wait=true")
	}
	t.Logf("what each path leaves on the AppService CRD:\n%s", table.String())
}

// caBundle is a CA certificate as cert-manager issues one by default: RSA
// 2048, PEM.
func caBundle(t *testing.T) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "appservice-controller-webhook-ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(90 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
