package metricsauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// fakeAPI answers the reviews as an API server with one valid token per user would, and
// counts them.
type fakeAPI struct {
	users        map[string]authenticationv1.UserInfo // token -> user
	allowed      map[string]bool                      // "user verb path" -> allowed
	explicitDeny bool
	failTokens   bool
	// blips fail that many token reviews as a busy API server would; forbidden fails
	// every one as an operator without RBAC would.
	blips, forbidden int
	failAccess       bool
	tokenReviews     int
	accessReviews    int
	lastAccess       authorizationv1.SubjectAccessReviewSpec
}

type tokenFunc func(context.Context, *authenticationv1.TokenReview, metav1.CreateOptions) (*authenticationv1.TokenReview, error)

func (f tokenFunc) Create(ctx context.Context, r *authenticationv1.TokenReview, o metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	return f(ctx, r, o)
}

type accessFunc func(context.Context, *authorizationv1.SubjectAccessReview, metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)

func (f accessFunc) Create(ctx context.Context, r *authorizationv1.SubjectAccessReview, o metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	return f(ctx, r, o)
}

func (f *fakeAPI) filter(t *testing.T, now func() time.Time) http.Handler {
	h, _ := f.guarded(t, now)
	return h
}

func (f *fakeAPI) guarded(t *testing.T, now func() time.Time) (http.Handler, *guard) {
	return f.guardedWithLog(t, now, logr.Discard())
}

func (f *fakeAPI) guardedWithLog(t *testing.T, now func() time.Time, log logr.Logger) (http.Handler, *guard) {
	t.Helper()
	tokens := tokenFunc(func(_ context.Context, r *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
		f.tokenReviews++
		if f.blips > 0 {
			f.blips--
			return nil, apierrors.NewServiceUnavailable("etcd leader changed")
		}
		if f.forbidden > 0 {
			return nil, apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", errors.New("no RBAC"))
		}
		if f.failTokens {
			return nil, errors.New("connection refused")
		}
		u, ok := f.users[r.Spec.Token]
		r.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, User: u}
		return r, nil
	})
	access := accessFunc(func(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
		f.accessReviews++
		f.lastAccess = r.Spec
		if f.failAccess {
			return nil, errors.New("connection refused")
		}
		a := r.Spec.NonResourceAttributes
		if r.Spec.ResourceAttributes != nil || a == nil {
			return nil, errors.New("expected a non-resource review")
		}
		r.Status.Allowed = f.allowed[r.Spec.User+" "+a.Verb+" "+a.Path]
		r.Status.Denied = f.explicitDeny
		return r, nil
	})
	g := newGuard(tokens, access, now)
	g.backoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: reviewBackoff.Steps}
	h, err := g.filter(log, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "" {
			t.Error("the token reached the metrics handler")
		}
		_, _ = io.WriteString(w, "raygate_metric 1\n")
	}))
	if err != nil {
		t.Fatal(err)
	}
	return h, g
}

