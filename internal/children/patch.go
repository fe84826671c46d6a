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
	"slices"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Patch returns the patch that makes the API server's object what updated
// says, given live, the object updated was made from by the kind's Update
// function (usually a cached, trimmed child: see Trim). It holds only the
// owned fields that differ between the two, and nil when none do, so that
// nothing is written.
//
// The built-in kinds get a strategic merge patch: it merges the Pod
// template's containers, init containers and volumes by name, so that
// those of others, which the cache holds by name alone, are kept whole and
// in place. Every other list in it is ours as a whole and is replaced as a
// whole ($patch: replace), as an update would: merged by their keys,
// lists whose items may share a key (ports of one number over TCP and UDP,
// spread constraints of one topology key) would go wrong. The routes,
// custom resources, have no strategic merge: they get a JSON merge patch,
// which replaces lists whole, and their owned fields are whole lists.
//
// The patch carries live's resourceVersion, a precondition: computed from
// a cached object, it is only right for that version (the records of what
// is ours, the others' containers and their order, the autoscaler's
// replica count), so a newer object makes it fail with a conflict, and
// the sync runs again on the newer one, as an update would.
func Patch(live, updated metav1.Object) ([]byte, types.PatchType, error) {
	original, err := json.Marshal(live)
	if err != nil {
		return nil, "", err
	}
	modified, err := json.Marshal(updated)
	if err != nil {
		return nil, "", err
	}
	var data []byte
	pt := types.StrategicMergePatchType
	switch live.(type) {
	case *gatewayv1.HTTPRoute, *gatewayv1.GRPCRoute:
		pt = types.MergePatchType
		data, err = jsonpatch.CreateMergePatch(original, modified)
	default:
		data, err = strategicpatch.CreateTwoWayMergePatch(original, modified, live)
	}
	if err != nil {
		return nil, "", fmt.Errorf("patch of %T %s: %w", live, live.GetName(), err)
	}
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, "", err
	}
	if len(patch) == 0 {
		return nil, pt, nil
	}
	var orig, mod map[string]any
	if err := json.Unmarshal(original, &orig); err != nil {
		return nil, "", err
	}
	if err := json.Unmarshal(modified, &mod); err != nil {
		return nil, "", err
	}
	schema, err := strategicpatch.NewPatchMetaFromStruct(live)
	if err != nil {
		return nil, "", err
	}
	if err := ownedOnly(patch, orig, mod, schema, ""); err != nil {
		return nil, "", fmt.Errorf("patch of %T %s: %w", live, live.GetName(), err)
	}
	metadata, _ := patch["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
		patch["metadata"] = metadata
	}
	metadata["resourceVersion"] = live.GetResourceVersion()
	data, err = json.Marshal(patch)
	return data, pt, err
}

// mergedByName are the lists of a Pod template that are ours item by item:
// merged by name, the others' items kept.
var mergedByName = []string{
	".spec.template.spec.containers",
	".spec.template.spec.initContainers",
	".spec.template.spec.volumes",
}

// ownedOnly makes a patch computed between two trimmed objects, original
// and modified, touch only what they hold, at path in the object:
//
//   - a map (of strings: labels, annotations) the patch removes (null)
//     loses the keys original had, one by one: a trimmed map holds only
//     our keys, and others' must stay;
//   - a list the patch sets and the schema merges (patch strategy merge)
//     is replaced instead, with its items in modified, except for the
//     lists in mergedByName, whose items it goes into. Lists only added
//     (none in original) are left as they are: there is nothing to merge
//     with, and the API server ignores directives in what it adds.
func ownedOnly(patch, original, modified map[string]any, schema strategicpatch.LookupPatchMeta, path string) error {
	for key, value := range patch {
		if strings.HasPrefix(key, "$") {
			continue
		}
		at := path + "." + key
		switch v := value.(type) {
		case nil:
			if sub, _, err := schema.LookupPatchMetadataForStruct(key); err != nil || sub.Name() != "map" {
				continue // a struct removed is removed whole
			}
			if had, ok := original[key].(map[string]any); ok && len(had) > 0 {
				removed := make(map[string]any, len(had))
				for k := range had {
					removed[k] = nil
				}
				patch[key] = removed
			}
		case map[string]any:
			sub, _, err := schema.LookupPatchMetadataForStruct(key)
			if err != nil {
				return err
			}
			o, _ := original[key].(map[string]any)
			m, _ := modified[key].(map[string]any)
			if err := ownedOnly(v, o, m, sub, at); err != nil {
				return err
			}
		case []any:
			sub, meta, err := schema.LookupPatchMetadataForSlice(key)
			if err != nil {
				return err
			}
			had, _ := original[key].([]any)
			if !slices.Contains(meta.GetPatchStrategies(), "merge") || len(had) == 0 {
				continue
			}
			want, _ := modified[key].([]any)
			if !slices.Contains(mergedByName, at) {
				patch[key] = append([]any{map[string]any{"$patch": "replace"}}, want...)
				delete(patch, "$setElementOrder/"+key)
				continue
			}
			for _, item := range v {
				p, ok := item.(map[string]any)
				if !ok || p["$patch"] != nil {
					continue
				}
				o, m := byName(had, p["name"]), byName(want, p["name"])
				if o == nil || m == nil {
					continue // added whole
				}
				if err := ownedOnly(p, o, m, sub, at); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// byName is the item of a list named name, nil if none is.
func byName(items []any, name any) map[string]any {
	for _, item := range items {
		if m, ok := item.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}
