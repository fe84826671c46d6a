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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/appservice-controller/internal/fixtures"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// withRoute attaches the seed to Gateway gw for app.example.com: every path
// to port 80, /admin to the admin port by name.
func withRoute(s *appv1.AppServiceSpec) {
	s.Ports = append(s.Ports, corev1.ServicePort{Name: "admin", Port: 9000})
	s.Ports[0].Name = "http"
	s.HTTPRoute = &appv1.HTTPRoute{
		ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}},
		Hostnames:  []gatewayv1.Hostname{"app.example.com"},
		Rules: []appv1.HTTPRouteRule{
			{},
			{
				Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchExact), Value: new("/admin")}}},
				Filters: []gatewayv1.HTTPRouteFilter{adminHeader()},
				Port:    new(intstr.FromString("admin")),
			},
		},
	}
}

// adminHeader is the filter of the seed's /admin rule (withRoute).
func adminHeader() gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "X-Admin", Value: "1"}}}}
}

// theirFilter is a filter someone else adds to a rule of the route.
func theirFilter() gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterResponseHeaderModifier,
		ResponseHeaderModifier: &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{Name: "X-Served-By", Value: "edge"}}}}
}

// theirRule is a rule someone else adds to the route.
func theirRule() gatewayv1.HTTPRouteRule {
	return gatewayv1.HTTPRouteRule{Name: new(gatewayv1.SectionName("maintenance")),
		Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchExact), Value: new("/down")}}},
		BackendRefs: backendTo(80)}
}

func backendTo(port int32) []gatewayv1.HTTPBackendRef {
	return []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{
			Group: new(gatewayv1.Group("")), Kind: new(gatewayv1.Kind("Service")), Name: fixtures.Name, Port: new(port),
		},
		Weight: new(int32(1)),
	}}}
}

func desiredRoute() *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{
			Name:            fixtures.Name,
			Namespace:       fixtures.Namespace,
			Labels:          map[string]string{appv1.LabelAppService: fixtures.Name},
			Annotations:     map[string]string{appv1.AnnotationRouteFilters: "appservice-1/" + filterHash(adminHeader())},
			OwnerReferences: []metav1.OwnerReference{fixtures.OwnerRef()},
		},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
				Group: new(gatewayv1.Group("gateway.networking.k8s.io")), Kind: new(gatewayv1.Kind("Gateway")), Name: "gw",
			}}},
			Hostnames: []gatewayv1.Hostname{"app.example.com"},
			Rules: []gatewayv1.HTTPRouteRule{
				{
					Name:        new(gatewayv1.SectionName("appservice-0")),
					Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchPathPrefix), Value: new("/")}}},
					BackendRefs: backendTo(80),
				},
				{
					Name:        new(gatewayv1.SectionName("appservice-1")),
					Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchExact), Value: new("/admin")}}},
					Filters:     []gatewayv1.HTTPRouteFilter{adminHeader()},
					BackendRefs: backendTo(9000),
				},
			},
		},
	}
}

func TestNewHTTPRoute(t *testing.T) {
	as := fixtures.AppService()
	if r := NewHTTPRoute(as); r != nil {
		t.Errorf("no httpRoute: got %v, want none", r)
	}
	withRoute(&as.Spec)
	fixtures.CheckEqual(t, "HTTPRoute", desiredRoute(), NewHTTPRoute(as))

	// No rules: one, every request to the first port.
	as.Spec.HTTPRoute.Rules = nil
	want := desiredRoute()
	want.Spec.Rules, want.Annotations = want.Spec.Rules[:1], nil
	fixtures.CheckEqual(t, "HTTPRoute without rules", want, NewHTTPRoute(as))

	as.Spec.Ports = nil
	if r := NewHTTPRoute(as); r != nil {
		t.Errorf("no ports: got %v, want no HTTPRoute (there is no Service)", r)
	}
}

