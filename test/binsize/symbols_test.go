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
	"debug/elf"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// measure is what a binary weighs: the whole file, its sections, and its
// symbols summed by the package that defined them.
type measure struct {
	Size     int64            `json:"size"`
	Sections map[string]int64 `json:"sections"`
	Packages map[string]int64 `json:"packages"`
	// ReflectMethods are the reflect method calls the linker reaches
	// (dead-method elimination off) that a refresh of the baseline
	// accepted; see deadcode_test.go.
	ReflectMethods []string `json:"reflectMethods"`
}

// measureBinary reads the binary's sections and symbol table. The symbols
// are the table `go tool nm -size` prints, read here from the ELF file:
// nm names .bss symbols like data (D), and they take no byte of the file
// (crypto/internal/fips140/drbg.memory alone is 32 MiB of it). Symbols do
// not account for the whole file: the type descriptors (in .rodata), the
// pc-value tables (.gopclntab) and DWARF have no symbol of their own,
// hence the sections beside them.
func measureBinary(path string, size int64) (measure, error) {
	f, err := elf.Open(path)
	if err != nil {
		return measure{}, fmt.Errorf("%s: the package sizes are read from ELF files (Linux) only: %w", path, err)
	}
	defer f.Close()
	m := measure{Size: size, Sections: map[string]int64{}, Packages: map[string]int64{}}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && s.Name != "" && s.FileSize > 0 {
			m.Sections[s.Name] = int64(s.FileSize) // compressed DWARF: its bytes in the file
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		return measure{}, fmt.Errorf("%s: %w (built with -ldflags=-s?)", path, err)
	}
	for _, s := range syms {
		if s.Size == 0 || s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) {
			continue
		}
		if f.Sections[s.Section].Type == elf.SHT_NOBITS {
			continue
		}
		m.Packages[symbolPackage(s.Name)] += int64(s.Size)
	}
	return m, nil
}

// assembly is the package of the assembly labels of the runtime and the
// crypto packages that name none (_rt0_amd64_linux, K256).
const assembly = "(assembly)"

// anonymous is the package of what belongs to no package: the equality
// functions and methods of unnamed types (struct { io.Reader; io.WriterTo }).
const anonymous = "(unnamed types)"

// symbolPackage is the import path of the package that defined a symbol:
// the name up to the first '.' after its last '/', once the generic
// arguments are gone (slices.Clone[[]k8s.io/api/core/v1.Pod] is slices'),
// so that method receivers, closures and dictionaries stay with their
// package (k8s.io/api/core/v1.(*PodSpec).Unmarshal,
// internal/sync..dict.HashTrieMap[...]). The equality and hash functions
// of a type and an itab go to the package of the type they are for (an
// itab: the concrete type's). The compiler escapes the dots of a path's
// last element (gopkg.in/inf%2ev0): they are unescaped. The standard
// library's vendored copies (vendor/golang.org/x/net/idna) count under the
// import path they vendor, so that one row says what golang.org/x/net/idna
// costs whichever copy grew.
func symbolPackage(name string) string {
	for _, prefix := range []string{"type:.eq.", "type:.hash.", "type:.gcmask.", "go:itab."} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			name, _, _ = strings.Cut(rest, ",") // an itab's concrete type, before its interface
			name = typeName(name)
			break
		}
	}
	if strings.HasPrefix(name, "go:struct ") || strings.HasPrefix(name, "go:(*struct ") || isUnnamedType(name) {
		return anonymous
	}
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	if strings.HasPrefix(name, "go:") { // the linker's: go:func.*, go:string.*, go:buildinfo
		before, _, _ := strings.Cut(name, ".")
		return before
	}
	slash := strings.LastIndexByte(name, '/')
	dot := strings.IndexByte(name[slash+1:], '.')
	if dot < 0 {
		return assembly
	}
	return strings.TrimPrefix(unescape(name[:slash+1+dot]), "vendor/")
}

// typeName strips a type's pointers and array lengths: [3]*pkg.T is pkg.T.
func typeName(t string) string {
	for {
		t = strings.TrimLeft(t, "*")
		if !strings.HasPrefix(t, "[") {
			return t
		}
		end := strings.IndexByte(t, ']')
		if end < 0 {
			return t
		}
		if _, err := strconv.Atoi(t[1:end]); err != nil {
			return t // []T or [...]: a slice type, unnamed
		}
		t = t[end+1:]
	}
}

// isUnnamedType: a type literal, which no package names.
func isUnnamedType(t string) bool {
	for _, p := range []string{"struct ", "struct{", "func(", "map[", "chan ", "<-chan ", "interface ", "[]"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// unescape undoes objabi.PathToPrefix: %xx for a byte of the path.
func unescape(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			if v, err := strconv.ParseUint(p[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// TestSymbolPackage: the names are as the Go 1.26 linker writes them in
// the two binaries.
func TestSymbolPackage(t *testing.T) {
	for name, want := range map[string]string{
		"k8s.io/api/core/v1.(*PodSpec).Unmarshal": "k8s.io/api/core/v1",
		"k8s.io/api/core/v1.init":                 "k8s.io/api/core/v1",
		"crypto/ecdsa.parseRawPrivateKey[go.shape.*crypto/internal/fips140/nistec.P224Point]":                       "crypto/ecdsa",
		"example.com/appservice-controller/internal/owner.ChildKind[go.shape.*k8s.io/api/apps/v1.Deployment].claim": "example.com/appservice-controller/internal/owner",
		"sync/atomic.(*Pointer[go.shape.struct { k8s.io/x.y int }]).Load":                                           "sync/atomic",
		"internal/sync..dict.HashTrieMap[*internal/abi.Type,interface {}]":                                          "internal/sync",
		"main..gobytes.1":                                    "main",
		"main.(*appSync).canaryChildren.func1":               "main",
		"crypto/x509.parseNameConstraintsExtension.func1":    "crypto/x509",
		"vendor/golang.org/x/net/idna.idnaValues":            "golang.org/x/net/idna",
		"golang.org/x/net/idna.idnaValues":                   "golang.org/x/net/idna",
		"crypto/internal/entropy/v1%2e0%2e0.SHA384":          "crypto/internal/entropy/v1.0.0",
		"gopkg.in/evanphx/json-patch%2ev4.(*partialDoc).add": "gopkg.in/evanphx/json-patch.v4",
		"go:itab.*gopkg.in/evanphx/json-patch%2ev4.partialArray,gopkg.in/evanphx/json-patch%2ev4.container": "gopkg.in/evanphx/json-patch.v4",
		"go:itab.k8s.io/client-go/kubernetes.Clientset,k8s.io/client-go/kubernetes.Interface":               "k8s.io/client-go/kubernetes",
		"type:.eq.[3]k8s.io/apimachinery/pkg/apis/meta/v1.Condition":                                        "k8s.io/apimachinery/pkg/apis/meta/v1",
		"type:.eq.main.options":                           "main",
		"type:.eq.struct { Name string; Href string }":    anonymous,
		"go:(*struct { io.Reader; io.WriterTo }).WriteTo": anonymous,
		"go:struct { io.Reader; io.WriterTo }.Read":       anonymous,
		"go:func.*":    "go:func",
		"go:buildinfo": "go:buildinfo",
		"vendor/golang.org/x/crypto/chacha20poly1305.chacha20Poly1305Seal.abi0": "golang.org/x/crypto/chacha20poly1305",
		"_rt0_amd64_linux":    assembly,
		"runtime.findfunctab": "runtime",
	} {
		if got := symbolPackage(name); got != want {
			t.Errorf("symbolPackage(%q) = %q, want %q", name, got, want)
		}
	}
}
