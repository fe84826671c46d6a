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
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// A Cached object's Data is compressed: zstd, against a dictionary of the
// words every object of these kinds repeats. A realistic AppService's CBOR
// repeats its field names (lastTransitionTime, observedGeneration, ... in
// each of six conditions): 1619 bytes, 424 compressed. A trimmed
// Deployment's protobuf repeats our label and annotation keys and the
// values Kubernetes defaults: 557 bytes, 383 compressed. At 10,000
// AppServices that is about 16 MB of the controller's live heap
// (BENCHMARKS.md, issue 74). A compression costs about 10 µs and a
// decompression 3 µs, once per change of the object and once per read of
// it.
//
// zstd, not the standard library's flate: flate uses a preset dictionary
// only at its slower levels, which cost 0.5-2 ms an object here (a new
// compressor's tables each time), and compresses no better. The zstd
// implementation is klauspost/compress's, which the Prometheus client
// already brings into the module graph.
//
// The dictionary is only ever used within one process (the caches are not
// kept), so it may change from one version to the next.

// codec is the process's compressor and decompressor, made on first use.
var codec = sync.OnceValues(func() (*zstdCodec, error) {
	dict := dictionary()
	// EncodeAll and DecodeAll may be called at once from several
	// goroutines (the informers' transforms, the workers' reads); each
	// call takes one of this many encoders or decoders, which keep their
	// tables (a few hundred KB each).
	n := min(runtime.GOMAXPROCS(0), 4)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderDictRaw(dictionaryID, dict), zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(n), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(1<<16))
	if err != nil {
		return nil, fmt.Errorf("the caches' compressor: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDictRaw(dictionaryID, dict), zstd.WithDecoderConcurrency(n),
		zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, fmt.Errorf("the caches' decompressor: %w", err)
	}
	return &zstdCodec{enc: enc, dec: dec}, nil
})

// dictionaryID names the dictionary in each compressed frame.
const dictionaryID = 1

type zstdCodec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// compress returns data compressed, in a slice of its own exact size (a
// cache holds it for as long as the object lives).
func compress(data []byte) ([]byte, error) {
	z, err := codec()
	if err != nil {
		return nil, err
	}
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	*buf = z.enc.EncodeAll(data, (*buf)[:0])
	return slices.Clone(*buf), nil
}

// scratch holds the buffers compress encodes into before the copy it
// keeps, and decompressed decodes into.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// decompressed calls decode with what compress was given data, in a
// buffer reused once decode returns: decode must keep nothing of it (the
// generated protobuf code and the CBOR decoder copy what they keep).
func decompressed(data []byte, decode func([]byte) error) error {
	z, err := codec()
	if err != nil {
		return err
	}
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	if *buf, err = z.dec.DecodeAll(data, (*buf)[:0]); err != nil {
		return err
	}
	return decode(*buf)
}

// dictionary is the vocabulary the cached objects share, as they are
// encoded: the JSON names of the AppService's fields (its CBOR spells
// them out, each a text string), our labels' and annotations' keys, the
// condition types and reasons an AppService reports in the steady state,
// and the values Kubernetes defaults in the parts of a Deployment and a
// Service the controller keeps. It holds no value of any one object. zstd
// finds a match anywhere in it; nearer the end is cheaper, so the most
// frequent words come last.
func dictionary() []byte {
	var out []byte
	text := func(s string) {
		b, err := direct.Marshal(s)
		if err != nil {
			panic(fmt.Sprintf("encoding %q: %v", s, err)) // a string always encodes
		}
		out = append(out, b...)
	}
	for _, s := range []string{
		string(appsv1.RollingUpdateDeploymentStrategyType), "25%", string(corev1.PullIfNotPresent),
		string(corev1.ProtocolTCP), string(corev1.ServiceTypeClusterIP), string(corev1.TerminationMessageReadFile),
		"MinimumReplicasAvailable", "NewReplicaSetAvailable", "Deployment has minimum availability.",
		"ReplicaSet", "has successfully progressed.",
		string(appsv1.DeploymentAvailable), string(appsv1.DeploymentProgressing),
		appv1.SchemeGroupVersion.String(), "AppService",
		appv1.LabelCanary, appv1.AnnotationPodLabels, appv1.AnnotationPodAnnotations, appv1.AnnotationVolumes,
		appv1.AnnotationContainers, appv1.AnnotationConfigDigest, appv1.AnnotationAnnotations,
		appv1.ReasonRolloutComplete, appv1.ReasonAsExpected, appv1.ReasonDeploymentTrue,
		appv1.ConditionAvailable, appv1.ConditionProgressing, appv1.ConditionDegraded,
		appv1.ConditionReady, appv1.ConditionReconciling, appv1.ConditionStalled,
		string(corev1.ConditionFalse), string(corev1.ConditionTrue),
	} {
		text(s)
	}
	for _, name := range fieldNames(reflect.TypeFor[appv1.AppService]()) {
		text(name)
	}
	text(appv1.LabelAppService)
	return out
}

// fieldNames returns the JSON names of the fields of t and of every type
// in it, sorted.
func fieldNames(t reflect.Type) []string {
	seen := map[reflect.Type]bool{}
	names := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			if t.Kind() == reflect.Map {
				walk(t.Key())
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				names[name] = true
			}
			walk(f.Type)
		}
	}
	walk(t)
	out := make([]string, 0, len(names))
	for name := range names {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
