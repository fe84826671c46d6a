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

package harness

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
)

// Flood is requests with random bearer tokens kept in flight at a
// metrics server, each on a connection of its own, sent again as soon as
// it is answered or refused. Its connections end with it, as a flooding
// process's would when it stops. (Plain TLS connections, not Go's HTTP
// transport: that would go on with the dials of cancelled requests, for
// connections to keep, and spend on 3000 requests in its queues CPU the
// controller would then be measured without.)
type Flood struct {
	ctx      context.Context
	cancel   context.CancelFunc
	connsMu  sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
	inFlight atomic.Int64
	sent     atomic.Int64
	mu       sync.Mutex
	answers  map[string]int

	samplesMu sync.Mutex
	samples   []int64
}

// answerError: a request that got no answer (refused at the handshake,
// or cut short).
const answerError = "error"

// StartFlood keeps workers requests in flight at the metrics server at
// addr until Stop.
func StartFlood(addr string, workers int) *Flood {
	ctx, cancel := context.WithCancel(context.Background())
	f := &Flood{ctx: ctx, cancel: cancel, answers: map[string]int{}}
	for range workers {
		f.wg.Go(func() {
			for ctx.Err() == nil {
				f.inFlight.Add(1)
				f.sent.Add(1)
				answer := f.request(addr)
				f.inFlight.Add(-1)
				if ctx.Err() == nil {
					f.mu.Lock()
					f.answers[answer]++
					f.mu.Unlock()
				}
			}
		})
	}
	f.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				f.samplesMu.Lock()
				f.samples = append(f.samples, f.inFlight.Load())
				f.samplesMu.Unlock()
			}
		}
	})
	return f
}

// request sends one request with a random token on a connection of its
// own, and says how it was answered: the code, or "error".
func (f *Flood) request(addr string) string {
	c, err := (&net.Dialer{}).DialContext(f.ctx, "tcp", addr)
	if err != nil {
		return answerError
	}
	defer c.Close()
	f.connsMu.Lock()
	if f.ctx.Err() != nil {
		f.connsMu.Unlock()
		return answerError
	}
	f.conns = append(f.conns, c)
	f.connsMu.Unlock()
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
	if _, err := fmt.Fprintf(tc, "GET /metrics HTTP/1.1\r\nHost: metrics\r\nAuthorization: Bearer %s\r\n\r\n", rand.String(40)); err != nil {
		return answerError
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return answerError
	}
	_ = resp.Body.Close()
	return fmt.Sprint(resp.StatusCode)
}

// WaitInFlight waits up to timeout until n requests are in flight and the
// server answers some (a flood before it may still hold the listen
// queue), then until the flood's own burst of dials is over (fewer than
// 200 connections made in a second: the refused are made again at the
// rate they are refused; past the server's listen queue, the rest wait for
// the kernel to take them), for 10 s at most; and drops the samples taken
// before.
func (f *Flood) WaitInFlight(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for f.inFlight.Load() < int64(n) || f.Answered() == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, %d requests in flight, %d answered; want %d in flight, some answered",
				timeout, f.inFlight.Load(), f.Answered(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		before := f.dialed()
		time.Sleep(time.Second)
		if f.dialed()-before < 200 {
			break
		}
	}
	f.samplesMu.Lock()
	f.samples = nil
	f.samplesMu.Unlock()
	return nil
}

// Stop ends the flood and returns the fewest requests in flight sampled
// since WaitInFlight.
func (f *Flood) Stop() int64 {
	f.samplesMu.Lock()
	least := slices.Min(append(slices.Clone(f.samples), f.inFlight.Load()))
	f.samplesMu.Unlock()
	f.cancel()
	f.connsMu.Lock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.connsMu.Unlock()
	f.wg.Wait()
	return least
}

func (f *Flood) dialed() int {
	f.connsMu.Lock()
	defer f.connsMu.Unlock()
	return len(f.conns)
}

// Answered is how many requests the server answered, refusals included.
func (f *Flood) Answered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for answer, count := range f.answers {
		if answer != answerError {
			n += count
		}
	}
	return n
}

func (f *Flood) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("%d requests sent, answered %v", f.sent.Load(), f.answers)
}
