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
	"encoding/json"
	"errors"
	"testing"

	"example.com/appservice-controller/internal/children"
	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// FuzzBuilders feeds the builders any spec that decodes, admitted by the
// CRD or not (the controller may meet objects written before a validation
// rule existed): they never panic, and what they build is already in line
// with itself, so that a child just created is never updated again (no
// write loop). The checks against a real API server are in
// admission_property_test.go.
//
//	go test -run '^$' -fuzz FuzzBuilders -fuzztime 1m .
//
// Inputs that fail are kept in testdata/fuzz/FuzzBuilders and run by every
// go test.
func FuzzBuilders(f *testing.F) {
	for _, seed := range []string{
		`{"size":2,"image":"nginx:1.7.9","ports":[{"port":80,"targetPort":80,"nodePort":30002}]}`,
		`{"image":"nginx","serviceType":"ClusterIP","envs":[{"name":"A","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]}`,
		`{"size":0,"image":"x","resources":{"requests":{"cpu":"0.0001","memory":"1Gi"},"limits":{"example.com/gpu":"1"}}}`,
		`{"image":"x","ports":[{"name":"a","port":80,"targetPort":"http"},{"name":"b","port":81,"targetPort":"http","protocol":"UDP"}]}`,
		`{"image":"x","serviceType":"LoadBalancer","ports":[{"port":1}],"envs":[{"name":"R","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"1m"}}}]}`,
		`{"image":"x","podLabels":{"app.example.com/appservice":"other","tier":"web"},"podAnnotations":{"a":"1"},"nodeSelector":{"k":"v"},"tolerations":[{"operator":"Exists"}],"serviceAccountName":"sa","terminationGracePeriodSeconds":5,"envFrom":[{"secretRef":{"name":"s"}}]}`,
		`{"image":"x","strategy":{"type":"Recreate"},"livenessProbe":{"httpGet":{"port":"http"}},"readinessProbe":{"grpc":{"port":9090}},"startupProbe":{"exec":{"command":["true"]},"periodSeconds":-1}}`,
		`{"image":"x","imagePullPolicy":"Never","command":["sh","-c"],"args":["$(A)",""],"workingDir":"/srv","minReadySeconds":5,"revisionHistoryLimit":0,"progressDeadlineSeconds":6}`,
		`{"image":"x","volumes":[{"name":"c","configMap":{"name":"c","items":[{"key":"k","path":"p","mode":256}]}},{"name":"p","projected":{"sources":[{"serviceAccountToken":{"path":"t"}},{"downwardAPI":{"items":[{"path":"cpu","resourceFieldRef":{"resource":"limits.cpu","divisor":"1m"}}]}}]}},{"name":"d","downwardAPI":{"items":[{"path":"l","fieldRef":{"fieldPath":"metadata.labels"}}]}},{"name":"e","emptyDir":{"sizeLimit":"1Gi"}},{"name":"n"}],"volumeMounts":[{"name":"c","mountPath":"/c"},{"name":"x","mountPath":"/x"}]}`,
		`{"image":"x","lifecycle":{"preStop":{"httpGet":{"port":80}},"postStart":{"sleep":{"seconds":1}}},"securityContext":{"runAsUser":1000},"podSecurityContext":{"fsGroup":2000},"affinity":{"podAntiAffinity":{}},"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}]}`,
		`{"image":"x","serviceAccount":{"create":true,"annotations":{"a":"1","app.example.com/annotations":"b"},"automountToken":false},"disruptionBudget":{"minAvailable":"50%","maxUnavailable":1},"autoscaling":{"maxReplicas":3,"targetMemoryUtilizationPercentage":70,"behavior":{"scaleUp":{"policies":[]},"scaleDown":{"stabilizationWindowSeconds":60,"tolerance":"0.1"}}}}`,
		`{"image":"x","ports":[{"name":"http","port":80},{"name":"admin","port":9000}],"ingress":{"className":"nginx","annotations":{"a":"1"},"hosts":[{"host":"app.example.com","paths":[{},{"path":"/admin","pathType":"Exact","port":"admin"},{"port":9000}]},{"paths":[{"path":""}]}],"tls":[{"hosts":["*.example.com"],"secretName":"tls"}]}}`,
		`{"image":"x","ingress":{"hosts":[{"host":"a","paths":[{"port":"missing"}]}]}}`,
		`{"image":"x","ports":[{"name":"http","port":80}],"httpRoute":{"parentRefs":[{"name":"gw"},{"name":"gw","sectionName":"https","port":443}],"hostnames":["app.example.com","*.example.com"],"rules":[{},{"matches":[{"path":{"type":"Exact","value":"/a"},"headers":[{"name":"x","value":"y"}]},{}],"filters":[{"type":"RequestHeaderModifier","requestHeaderModifier":{"set":[{"name":"a","value":"b"}]}}],"timeouts":{"request":"10s"},"port":"http"},{"port":81}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var spec appv1.AppServiceSpec
		if err := json.Unmarshal(data, &spec); err != nil {
			return
		}
		as := fixtures.AppService()
		as.Spec = spec

		d := children.NewDeployment(as)
		if d == nil || len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.Containers[0].Name != as.Name {
			t.Fatalf("NewDeployment: want one container named %q, got %+v", as.Name, d)
		}
		if updated, changed := children.UpdateDeployment(d, children.NewDeployment(as)); updated != nil {
			t.Errorf("a Deployment just built differs from itself in %v", changed)
		}
		if s := children.NewService(as); s != nil {
			if updated, changed := children.UpdateService(s, children.NewService(as)); updated != nil {
				t.Errorf("a Service just built differs from itself in %v", changed)
			}
		} else if len(spec.Ports) > 0 {
			t.Errorf("no Service for %d ports", len(spec.Ports))
		}
		checkBuiltInLine(t, "ServiceAccount", children.NewServiceAccount(as), children.NewServiceAccount(as), children.UpdateServiceAccount)
		checkBuiltInLine(t, "Ingress", children.NewIngress(as), children.NewIngress(as), children.UpdateIngress)
		if in := children.NewIngress(as); in != nil {
			children.IngressURL(in)
		}
		checkBuiltInLine(t, "HTTPRoute", children.NewHTTPRoute(as), children.NewHTTPRoute(as), children.UpdateHTTPRoute)
		if r := children.NewHTTPRoute(as); r != nil {
			children.HTTPRouteURL(r)
		}
		checkBuiltInLine(t, "PodDisruptionBudget", children.NewDisruptionBudget(as), children.NewDisruptionBudget(as), children.UpdateDisruptionBudget)
		checkBuiltInLine(t, "HorizontalPodAutoscaler", children.NewAutoscaler(as), children.NewAutoscaler(as), children.UpdateAutoscaler)
		st := newStatus(as, observed{deployment: d}, errors.New("boom"))
		if st.ObservedGeneration != as.Generation {
			t.Errorf("status observedGeneration %d, want %d", st.ObservedGeneration, as.Generation)
		}
	})
}

// checkBuiltInLine fails when a child just built (two builds of it, a and
// b; none when nil) differs from itself.
func checkBuiltInLine[T comparable](t *testing.T, kind string, a, b T, diff func(live, desired T) (T, []string)) {
	t.Helper()
	var none T
	if a == none {
		return
	}
	if updated, changed := diff(a, b); updated != none {
		t.Errorf("a %s just built differs from itself in %v", kind, changed)
	}
}
