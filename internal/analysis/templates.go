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

package analysis

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// An analysis's templates (spec.canary.analysis.templates), resolved: each
// reference's AnalysisTemplate or ClusterAnalysisTemplate, its arguments
// put in its queries, gives metrics that run beside the inline ones. A
// canary resolves them once, at its start, and its status keeps what it
// resolved (status.canary.templates, the pins): it runs those metrics
// until it ends, whatever edits the templates get, and a restarted
// controller reads them from the status. Resolving is pure: the templates
// come from a Lookup (the root's informers, templates.go).

// Lookup finds a template's spec: kind is AnalysisTemplate (in namespace)
// or ClusterAnalysisTemplate. found is false when there is none.
type Lookup func(kind appv1.AnalysisTemplateKind, namespace, name string) (spec *appv1.AnalysisTemplateSpec, found bool, err error)

// Resolved is the analysis a canary runs.
type Resolved struct {
	// Analysis is the spec's analysis with the templates' metrics after
	// its own, and no templates.
	Analysis *appv1.CanaryAnalysis
	// Pins are the templates as resolved, in the spec's order.
	Pins []appv1.PinnedTemplate
}

// Unresolved says why an analysis cannot be resolved; the canary holds
// at its start until it can.
type Unresolved struct{ Why string }

func (u *Unresolved) Error() string { return u.Why }

// Kind is a reference's kind, defaulted as the CRD defaults it.
func Kind(ref appv1.AnalysisTemplateRef) appv1.AnalysisTemplateKind {
	if ref.Kind == "" {
		return appv1.KindAnalysisTemplate
	}
	return ref.Kind
}

// RefName names a reference, as messages and the plugin show it:
// "AnalysisTemplate NAME" or "ClusterAnalysisTemplate NAME".
func RefName(kind appv1.AnalysisTemplateKind, name string) string {
	return string(kind) + " " + name
}

// Resolve is a's analysis for a canary of the AppService in namespace:
// each template pinned names (by kind and name) as pinned, the others
// resolved now through lookup. A nil a, or one without templates, is
// returned as it is. The error is an *Unresolved when a template is
// missing, an argument has no value, or two metrics share a name; any
// other is lookup's.
func Resolve(namespace string, a *appv1.CanaryAnalysis, pinned []appv1.PinnedTemplate, lookup Lookup) (Resolved, error) {
	if a == nil || len(a.Templates) == 0 {
		return Resolved{Analysis: a}, nil
	}
	out := a.DeepCopy()
	out.Templates = nil
	from := map[string]string{}
	for _, m := range a.Metrics {
		from[m.Name] = "the AppService's own metrics"
	}
	var pins []appv1.PinnedTemplate
	for _, ref := range a.Templates {
		kind := Kind(ref)
		pin, ok := Pinned(pinned, kind, ref.Name)
		if !ok {
			var err error
			if pin, err = ResolveRef(namespace, ref, lookup); err != nil {
				return Resolved{}, err
			}
		}
		for _, m := range pin.Metrics {
			if other, dup := from[m.Name]; dup {
				return Resolved{}, &Unresolved{fmt.Sprintf("metric %s is both in %s and in %s: rename one (a status keeps one result per name)",
					m.Name, other, RefName(kind, ref.Name))}
			}
			from[m.Name] = RefName(kind, ref.Name)
			out.Metrics = append(out.Metrics, appv1.AnalysisMetric(m))
		}
		pins = append(pins, *pin.DeepCopy())
	}
	return Resolved{Analysis: out, Pins: pins}, nil
}

// Pinned is the pin of kind and name in pinned.
func Pinned(pinned []appv1.PinnedTemplate, kind appv1.AnalysisTemplateKind, name string) (appv1.PinnedTemplate, bool) {
	for _, p := range pinned {
		if p.Kind == kind && p.Name == name {
			return p, true
		}
	}
	return appv1.PinnedTemplate{}, false
}