func scrape(h http.Handler, method, path, authorization string) (int, string) {
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

func newAPI() *fakeAPI {
	return &fakeAPI{
		users: map[string]authenticationv1.UserInfo{
			"prom-token":  {Username: "system:serviceaccount:monitoring:prometheus", UID: "u1", Groups: []string{"system:serviceaccounts"}},
			"other-token": {Username: "system:serviceaccount:team-a:app", UID: "u2"},
		},
		allowed: map[string]bool{"system:serviceaccount:monitoring:prometheus get /metrics": true},
	}
}

func TestScrapeNeedsAValidTokenOfAnAllowedUser(t *testing.T) {
	now := time.Now
	cases := []struct {
		name, method, path, authorization string
		failTokens, failAccess, deny      bool
		code                              int
		body                              string
	}{
		{name: "allowed", method: "GET", path: "/metrics", authorization: "Bearer prom-token", code: 200, body: "raygate_metric 1"},
		{name: "scheme in any case", method: "GET", path: "/metrics", authorization: "bearer prom-token", code: 200, body: "raygate_metric 1"},
		{name: "no header", method: "GET", path: "/metrics", code: 401, body: "Unauthorized"},
		{name: "basic auth", method: "GET", path: "/metrics", authorization: "Basic cHJvbTpwYXNz", code: 401, body: "Unauthorized"},
		{name: "empty token", method: "GET", path: "/metrics", authorization: "Bearer   ", code: 401, body: "Unauthorized"},
		{name: "oversized token", method: "GET", path: "/metrics", authorization: "Bearer " + strings.Repeat("x", maxTokenLength+1), code: 401, body: "Unauthorized"},
		{name: "unknown token", method: "GET", path: "/metrics", authorization: "Bearer made-up", code: 401, body: "Unauthorized"},
		{name: "user without access", method: "GET", path: "/metrics", authorization: "Bearer other-token", code: 403, body: "Authorization denied for user system:serviceaccount:team-a:app"},
		{name: "another path", method: "GET", path: "/debug", authorization: "Bearer prom-token", code: 403, body: "Authorization denied for user system:serviceaccount:monitoring:prometheus"},
		{name: "another verb", method: "POST", path: "/metrics", authorization: "Bearer prom-token", code: 403, body: "Authorization denied for user system:serviceaccount:monitoring:prometheus"},
		{name: "explicit deny wins", method: "GET", path: "/metrics", authorization: "Bearer prom-token", deny: true, code: 403, body: "Authorization denied for user system:serviceaccount:monitoring:prometheus"},
		{name: "token review fails", method: "GET", path: "/metrics", authorization: "Bearer prom-token", failTokens: true, code: 500, body: "Authentication failed"},
		{name: "access review fails", method: "GET", path: "/metrics", authorization: "Bearer prom-token", failAccess: true, code: 500, body: "Authorization for user system:serviceaccount:monitoring:prometheus failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newAPI()
			api.failTokens, api.failAccess, api.explicitDeny = tc.failTokens, tc.failAccess, tc.deny
			code, body := scrape(api.filter(t, now), tc.method, tc.path, tc.authorization)
			if code != tc.code || body != tc.body {
				t.Errorf("got %d %q, want %d %q", code, body, tc.code, tc.body)
			}
		})
	}
}

func TestABusyAPIServerIsAskedAgainARefusalIsNot(t *testing.T) {
	cases := []struct {
		name                   string
		blips, forbidden, code int
		reviews                int
	}{
		{name: "two blips", blips: 2, code: 200, reviews: 3},
		{name: "blips outlast the retries", blips: 10, code: 500, reviews: reviewBackoff.Steps},
		{name: "refused", forbidden: 1, code: 500, reviews: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newAPI()
			api.blips, api.forbidden = tc.blips, tc.forbidden
			if code, _ := scrape(api.filter(t, time.Now), "GET", "/metrics", "Bearer prom-token"); code != tc.code {
				t.Errorf("status %d, want %d", code, tc.code)
			}
			if api.tokenReviews != tc.reviews {
				t.Errorf("%d token reviews, want %d", api.tokenReviews, tc.reviews)
			}
		})
	}
}

func TestAFailedReviewIsLoggedWithItsCause(t *testing.T) {
	var logged []string
	log := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	for _, fail := range []string{"tokens", "access"} {
		logged = nil
		api := newAPI()
		api.failTokens, api.failAccess = fail == "tokens", fail == "access"
		h, _ := api.guardedWithLog(t, time.Now, log)
		code, body := scrape(h, "GET", "/metrics", "Bearer prom-token")
		if code != 500 || strings.Contains(body, "connection refused") {
			t.Errorf("%s: got %d %q: want a 500 that keeps the cause to the log", fail, code, body)
		}
		if len(logged) != 1 || !strings.Contains(logged[0], "connection refused") {
			t.Errorf("%s: logged %q, want the cause once", fail, logged)
		}
	}
}

