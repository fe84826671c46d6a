//go:build e2e

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

package admission

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
)

// The generators of the blocks that ask for more children: the
// ServiceAccount, the PodDisruptionBudget and the HorizontalPodAutoscaler,
// near the edges their own validation checks.

func genChildren(r *specRand, s *appv1.AppServiceSpec) {
	if r.IntN(5) == 0 {
		s.ServiceAccount = genServiceAccount(r)
	}
	if r.IntN(5) == 0 {
		s.DisruptionBudget = genDisruptionBudget(r)
	}
	if r.IntN(4) == 0 {
		s.Autoscaling = genAutoscaling(r)
	}
	if r.IntN(4) == 0 {
		genIngress(r, s)
	}
	if r.IntN(4) == 0 {
		genHTTPRoute(r, s)
	}
}

// genHTTPRoute draws an httpRoute and, most of the time, the ports it
// routes to.
func genHTTPRoute(r *specRand, s *appv1.AppServiceSpec) {
	if len(s.Ports) == 0 && (r.IntN(6) > 0 || !bad(r)) {
		s.Ports = []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "admin", Port: 9000, TargetPort: intstr.FromInt32(9090)}}[:1+r.IntN(2)]
	}
	route := &appv1.HTTPRoute{}
	for range 1 + r.IntN(3) {
		p := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(pick(r, "gw", "public", "a.b"))}
		if r.IntN(3) == 0 {
			p.Namespace = new(gatewayv1.Namespace(pick(r, "infra", "gateways")))
		}
		if r.IntN(2) == 0 {
			p.SectionName = new(gatewayv1.SectionName(pick(r, "http", "https", "web-1")))
		}
		if r.IntN(4) == 0 {
			p.Port = new(pick(r, gatewayv1.PortNumber(80), 443, 8080))
		}
		if bad(r) {
			switch r.IntN(4) {
			case 0:
				p.Name = gatewayv1.ObjectName(pick(r, "", strings.Repeat("n", 254)))
			case 1:
				p.Namespace = new(gatewayv1.Namespace(pick(r, "Infra", "a.b")))
			case 2:
				p.SectionName = new(gatewayv1.SectionName(pick(r, "HTTP", "")))
			default:
				p.Port = new(pick(r, gatewayv1.PortNumber(0), 70000))
			}
		}
		route.ParentRefs = append(route.ParentRefs, p)
	}
	for range r.IntN(3) {
		h := pick(r, "app.example.com", "*.example.com", "a", strings.Repeat("h", 63)+".example.com")
		if bad(r) {
			h = pick(r, "App.example.com", "1.2.3.4", "*", "a..b", "a_b.com", "*.*.com")
		}
		route.Hostnames = append(route.Hostnames, gatewayv1.Hostname(h))
	}
	for range r.IntN(3) {
		route.Rules = append(route.Rules, genRouteRule(r))
	}
	s.HTTPRoute = route
}

