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
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"example.com/appservice-controller/internal/owner"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The CRDs generated from the API types (hack/update-codegen.sh), built into
// the binary so that the controller can install the very schemas it was
// compiled against. Plain kubectl cannot create a custom resource in the same
// apply that creates its CRD, so `kubectl apply -f artifacts/examples` works on
// a fresh cluster only if the CRDs are already there: the controller makes sure.
var (
	//go:embed artifacts/examples/crd.yaml
	crdYAML []byte
	//go:embed artifacts/examples/crd-activity.yaml
	activityCRDYAML []byte
	//go:embed artifacts/examples/crd-analysistemplate.yaml
	analysisTemplateCRDYAML []byte
	//go:embed artifacts/examples/crd-clusteranalysistemplate.yaml
	clusterAnalysisTemplateCRDYAML []byte
	//go:embed artifacts/examples/crd-notificationdestination.yaml
	notificationDestinationCRDYAML []byte
)

// crdHashAnnotation records which embedded CRD was last installed, so that a
// restart with the same binary finds it current and writes nothing.
const crdHashAnnotation = "app.example.com/crd-sha256"

// lastApplied is what kubectl records of a manifest it applies, or creates
// with --save-config (kubectl's GetModifiedConfiguration): the object as
// kubectl read it, its annotations without this one (an empty map when it
// has none), encoded as JSON by the unstructured scheme, sorted keys and
// a trailing newline. The controller records it on the CRDs it installs,
// so that a user's later `kubectl apply -f artifacts/examples` (the design
// card's use) finds them its own: unchanged, and no warning that the
// annotation is missing. The e2e test proves the two agree byte for byte:
// kubectl reports the CRDs unchanged. It takes the manifest converted to
// JSON, as ensureCRD has it already.
func lastApplied(data []byte) (string, error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return "", err
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, corev1.LastAppliedConfigAnnotation)
	obj.SetAnnotations(annotations)
	out, err := runtime.Encode(unstructured.UnstructuredJSONScheme, obj)
	return string(out), err
}

// embeddedCRD is one CRD built into the binary, with the names the API
// server will serve it under.
type embeddedCRD struct {
	yaml     []byte
	resource schema.GroupVersionResource
}

// name is the CRD's name: PLURAL.GROUP.
func (c embeddedCRD) name() string { return c.resource.Resource + "." + c.resource.Group }

// ourCRDs are the CRDs of every kind: the AppService's, the Activity's and
// the analysis templates' and the NotificationDestination's (TestOurCRDs checks the names against the
// embedded YAML).
var ourCRDs = []embeddedCRD{
	{yaml: crdYAML, resource: appv1.SchemeGroupVersion.WithResource("appservices")},
	{yaml: activityCRDYAML, resource: appv1.SchemeGroupVersion.WithResource("activities")},
	{yaml: analysisTemplateCRDYAML, resource: appv1.SchemeGroupVersion.WithResource("analysistemplates")},
	{yaml: clusterAnalysisTemplateCRDYAML, resource: appv1.SchemeGroupVersion.WithResource("clusteranalysistemplates")},
	{yaml: notificationDestinationCRDYAML, resource: appv1.SchemeGroupVersion.WithResource("notificationdestinations")},
}

var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// ensureCRDs installs the CRDs of every kind with ensureCRD.
func ensureCRDs(ctx context.Context, client apiextensionsclient.Interface, md metadata.Interface, timeout time.Duration) error {
	for _, crd := range ourCRDs {
		if err := ensureCRD(ctx, client, md, crd, timeout); err != nil {
			return err
		}
	}
	return nil
}

