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
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"example.com/appservice-controller/internal/metrics"
	"example.com/appservice-controller/internal/plural"
	appv1 "example.com/appservice-controller/pkg/apis/app/v1"
	listers "example.com/appservice-controller/pkg/generated/listers/app/v1"
)

// Config is the Sender's configuration (main.go's flags).
type Config struct {
	// Allowed is where it may post (nil: anywhere).
	Allowed *Allowed
	// GiveUpAfter bounds a delivery, from its edge: then it is given up.
	GiveUpAfter time.Duration
	// Parallel is how many posts may be in flight at once (a delivery
	// waiting out its backoff holds none).
	Parallel int
	// TryTimeout bounds one post.
	TryTimeout time.Duration
}

// DefaultConfig is main.go's defaults.
var DefaultConfig = Config{GiveUpAfter: time.Hour, Parallel: 64, TryTimeout: 30 * time.Second}

// SecretGetter reads a Secret (a GET each time: Secrets are never cached).
type SecretGetter func(ctx context.Context, namespace, name string) (*corev1.Secret, error)

// Sender sends what the status says is owed, off the syncs' path, and
// remembers each delivery's result until the status records it.
type Sender struct {
	cfg          Config
	secrets      SecretGetter
	destinations listers.NotificationDestinationLister
	client       *retryablehttp.Client
	// wake queues an AppService whose delivery has a result to record.
	wake func(cache.ObjectName)
	now  func() time.Time

	slots chan struct{}
	mu    sync.Mutex
	ctx   context.Context
	// inFlight and results are by AppService, then delivery id.
	inFlight map[cache.ObjectName]map[string]bool
	results  map[cache.ObjectName]map[string]Result
}

// NewSender is a Sender that posts while Start's context lasts.
func NewSender(cfg Config, secrets SecretGetter, destinations listers.NotificationDestinationLister, wake func(cache.ObjectName)) *Sender {
	s := &Sender{cfg: cfg, secrets: secrets, destinations: destinations, wake: wake, now: time.Now,
		slots:    make(chan struct{}, max(cfg.Parallel, 1)),
		inFlight: map[cache.ObjectName]map[string]bool{}, results: map[cache.ObjectName]map[string]Result{}}
	// Retries: the client's own policy (a connection error, 429, 5xx but
	// 501), without a limit of tries: a delivery is bounded by time
	// (GiveUpAfter). Its backoff is jittered, and honours Retry-After.
	s.client = &retryablehttp.Client{
		HTTPClient: &http.Client{Transport: limited{next: Transport(cfg.Allowed), slots: s.slots}, Timeout: cfg.TryTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		RetryWaitMin: time.Second, RetryWaitMax: time.Minute, RetryMax: 1 << 20,
		Backoff: jitteredBackoff, CheckRetry: checkRetry, PrepareRetry: prepareRetry,
		RequestLogHook: func(_ retryablehttp.Logger, r *http.Request, _ int) { tryOf(r.Context()).attempts.Add(1) },
		// A try that fails for good returns its response, which deliver
		// describes; never the client's error, which names the URL.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	return s
}

// Start lets the Sender post while ctx lasts (while this replica leads):
// a post in flight when it ends is cancelled, its delivery still owed
// in the status, for the next leader.
func (s *Sender) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx = ctx
}

// Results are the results for key's deliveries not yet recorded.
func (s *Sender) Results(key cache.ObjectName) map[string]Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Result, len(s.results[key]))
	for id, r := range s.results[key] {
		out[id] = r
	}
	return out
}

// Settle forgets the results the status (as last written, owed: what it
// still owes) has recorded.
func (s *Sender) Settle(key cache.ObjectName, owed []Owed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	still := make(map[string]bool, len(owed))
	for _, o := range owed {
		still[o.ID] = true
	}
	for id := range s.results[key] {
		if !still[id] {
			delete(s.results[key], id)
		}
	}
	if len(s.results[key]) == 0 {
		delete(s.results, key)
	}
}

// Send starts the deliveries owed (oldest first, as Pending lists them)
// that are neither in flight nor done: to each destination, one at a time,
// so that an AppService's edges reach it in order. The next starts once the
// last is done, at the sync its result wakes.
func (s *Sender) Send(key cache.ObjectName, owed []Owed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.ctx.Err() != nil {
		return
	}
	busy := map[string]bool{}
	for _, o := range owed {
		if s.results[key][o.ID].Done || busy[o.Destination] {
			continue
		}
		busy[o.Destination] = true
		if s.inFlight[key][o.ID] {
			continue
		}
		if s.inFlight[key] == nil {
			s.inFlight[key] = map[string]bool{}
		}
		s.inFlight[key][o.ID] = true
		go s.deliver(s.ctx, key, o)
	}
}

// Forget drops what the Sender holds of a deleted AppService.
func (s *Sender) Forget(key cache.ObjectName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.results, key)
}

