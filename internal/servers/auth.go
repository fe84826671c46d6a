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
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"
)

// The reviews' own budget, apart from the syncs' and the Lease's: the
// client that sends them has a token bucket of its own (reviewQPS, in
// main.go), and here at most reviewsInFlight TokenReviews of tokens not
// seen before are sent at once, each given reviewTimeout with its retries.
// A request that would need one more is answered 429 at once: a caller
// with random tokens costs the API server reviewQPS reviews a second,
// whatever it sends. The TokenReviews of tokens the API server knew within
// knownFor, and the SubjectAccessReviews (of users it authenticated), have
// knownInFlight slots of their own, so that a scraper whose answers
// expire during such a flood is reviewed again, not refused.
const (
	reviewsInFlight = 8
	knownInFlight   = 4
	reviewTimeout   = 10 * time.Second
	knownFor        = time.Hour
)

// errBusy: every review slot is taken.
var errBusy = errors.New("too many reviews in flight")

// reviews lets through only the requests the API server vouches for, as
// kube-controller-manager's metrics do: the bearer token's user comes from
// a TokenReview, and a SubjectAccessReview says whether that user may use
// the request's verb on its path, a non-resource URL (get /metrics). Both
// answers, yes or no, are cached for ttl, keyed by hashes of fixed size
// (the token's; the user's, verb's and path's), so that a scraper costs the
// API server two reviews per ttl at most; concurrent requests that need the
// same review wait for one (singleflight, as the API server's cached token
// authenticator does). A review that fails (the API server unreachable, a
// 5xx, a 429) is retried a few times within reviewTimeout, then the request
// gets 401 (authentication) or 500 (authorization), and nothing is cached.
type reviews struct {
	tokens  authenticationv1client.TokenReviewInterface
	access  authorizationv1client.SubjectAccessReviewInterface
	ttl     time.Duration
	timeout time.Duration
	backoff wait.Backoff

	// strangers and known hold a token per review in flight: of tokens
	// not known, and of the others.
	strangers, known chan struct{}
	flights          singleflight.Group

	// users: sha256 of a token the API server knows → its user; unknown:
	// the same of a token it does not. Apart, so that random tokens evict
	// no scraper.
	users, unknown *cache.LRUExpireCache
	// recent: sha256 of a token the API server knew within knownFor.
	recent    *cache.LRUExpireCache
	decisions *cache.LRUExpireCache // decisionKey → bool
}

func newReviews(tokens authenticationv1client.TokenReviewInterface,
	access authorizationv1client.SubjectAccessReviewInterface, ttl time.Duration) *reviews {
	return &reviews{
		tokens: tokens, access: access, ttl: ttl, timeout: reviewTimeout,
		// The retries of the API server's own webhook clients
		// (DefaultAuthWebhookRetryBackoff).
		backoff:   wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
		strangers: make(chan struct{}, reviewsInFlight),
		known:     make(chan struct{}, knownInFlight),
		users:     cache.NewLRUExpireCache(1024),
		unknown:   cache.NewLRUExpireCache(1024),
		recent:    cache.NewLRUExpireCache(1024),
		decisions: cache.NewLRUExpireCache(1024),
	}
}

// protect serves next to the callers the reviews allow: 401 without a
// token or with one the API server does not know, 403 without the
// permission, 429 when the reviews it would need are over their budget.
// Before any review, a request for something the server does not serve
// (served says which method and path it does) gets 404 or 405: no path
// nor method a caller makes up reaches a review or a cache. Every refusal
// closes the connection (see limitHandshakes).
func (r *reviews) protect(served func(method, path string) (ok bool, allow string), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if ok, allow := served(req.Method, req.URL.Path); !ok {
			if allow == "" {
				refuse(w, http.StatusNotFound, "Not Found")
				return
			}
			w.Header().Set("Allow", allow)
			refuse(w, http.StatusMethodNotAllowed, "Method Not Allowed")
			return
		}
		token, ok := bearerToken(req)
		if !ok {
			refuse(w, http.StatusUnauthorized, "Unauthorized: a bearer token is required")
			return
		}
		logger := klog.FromContext(req.Context())
		user, err := r.authenticate(req.Context(), token)
		if busy(w, err) {
			return
		}
		if err != nil {
			logger.Error(err, "Unable to authenticate the request", "path", req.URL.Path)
			refuse(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		if user == nil {
			refuse(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		// The verb of a non-resource URL is the HTTP method, lower case.
		verb, path := strings.ToLower(req.Method), req.URL.Path
		allowed, err := r.authorize(req.Context(), user, verb, path)
		if busy(w, err) {
			return
		}
		if err != nil {
			logger.Error(err, "Unable to authorize the request", "user", user.Username, "path", path)
			refuse(w, http.StatusInternalServerError, "Internal Server Error: the authorization check failed")
			return
		}
		if !allowed {
			refuse(w, http.StatusForbidden, fmt.Sprintf("Forbidden: user %q cannot %s path %q", user.Username, verb, path))
			return
		}
		// The token goes no further than here.
		req.Header.Del("Authorization")
		next.ServeHTTP(w, req)
	})
}

// refuse answers code and closes the connection after it: a caller who is
// refused must connect again, through the listener's bounds.
func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// busy answers 429 when err says the reviews are over their budget.
func busy(w http.ResponseWriter, err error) bool {
	if !errors.Is(err, errBusy) {
		return false
	}
	w.Header().Set("Retry-After", "1")
	refuse(w, http.StatusTooManyRequests, "Too Many Requests: the authentication and authorization checks are over their budget")
	return true
}

// bearerToken is the request's "Authorization: Bearer TOKEN", parsed as
// the API server parses it: the scheme in any case, then one space, then
// the token up to the next space; "Bearer" and two spaces has an empty
// token, which is none.
func bearerToken(req *http.Request) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(req.Header.Get("Authorization")), " ", 3)
	if len(parts) < 2 || strings.ToLower(parts[0]) != "bearer" {
		return "", false
	}
	return parts[1], parts[1] != ""
}

