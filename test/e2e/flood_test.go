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

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"example.com/appservice-controller/internal/harness"
	"example.com/appservice-controller/internal/localcluster"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
	"example.com/appservice-controller/pkg/generated/informers/externalversions"
)

// TestMetricsEndpointUnderFlood: strangers at the metrics endpoint, on a
// control plane and a controller of the test's own (the controller leads
// a Lease and serves :8443 as the manifests run it; its reviews are its
// user's creates in the audit log):
//
//   - memory: a ServiceAccount's token looping over long paths the server
//     does not serve leaves the controller's resident memory within 10% of
//     its value before, and costs no review;
//   - idle connections: one that sends nothing is closed after the
//     header timeout, one refused is closed at once, a scraper's is kept
//     between scrapes and closed after the idle timeout;
//   - flood: 3000 requests with random tokens kept in flight, for longer
//     than the renew deadline, while 200 AppServices are created: the
//     Lease is renewed on time, the reviews stay within their budget, and
//     the 200 converge in at most 1.2× the time 200 took before the flood.
func TestMetricsEndpointUnderFlood(t *testing.T) {
	parallel(t)
	fresh := startBareCluster(t)
	const user = "flooded-controller"
	p, kube, apps := ownController(t, fresh, user, "-leader-elect", "-leader-election-namespace=default")
	if err := p.WaitReady(90 * time.Second); err != nil {
		t.Fatal(err)
	}
	scraper, stranger := floodTokens(t, kube)

	// First, on a controller with nothing else to do: no other request may
	// cost a review while the audit log is read for none.
	t.Run("memory", func(t *testing.T) {
		unservedPaths(t, fresh, p, user, stranger)
	})
	// Then side by side: the connections' checks wait on the server's
	// timeouts.
	t.Run("idle connections are closed", func(t *testing.T) {
		t.Parallel()
		idleConnections(t, p.MetricsAddr, scraper)
	})
	t.Run("flood", func(t *testing.T) {
		t.Parallel()
		flood(t, fresh, p, user, kube, apps)
	})
}

// floodTokens returns the tokens of two ServiceAccounts: a scraper's,
// bound to a role that may get /metrics, and a stranger's, bound to none.
func floodTokens(t *testing.T, kube kubernetes.Interface) (scraper, stranger string) {
	t.Helper()
	ctx := context.Background()
	const ns = "default"
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	return token("scraper"), token("stranger")
}

// metricsConn is a TLS connection to the metrics server at addr.
func metricsConn(t *testing.T, addr string) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedWithin says how long the server took to close c, nil if it did
// not within limit: a read that ends in EOF.
func closedWithin(c *tls.Conn, r *bufio.Reader, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("not closed within %s: %v", limit, err)
	}
	return time.Since(start), nil
}