// record keeps r for key's delivery id, and wakes key when it is new.
func (s *Sender) record(key cache.ObjectName, id string, r Result, done bool) {
	s.mu.Lock()
	old, had := s.results[key][id]
	if s.results[key] == nil {
		s.results[key] = map[string]Result{}
	}
	s.results[key][id] = r
	if done {
		delete(s.inFlight[key], id)
		if len(s.inFlight[key]) == 0 {
			delete(s.inFlight, key)
		}
	}
	s.mu.Unlock()
	if !had || old != r {
		s.wake(key)
	}
}

// deliver posts o until it is delivered, refused for good (a 4xx answer),
// the destination is gone, or GiveUpAfter has passed since its edge; a
// problem only the user can fix (the Secret missing, an address not
// allowed) is recorded at once, and tried again with a backoff meanwhile.
func (s *Sender) deliver(leading context.Context, key cache.ObjectName, o Owed) {
	logger := klog.FromContext(leading).WithValues("appService", key, "destination", klog.KRef(key.Namespace, o.Destination), "id", o.ID)
	// Past its bound already (it waited behind earlier edges to the same
	// destination, or for a leader): one try, no retries.
	deadline, once := o.Edge.Time.Add(s.cfg.GiveUpAfter), false
	if time.Until(deadline) <= 0 {
		deadline, once = s.now().Add(s.cfg.TryTimeout), true
	}
	ctx, cancel := context.WithDeadline(leading, deadline)
	if once {
		ctx = context.WithValue(ctx, onceKey{}, true)
	}
	defer cancel()
	attempts, problem := int32(0), ""
	finish := func(delivered bool, why string) {
		r := Result{Done: true, Delivered: delivered, Attempts: attempts, Time: s.now(), Message: why}
		result := "failed"
		if delivered {
			result = "delivered"
			logger.V(2).Info("Delivered a release's edge", "attempts", attempts)
		} else {
			logger.Info("Gave up a release's edge", "attempts", attempts, "reason", why)
		}
		metrics.ObserveDelivery(key.Namespace, o.Destination, result)
		s.record(key, o.ID, r, true)
	}
	backoff := wait.Backoff{Duration: 5 * time.Second, Factor: 2, Jitter: 0.5, Steps: 1 << 20, Cap: time.Minute}
	for {
		n, err := s.post(ctx, key, o)
		attempts += n
		var refused refusedError
		switch {
		case err == nil:
			finish(true, "")
			return
		case errors.As(err, &refused):
			finish(false, refused.Error())
			return
		case leading.Err() == nil && (ctx.Err() != nil || once):
			// The bound: given up.
			why := problem
			if why == "" {
				why = err.Error()
			}
			finish(false, fmt.Sprintf("gave up after %s in %s: %s", plural.Count(attempts, "attempt"), s.cfg.GiveUpAfter, why))
			return
		case leading.Err() != nil:
			// No longer leading: still owed, for the next leader.
			s.mu.Lock()
			delete(s.inFlight[key], o.ID)
			s.mu.Unlock()
			return
		}
		var p problemError
		if errors.As(err, &p) && p.Error() != problem {
			// Visible at once, in the status: only the user can fix it.
			problem = p.Error()
			s.record(key, o.ID, Result{Message: problem}, false)
		} else if !errors.As(err, &p) {
			problem = err.Error()
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff.Step()):
		}
	}
}

