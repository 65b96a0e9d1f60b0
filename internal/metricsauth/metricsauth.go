// Package metricsauth guards the metrics endpoint: a scrape must carry a bearer token that
// the API server accepts (TokenReview) for a user allowed to `get` the path
// (SubjectAccessReview): the two checks of controller-runtime's
// filters.WithAuthenticationAndAuthorization, with its cache lifetimes.
//
// That filter builds the API server's delegating authenticator and authorizer, which link in
// the API server's authentication configuration: CEL compilers, the gRPC egress selector and
// OpenTelemetry tracing, none of which a scrape uses. They made up much of raygate's binary,
// and the kernel keeps most of those pages resident, so dropping them lowered the peak RSS
// (docs/benchmarks.md). The two reviews are all a scrape needs, and the typed clients make
// them directly.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Cache lifetimes, as controller-runtime's filter sets them: a token's review is reused for a
// minute, an allowed scrape for five and a denied one for thirty seconds, so a scraper every
// 15 s costs the API server two reviews every few minutes, and a grant or a revocation takes
// effect within those lifetimes. A rejected token is remembered for ten seconds only, enough
// to absorb a retrying client.
const (
	TokenTTL    = time.Minute
	RejectedTTL = 10 * time.Second
	AllowTTL    = 5 * time.Minute
	DenyTTL     = 30 * time.Second
	// ReviewTimeout bounds one review, retries included.
	ReviewTimeout  = 10 * time.Second
	cacheEntries   = 1024
	maxTokenLength = 16 << 10
)

// TokenReviews and AccessReviews are the parts of the typed clients used here.
type TokenReviews interface {
	Create(context.Context, *authenticationv1.TokenReview, metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

type AccessReviews interface {
	Create(context.Context, *authorizationv1.SubjectAccessReview, metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// Provider is a metricsserver.Options.FilterProvider.
func Provider(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return New(authn.TokenReviews(), authz.SubjectAccessReviews(), time.Now), nil
}

// New returns the filter, reviewing with the given clients; now is the clock of the caches.
func New(tokens TokenReviews, access AccessReviews, now func() time.Time) metricsserver.Filter {
	return newGuard(tokens, access, now).filter
}

func newGuard(tokens TokenReviews, access AccessReviews, now func() time.Time) *guard {
	return &guard{tokens: tokens, access: access, backoff: reviewBackoff,
		users:     cache.NewLRUExpireCacheWithClock(cacheEntries, clock(now)),
		decisions: cache.NewLRUExpireCacheWithClock(cacheEntries, clock(now))}
}

// reviewBackoff spaces the retries of a review that failed on the way (about 4 s in all, as
// controller-runtime's filter retries), so a blip of the API server does not fail a scrape.
var reviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// transient says whether a failed review may succeed if asked again: the API server busy,
// timing out or unreachable for a moment. A refusal (the operator lacking RBAC, say) or the
// review's own deadline is not retried.
func transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}

// withRetries calls create until it succeeds, fails for good or its deadline passes.
func withRetries[T any](ctx context.Context, backoff wait.Backoff, create func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, ReviewTimeout)
	defer cancel()
	var out T
	err := retry.OnError(backoff, func(err error) bool { return ctx.Err() == nil && transient(err) }, func() error {
		var err error
		out, err = create(ctx)
		return err
	})
	return out, err
}

func (g *guard) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		status, msg, err := g.check(req)
		switch {
		case err != nil: // the operator's side failed: say why in the log, not to the caller
			log.Error(err, "metrics request not checked", "status", status)
		case status != http.StatusOK:
			log.V(4).Info("metrics request refused", "status", status, "reason", msg)
		}
		if status != http.StatusOK {
			http.Error(w, msg, status)
			return
		}
		req.Header.Del("Authorization") // the token goes no further than the check
		next.ServeHTTP(w, req)
	}), nil
}

type clock func() time.Time

func (c clock) Now() time.Time { return c() }

type guard struct {
	tokens  TokenReviews
	access  AccessReviews
	backoff wait.Backoff
	// users maps a token's digest to its review's outcome (the user, nil when rejected);
	// decisions maps a digest of the token's digest and the request to whether it is
	// allowed (a token stands for one user, so it keys that user's decisions). Both are
	// bounded in entries and every key is a fixed-size digest, so neither made-up tokens nor
	// long paths cost memory.
	users, decisions *cache.LRUExpireCache
}

// check returns http.StatusOK when the request may be served, else the status and the text
// to answer with, and the error when a review failed. The texts say which check failed, never
// why in detail.
func (g *guard) check(req *http.Request) (int, string, error) {
	token, ok := bearerToken(req)
	if !ok {
		return http.StatusUnauthorized, "Unauthorized", nil
	}
	tokenKey := sha256.Sum256([]byte(token))
	u, err := g.authenticate(req.Context(), tokenKey, token)
	if err != nil {
		return http.StatusInternalServerError, "Authentication failed", err
	}
	if u == nil {
		return http.StatusUnauthorized, "Unauthorized", nil
	}
	allowed, err := g.authorize(req.Context(), tokenKey, u, strings.ToLower(req.Method), req.URL.Path)
	if err != nil {
		return http.StatusInternalServerError, fmt.Sprintf("Authorization for user %s failed", u.Username), err
	}
	if !allowed {
		return http.StatusForbidden, fmt.Sprintf("Authorization denied for user %s", u.Username), nil
	}
	return http.StatusOK, "", nil
}

// bearerToken reads `Authorization: Bearer <token>` (the scheme in any case, as RFC 7235
// allows); an empty or oversized token is no token.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != "" && len(token) <= maxTokenLength
}

// authenticate returns the token's user, nil when the API server rejects the token.
// Tokens are cached by digest only, never kept themselves.
func (g *guard) authenticate(ctx context.Context, key [sha256.Size]byte, token string) (*authenticationv1.UserInfo, error) {
	if v, ok := g.users.Get(key); ok {
		return v.(*authenticationv1.UserInfo), nil
	}
	review, err := withRetries(ctx, g.backoff, func(ctx context.Context) (*authenticationv1.TokenReview, error) {
		return g.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	})
	if err != nil {
		return nil, fmt.Errorf("token review: %w", err)
	}
	if !review.Status.Authenticated || review.Status.User.Username == "" {
		g.users.Add(key, (*authenticationv1.UserInfo)(nil), RejectedTTL)
		return nil, nil
	}
	u := &review.Status.User
	g.users.Add(key, u, TokenTTL)
	return u, nil
}

// authorize asks whether u, the user of the token with digest tokenKey, may use verb on the
// non-resource path.
func (g *guard) authorize(ctx context.Context, tokenKey [sha256.Size]byte, u *authenticationv1.UserInfo, verb, path string) (bool, error) {
	key := decisionKey(tokenKey, verb, path)
	if v, ok := g.decisions.Get(key); ok {
		return v.(bool), nil
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review, err := withRetries(ctx, g.backoff, func(ctx context.Context) (*authorizationv1.SubjectAccessReview, error) {
		return g.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		}}, metav1.CreateOptions{})
	})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := DenyTTL
	if allowed {
		ttl = AllowTTL
	}
	g.decisions.Add(key, allowed, ttl)
	return allowed, nil
}

// decisionKey digests a token's digest and a request. The digest has a fixed length and a
// verb holds no space, so no two requests join to the same bytes.
func decisionKey(tokenKey [sha256.Size]byte, verb, path string) [sha256.Size]byte {
	return sha256.Sum256(append(tokenKey[:], verb+" "+path...))
}
