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
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

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
	metav1.Object
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
		t.Run(tc.name+", from the cache", func(t *testing.T) {
			as := fixtures.AppService()
			fixtures.Tweak(tc.spec, &as.Spec)
			live := liveFixture()
			fixtures.Tweak(tc.live, live)
			checkPatchFromCache(t, live, build(as), update)
		})
	}
}

// checkPatchFromCache: the live child as the informer caches it (Trim)
// yields the same update as the whole one, and a patch (Patch) that makes
// the whole one what that update says, others' fields and all; in line,
// no update at all.
func checkPatchFromCache[T interface {
	comparable
	runtime.Object
	metav1.Object
}](t *testing.T, live, desired T, update func(live, desired T) (T, []string)) {
	t.Helper()
	var none T
	whole, wantChanged := update(live, desired)
	obj, err := Trim(live.DeepCopyObject())
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Trim(obj.(*Cached).DeepCopyObject())
	if !reflect.DeepEqual(obj, again) {
		t.Errorf("a cached object trimmed again:\n%+v\nwant\n%+v", again, obj)
	}
	cached, err := Decode[T](obj.(*Cached))
	if err != nil {
		t.Fatal(err)
	}
	fromCache, changed := update(cached, desired)
	fixtures.CheckEqual(t, "changed fields, from the cache", wantChanged, changed)
	if whole == none || fromCache == none {
		if whole != none || fromCache != none {
			t.Fatalf("an update from the whole object: %v, from the cached one: %v", whole != none, fromCache != none)
		}
		return
	}
	liveMeta, cachedMeta := any(live).(metav1.Object), any(cached).(metav1.Object)
	data, pt, err := Patch(cachedMeta, any(fromCache).(metav1.Object))
	if err != nil || data == nil {
		t.Fatalf("Patch: %s, %v", data, err)
	}
	original, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	var patched []byte
	switch pt {
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(original, data, live)
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(original, data)
	}
	if err != nil {
		t.Fatalf("applying %s: %v", data, err)
	}
	result := reflect.New(reflect.TypeOf(live).Elem()).Interface().(T)
	if err := json.Unmarshal(patched, result); err != nil {
		t.Fatal(err)
	}
	fixtures.CheckEqual(t, fmt.Sprintf("the live object patched with %s", data), whole, result)
	if got := any(result).(metav1.Object).GetResourceVersion(); got != liveMeta.GetResourceVersion() || !strings.Contains(string(data), `"resourceVersion":"`+cachedMeta.GetResourceVersion()+`"`) {
		t.Errorf("patch %s: want the resourceVersion %q as a precondition", data, cachedMeta.GetResourceVersion())
	}
}

// TestNewControllerRef: the reference the garbage collector follows, with
// the controller flag that makes the child the AppService's alone.
func TestNewControllerRef(t *testing.T) {
	fixtures.CheckEqual(t, "owner reference", fixtures.OwnerRef(), *NewControllerRef(fixtures.AppService()))
}
