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

package plugin

import (
	"context"
	"fmt"
	"io"
	"runtime"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"example.com/appservice-controller/internal/version"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	appclient "example.com/appservice-controller/pkg/generated/clientset/versioned/typed/app/v1"
)

// FieldManager is the field manager of every write the plugin makes, so
// that `kubectl get -o yaml --show-managed-fields` tells them apart.
const FieldManager = "kubectl-appservice"

// Clients are the API clients a command uses, and the namespace it works
// in (kubectl's -n, else the kubeconfig context's, else "default"). They
// are the typed clients of the API groups the plugin reads, not whole
// clientsets: the binary links only those.
type Clients struct {
	AppV1     appclient.AppV1Interface
	AppsV1    appsv1client.AppsV1Interface
	BatchV1   batchv1client.BatchV1Interface
	CoreV1    corev1client.CoreV1Interface
	GatewayV1 gatewayclient.GatewayV1Interface
	// Config is the clients' configuration (nil: fakes), for the API
	// server's service proxy (kubectl appservice analysis).
	Config    *rest.Config
	Namespace string
	// NoWatchList: the clients cannot stream a watch's initial list
	// (client-go's fakes), so get --watch's informers list first.
	NoWatchList bool
}

// userAgent names the plugin in the API server's logs and audit log.
func userAgent() string {
	return fmt.Sprintf("kubectl-appservice/%s (%s/%s)", version.Get().GitVersion, runtime.GOOS, runtime.GOARCH)
}

// clientsFromFlags makes the clients from kubectl's flags (--kubeconfig,
// --context, -n, --as, ...), as kubectl reads them.
func clientsFromFlags(flags *genericclioptions.ConfigFlags, errOut io.Writer) func() (*Clients, error) {
	return func() (*Clients, error) {
		ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil, err
		}
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		cfg = rest.CopyConfig(cfg)
		cfg.UserAgent = userAgent()
		// Warnings from the API server (a deprecated field) go to standard
		// error, each once: this client's, not client-go's process-wide
		// handler, which tests running commands side by side would share.
		cfg.WarningHandler = rest.NewWarningWriter(errOut, rest.WarningWriterOptions{Deduplicate: true})
		// One HTTP client for them all: one connection pool.
		httpClient, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		c := &Clients{Namespace: ns, Config: cfg}
		if c.AppV1, err = appclient.NewForConfigAndClient(cfg, httpClient); err != nil {
			return nil, err
		}
		if c.AppsV1, err = appsv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
			return nil, err
		}
		if c.BatchV1, err = batchv1client.NewForConfigAndClient(cfg, httpClient); err != nil {
			return nil, err
		}
		if c.CoreV1, err = corev1client.NewForConfigAndClient(cfg, httpClient); err != nil {
			return nil, err
		}
		if c.GatewayV1, err = gatewayclient.NewForConfigAndClient(cfg, httpClient); err != nil {
			return nil, err
		}
		return c, nil
	}
}

// notFoundIn is the error for an AppService the API server did not find:
// its namespace's, when the namespace does not exist either (as far as
// the user may know: a refused read of it says nothing).
func (c *Clients) notFoundIn(ctx context.Context, name string) error {
	if _, err := c.CoreV1.Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("namespace %q not found", c.Namespace)}
	}
	return notFound(name, c.Namespace)
}

// getAppService reads the AppService, with the errors a user reads.
func (c *Clients) getAppService(ctx context.Context, name string) (*appv1.AppService, error) {
	as, err := c.AppV1.AppServices(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case objectNotFound(err):
		return nil, c.notFoundIn(ctx, name)
	case err != nil:
		return nil, apiError(err, request{verbGet, resourceAppServices, c.Namespace})
	}
	return as, nil
}
