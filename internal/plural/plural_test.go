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

package plural

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Count(0, "replica"), "0 replicas"},
		{Count(int32(1), "replica"), "1 replica"},
		{Count(int64(2), "time"), "2 times"},
		{Count(-1, "time"), "-1 times"},
		{Of(1, "query", "queries"), "1 query"},
		{Of(3, "query", "queries"), "3 queries"},
		{Agree(int32(1), "runs", "run"), "runs"},
		{Agree(0, "runs", "run"), "run"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
