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

package binsize

import (
	"encoding/json"
	"flag"
	"os"
	"testing"
)

// update rewrites the baseline from this run's binaries. It is the only
// way the ceiling moves: deliberately, in a commit that says why.
var update = flag.Bool("update", false, "rewrite "+baselineFile+" from the binaries this run builds")

// baselineFile is the committed record the ceilings are set from.
const baselineFile = "testdata/baseline.json"

// refresh is what every failure ends with.
const refresh = "First cut what grew. If the growth is wanted, justify it in the commit message, and refresh the baseline in that commit:\n" +
	"  go test ./test/binsize -update"

// baseline is each binary as it was the last time someone refreshed the
// record on purpose.
type baseline struct {
	// Go is the toolchain (go env GOVERSION) and Platform the GOOS/GOARCH
	// the sizes were measured with: another Go release or platform makes
	// other binaries from the same code (TestBinarySize).
	Go       string             `json:"go"`
	Platform string             `json:"platform"`
	Binaries map[string]measure `json:"binaries"`
}

func readBaseline(t *testing.T) baseline {
	t.Helper()
	data, err := os.ReadFile(baselineFile)
	if err != nil {
		t.Fatalf("%v: record one with go test ./test/binsize -update", err)
	}
	var b baseline
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatalf("%s: %v", baselineFile, err)
	}
	return b
}

func writeBaseline(t *testing.T, tc toolchain, bins []*binary) {
	t.Helper()
	b := baseline{Go: tc.GOVERSION, Platform: tc.platform(), Binaries: map[string]measure{}}
	for _, bin := range bins {
		m := bin.measure
		m.ReflectMethods = bin.deps.ReflectMethods
		if m.ReflectMethods == nil {
			m.ReflectMethods = []string{}
		}
		b.Binaries[bin.name] = m
	}
	data, err := json.MarshalIndent(b, "", "  ") // map keys sorted: a refresh's diff shows what moved
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(baselineFile, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