func genRouteRule(r *specRand) appv1.HTTPRouteRule {
	var rule appv1.HTTPRouteRule
	for range r.IntN(3) {
		var m gatewayv1.HTTPRouteMatch
		if r.IntN(2) == 0 {
			m.Path = &gatewayv1.HTTPPathMatch{
				Type:  new(pick(r, gatewayv1.PathMatchPathPrefix, gatewayv1.PathMatchExact, gatewayv1.PathMatchRegularExpression)),
				Value: new(pick(r, "/", "/api", "/a/b", "/~x", "/a%20b")),
			}
			if bad(r) {
				m.Path.Value = new(pick(r, "api", "/a//b", "/a/./b", "/a%2fb", "/a#b", "/a/..", "/a b"))
			}
		}
		if r.IntN(3) == 0 {
			m.Headers = []gatewayv1.HTTPHeaderMatch{{Name: gatewayv1.HTTPHeaderName(pick(r, "x-env", "X-Canary")), Value: pick(r, "prod", "true")}}
			if bad(r) {
				m.Headers = append(m.Headers, m.Headers[0])
			}
		}
		if r.IntN(4) == 0 {
			m.QueryParams = []gatewayv1.HTTPQueryParamMatch{{Name: "version", Value: pick(r, "2", "beta")}}
		}
		if r.IntN(4) == 0 {
			m.Method = new(pick(r, gatewayv1.HTTPMethodGet, gatewayv1.HTTPMethodPost))
		}
		rule.Matches = append(rule.Matches, m)
	}
	for range r.IntN(3) {
		var f gatewayv1.HTTPRouteFilter
		switch r.IntN(4) {
		case 0:
			f.Type = gatewayv1.HTTPRouteFilterRequestHeaderModifier
			f.RequestHeaderModifier = &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-from", Value: "appservice"}}, Remove: []string{"x-debug"}}
		case 1:
			f.Type = gatewayv1.HTTPRouteFilterResponseHeaderModifier
			f.ResponseHeaderModifier = &gatewayv1.HTTPHeaderFilter{Add: []gatewayv1.HTTPHeader{{Name: "x-served-by", Value: "app"}}}
		case 2:
			f.Type = gatewayv1.HTTPRouteFilterURLRewrite
			f.URLRewrite = &gatewayv1.HTTPURLRewriteFilter{}
			if r.IntN(2) == 0 {
				f.URLRewrite.Hostname = new(gatewayv1.PreciseHostname("internal.example.com"))
			} else {
				f.URLRewrite.Path = &gatewayv1.HTTPPathModifier{Type: gatewayv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: new("/v2")}
			}
		default:
			f.Type = gatewayv1.HTTPRouteFilterRequestMirror
			f.RequestMirror = &gatewayv1.HTTPRequestMirrorFilter{BackendRef: gatewayv1.BackendObjectReference{Name: "shadow", Port: new(gatewayv1.PortNumber(80))}}
			if r.IntN(2) == 0 {
				f.RequestMirror.Percent = new(int32(pick(r, 0, 10, 100)))
			}
		}
		if bad(r) {
			switch r.IntN(3) {
			case 0:
				f.Type = gatewayv1.HTTPRouteFilterRequestRedirect
				f.RequestRedirect = &gatewayv1.HTTPRequestRedirectFilter{StatusCode: new(301)}
			case 1:
				f.RequestHeaderModifier = &gatewayv1.HTTPHeaderFilter{} // beside another type
			default:
				f.Type = "Rewrite"
			}
		}
		rule.Filters = append(rule.Filters, f)
	}
	if r.IntN(3) == 0 {
		rule.Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: new(gatewayv1.Duration(pick(r, "10s", "1m", "0s", "500ms")))}
		if r.IntN(2) == 0 {
			rule.Timeouts.BackendRequest = new(gatewayv1.Duration(pick(r, "5s", "2m")))
		}
		if bad(r) {
			rule.Timeouts.Request = new(gatewayv1.Duration(pick(r, "10", "1d", "-1s")))
		}
	}
	if r.IntN(2) == 0 {
		rule.Port = new(pick(r, intstr.FromInt32(80), intstr.FromString("http"), intstr.FromString("admin"), intstr.FromInt32(9000)))
		if bad(r) {
			rule.Port = new(pick(r, intstr.FromInt32(81), intstr.FromString("web"), intstr.FromString("")))
		}
	}
	return rule
}

// genGRPCRoute gives one spec in six a grpcRoute (beside the httpRoute it
// may have) and, most of the time, the ports it routes to, from a source
// of its own seeded by a hash of the spec, as genCanary is, so that the
// other generators' draws stay as they were; bad values come as often as
// in the rest of the spec (badOdds).
func genGRPCRoute(c *corpusCase, badOdds int) {
	spec, err := json.Marshal(c.Spec)
	if err != nil {
		panic(err) // a struct of the API's types always encodes
	}
	h := fnv.New64a()
	h.Write([]byte("grpcRoute"))
	h.Write([]byte(c.Name))
	h.Write(spec)
	r := &specRand{Rand: rand.New(rand.NewPCG(h.Sum64(), 0x94d049bb133111eb)), badOdds: badOdds}
	if r.IntN(6) != 0 {
		return
	}
	s := &c.Spec
	if len(s.Ports) == 0 && (r.IntN(6) > 0 || !bad(r)) {
		s.Ports = []corev1.ServicePort{{Name: "grpc", Port: 50051}, {Name: "admin", Port: 9000}}[:1+r.IntN(2)]
	}
	route := &appv1.GRPCRoute{}
	for i := range 1 + r.IntN(2) {
		p := gatewayv1.ParentReference{Name: gatewayv1.ObjectName([]string{"gw", "grpc"}[i])}
		if r.IntN(2) == 0 {
			p.SectionName = new(gatewayv1.SectionName(pick(r, "grpc", "h2c")))
		}
		if bad(r) {
			p.Name = gatewayv1.ObjectName(pick(r, "", strings.Repeat("n", 254)))
		}
		route.ParentRefs = append(route.ParentRefs, p)
	}
	if r.IntN(2) == 0 {
		h := pick(r, "grpc.example.com", "*.example.com")
		if bad(r) {
			h = pick(r, "Grpc.example.com", "1.2.3.4", "*")
		}
		route.Hostnames = []gatewayv1.Hostname{gatewayv1.Hostname(h)}
	}
	for range r.IntN(3) {
		route.Rules = append(route.Rules, genGRPCRouteRule(r, s.Ports))
	}
	s.GRPCRoute = route
}

