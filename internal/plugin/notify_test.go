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
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"example.com/appservice-controller/internal/notify"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	appfake "example.com/appservice-controller/pkg/generated/clientset/versioned/fake"
)

// TestNotifyTestCommand: notify test posts the destination's message
// once, signed, prints the answer but never the address, and exits 1
// unless the answer is 2xx.
func TestNotifyTestCommand(t *testing.T) {
	for _, tc := range []struct {
		name       string
		typ        appv1.DestinationType
		status     int
		noSecret   bool
		code       int
		out, error string
	}{
		{name: "a webhook that accepts it", typ: appv1.DestinationWebhook, status: http.StatusOK, code: ExitOK,
			out: `Sent notificationdestination "ops" (webhook) a test message, id test-`},
		{name: "Slack, refused", typ: appv1.DestinationSlack, status: http.StatusNotFound, code: ExitError,
			out: "It answered 404 Not Found:\nno_service", error: "the destination did not accept the message: it answered 404 Not Found"},
		{name: "its Secret missing", typ: appv1.DestinationTeams, noSecret: true, code: ExitError,
			error: `secret "ops-hook" (spec.secretRef of notificationdestination "ops") not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *http.Request
			var body []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, body = r, must(io.ReadAll(r.Body))
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte("no_service"))
			}))
			defer srv.Close()
			address := srv.URL + "/services/T0KEN"
			objects := []runtime.Object{&appv1.NotificationDestination{ObjectMeta: metav1.ObjectMeta{Name: "ops", Namespace: ns},
				Spec: appv1.NotificationDestinationSpec{Type: tc.typ, SecretRef: appv1.SecretReference{Name: "ops-hook"}}}}
			var kube []runtime.Object
			if !tc.noSecret {
				kube = append(kube, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ops-hook", Namespace: ns},
					Data: map[string][]byte{appv1.SecretKeyAddress: []byte(address), appv1.SecretKeySigningKey: []byte("k")}})
			}
			f := &fakes{apps: appfake.NewSimpleClientset(objects...), kube: kubefake.NewClientset(kube...), gateway: gatewayfake.NewClientset()}
			out, errOut, code := f.run(context.Background(), "notify", "test", "ops")
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.error) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, errOut, tc.code, tc.out, tc.error)
			}
			if strings.Contains(out+errOut, "T0KEN") || strings.Contains(out+errOut, srv.URL) {
				t.Errorf("the output says the address:\n%s%s", out, errOut)
			}
			if tc.noSecret {
				return
			}
			if got == nil {
				t.Fatal("nothing posted")
			}
			if tc.typ == appv1.DestinationWebhook {
				if err := notify.Verify([]byte("k"), got.Header.Get(notify.SignatureHeader), body, now, time.Minute); err != nil {
					t.Errorf("the signature: %v", err)
				}
			}
			if !strings.Contains(string(body), "kubectl appservice notify test") {
				t.Errorf("the message does not say it is a test: %s", body)
			}
		})
	}
	// No such destination: 3.
	f := &fakes{apps: appfake.NewSimpleClientset(), kube: kubefake.NewClientset(), gateway: gatewayfake.NewClientset()}
	if _, errOut, code := f.run(context.Background(), "notify", "test", "nope"); code != ExitNotFound {
		t.Errorf("a destination that does not exist: exit %d (%s), want %d", code, errOut, ExitNotFound)
	}
}

func must[T any](v T, _ error) T { return v }