// getOn sends GET path with token on c and returns the answer's code.
func getOn(t *testing.T, c *tls.Conn, r *bufio.Reader, path, token string) int {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: metrics\r\nAuthorization: Bearer %s\r\n\r\n", path, token); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// idleConnections: the server closes what it is not using. The scraper's
// connection is kept between scrapes (the idle timeout, 90 s, is longer
// than the usual scrape intervals), then closed; its second scrape may
// come during the flood, which does not refuse it.
func idleConnections(t *testing.T, addr, scraper string) {
	silent := metricsConn(t, addr)
	refused := metricsConn(t, addr)
	kept := metricsConn(t, addr)
	var wg sync.WaitGroup
	wg.Go(func() {
		// The header timeout is 10 s.
		if took, err := closedWithin(silent, bufio.NewReader(silent), 20*time.Second); err != nil || took < 5*time.Second {
			t.Errorf("a connection that sends nothing: closed after %s, %v; want after the header timeout, 10 s", took, err)
		}
	})
	wg.Go(func() {
		r := bufio.NewReader(refused)
		// 429 if the flood has begun and taken every review slot.
		if code := getOn(t, refused, r, "/metrics", "not-a-token"); code != http.StatusUnauthorized && code != http.StatusTooManyRequests {
			t.Errorf("an unknown token: %d, want 401 (or 429)", code)
		}
		if took, err := closedWithin(refused, r, 5*time.Second); err != nil {
			t.Errorf("after a refusal: %v, want the connection closed at once", err)
		} else if took > time.Second {
			t.Errorf("after a refusal: closed after %s, want at once", took)
		}
	})
	r := bufio.NewReader(kept)
	if code := getOn(t, kept, r, "/metrics", scraper); code != http.StatusOK {
		t.Fatalf("a scraper: %d, want 200", code)
	}
	// Idle, then scraped again on the same connection: kept open.
	if _, err := closedWithin(kept, r, 20*time.Second); err == nil {
		t.Fatal("the scraper's connection was closed within 20 s of a scrape")
	}
	if code := getOn(t, kept, r, "/metrics", scraper); code != http.StatusOK {
		t.Fatalf("a scraper's second scrape on its connection: %d, want 200", code)
	}
	if took, err := closedWithin(kept, r, 2*time.Minute); err != nil || took < 80*time.Second {
		t.Errorf("the scraper's idle connection: closed after %s, %v; want after the idle timeout, 90 s", took, err)
	}
	wg.Wait()
}

// unservedPaths: a stranger's token looping over long paths the metrics
// server does not serve, some within the header bound (404), some far past
// it (431, or the connection closed while the request is still being
// sent). The controller's resident memory, sampled throughout, stays
// within 10% of its value before; and no request costs a review.
func unservedPaths(t *testing.T, fresh *localcluster.Cluster, p *harness.Controller, user, token string) {
	// path is the i-th request's: within the 16 KiB header bound, or far
	// past it.
	path := func(i int) string {
		size := 15 << 10
		if i%2 == 1 {
			size = 900 << 10
		}
		return "/metrics/" + strings.Repeat(string(rune('a'+i%26)), size)
	}
	// Idle after some of them: the heap grown to what the server's
	// handshakes and buffers take before a collection, which is not
	// memory kept.
	for i := range 50 {
		sendLongPath(p.MetricsAddr, path(i), token)
	}
	idle := maxRSS(t, p, 2*time.Second, nil)
	since := time.Now()
	stop := make(chan struct{})
	peak := make(chan int64)
	go func() { peak <- maxRSS(t, p, 0, stop) }()
	const requests = 300
	codes := map[string]int{}
	for i := range requests {
		codes[sendLongPath(p.MetricsAddr, path(i), token)]++
	}
	close(stop)
	top := <-peak
	t.Logf("%d requests of unserved paths: %v; RSS %.1f MiB idle, at most %.1f MiB during", requests, codes, mib(idle), mib(top))
	for answer, n := range codes {
		if answer != "404" && answer != "431" && answer != "closed" {
			t.Errorf("%d long unserved paths answered %s, want 404, 431 or the connection closed", n, answer)
		}
	}
	if top > idle+idle/10 {
		t.Errorf("the controller's RSS rose to %.1f MiB from %.1f MiB idle, more than 10%%", mib(top), mib(idle))
	}
	if n := reviews(t, fresh, user, since, time.Now()); n > 0 {
		t.Errorf("%d reviews sent for requests of paths the server does not serve, want none", n)
	}
}

// sendLongPath sends GET path with token on a connection of its own and
// says how it was answered: the code, or "closed" when the server closed
// the connection before answering.
func sendLongPath(addr, path, token string) string {
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	w := bufio.NewWriter(c)
	_, _ = fmt.Fprintf(w, "GET %s HTTP/1.1\r\nHost: metrics\r\nAuthorization: Bearer %s\r\n\r\n", path, token)
	_ = w.Flush() // an error once the server has closed: read what it said
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) {
			return "closed"
		}
		return err.Error()
	}
	_ = resp.Body.Close()
	return fmt.Sprint(resp.StatusCode)
}