// authenticate is the token's user, nil if the API server does not know
// the token.
func (r *reviews) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	cached := func() (any, bool) {
		if user, ok := r.users.Get(key); ok {
			return user.(*authenticationv1.UserInfo), true
		}
		if _, ok := r.unknown.Get(key); ok {
			return (*authenticationv1.UserInfo)(nil), true
		}
		return nil, false
	}
	if user, ok := cached(); ok {
		return user.(*authenticationv1.UserInfo), nil
	}
	slots := r.strangers
	if _, ok := r.recent.Get(key); ok {
		slots = r.known
	}
	user, err := r.review(ctx, "t"+string(key[:]), slots, cached, func(ctx context.Context) (any, error) {
		var result *authenticationv1.TokenReview
		err := r.retry(ctx, func() (err error) {
			result, err = r.tokens.Create(ctx, &authenticationv1.TokenReview{
				Spec: authenticationv1.TokenReviewSpec{Token: token},
			}, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("TokenReview: %w", err)
		}
		if !result.Status.Authenticated || result.Status.Error != "" {
			r.unknown.Add(key, struct{}{}, r.ttl)
			return (*authenticationv1.UserInfo)(nil), nil
		}
		user := &result.Status.User
		r.users.Add(key, user, r.ttl)
		r.recent.Add(key, struct{}{}, knownFor)
		return user, nil
	})
	if err != nil {
		return nil, err
	}
	return user.(*authenticationv1.UserInfo), nil
}

// decisionKey is the sha256 of the JSON of a user, verb and path: of fixed
// size whatever they hold, and two users who differ in anything, groups
// and extra included, have different keys.
type decisionKey [sha256.Size]byte

func newDecisionKey(user *authenticationv1.UserInfo, verb, path string) (decisionKey, error) {
	b, err := json.Marshal(struct {
		User *authenticationv1.UserInfo `json:"user"`
		Verb string                     `json:"verb"`
		Path string                     `json:"path"`
	}{user, verb, path})
	return sha256.Sum256(b), err
}

// authorize says whether the user may use verb on the non-resource URL
// path.
func (r *reviews) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (bool, error) {
	key, err := newDecisionKey(user, verb, path)
	if err != nil {
		return false, err
	}
	cached := func() (any, bool) { return r.decisions.Get(key) }
	if allowed, ok := cached(); ok {
		return allowed.(bool), nil
	}
	allowed, err := r.review(ctx, "d"+string(key[:]), r.known, cached, func(ctx context.Context) (any, error) {
		extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		var result *authorizationv1.SubjectAccessReview
		err := r.retry(ctx, func() (err error) {
			result, err = r.access.Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{
					User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
				},
			}, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return false, fmt.Errorf("SubjectAccessReview: %w", err)
		}
		allowed := result.Status.Allowed && !result.Status.Denied
		r.decisions.Add(key, allowed, r.ttl)
		return allowed, nil
	})
	if err != nil {
		return false, err
	}
	return allowed.(bool), nil
}

// review runs send once for all the concurrent callers of key, in one of
// slots (errBusy when none is free), within r.timeout, which no caller's
// going away cuts short: the others still wait for it. The cache is read
// again inside the flight: a caller that missed it just before the last
// flight cached its answer and ended finds the answer there, instead of
// sending a second review.
func (r *reviews) review(ctx context.Context, key string, slots chan struct{},
	cached func() (any, bool), send func(context.Context) (any, error)) (any, error) {
	v, err, _ := r.flights.Do(key, func() (any, error) {
		if v, ok := cached(); ok {
			return v, nil
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			return nil, errBusy
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
		defer cancel()
		return send(ctx)
	})
	return v, err
}

// retry calls review until it succeeds, fails for good, or the backoff's
// steps are spent. Worth retrying, as the API server's own webhook clients
// retry: the API server unreachable (any error that is not an answer),
// overloaded (429) or failing (5xx).
func (r *reviews) retry(ctx context.Context, review func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, r.backoff, func(context.Context) (bool, error) {
		last = review()
		if last == nil {
			return true, nil
		}
		var status apierrors.APIStatus
		if errors.As(last, &status) {
			if code := status.Status().Code; code != http.StatusTooManyRequests && code < http.StatusInternalServerError {
				return false, last
			}
		}
		return false, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