// post sends o once through the retrying client: until it is answered 2xx,
// refused, or ctx ends. It returns how many tries it made.
func (s *Sender) post(ctx context.Context, key cache.ObjectName, o Owed) (int32, error) {
	dest, err := s.destinations.NotificationDestinations(key.Namespace).Get(o.Destination)
	if apierrors.IsNotFound(err) {
		return 0, refusedError{fmt.Sprintf("NotificationDestination %s no longer exists", o.Destination)}
	}
	if err != nil {
		return 0, err
	}
	secret, err := s.secrets(ctx, key.Namespace, dest.Spec.SecretRef.Name)
	if apierrors.IsNotFound(err) {
		return 0, problemError{fmt.Sprintf("Secret %s (spec.secretRef of NotificationDestination %s) not found", dest.Spec.SecretRef.Name, dest.Name)}
	}
	if err != nil {
		return 0, problemError{fmt.Sprintf("reading Secret %s: %s", dest.Spec.SecretRef.Name, apiReason(err))}
	}
	m := Message{Namespace: key.Namespace, AppService: key.Name, Owed: o}
	req, t, err := newRequest(ctx, dest, secret, m, s.now())
	if err != nil {
		return 0, err
	}
	rreq, err := retryablehttp.FromRequest(req)
	if err != nil {
		return 0, err
	}
	rreq = rreq.WithContext(context.WithValue(ctx, tryKey{}, t))
	resp, err := s.client.Do(rreq)
	n := t.attempts.Load()
	if err != nil {
		if last := t.last.Load(); last != nil {
			return n, errors.New(*last)
		}
		return n, errors.New(Describe(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return n, nil
	case code >= 300 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests:
		return n, refusedError{"the destination answered " + resp.Status}
	default:
		return n, errors.New("the destination answered " + resp.Status)
	}
}

// limited is a transport that holds one of slots for each request in
// flight: the posts at once are bounded, not the deliveries, so that
// deliveries waiting out a backoff (a destination down) never keep others
// from posting.
type limited struct {
	next  http.RoundTripper
	slots chan struct{}
}

func (l limited) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case l.slots <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	defer func() { <-l.slots }()
	return l.next.RoundTrip(req)
}

// refusedError: the delivery cannot succeed by trying again.
type refusedError struct{ why string }

func (e refusedError) Error() string { return e.why }

// problemError: the delivery waits for the user (its Secret, its address).
type problemError struct{ why string }

func (e problemError) Error() string { return e.why }

// try is one post's state across the client's tries.
type try struct {
	key, body []byte
	attempts  atomic.Int32
	last      atomic.Pointer[string]
}

type tryKey struct{}

// onceKey marks a delivery past its bound: tried once, not again.
type onceKey struct{}

func tryOf(ctx context.Context) *try {
	if t, ok := ctx.Value(tryKey{}).(*try); ok {
		return t
	}
	return &try{}
}

// NewRequest is the POST of m to dest, whose Secret is secret, signed at
// now when dest is a webhook: what the Sender posts, for kubectl
// appservice notify test. Its errors never say the address.
func NewRequest(ctx context.Context, dest *appv1.NotificationDestination, secret *corev1.Secret, m Message, now time.Time) (*http.Request, error) {
	req, _, err := newRequest(ctx, dest, secret, m, now)
	return req, err
}

func newRequest(ctx context.Context, dest *appv1.NotificationDestination, secret *corev1.Secret, m Message, now time.Time) (*http.Request, *try, error) {
	address := string(secret.Data[appv1.SecretKeyAddress])
	if address == "" {
		return nil, nil, problemError{fmt.Sprintf("Secret %s has no key %q (the URL to post to)", secret.Name, appv1.SecretKeyAddress)}
	}
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, nil, problemError{fmt.Sprintf("Secret %s's %q is not an http or https URL", secret.Name, appv1.SecretKeyAddress)}
	}
	t := &try{}
	if dest.Spec.Type == appv1.DestinationWebhook {
		if t.key = secret.Data[appv1.SecretKeySigningKey]; len(t.key) == 0 {
			return nil, nil, problemError{fmt.Sprintf("Secret %s has no key %q, which signs a webhook's messages", secret.Name, appv1.SecretKeySigningKey)}
		}
	}
	contentType, body, err := m.Body(dest.Spec.Type)
	if err != nil {
		return nil, nil, refusedError{err.Error()}
	}
	t.body = body
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, problemError{fmt.Sprintf("Secret %s's %q is not a URL a request can go to", secret.Name, appv1.SecretKeyAddress)}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "appservice-controller")
	if t.key != nil {
		req.Header.Set(SignatureHeader, Sign(t.key, now, body))
	}
	return req, t, nil
}

// prepareRetry signs a try again, at its own time.
func prepareRetry(r *http.Request) error {
	if t := tryOf(r.Context()); t.key != nil {
		r.Header.Set(SignatureHeader, Sign(t.key, time.Now(), t.body))
	}
	return nil
}

// checkRetry is the client's policy, noting why each try failed.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	t := tryOf(ctx)
	switch {
	case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		why := Describe(err)
		t.last.Store(&why)
	case resp != nil && (resp.StatusCode < 200 || resp.StatusCode >= 300):
		why := "the destination answered " + resp.Status
		t.last.Store(&why)
	}
	retry, _ := retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	return retry && ctx.Value(onceKey{}) == nil, nil
}

// jitteredBackoff is the client's exponential backoff, or the Retry-After
// of a 429 or 503 when there is one; jittered, so that deliveries that
// failed together do not come back together.
func jitteredBackoff(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	d := retryablehttp.DefaultBackoff(lo, hi, attempt, resp)
	if resp != nil && resp.Header.Get("Retry-After") != "" &&
		(resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		return d
	}
	return wait.Jitter(d/2, 1)
}

// Describe says why a post failed without its URL (which holds tokens):
// Go's errors name it, so only their kind is told.
func Describe(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, ErrNotAllowed):
		return ErrNotAllowed.Error()
	case errors.As(err, &dns):
		return "the destination's host name does not resolve"
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &invalid):
		return "the destination's TLS certificate is not trusted"
	case errors.Is(err, context.DeadlineExceeded):
		return "the destination did not answer in time"
	case errors.As(err, &op) && op.Err != nil:
		var sys *net.OpError
		if errors.As(op.Err, &sys) {
			return "cannot reach the destination: " + sys.Err.Error()
		}
		return "cannot reach the destination: " + lastWords(op.Err.Error())
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() {
		return "the destination did not answer in time"
	}
	return "the request failed"
}

// lastWords is an error's text after its last ": " (a syscall's own, as
// "connection refused").
func lastWords(s string) string {
	for i := len(s) - 2; i >= 0; i-- {
		if s[i] == ':' && s[i+1] == ' ' {
			return s[i+2:]
		}
	}
	return s
}

// apiReason is an API error's reason, without its message.
func apiReason(err error) string {
	if r := apierrors.ReasonForError(err); r != "" {
		return string(r)
	}
	return "the API server did not answer"
}