func TestAccessReviewCarriesTheWholeUser(t *testing.T) {
	api := newAPI()
	api.users["prom-token"] = authenticationv1.UserInfo{Username: "prom", UID: "u1", Groups: []string{"g1", "g2"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"metrics"}}}
	api.allowed["prom get /metrics"] = true
	if code, _ := scrape(api.filter(t, time.Now), "GET", "/metrics", "Bearer prom-token"); code != 200 {
		t.Fatalf("got %d", code)
	}
	s := api.lastAccess
	if s.User != "prom" || s.UID != "u1" || strings.Join(s.Groups, ",") != "g1,g2" || strings.Join(s.Extra["scopes"], ",") != "metrics" {
		t.Errorf("review spec %+v lost part of the user", s)
	}
}

func TestReviewsAreCachedForTheirLifetimes(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	api := newAPI()
	h := api.filter(t, now)
	expect := func(auth string, code, tokens, access int) {
		t.Helper()
		if got, _ := scrape(h, "GET", "/metrics", auth); got != code {
			t.Fatalf("status %d, want %d", got, code)
		}
		if api.tokenReviews != tokens || api.accessReviews != access {
			t.Fatalf("reviews: %d token, %d access; want %d, %d", api.tokenReviews, api.accessReviews, tokens, access)
		}
	}
	expect("Bearer prom-token", 200, 1, 1)
	expect("Bearer prom-token", 200, 1, 1) // both cached
	clock = clock.Add(TokenTTL + time.Second)
	expect("Bearer prom-token", 200, 2, 1) // the token is reviewed again, the allowed decision kept
	clock = clock.Add(AllowTTL)
	expect("Bearer prom-token", 200, 3, 2)

	// A revoked grant stops working once the allowed decision expires.
	api.allowed = map[string]bool{}
	expect("Bearer prom-token", 200, 3, 2)
	clock = clock.Add(AllowTTL + time.Second)
	expect("Bearer prom-token", 403, 4, 3)
	expect("Bearer prom-token", 403, 4, 3)
	api.allowed["system:serviceaccount:monitoring:prometheus get /metrics"] = true
	clock = clock.Add(DenyTTL + time.Second)
	expect("Bearer prom-token", 200, 4, 4) // the token's review (a minute) still holds

	// A rejected token is remembered briefly, then reviewed again.
	expect("Bearer made-up", 401, 5, 4)
	expect("Bearer made-up", 401, 5, 4)
	clock = clock.Add(RejectedTTL + time.Second)
	expect("Bearer made-up", 401, 6, 4)

	// A failed review is not remembered.
	api.failTokens = true
	expect("Bearer fresh", 500, 7, 4)
	api.failTokens = false
	expect("Bearer fresh", 401, 8, 4)
}

func TestMadeUpTokensCannotGrowTheCaches(t *testing.T) {
	api := newAPI()
	h, g := api.guarded(t, time.Now)
	for i := range 3 * cacheEntries {
		scrape(h, "GET", "/metrics", fmt.Sprintf("Bearer made-up-%d", i))
	}
	if api.tokenReviews != 3*cacheEntries {
		t.Fatalf("%d token reviews for %d different tokens", api.tokenReviews, 3*cacheEntries)
	}
	if n := len(g.users.Keys()); n != cacheEntries {
		t.Errorf("token cache holds %d entries, want its bound %d", n, cacheEntries)
	}
}

func TestDecisionKeySeparatesEveryPart(t *testing.T) {
	a, b := sha256.Sum256([]byte("token-a")), sha256.Sum256([]byte("token-b"))
	k := decisionKey(a, "get", "/metrics")
	if k != decisionKey(a, "get", "/metrics") {
		t.Fatal("the key is not stable")
	}
	for name, other := range map[string][sha256.Size]byte{
		"token": decisionKey(b, "get", "/metrics"),
		"verb":  decisionKey(a, "post", "/metrics"),
		"path":  decisionKey(a, "get", "/metrics/"),
	} {
		if other == k {
			t.Errorf("%s: not in the key", name)
		}
	}
}
