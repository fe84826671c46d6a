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

package children

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// updateCase is a case of UpdateDeployment or UpdateService: the seed's
// spec and its live child, each changed by a function (nil: as they are),
// and what the update should make of the child.
type updateCase[T runtime.Object] struct {
	name        string
	spec        func(*appv1.AppServiceSpec)
	live        func(T)
	want        func(T) // applied to a copy of live; nil: no update
	wantChanged []string
}

// runUpdateCases runs update(live, build(seed)) for every case and checks
// the updated object, the changed fields' names, and that live is untouched.
func runUpdateCases[T interface {
	comparable
	runtime.Object
}](t *testing.T, kind string, liveFixture func() T, build func(*appv1.AppService) T, update func(live, desired T) (T, []string), cases []updateCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := fixtures.AppService()
			fixtures.Tweak(tc.spec, &as.Spec)
			live := liveFixture()
			fixtures.Tweak(tc.live, live)
			before := live.DeepCopyObject().(T)

			got, changed := update(live, build(as))
			fixtures.CheckEqual(t, "live "+kind+" after the update", before, live)
			fixtures.CheckEqual(t, "changed fields", tc.wantChanged, changed)
			var none T
			if tc.want == nil {
				if got != none {
					t.Errorf("got an update, want none:\n%s", cmp.Diff(live, got))
				}
				return
			}
			want := before.DeepCopyObject().(T)
			tc.want(want)
			fixtures.CheckEqual(t, "updated "+kind, want, got)
		})
	}
}

// TestNewControllerRef: the reference the garbage collector follows, with
// the controller flag that makes the child the AppService's alone.
func TestNewControllerRef(t *testing.T) {
	fixtures.CheckEqual(t, "owner reference", fixtures.OwnerRef(), *NewControllerRef(fixtures.AppService()))
}
