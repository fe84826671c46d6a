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
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"

	"example.com/appservice-controller/internal/harness"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	clientset "example.com/appservice-controller/pkg/generated/clientset/versioned"
)

// cutProxy forwards TCP connections to the API server. Cut, it closes every
// open connection and holds every new one without an answer, as a network
// partition between the controller and the API server looks to the
// controller (requests hang until their own timeouts), while the API server
// itself, and the tests' own clients, carry on. Restored, it closes the held
// connections, so that clients dial again at once.
type cutProxy struct {
	listener net.Listener
	target   string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{} // forwarded, both ends
	held  map[net.Conn]struct{} // accepted while cut
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{listener: l, target: target, conns: map[net.Conn]struct{}{}, held: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.setCut(true)
	})
	return p
}

func (p *cutProxy) serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		go p.forward(client)
	}
}

func (p *cutProxy) forward(client net.Conn) {
	p.mu.Lock()
	if p.cut {
		p.held[client] = struct{}{}
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.held[client] = struct{}{}
		p.mu.Unlock()
		server.Close()
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	client.Close()
	server.Close()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// setCut cuts the connection (true) or restores it (false).
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		return
	}
	for c := range p.held {
		c.Close()
		delete(p.held, c)
	}
}

// kubeconfig writes a copy of the controller's kubeconfig that reaches the
// API server through the proxy. The serving certificate is for 127.0.0.1,
// which the proxy's address is too.
func (p *cutProxy) kubeconfig(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(controllerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + p.listener.Addr().String()
	}
	path := filepath.Join(cluster.LogDir, "..", "kubeconfig-through-proxy-"+rand.String(5))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// swapController stops the suite's controller (SIGTERM: it releases the
// lease at once) and runs another process of the binary, with extra flags,
// as the leader in its place. When the test ends, that process is stopped and
// the suite's controller is started again and waited for.
func swapController(t *testing.T, name string, args ...string) *harness.Controller {
	t.Helper()
	shared := ctrl
	if _, err := shared.Stop(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping the suite's controller: %v", err)
	}
	p, err := newControllerProcess(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	ctrl = p
	t.Cleanup(func() {
		_, _ = p.Stop(syscall.SIGTERM)
		ctrl = shared
		if err := shared.Start(); err != nil {
			t.Errorf("restarting the suite's controller: %v", err)
			return
		}
		if err := shared.WaitReady(time.Minute); err != nil {
			t.Error(err)
			return
		}
		waitLeading(t, shared)
	})
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(time.Minute); err != nil {
		t.Fatal(err)
	}
	waitLeading(t, p)
	return p
}

// waitLeading waits until p holds the lease.
func waitLeading(t *testing.T, p *harness.Controller) {
	t.Helper()
	var id string
	eventually(t, 30*time.Second, func() error {
		var err error
		id, err = p.Identity()
		return err
	})
	// A standby waits out a lease it finds held: up to its duration (15 s
	// by default) when the holder died without releasing it.
	waitLeader(t, id, 45*time.Second)
}

// createMany creates n AppServices app-0000 … in ns, 16 at a time, as fast
// as the API server takes them.
func createMany(ns string, n int, spec func(i int) appv1.AppServiceSpec) error {
	return createManyWith(apps, ns, n, spec)
}

// createManyWith is createMany with the client of another control plane.
func createManyWith(apps clientset.Interface, ns string, n int, spec func(i int) appv1.AppServiceSpec) error {
	return sixteenAtATime(n, func(i int) error {
		_, err := apps.AppV1().AppServices(ns).Create(context.Background(), &appv1.AppService{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%04d", i)},
			Spec:       spec(i),
		}, metav1.CreateOptions{})
		return err
	})
}

// sixteenAtATime calls create for 0 … n-1, 16 calls at a time, and returns
// the first error, if any. Not all n at once: the admin's requests are
// exempt from the API server's priority and fairness, and hundreds of
// them at a time starved a loaded API server for over a minute, its
// controller's Lease renewals among them.
func sixteenAtATime(n int, create func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := create(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// converged returns nil when every AppService in ns has exactly its two
// children, controlled by it, and a status describing its current
// generation and its Deployment, and when nothing in ns carries our label
// without being controlled by an AppService that exists (no orphans).
// wantAppServices, when not negative, is how many there must be.
func converged(ctx context.Context, ns string, wantAppServices int) error {
	list, err := apps.AppV1().AppServices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if wantAppServices >= 0 && len(list.Items) != wantAppServices {
		return fmt.Errorf("%d AppServices, want %d", len(list.Items), wantAppServices)
	}
	deployments, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: appv1.LabelAppService})
	if err != nil {
		return err
	}
	services, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: appv1.LabelAppService})
	if err != nil {
		return err
	}
	byName := map[string]*appv1.AppService{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	var problems []error
	deploymentOf := map[string]int{}
	serviceOf := map[string]int{}
	for _, d := range deployments.Items {
		as := byName[d.Name]
		if as == nil || ownedBy(&d, as) != nil {
			problems = append(problems, fmt.Errorf("Deployment %s is not controlled by an AppService of its name (owners %v)", d.Name, d.OwnerReferences))
			continue
		}
		deploymentOf[d.Name]++
		st := as.Status
		switch {
		case st.ObservedGeneration != as.Generation:
			problems = append(problems, fmt.Errorf("AppService %s: observedGeneration %d, generation %d", as.Name, st.ObservedGeneration, as.Generation))
		case st.Replicas != d.Status.Replicas || st.ReadyReplicas != d.Status.ReadyReplicas || st.AvailableReplicas != d.Status.AvailableReplicas:
			problems = append(problems, fmt.Errorf("AppService %s: status replicas %d/%d/%d, Deployment's %d/%d/%d", as.Name,
				st.Replicas, st.ReadyReplicas, st.AvailableReplicas, d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas))
		case d.Spec.Replicas == nil || as.Spec.Size == nil || *d.Spec.Replicas != wantReplicas(as):
			problems = append(problems, fmt.Errorf("Deployment %s: replicas %v, spec.size %v, suspend %v", d.Name, d.Spec.Replicas, as.Spec.Size, as.Spec.Suspend))
		}
		if c := condition(as, appv1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
			problems = append(problems, fmt.Errorf("AppService %s: Degraded is %+v", as.Name, c))
		}
	}
	for _, s := range services.Items {
		as := byName[s.Name]
		if as == nil || ownedBy(&s, as) != nil {
			problems = append(problems, fmt.Errorf("Service %s is not controlled by an AppService of its name (owners %v)", s.Name, s.OwnerReferences))
			continue
		}
		serviceOf[s.Name]++
	}
	for name := range byName {
		if deploymentOf[name] != 1 || serviceOf[name] != 1 {
			problems = append(problems, fmt.Errorf("AppService %s has %d Deployments and %d Services", name, deploymentOf[name], serviceOf[name]))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problems, the first: %w", len(problems), errors.Join(problems[:min(3, len(problems))]...))
	}
	return nil
}

// wantReplicas is the replica count of an AppService's Deployment that is
// not autoscaled: its size, or 0 while suspended.
func wantReplicas(as *appv1.AppService) int32 {
	if as.Spec.Suspend != nil && *as.Spec.Suspend {
		return 0
	}
	return *as.Spec.Size
}

// creates counts the controller's create requests in ns since t0 by
// "resource/name" and response code.
func creates(t *testing.T, since time.Time, ns string) map[string]map[int]int {
	t.Helper()
	out := map[string]map[int]int{}
	for _, w := range controllerWrites(t, since, ns) {
		if w.Verb != "create" || w.ObjectRef == nil || w.ResponseStatus == nil || w.ObjectRef.Resource == "events" {
			continue
		}
		key := w.ObjectRef.Resource + "/" + w.ObjectRef.Name
		if out[key] == nil {
			out[key] = map[int]int{}
		}
		out[key][w.ResponseStatus.Code]++
	}
	return out
}