func TestUpdateHTTPRoute(t *testing.T) {
	runUpdateCases(t, "HTTPRoute", desiredRoute, NewHTTPRoute, UpdateHTTPRoute, []updateCase[*gatewayv1.HTTPRoute]{
		{name: "in line", spec: withRoute},
		{
			name: "the status and others' labels are kept",
			spec: withRoute,
			live: func(r *gatewayv1.HTTPRoute) {
				r.Labels["team"] = "a"
				r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: r.Spec.ParentRefs[0], ControllerName: "example.com/gateway"}}
			},
		},
		{
			name:        "drift: a backend changed by hand",
			spec:        withRoute,
			live:        func(r *gatewayv1.HTTPRoute) { r.Spec.Rules[1].BackendRefs = backendTo(8080) },
			want:        func(r *gatewayv1.HTTPRoute) { r.Spec.Rules[1].BackendRefs = backendTo(9000) },
			wantChanged: []string{"rules"},
		},
		{
			name: "hostnames changed",
			spec: func(s *appv1.AppServiceSpec) {
				withRoute(s)
				s.HTTPRoute.Hostnames = []gatewayv1.Hostname{"www.example.com"}
			},
			want:        func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = []gatewayv1.Hostname{"www.example.com"} },
			wantChanged: []string{"hostnames"},
		},
		{
			name: "a rule others added is kept where it is, first or between ours",
			spec: withRoute,
			live: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules = []gatewayv1.HTTPRouteRule{theirRule(), r.Spec.Rules[0], theirRule(), r.Spec.Rules[1]}
				r.Spec.Rules[2].Name = new(gatewayv1.SectionName("appservice-x"))
			},
		},
		{
			name: "others' rules stay in place when ours change",
			spec: func(s *appv1.AppServiceSpec) {
				withRoute(s)
				s.HTTPRoute.Rules = s.HTTPRoute.Rules[:1]
			},
			live: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules = []gatewayv1.HTTPRouteRule{theirRule(), r.Spec.Rules[0], r.Spec.Rules[1], theirRule()}
			},
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules = []gatewayv1.HTTPRouteRule{r.Spec.Rules[0], r.Spec.Rules[1], r.Spec.Rules[3]}
				delete(r.Annotations, appv1.AnnotationRouteFilters)
			},
			wantChanged: []string{"rules", "filters' record"},
		},
		{
			name: "a filter others added to our rule is kept, after ours",
			spec: withRoute,
			live: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{theirFilter()}
				r.Spec.Rules[1].Filters = []gatewayv1.HTTPRouteFilter{theirFilter(), adminHeader()}
			},
		},
		{
			name: "a filter of ours that left the spec goes, others' stay",
			spec: func(s *appv1.AppServiceSpec) {
				withRoute(s)
				s.HTTPRoute.Rules[1].Filters = nil
			},
			live: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[1].Filters = append(r.Spec.Rules[1].Filters, theirFilter())
			},
			want: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[1].Filters = []gatewayv1.HTTPRouteFilter{theirFilter()}
				delete(r.Annotations, appv1.AnnotationRouteFilters)
			},
			wantChanged: []string{"rules", "filters' record"},
		},
		{
			name: "a route written before rules had names: its rules and filters were all ours, named in one write",
			spec: withRoute,
			live: func(r *gatewayv1.HTTPRoute) {
				for i := range r.Spec.Rules {
					r.Spec.Rules[i].Name = nil
				}
				r.Spec.Rules[0].Filters = []gatewayv1.HTTPRouteFilter{theirFilter()}
				r.Annotations = nil
			},
			want: func(r *gatewayv1.HTTPRoute) {
				d := desiredRoute()
				r.Spec.Rules, r.Annotations = d.Spec.Rules, d.Annotations
			},
			wantChanged: []string{"rules", "filters' record"},
		},
	})
}

func TestOwnRuleName(t *testing.T) {
	for name, want := range map[string]bool{
		"appservice-0": true, "appservice-7": true, "appservice-12-testers": true, "appservice-3-sticky": true,
		"appservice-": false, "appservice-01": false, "appservice-x": false, "appservice-1-other": false,
		"maintenance": false, "my-appservice-0": false, "appservice-1000": false,
	} {
		if got := OwnRuleName(new(gatewayv1.SectionName(name))); got != want {
			t.Errorf("OwnRuleName(%q) = %v, want %v", name, got, want)
		}
	}
	if OwnRuleName(nil) {
		t.Error("a rule without a name counts as ours")
	}
}

func TestHTTPRouteURL(t *testing.T) {
	tests := []struct {
		name string
		edit func(*gatewayv1.HTTPRoute)
		want string
	}{
		{name: "the first hostname, the first prefix", want: "http://app.example.com/"},
		{name: "an exact first path", edit: func(r *gatewayv1.HTTPRoute) { r.Spec.Rules = r.Spec.Rules[1:] }, want: "http://app.example.com/admin"},
		{
			name: "a regular expression is no path",
			edit: func(r *gatewayv1.HTTPRoute) {
				r.Spec.Rules[0].Matches[0].Path = &gatewayv1.HTTPPathMatch{Type: new(gatewayv1.PathMatchRegularExpression), Value: new("/v[0-9]+")}
			},
			want: "http://app.example.com/",
		},
		{name: "wildcards are skipped", edit: func(r *gatewayv1.HTTPRoute) {
			r.Spec.Hostnames = []gatewayv1.Hostname{"*.example.com", "b.example.com"}
		}, want: "http://b.example.com/"},
		{name: "no hostname", edit: func(r *gatewayv1.HTTPRoute) { r.Spec.Hostnames = nil }, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := desiredRoute()
			fixtures.Tweak(tc.edit, r)
			if got := HTTPRouteURL(r); got != tc.want {
				t.Errorf("HTTPRouteURL = %q, want %q", got, tc.want)
			}
		})
	}
}
