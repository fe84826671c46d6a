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
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// TestClientsWarnings: a warning the API server sends with an answer (a
// deprecated field) reaches the command's standard error, once however
// often it comes, through the clients' own handler: not client-go's
// process-wide one, which commands run side by side (the tests) would
// share and race on.
func TestClientsWarnings(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Warning", `299 - "spec.example is deprecated"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"app.example.com/v1","kind":"AppService","metadata":{"name":"shop","namespace":"apps"}}`))
	}))
	defer server.Close()
	// No kubeconfig of the user's: the flags alone name the server.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	flags := genericclioptions.NewConfigFlags(false)
	flags.APIServer, flags.Namespace = new(server.URL), new("apps")

	var errOut bytes.Buffer
	c, err := clientsFromFlags(flags, &errOut)()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.AppV1.AppServices("apps").Get(context.Background(), "shop", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Count(errOut.String(), "spec.example is deprecated"); got != 1 {
		t.Errorf("standard error has the warning %d times, want once:\n%s", got, errOut.String())
	}
}
