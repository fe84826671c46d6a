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

// Package leader runs the controller's workers only while this replica holds
// a Lease (coordination.k8s.io/v1), with client-go's leader election, and
// exits the process as soon as it can no longer be sure it leads.
//
// It imports nothing of this repository.
package leader

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Options configure leader election among the controller's replicas (the
// -leader-elect flags).
type Options struct {
	Enabled bool
	// Namespace and ID name the Lease.
	Namespace     string
	ID            string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// Run runs work only while this replica holds the Lease; the other
// replicas wait with warm caches, so failover costs no relisting.
//
//   - Shutdown (ctx cancelled): work returns once its running syncs finish,
//     and only then is the Lease released, so that the successor starts at
//     once (not after the lease duration) and never overlaps with us.
//   - Losing the Lease (renewal failed past the renew deadline): another
//     replica may already lead, so this one stops writing at once: the
//     process exits, as kube-controller-manager's does. client-go reports
//     the loss only after it has also tried to release the Lease, which can
//     take another renew deadline: by then a standby may have taken over.
//     So the lock records each successful renewal, and a check
//     (exitWhenStale) exits as soon as the last one is older than the renew
//     deadline, which is always shorter than the lease duration a standby
//     waits for.
func Run(ctx context.Context, client kubernetes.Interface, identity string, o Options,
	watchdog *leaderelection.HealthzAdaptor, work func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	lock := &resourcelock.LeaseLock{
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	lock.LeaseMeta.Namespace, lock.LeaseMeta.Name = o.Namespace, o.ID
	renewals := &renewalRecordingLock{Interface: lock}

	// The elector's own context outlives ctx until work has returned.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	var stopping atomic.Bool
	var workErr error
	workDone := make(chan struct{})
	var leading atomic.Bool

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            renewals,
		Name:            o.ID,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				leading.Store(true)
				go renewals.exitWhenStale(leaderCtx, o.RenewDeadline, o.RetryPeriod, &stopping, func() {
					logger.Error(nil, "Lost the lease: not renewed within the renew deadline; exiting so that no two replicas write",
						"lease", o.Namespace+"/"+o.ID, "renewDeadline", o.RenewDeadline)
					klog.FlushAndExit(klog.ExitFlushTimeout, 1)
				})
				logger.Info("Acquired the lease: starting workers", "lease", o.Namespace+"/"+o.ID)
				workErr = work(ctx)
				close(workDone)
			},
			OnStoppedLeading: func() {
				if stopping.Load() {
					return
				}
				logger.Error(nil, "Lost the lease: exiting so that no two replicas write", "lease", o.Namespace+"/"+o.ID)
				klog.FlushAndExit(klog.ExitFlushTimeout, 1)
			},
			OnNewLeader: func(leader string) {
				if leader != identity {
					logger.Info("Another replica leads; standing by", "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return err
	}

	go func() {
		<-ctx.Done()
		if leading.Load() {
			<-workDone
		}
		stopping.Store(true)
		stopElector()
	}()
	logger.Info("Waiting to acquire the lease", "lease", o.Namespace+"/"+o.ID, "identity", identity)
	elector.Run(electorCtx)
	if leading.Load() {
		<-workDone
		logger.Info("Released the lease")
	}
	return workErr
}

// DefaultNamespace is the namespace of the Pod's service
// account when running in a cluster, else "default".
func DefaultNamespace() string {
	if data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "default"
}

// renewalRecordingLock is the Lease lock, recording when this replica last wrote it
// successfully: a renewal (or the acquisition).
type renewalRecordingLock struct {
	resourcelock.Interface
	lastWrite atomic.Pointer[time.Time] // with its monotonic clock reading
}

func (w *renewalRecordingLock) wrote() {
	now := time.Now()
	w.lastWrite.Store(&now)
}

func (w *renewalRecordingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := w.Interface.Create(ctx, ler)
	if err == nil {
		w.wrote()
	}
	return err
}

func (w *renewalRecordingLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := w.Interface.Update(ctx, ler)
	if err == nil {
		w.wrote()
	}
	return err
}

// exitWhenStale calls exit once the last successful write of the Lease is
// older than renewDeadline, checking four times a tick (the retry period),
// until ctx ends or a shutdown (stopping) is under way.
func (w *renewalRecordingLock) exitWhenStale(ctx context.Context, renewDeadline, tick time.Duration, stopping *atomic.Bool, exit func()) {
	t := time.NewTicker(tick / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if stopping.Load() {
			return
		}
		if last := w.lastWrite.Load(); last != nil && time.Since(*last) > renewDeadline {
			exit()
			return
		}
	}
}
