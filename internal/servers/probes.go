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

package servers

import (
	"bytes"
	"fmt"
	"net/http"
)

// Check is one named probe check: leader election's watchdog
// (leaderelection.HealthzAdaptor) is one.
type Check interface {
	Name() string
	Check(req *http.Request) error
}

type namedCheck struct {
	name  string
	check func(*http.Request) error
}

func (c namedCheck) Name() string                  { return c.name }
func (c namedCheck) Check(req *http.Request) error { return c.check(req) }

// NamedCheck is a check called name that fails when check returns an error.
func NamedCheck(name string, check func(*http.Request) error) Check {
	return namedCheck{name: name, check: check}
}

// ping always passes: the process answers.
var ping = NamedCheck("ping", func(*http.Request) error { return nil })

// installChecks serves the checks as the Kubernetes components serve
// theirs, at /NAME and one by one at /NAME/CHECK:
//   - /NAME answers 200 "ok" when every check passes, and 500 with one line
//     per check ("[+]CHECK ok", "[-]CHECK failed: reason withheld") when
//     one fails; ?verbose lists the checks when all pass too, and
//     ?exclude=CHECK (repeatable) leaves one out;
//   - /NAME/CHECK answers 200 "ok", or 500 with the check's error.
//
// The reason stays withheld on /NAME, which the kubelet logs; it is on the
// check's own path.
func installChecks(mux *http.ServeMux, name string, checks []Check) {
	mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
		excluded := map[string]bool{}
		for _, c := range r.URL.Query()["exclude"] {
			excluded[c] = true
		}
		var out bytes.Buffer
		failed := false
		for _, c := range checks {
			if excluded[c.Name()] {
				fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name())
				continue
			}
			if err := c.Check(r); err != nil {
				failed = true
				fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name())
				continue
			}
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name())
		}
		header(w)
		switch {
		case failed:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s%s check failed\n", out.Bytes(), name)
		case r.URL.Query().Has("verbose"):
			fmt.Fprintf(w, "%s%s check passed\n", out.Bytes(), name)
		default:
			fmt.Fprint(w, "ok")
		}
	})
	for _, c := range checks {
		mux.HandleFunc("/"+name+"/"+c.Name(), func(w http.ResponseWriter, r *http.Request) {
			header(w)
			if err := c.Check(r); err != nil {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprintf(w, "internal server error: %v\n", err)
				return
			}
			fmt.Fprint(w, "ok")
		})
	}
}

func header(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}
