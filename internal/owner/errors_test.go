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

package owner

import (
	"testing"

	"example.com/appservice-controller/internal/fixtures"
	"example.com/appservice-controller/internal/syncerr"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// TestNotOurs: an object in the way is left alone, and only the user can
// fix it (syncerr.NeedsUser): the owner is Stalled, as ResourceExists.
func TestNotOurs(t *testing.T) {
	err := NotOurs(appServiceKind, fixtures.AppService(), fixtures.LiveService(), "Service")
	const want = "Service default/nginx-app already exists and is not controlled by AppService nginx-app; it is left untouched"
	if err.Error() != want {
		t.Errorf("NotOurs says %q, want %q", err, want)
	}
	ce := syncerr.NeedsUser(err)
	if ce == nil || error(ce) != err || ce.Reason != appv1.ReasonResourceExists {
		t.Errorf("NeedsUser(NotOurs(...)) = %v, want the error itself, as %s", ce, appv1.ReasonResourceExists)
	}
}
