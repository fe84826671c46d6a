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

package leader

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestExitWhenRenewalStale: the renewal check exits once the last renewal is older
// than the renew deadline, and never during a shutdown or before the first
// renewal. (TestLostLeaseExits in test/e2e cuts a real leader off.)
func TestExitWhenRenewalStale(t *testing.T) {
	// Generous against a busy machine: renewals every 20 ms against a
	// 300 ms deadline.
	const deadline, tick = 300 * time.Millisecond, 100 * time.Millisecond
	tests := []struct {
		name      string
		renewed   bool
		stopping  bool
		wantExit  bool
		keepAlive bool // renew throughout
	}{
		{name: "renewal overdue", renewed: true, wantExit: true},
		{name: "renewed in time", renewed: true, keepAlive: true},
		{name: "shutting down", renewed: true, stopping: true},
		{name: "not renewed yet", renewed: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &renewalRecordingLock{}
			if tc.renewed {
				w.wrote()
			}
			var stopping atomic.Bool
			stopping.Store(tc.stopping)
			ctx, cancel := context.WithTimeout(context.Background(), 4*deadline)
			defer cancel()
			if tc.keepAlive {
				go func() {
					for ctx.Err() == nil {
						w.wrote()
						time.Sleep(20 * time.Millisecond)
					}
				}()
			}
			exited := make(chan struct{})
			go func() {
				w.exitWhenStale(ctx, deadline, tick, &stopping, func() { close(exited) })
			}()
			select {
			case <-exited:
				if !tc.wantExit {
					t.Error("exited, want not")
				}
			case <-ctx.Done():
				if tc.wantExit {
					t.Error("did not exit")
				}
			}
		})
	}
}