// genGRPCRouteRule draws a rule, to one of ports.
func genGRPCRouteRule(r *specRand, ports []corev1.ServicePort) appv1.GRPCRouteRule {
	var rule appv1.GRPCRouteRule
	for range r.IntN(3) {
		var m gatewayv1.GRPCRouteMatch
		if r.IntN(3) > 0 {
			// A service, a method or both; names by an exact match,
			// patterns by a regular expression.
			regex := r.IntN(3) == 0
			m.Method = &gatewayv1.GRPCMethodMatch{Type: new(gatewayv1.GRPCMethodMatchExact)}
			if regex {
				m.Method.Type = new(gatewayv1.GRPCMethodMatchRegularExpression)
			}
			both := r.IntN(3)
			if both != 1 {
				m.Method.Service = new(pick(r, "shop.Cart", "grpc.health.v1.Health"))
				if regex {
					m.Method.Service = new(pick(r, "shop\\..*", "shop.Cart"))
				}
			}
			if both != 0 {
				m.Method.Method = new(pick(r, "Get", "Check"))
				if regex {
					m.Method.Method = new(pick(r, "List.*", "Get"))
				}
			}
			if bad(r) {
				switch r.IntN(3) {
				case 0:
					m.Method.Service = new(pick(r, "shop/Cart", "1shop", "shop..Cart"))
				case 1:
					m.Method.Method = new(pick(r, "Get.Cart", "1Get"))
				default:
					m.Method.Service, m.Method.Method = nil, nil
				}
			}
		}
		if r.IntN(3) == 0 {
			m.Headers = []gatewayv1.GRPCHeaderMatch{{Name: gatewayv1.GRPCHeaderName(pick(r, "x-env", "X-Canary")), Value: pick(r, "prod", "true")}}
			if bad(r) {
				m.Headers = append(m.Headers, m.Headers[0])
			}
		}
		rule.Matches = append(rule.Matches, m)
	}
	for _, kind := range r.Perm(3)[:r.IntN(3)] {
		var f gatewayv1.GRPCRouteFilter
		switch kind {
		case 0:
			f.Type = gatewayv1.GRPCRouteFilterRequestHeaderModifier
			f.RequestHeaderModifier = &gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "x-from", Value: "appservice"}}}
		case 1:
			f.Type = gatewayv1.GRPCRouteFilterResponseHeaderModifier
			f.ResponseHeaderModifier = &gatewayv1.HTTPHeaderFilter{Remove: []string{"x-debug"}}
		default:
			f.Type = gatewayv1.GRPCRouteFilterRequestMirror
			f.RequestMirror = &gatewayv1.HTTPRequestMirrorFilter{BackendRef: gatewayv1.BackendObjectReference{Name: "shadow", Port: new(gatewayv1.PortNumber(50051))}}
		}
		if bad(r) {
			if r.IntN(2) == 0 {
				f.RequestHeaderModifier = &gatewayv1.HTTPHeaderFilter{} // beside another type
			} else {
				f.Type = "URLRewrite"
			}
		}
		rule.Filters = append(rule.Filters, f)
	}
	if r.IntN(2) == 0 && len(ports) > 0 {
		p := pick(r, ports...)
		rule.Port = new(intstr.FromInt32(p.Port))
		if p.Name != "" && r.IntN(2) == 0 {
			rule.Port = new(intstr.FromString(p.Name))
		}
		if bad(r) {
			rule.Port = new(pick(r, intstr.FromInt32(81), intstr.FromString("web")))
		}
	}
	return rule
}