// maxRSS is the process's largest resident memory, sampled every 50 ms
// for d, or until stop is closed.
func maxRSS(t *testing.T, p *harness.Controller, d time.Duration, stop <-chan struct{}) int64 {
	var top int64
	var deadline <-chan time.Time
	if d > 0 {
		deadline = time.After(d)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rss, _, err := p.Usage()
		if err != nil {
			t.Error(err)
			return top
		}
		top = max(top, rss)
		select {
		case <-deadline:
			return top
		case <-stop:
			return top
		case <-tick.C:
		}
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// reviews counts the TokenReviews and SubjectAccessReviews user sent
// between since and until.
func reviews(t *testing.T, fresh *localcluster.Cluster, user string, since, until time.Time) int {
	t.Helper()
	writes, err := fresh.Writes(user, since)
	if err != nil {
		t.Fatal(err)
	}
	return localcluster.Reviews(writes, until)
}

// flood: 200 AppServices created on a quiet endpoint, then 200 more while
// 3000 requests with random tokens are kept in flight at it, the first
// time for longer than the renew deadline. The two times are compared in
// rounds, each measured anew, up to five: beside the other tests, one
// measure of a few seconds can be slowed by theirs by more than a fifth;
// a flood that slows the controller slows it in every round.
func flood(t *testing.T, fresh *localcluster.Cluster, p *harness.Controller, user string,
	kube kubernetes.Interface, apps clientset.Interface) {
	const n, inFlight, renewDeadline, rounds = 200, 3000, 10 * time.Second, 5
	for round := 1; round <= rounds; round++ {
		_, cpu0, _ := p.Usage()
		quiet := convergeMany(t, kube, apps, fmt.Sprintf("quiet-%d", round), n)
		_, cpu1, _ := p.Usage()
		f := harness.StartFlood(p.MetricsAddr, inFlight+200)
		floodStart := time.Now()
		// The flood at its height before the AppServices come.
		if err := f.WaitInFlight(inFlight, time.Minute); err != nil {
			t.Fatal(err)
		}
		_, cpu2, _ := p.Usage()
		flooded := convergeMany(t, kube, apps, fmt.Sprintf("flooded-%d", round), n)
		_, cpu3, _ := p.Usage()
		if round == 1 {
			// For longer than the renew deadline, whatever the 200 took.
			time.Sleep(time.Until(floodStart.Add(renewDeadline + 5*time.Second)))
		}
		least := f.Stop()
		floodEnd := time.Now()
		t.Logf("round %d: 200 AppServices converged in %s on a quiet endpoint, %s under the flood (%.2f×), "+
			"the controller's CPU %.2f s and %.2f s; the flood: %s", round, quiet.Round(time.Millisecond),
			flooded.Round(time.Millisecond), flooded.Seconds()/quiet.Seconds(), cpu1-cpu0, cpu3-cpu2, f)
		if least < inFlight {
			t.Errorf("the flood kept %d requests in flight at its least, want at least %d", least, inFlight)
		}
		// The Lease: renewed on time throughout, by the same process.
		gap, err := fresh.LongestRenewalGap(user, floodStart, floodEnd)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: the longest gap between Lease renewals during the flood of %s: %s",
			round, floodEnd.Sub(floodStart).Round(time.Second), gap.Round(time.Millisecond))
		if gap >= renewDeadline {
			t.Errorf("the Lease went %s without a renewal during the flood, past the renew deadline of %s", gap, renewDeadline)
		}
		if err := p.Exited(); err != nil {
			t.Fatalf("the flood ended the controller: %v", err)
		}
		// The reviews within their budget: 10 a second and a burst of 20.
		d := floodEnd.Sub(floodStart)
		if got, most := reviews(t, fresh, user, floodStart, floodEnd), int(10*d.Seconds())+20; got > most {
			t.Errorf("%d reviews over the %s of the flood, more than their budget of %d", got, d.Round(time.Second), most)
		}
		if flooded <= quiet*12/10 {
			return
		}
		if round == rounds {
			t.Errorf("in each of %d rounds, 200 AppServices converged under the flood in more than 1.2× their time without it", rounds)
		}
	}
}

// convergeMany creates n AppServices in a namespace of their own and
// returns how long until a watch has seen each one's status describe its
// generation, and its children exist.
func convergeMany(t *testing.T, kube kubernetes.Interface, apps clientset.Interface, ns string, n int) time.Duration {
	t.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	all := make(chan struct{})
	record := func(obj any) {
		as, ok := obj.(*appv1.AppService)
		if !ok || as.Status.ObservedGeneration != as.Generation {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !seen[as.Name] {
			seen[as.Name] = true
			if len(seen) == n {
				close(all)
			}
		}
	}
	factory := externalversions.NewSharedInformerFactoryWithOptions(apps, 0, externalversions.WithNamespace(ns))
	informer := factory.App().V1().AppServices().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	start := time.Now()
	if err := createManyWith(apps, ns, n, func(int) appv1.AppServiceSpec {
		return appv1.AppServiceSpec{Size: int32p(1), Image: "nginx:1.27", Ports: []corev1.ServicePort{{Port: 80}}}
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(3 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d AppServices converged in 3 minutes", len(seen), n)
	}
	took := time.Since(start)
	deployments, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	services, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deployments.Items) != n || len(services.Items) != n {
		t.Fatalf("%d Deployments and %d Services for %d converged AppServices", len(deployments.Items), len(services.Items), n)
	}
	return took
}
