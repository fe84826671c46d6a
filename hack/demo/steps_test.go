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
	"os"
	"path/filepath"
	"testing"
	"unicode"
)

// Every step says what it shows in both languages, runs something and
// checks what it said.
func TestTourSteps(t *testing.T) {
	for i, s := range tourSteps() {
		texts := []text{s.title, s.say, s.expect}
		if s.ownController != nil {
			texts = append(texts, *s.ownController)
		}
		for _, x := range texts {
			if x.en == "" || !hasHan(x.zh) {
				t.Errorf("step %d (%s): a text without both languages: %+v", i+1, s.title.en, x)
			}
		}
		if len(s.cmds) == 0 || s.check == nil {
			t.Errorf("step %d (%s): no command or no check", i+1, s.title.en)
		}
	}
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// The manifests the tour applies exist (make demo runs at the root).
func TestTourManifests(t *testing.T) {
	for _, m := range []string{seedManifest, otherManifest, badManifest, activityManifest, canaryManifest, analysisManifest, releaseManifest,
		templateManifest, cartManifest, ordersManifest} {
		if _, err := os.Stat(filepath.Join("../..", m)); err != nil {
			t.Error(err)
		}
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"patch", "appsvc", "x", "-p", `{"spec":{"image":"nginx:1.27"}}`, "-o", "jsonpath={.a}'s"})
	want := `patch appsvc x -p '{"spec":{"image":"nginx:1.27"}}' -o 'jsonpath={.a}'\''s'`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}
