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

package notify

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestParseAllowed(t *testing.T) {
	if a, err := ParseAllowed(nil); a != nil || err != nil {
		t.Errorf("none: %v, %v; want nil (anywhere)", a, err)
	}
	a, err := ParseAllowed([]string{"hooks.slack.com", " *.Example.com", "10.0.0.0/8", "192.0.2.7", ""})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"hooks.slack.com": true, "a.example.com": true, "example.com": false, "evil.com": false} {
		if a.byName(host) != want {
			t.Errorf("%s by name: %v, want %v", host, !want, want)
		}
	}
	for addr, want := range map[string]bool{"10.1.2.3:443": true, "192.0.2.7:80": true, "192.0.2.8:80": false, "[::ffff:10.0.0.1]:443": true} {
		if a.inNets(addr) != want {
			t.Errorf("%s in the networks: %v, want %v", addr, !want, want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "http://x", "a b"} {
		if _, err := ParseAllowed([]string{bad}); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// TestTransportRefuses: a receiver on the loopback address is reached
// only when the list allows it, by name or by network.
func TestTransportRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, tc := range []struct {
		allowed []string
		url     string
		ok      bool
	}{
		{nil, srv.URL, true},
		{[]string{"203.0.113.0/24"}, srv.URL, false},
		{[]string{"127.0.0.0/8"}, srv.URL, true},
		{[]string{"localhost"}, "http://localhost:" + port, true},
		{[]string{"example.com"}, "http://localhost:" + port, false},
	} {
		a, err := ParseAllowed(tc.allowed)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, tc.url, nil)
		resp, err := (&http.Client{Transport: Transport(a)}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrNotAllowed)) {
			t.Errorf("%v, %s: %v, want allowed %v", tc.allowed, tc.url, err, tc.ok)
		}
		if err != nil && Describe(err) != ErrNotAllowed.Error() {
			t.Errorf("described as %q", Describe(err))
		}
	}
}