// genIngress draws an ingress and, most of the time, the ports it routes to.
func genIngress(r *specRand, s *appv1.AppServiceSpec) {
	if len(s.Ports) == 0 && (r.IntN(6) > 0 || !bad(r)) {
		s.Ports = []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "admin", Port: 9000, TargetPort: intstr.FromInt32(9090)}}[:1+r.IntN(2)]
	}
	in := &appv1.Ingress{}
	if r.IntN(3) == 0 {
		in.ClassName = pick(r, "nginx", "traefik", "a.b-c")
		if bad(r) {
			in.ClassName = pick(r, "Nginx", "a_b", strings.Repeat("c", 254))
		}
	}
	if r.IntN(3) == 0 {
		in.Annotations = map[string]string{}
		for range 1 + r.IntN(3) {
			k := pick(r, "nginx.ingress.kubernetes.io/rewrite-target", "cert-manager.io/cluster-issuer", "kubernetes.io/ingress.class", "note")
			if bad(r) {
				k = pick(r, "a b", "/x", appv1.AnnotationAnnotations)
			}
			v := pick(r, "/", "letsencrypt", "", strings.Repeat("v", 4096))
			if k == "kubernetes.io/ingress.class" {
				v = pick(r, in.ClassName, "nginx", "other")
			}
			in.Annotations[k] = v
		}
	}
	for range 1 + r.IntN(3) {
		h := appv1.IngressHost{Host: pick(r, "app.example.com", "", "*.example.com", "a", strings.Repeat("h", 63)+".example.com", "999.1.1.1")}
		if bad(r) {
			h.Host = pick(r, "App.example.com", "1.2.3.4", "a..b", "*", "a.*.com", "a_b.com", "http://a.com", strings.Repeat("h", 64)+".com")
		}
		for range 1 + r.IntN(3) {
			p := appv1.IngressPath{}
			if r.IntN(2) == 0 {
				p.Path = pick(r, "/", "/api", "/a/b/", "/.well-known/x", "/a%20b", "/~user")
				if bad(r) {
					p.Path = pick(r, "api", "/a//b", "/a/./b", "/a/../b", "/a%2fb", "/a/..", "/a/.", "//")
				}
			}
			if r.IntN(2) == 0 {
				p.PathType = pick(r, networkingv1.PathTypePrefix, networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific)
				if bad(r) {
					p.PathType = "Regex"
				}
			}
			if r.IntN(2) == 0 {
				p.Port = new(pick(r, intstr.FromInt32(80), intstr.FromString("http"), intstr.FromString("admin"), intstr.FromInt32(9000)))
				if bad(r) {
					p.Port = new(pick(r, intstr.FromInt32(81), intstr.FromInt32(9090), intstr.FromString("web"), intstr.FromInt32(0), intstr.FromString("")))
				}
			}
			h.Paths = append(h.Paths, p)
		}
		in.Hosts = append(in.Hosts, h)
	}
	if r.IntN(3) == 0 {
		tls := networkingv1.IngressTLS{Hosts: []string{pick(r, "app.example.com", "*.example.com")}, SecretName: pick(r, "", "app-tls", "a.b")}
		if bad(r) {
			tls.Hosts = append(tls.Hosts, pick(r, "A.com", "a..b", "*"))
		}
		if bad(r) {
			tls.SecretName = pick(r, "App_TLS", strings.Repeat("s", 254))
		}
		in.TLS = append(in.TLS, tls)
	}
	s.Ingress = in
}

func genServiceAccount(r *specRand) *appv1.ServiceAccount {
	sa := &appv1.ServiceAccount{Create: r.IntN(3) > 0}
	if !sa.Create || r.IntN(2) == 0 {
		sa.Name = pick(r, "builder", "a.b-c", strings.Repeat("s", 253))
		if bad(r) {
			sa.Name = pick(r, "", "Builder", "a_b", strings.Repeat("s", 254), "-a", "a..b")
		}
	}
	if (sa.Create || bad(r)) && r.IntN(2) == 0 {
		sa.Annotations = map[string]string{}
		for range 1 + r.IntN(3) {
			k := pick(r, "eks.amazonaws.com/role-arn", "iam.gke.io/gcp-service-account", "Example.COM/Mixed_Case", "note", strings.Repeat("k", 63))
			if bad(r) {
				k = pick(r, "a b", "/x", strings.Repeat("k", 64), appv1.AnnotationAnnotations, "-a/b")
			}
			sa.Annotations[k] = pick(r, "arn:aws:iam::111122223333:role/app", "", strings.Repeat("v", 4096))
		}
	}
	if r.IntN(3) == 0 {
		sa.AutomountToken = new(r.IntN(2) == 0)
	}
	return sa
}

