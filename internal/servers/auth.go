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
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

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

// reviews lets through only the requests the API server vouches for, as
// kube-controller-manager's metrics do: the bearer token's user comes from
// a TokenReview, and a SubjectAccessReview says whether that user may use
// the request's verb on its path, a non-resource URL (get /metrics). Both
// answers, yes or no, are cached for ttl, keyed by the token's hash and by
// the user, verb and path, so that a scraper costs the API server two
// reviews per ttl at most. A review that fails (the API server unreachable,
// a 5xx, a 429) is retried a few times over about 5 s, then the request
// gets 401 (authentication) or 500 (authorization), and nothing is cached.
type reviews struct {
	tokens  authenticationv1client.TokenReviewInterface
	access  authorizationv1client.SubjectAccessReviewInterface
	ttl     time.Duration
	backoff wait.Backoff

	users     *cache.LRUExpireCache // sha256 of the token → *authenticationv1.UserInfo, nil if unknown
	decisions *cache.LRUExpireCache // user, verb, path → bool
}

func newReviews(tokens authenticationv1client.TokenReviewInterface,
	access authorizationv1client.SubjectAccessReviewInterface, ttl time.Duration) *reviews {
	return &reviews{
		tokens: tokens, access: access, ttl: ttl,
		// The retries of the API server's own webhook clients
		// (DefaultAuthWebhookRetryBackoff).
		backoff:   wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
		users:     cache.NewLRUExpireCache(1024),
		decisions: cache.NewLRUExpireCache(1024),
	}
}

// protect serves next to the callers the reviews allow: 401 without a
// token or with one the API server does not know, 403 without the
// permission.
func (r *reviews) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req)
		if !ok {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		user, err := r.authenticate(req.Context(), token)
		if err != nil {
			klog.FromContext(req.Context()).Error(err, "Unable to authenticate the request", "path", req.URL.Path)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if user == nil {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		// The verb of a non-resource URL is the HTTP method, lower case.
		verb, path := strings.ToLower(req.Method), req.URL.Path
		allowed, err := r.authorize(req.Context(), user, verb, path)
		if err != nil {
			klog.FromContext(req.Context()).Error(err, "Unable to authorize the request", "user", user.Username, "path", path)
			http.Error(w, "Internal Server Error: the authorization check failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			http.Error(w, fmt.Sprintf("Forbidden: user %q cannot %s path %q", user.Username, verb, path), http.StatusForbidden)
			return
		}
		// The token goes no further than here.
		req.Header.Del("Authorization")
		next.ServeHTTP(w, req)
	})
}

// bearerToken is the request's "Authorization: Bearer TOKEN".
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// authenticate is the token's user, nil if the API server does not know
// the token.
func (r *reviews) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	if cached, ok := r.users.Get(key); ok {
		return cached.(*authenticationv1.UserInfo), nil
	}
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
	var user *authenticationv1.UserInfo
	if result.Status.Authenticated && result.Status.Error == "" {
		user = &result.Status.User
	}
	r.users.Add(key, user, r.ttl)
	return user, nil
}

type decisionKey struct{ user, verb, path string }

// authorize says whether the user may use verb on the non-resource URL
// path.
func (r *reviews) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (bool, error) {
	// The user's groups and extra are part of who they are: a key of the
	// name alone could give one caller another's answer.
	key := decisionKey{user: fmt.Sprintf("%s\x00%s\x00%q\x00%v", user.Username, user.UID, user.Groups, user.Extra), verb: verb, path: path}
	if cached, ok := r.decisions.Get(key); ok {
		return cached.(bool), nil
	}
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
