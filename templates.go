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
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/analysis"
	"example.com/appservice-controller/internal/appcache"
	"example.com/appservice-controller/internal/canary"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	informers "example.com/appservice-controller/pkg/generated/informers/externalversions/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// The analyses' templates (AnalysisTemplate, ClusterAnalysisTemplate), as
// the AppService's sync uses them: both kinds are watched, and an index
// of the AppServices by the templates they name queues exactly those a
// template's change reaches. internal/analysis resolves them (templates
// in, pinned metrics out); resolveAnalysis gives the canary's decision
// what it needs, and pinAnalysis keeps a running canary's pins.

// templateIndex indexes the AppServices by the templates their analyses
// name (analysis.TemplateKey).
const templateIndex = "analysis-templates"

// templateWatch reads the templates.
type templateWatch struct {
	namespaced listers.AnalysisTemplateLister
	cluster    listers.ClusterAnalysisTemplateLister
}

// newTemplateWatch watches both kinds and queues, through the index on
// the AppServices' informer, those that name a template that changed.
func newTemplateWatch(appInformers informers.Interface, appServices cache.SharedIndexInformer,
	enqueue func(cache.ObjectName)) (*templateWatch, []cache.InformerSynced, error) {
	err := appServices.AddIndexers(cache.Indexers{templateIndex: func(obj any) ([]string, error) {
		as, err := appcache.Decode(obj)
		if err != nil {
			// An index function's error would stop the process.
			utilruntime.HandleError(err)
			return nil, nil
		}
		return analysis.TemplateKeys(as), nil
	}})
	if err != nil {
		return nil, nil, err
	}
	indexer := appServices.GetIndexer()
	queueNaming := func(kind appv1.AnalysisTemplateKind) cache.ResourceEventHandlerFuncs {
		handle := func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			ref, err := cache.ObjectToName(obj)
			if err != nil {
				utilruntime.HandleError(err)
				return
			}
			items, err := indexer.ByIndex(templateIndex, analysis.TemplateKey(kind, ref.Namespace, ref.Name))
			if err != nil {
				utilruntime.HandleError(err)
				return
			}
			for _, item := range items {
				if key, err := cache.ObjectToName(item); err == nil {
					enqueue(key)
				}
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: handle, UpdateFunc: func(_, obj any) { handle(obj) }, DeleteFunc: handle}
	}
	namespaced, cluster := appInformers.AnalysisTemplates(), appInformers.ClusterAnalysisTemplates()
	_, err1 := namespaced.Informer().AddEventHandler(queueNaming(appv1.KindAnalysisTemplate))
	_, err2 := cluster.Informer().AddEventHandler(queueNaming(appv1.KindClusterAnalysisTemplate))
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, err
	}
	return &templateWatch{namespaced: namespaced.Lister(), cluster: cluster.Lister()},
		[]cache.InformerSynced{namespaced.Informer().HasSynced, cluster.Informer().HasSynced}, nil
}

// lookup finds a template in the caches (analysis.Lookup).
func (w *templateWatch) lookup(kind appv1.AnalysisTemplateKind, namespace, name string) (*appv1.AnalysisTemplateSpec, bool, error) {
	var spec *appv1.AnalysisTemplateSpec
	var err error
	if kind == appv1.KindClusterAnalysisTemplate {
		var t *appv1.ClusterAnalysisTemplate
		if t, err = w.cluster.Get(name); err == nil {
			spec = &t.Spec
		}
	} else {
		var t *appv1.AnalysisTemplate
		if t, err = w.namespaced.AnalysisTemplates(namespace).Get(name); err == nil {
			spec = &t.Spec
		}
	}
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return spec, err == nil, err
}

// resolveAnalysis gives in the analysis the canary runs, with its
// templates' metrics (in.Spec becomes a copy): a canary running in.Hash
// runs what its status pinned, and any template it has no pin of as it
// is now; any other decision (a canary to start) gets the templates as
// they are now, to pin. What cannot be resolved holds the canary
// (in.Analysis.Unresolved). It returns the running canary's pins.
func (s *appSync) resolveAnalysis(in *canary.Input) []appv1.PinnedTemplate {
	a := in.Spec.Analysis
	if a == nil || len(a.Templates) == 0 {
		return nil
	}
	st := in.Status
	running := st != nil && st.Step != nil && st.CanaryTemplateHash == in.Hash
	fresh, err := analysis.Resolve(s.as.Namespace, a, nil, s.c.templates.lookup)
	in.Analysis.Pins, in.Analysis.Unresolved = fresh.Pins, unresolved(err)
	use := fresh
	if running {
		use, err = analysis.Resolve(s.as.Namespace, a, st.Templates, s.c.templates.lookup)
		in.Analysis.Unresolved = unresolved(err)
	}
	spec := in.Spec.DeepCopy()
	if err != nil {
		// Its own metrics only; the decision holds on Unresolved.
		spec.Analysis.Templates = nil
	} else {
		spec.Analysis = use.Analysis
	}
	in.Spec = spec
	if running && err == nil {
		return use.Pins
	}
	return nil
}

// unresolved is err as Unresolved says it ("": nil).
func unresolved(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// pinAnalysis records a running canary's pins in the decision's status,
// each with the digest of its template as it is now when an edit changed
// it (Latest), and a Normal Event on each AppService an edit reaches:
// the canary keeps what it pinned, the next one runs the edit.
func (s *appSync) pinAnalysis(pins []appv1.PinnedTemplate, hash string) {
	st := s.canary.Status
	if len(pins) == 0 || st == nil || st.Step == nil || st.CanaryTemplateHash != hash {
		return
	}
	var old []appv1.PinnedTemplate
	if s.as.Status.Canary != nil {
		old = s.as.Status.Canary.Templates
	}
	refs := map[string]appv1.AnalysisTemplateRef{}
	for _, ref := range s.as.Spec.Canary.Analysis.Templates {
		refs[analysis.RefName(analysis.Kind(ref), ref.Name)] = ref
	}
	for i := range pins {
		p := &pins[i]
		name := analysis.RefName(p.Kind, p.Name)
		now, err := analysis.ResolveRef(s.as.Namespace, refs[name], s.c.templates.lookup)
		switch {
		case err != nil:
			// Gone, or no longer resolvable: the pin is what runs; the
			// next canary says why it cannot start.
		case now.Digest == p.Digest:
			p.Latest = ""
		default:
			p.Latest = now.Digest
		}
		if before, ok := analysis.Pinned(old, p.Kind, p.Name); p.Latest != "" && (!ok || before.Latest != p.Latest) {
			s.canary.Events = append(s.canary.Events, canary.Event{Type: corev1.EventTypeNormal, Reason: appv1.ReasonAnalysisTemplateChanged,
				Message: fmt.Sprintf("%s changed (%s, was %s): canary %s runs it as it was at its start; the next canary runs the change",
					name, p.Latest, p.Digest, hash)})
		}
	}
	st.Templates = pins
}