// ResolveRef is the template ref names, as resolved now: its metrics with
// the arguments in place, and their digest.
func ResolveRef(namespace string, ref appv1.AnalysisTemplateRef, lookup Lookup) (appv1.PinnedTemplate, error) {
	kind := Kind(ref)
	what := RefName(kind, ref.Name)
	if kind == appv1.KindAnalysisTemplate {
		what = RefName(kind, namespace+"/"+ref.Name)
	}
	spec, found, err := lookup(kind, namespace, ref.Name)
	if err != nil {
		return appv1.PinnedTemplate{}, fmt.Errorf("reading %s: %w", what, err)
	}
	if !found {
		return appv1.PinnedTemplate{}, &Unresolved{what + " does not exist"}
	}
	values := map[string]string{}
	for _, arg := range spec.Args {
		v, given := ref.Args[arg.Name]
		switch {
		case given:
			values[arg.Name] = v
		case arg.Value != nil:
			values[arg.Name] = *arg.Value
		default:
			return appv1.PinnedTemplate{}, &Unresolved{fmt.Sprintf("argument %s of %s has no value: give it in the reference's args", arg.Name, what)}
		}
	}
	for _, name := range sortedKeys(ref.Args) {
		if _, declared := values[name]; !declared {
			return appv1.PinnedTemplate{}, &Unresolved{fmt.Sprintf("the reference gives argument %s, which %s does not declare", name, what)}
		}
	}
	pin := appv1.PinnedTemplate{Kind: kind, Name: ref.Name, Metrics: make([]appv1.PinnedMetric, len(spec.Metrics))}
	for i, m := range spec.Metrics {
		query, unknown := RenderArgs(m.Query, values)
		if unknown != "" {
			// The CRD refuses such a template; this is for one that did
			// not come through the API server.
			return appv1.PinnedTemplate{}, &Unresolved{fmt.Sprintf("metric %s of %s uses argument %s, which it does not declare", m.Name, what, unknown)}
		}
		pin.Metrics[i] = appv1.PinnedMetric{Name: m.Name, Query: query, Min: m.Min, Max: m.Max, DryRun: m.DryRun}
	}
	pin.Digest = Digest(pin.Metrics)
	return pin, nil
}

// argPlaceholder is a query's {{ args.NAME }}.
var argPlaceholder = regexp.MustCompile(`\{\{ *args\.([A-Za-z0-9_]+) *\}\}`)

// RenderArgs is query with each {{ args.NAME }} replaced by its value,
// and the first argument it uses that values lacks ("": none). The other
// placeholders stay, for Render at each round.
func RenderArgs(query string, values map[string]string) (string, string) {
	unknown := ""
	out := argPlaceholder.ReplaceAllStringFunc(query, func(p string) string {
		name := argPlaceholder.FindStringSubmatch(p)[1]
		v, ok := values[name]
		if !ok {
			if unknown == "" {
				unknown = name
			}
			return p
		}
		return v
	})
	return out, unknown
}

// Digest is a digest of resolved metrics: the first 16 hexadecimal digits
// of the SHA-256 of their JSON. Equal metrics, equal digests; a change of
// a query, a bound, a dry run or a name changes it.
func Digest(metrics []appv1.PinnedMetric) string {
	data, err := json.Marshal(metrics)
	if err != nil {
		// Strings, pointers to strings and booleans always encode.
		panic(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// TemplateKey names a template in the index from templates to the
// AppServices that name them: "AnalysisTemplate/NAMESPACE/NAME" or
// "ClusterAnalysisTemplate/NAME".
func TemplateKey(kind appv1.AnalysisTemplateKind, namespace, name string) string {
	if kind == appv1.KindClusterAnalysisTemplate {
		return string(kind) + "/" + name
	}
	return string(kind) + "/" + namespace + "/" + name
}

// TemplateKeys are the keys of the templates as's analysis names.
func TemplateKeys(as *appv1.AppService) []string {
	if as.Spec.Canary == nil || as.Spec.Canary.Analysis == nil {
		return nil
	}
	var keys []string
	for _, ref := range as.Spec.Canary.Analysis.Templates {
		keys = append(keys, TemplateKey(Kind(ref), as.Namespace, ref.Name))
	}
	return keys
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
