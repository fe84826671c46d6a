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

package servers

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// limitListener accepts at most n connections open at once: Accept waits
// for one to close. golang.org/x/net's LimitListener does the same, but
// its connections hide the TCP connection inside, whose file descriptor
// peerGone needs; these are the TCP connection itself.
func limitListener(l net.Listener, n int) net.Listener {
	return &limitedListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	slots     chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	tcp, ok := c.(*net.TCPConn)
	if !ok {
		<-l.slots
		_ = c.Close()
		return nil, errors.New("limitListener: not a TCP connection")
	}
	return &limitedConn{TCPConn: tcp, release: func() { <-l.slots }}, nil
}

func (l *limitedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	*net.TCPConn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(c.release)
	return err
}

// peerGone says whether the client of c has closed or reset it, without
// reading what it sent: a look (MSG_PEEK) that does not wait. false when
// that cannot be told.
func peerGone(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	_ = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = n == 0 && err == nil || errors.Is(err, syscall.ECONNRESET)
		return true
	})
	return gone
}