// ensureCRD creates a CRD or brings it up to the embedded one, then waits
// until the API server serves it.
//
// A start where the installed CRD is current, as every start but an
// upgrade's is, reads the CRD's metadata alone and asks discovery whether
// its resource is served. The metadata still carries kubectl's
// last-applied annotation, the whole CRD as one JSON string; what this
// saves is decoding the schema (200 KB of JSON) into Go structs, and the
// embedded YAML: that would be most of what an idle controller's heap
// ever held, which the runtime keeps long after it is garbage.
func ensureCRD(ctx context.Context, client apiextensionsclient.Interface, md metadata.Interface, crd embeddedCRD, timeout time.Duration) error {
	logger := klog.FromContext(ctx)
	sum := sha256.Sum256(crd.yaml)
	hash := hex.EncodeToString(sum[:])
	if live, err := md.Resource(crdResource).Get(ctx, crd.name(), metav1.GetOptions{}); err == nil &&
		live.Annotations[crdHashAnnotation] == hash && live.Annotations[corev1.LastAppliedConfigAnnotation] != "" {
		logger.V(2).Info("CRD is current", "crd", crd.name())
		return waitEstablished(ctx, client, crd, timeout)
	}
	// Not there, not current, or its metadata could not be read: the
	// whole CRD is read (and any error reported) below.
	// The YAML is converted once, strictly (duplicate keys refused), and
	// the typed CRD (unknown fields refused) and kubectl's annotation are
	// both read from that JSON.
	data, err := yaml.YAMLToJSONStrict(crd.yaml)
	if err != nil {
		return fmt.Errorf("decoding the embedded CRD: %w", err)
	}
	want := &apiextensionsv1.CustomResourceDefinition{}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(want); err != nil {
		return fmt.Errorf("decoding the embedded CRD: %w", err)
	}
	applied, err := lastApplied(data)
	if err != nil {
		return fmt.Errorf("encoding the embedded CRD as kubectl would: %w", err)
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[crdHashAnnotation] = hash
	want.Annotations[corev1.LastAppliedConfigAnnotation] = applied
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	// Replicas starting together race here: a conflict means another one
	// wrote first, so look again.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := crds.Create(ctx, want, metav1.CreateOptions{FieldManager: owner.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating CRD %s: %w", want.Name, err)
			}
			logger.Info("Installed CRD", "crd", want.Name)
		case err != nil:
			return fmt.Errorf("reading CRD %s: %w", want.Name, err)
		case live.Annotations[crdHashAnnotation] != want.Annotations[crdHashAnnotation],
			live.Annotations[corev1.LastAppliedConfigAnnotation] == "":
			// Another binary's CRD, or one an earlier version installed
			// without kubectl's annotation (one write, once). Once there,
			// the annotation is kubectl's: a user's apply may change it.
			updated := live.DeepCopy()
			updated.Spec = want.Spec
			if updated.Annotations == nil {
				updated.Annotations = map[string]string{}
			}
			for k, v := range want.Annotations {
				updated.Annotations[k] = v
			}
			if _, err := crds.Update(ctx, updated, metav1.UpdateOptions{FieldManager: owner.FieldManager}); err != nil {
				return err
			}
			logger.Info("Updated CRD", "crd", want.Name)
		default:
			logger.V(2).Info("CRD is current", "crd", want.Name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("installing CRD %s: %w", want.Name, err)
	}
	return waitEstablished(ctx, client, crd, timeout)
}

// served reports whether the API server serves resource, as discovery
// lists it (a CRD's resource once it is Established).
func served(d discovery.DiscoveryInterface, resource schema.GroupVersionResource) (bool, error) {
	resources, err := servedResources(d, resource.GroupVersion().String())
	return resources.Has(resource.Resource), err
}

// servedResources are the resources of gv the API server serves, as
// discovery lists them in one answer (the Gateway API's HTTPRoutes and
// GRPCRoutes once each is installed). A group version it does not serve at
// all serves none, and is not an error.
func servedResources(d discovery.DiscoveryInterface, gv string) (sets.Set[string], error) {
	list, err := d.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	resources := sets.New[string]()
	for _, r := range list.APIResources {
		resources.Insert(r.Name)
	}
	return resources, nil
}

// waitEstablished waits until the API server serves crd, and fails at once
// if its names are not accepted. It asks discovery every 100 ms, and reads
// the CRD whole (200 KB of schema to decode) at most once a second, for its
// conditions.
func waitEstablished(ctx context.Context, client apiextensionsclient.Interface, crd embeddedCRD, timeout time.Duration) error {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	var lastRead time.Time
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		// Discovery that fails is asked again; reading the CRD reports
		// what is wrong with the API server.
		if ok, _ := served(client.Discovery(), crd.resource); ok {
			return true, nil
		}
		if time.Since(lastRead) < time.Second {
			return false, nil
		}
		lastRead = time.Now()
		live, err := crds.Get(ctx, crd.name(), metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors until the timeout
		}
		for _, c := range live.Status.Conditions {
			if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse {
				return false, fmt.Errorf("CRD %s: names not accepted: %s", crd.name(), c.Message)
			}
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
