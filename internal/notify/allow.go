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

package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Allowed is where the controller may post (--notification-allowed): hosts
// by name ("hooks.slack.com", or "*.example.com" for its subdomains) and
// networks by CIDR ("203.0.113.0/24"). A post goes to a host named in it,
// or to an address, as dialled, inside one of its networks; any other is
// refused before a byte is sent. A nil Allowed allows every address.
type Allowed struct {
	names []string
	nets  []netip.Prefix
}

// ParseAllowed reads the flag's entries; none: nil, every address.
func ParseAllowed(entries []string) (*Allowed, error) {
	var a Allowed
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		switch {
		case e == "":
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR: %w", e, err)
			}
			a.nets = append(a.nets, p.Masked())
		default:
			if ip, err := netip.ParseAddr(e); err == nil {
				a.nets = append(a.nets, netip.PrefixFrom(ip, ip.BitLen()))
				continue
			}
			if strings.ContainsAny(strings.TrimPrefix(e, "*."), "*:/ ") {
				return nil, fmt.Errorf("%q is neither a host name (a *. prefix for its subdomains) nor a CIDR", e)
			}
			a.names = append(a.names, e)
		}
	}
	if len(a.names) == 0 && len(a.nets) == 0 {
		return nil, nil
	}
	return &a, nil
}

// ErrNotAllowed: the address is outside --notification-allowed.
var ErrNotAllowed = errors.New("the address is not among those --notification-allowed lets the controller post to")

// byName reports whether host is one of the names.
func (a *Allowed) byName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, n := range a.names {
		if n == host || (strings.HasPrefix(n, "*.") && strings.HasSuffix(host, n[1:])) {
			return true
		}
	}
	return false
}

// inNets reports whether the dialled address is inside one of the nets.
func (a *Allowed) inNets(address string) bool {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return false
	}
	for _, p := range a.nets {
		if p.Contains(ap.Addr().Unmap()) {
			return true
		}
	}
	return false
}

// Transport is the HTTP transport the deliveries use: no proxy (what the
// allowed list checks is what is dialled), no redirect followed (the
// client's), and, with a, a dialer that refuses what a does not allow:
// checked on the address dialled, after the name resolved, so that a name
// that resolves to an address inside the cluster is refused too.
func Transport(a *Allowed) *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		DialContext: dialer.DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 100, MaxIdleConnsPerHost: 8,
		IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second,
	}
	if a == nil {
		return t
	}
	checked := *dialer
	checked.Control = func(_, address string, _ syscall.RawConn) error {
		if !a.inNets(address) {
			return ErrNotAllowed
		}
		return nil
	}
	t.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(address); err == nil && a.byName(host) {
			return dialer.DialContext(ctx, network, address)
		}
		return checked.DialContext(ctx, network, address)
	}
	return t
}