func genDisruptionBudget(r *specRand) *appv1.DisruptionBudget {
	value := func() *intstr.IntOrString {
		v := pick(r, intstr.FromInt32(0), intstr.FromInt32(1), intstr.FromInt32(2147483647), intstr.FromString("50%"), intstr.FromString("100%"), intstr.FromString("0%"), intstr.FromString("007%"))
		if bad(r) {
			v = pick(r, intstr.FromInt32(-1), intstr.FromString("101%"), intstr.FromString("50"), intstr.FromString("%"), intstr.FromString("1.5%"), intstr.FromString("-5%"))
		}
		return &v
	}
	b := &appv1.DisruptionBudget{}
	switch r.IntN(6) {
	case 0:
		if bad(r) {
			b.MinAvailable, b.MaxUnavailable = value(), value()
		} else {
			b.MinAvailable = value()
		}
	case 1, 2:
		b.MinAvailable = value()
	default:
		b.MaxUnavailable = value()
	}
	return b
}

func genAutoscaling(r *specRand) *appv1.Autoscaling {
	a := &appv1.Autoscaling{MaxReplicas: pick(r, int32(1), 3, 10, 2147483647)}
	if r.IntN(2) == 0 {
		a.MinReplicas = new(pick(r, int32(1), 2, 3))
		if bad(r) {
			a.MinReplicas = new(pick(r, int32(0), -1, 11))
		}
	}
	if bad(r) {
		a.MaxReplicas = pick(r, int32(0), -3)
	}
	percent := func() *int32 {
		v := pick(r, int32(1), 50, 80, 150, 2147483647)
		if bad(r) {
			v = pick(r, int32(0), -10)
		}
		return &v
	}
	if r.IntN(2) == 0 {
		a.TargetCPUUtilizationPercentage = percent()
	}
	if r.IntN(3) == 0 {
		a.TargetMemoryUtilizationPercentage = percent()
	}
	if r.IntN(3) == 0 {
		a.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		if r.IntN(2) == 0 {
			a.Behavior.ScaleUp = genScalingRules(r)
		}
		if r.IntN(2) == 0 {
			a.Behavior.ScaleDown = genScalingRules(r)
		}
	}
	return a
}

func genScalingRules(r *specRand) *autoscalingv2.HPAScalingRules {
	rules := &autoscalingv2.HPAScalingRules{}
	if r.IntN(2) == 0 {
		rules.StabilizationWindowSeconds = new(pick(r, int32(0), 60, 300, 3600))
		if bad(r) {
			rules.StabilizationWindowSeconds = new(pick(r, int32(-1), 3601))
		}
	}
	if r.IntN(2) == 0 {
		rules.SelectPolicy = new(pick(r, autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect))
		if bad(r) {
			rules.SelectPolicy = new(autoscalingv2.ScalingPolicySelect("max"))
		}
	}
	if r.IntN(2) == 0 {
		n := 1 + r.IntN(3)
		if bad(r) {
			n = 0
			rules.Policies = []autoscalingv2.HPAScalingPolicy{}
		}
		for range n {
			p := autoscalingv2.HPAScalingPolicy{
				Type:          pick(r, autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy),
				Value:         pick(r, int32(1), 4, 100, 2147483647),
				PeriodSeconds: pick(r, int32(1), 15, 60, 1800),
			}
			if bad(r) {
				switch r.IntN(3) {
				case 0:
					p.Type = pick[autoscalingv2.HPAScalingPolicyType](r, "pods", "Replicas")
				case 1:
					p.Value = pick(r, int32(0), -1)
				default:
					p.PeriodSeconds = pick(r, int32(0), 1801, -15)
				}
			}
			rules.Policies = append(rules.Policies, p)
		}
	}
	if r.IntN(3) == 0 {
		rules.Tolerance = new(resource.MustParse(pick(r, "0", "0.1", "50m", "1", "0.05")))
		if bad(r) {
			rules.Tolerance = new(resource.MustParse(pick(r, "-0.1", "-1")))
		}
	}
	return rules
}
