package headaccess

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/rayspec"
)

// A cluster with authOptions.mode token refuses dashboard and Jobs API calls without its
// token. raygate reads it from the one Secret the cluster's pods read, in the cluster's
// namespace, by name: the one raygate generated (only if the cluster controls it), or the one
// named in authOptions.secretName. Secrets are never listed, watched or cached by the
// informers; the token is kept in memory for TokenTTL and goes into the Authorization header
// only. That needs get on Secrets, which the default install does not grant: the operator's
// --token-authentication (Helm value tokenAuthentication.enabled) comes with it.

// TokenTTL is how long a token read from a Secret is reused: a user who replaces the token
// in a named Secret sees raygate use the new one within it.
const TokenTTL = 30 * time.Second

// Tokens reads clusters' tokens and keeps them for TokenTTL. The zero value is ready.
type Tokens struct {
	mu sync.Mutex
	m  map[tokenKey]tokenEntry
}

// tokenKey is a cluster and its Secret's name (a later secretName reads afresh).
type tokenKey struct {
	cluster types.UID
	secret  types.NamespacedName
}

type tokenEntry struct {
	token dashboard.BearerToken
	read  time.Time
}

// Token is the token to send to the cluster's head; "" without token auth, and when enabled
// (the operator's --token-authentication) is off: no Secret is read, raygate has no right to.
func (c *Tokens) Token(ctx context.Context, api client.Reader, now time.Time, enabled bool, rc *rayv1.RayCluster) (dashboard.BearerToken, error) {
	spec := &rc.Spec
	if !enabled || !rayspec.AuthEnabled(spec) {
		return "", nil
	}
	k := tokenKey{cluster: rc.UID, secret: types.NamespacedName{Namespace: rc.Namespace, Name: rayspec.AuthSecretName(rc.Name, spec)}}
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok && now.Sub(e.read) < TokenTTL {
		return e.token, nil
	}
	token, err := readToken(ctx, api, rc, k.secret)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[tokenKey]tokenEntry{}
	}
	for old, e := range c.m { // drop what expired, so deleted clusters cost nothing
		if now.Sub(e.read) >= TokenTTL {
			delete(c.m, old)
		}
	}
	c.m[k] = tokenEntry{token: token, read: now}
	return token, nil
}

func readToken(ctx context.Context, api client.Reader, rc *rayv1.RayCluster, name types.NamespacedName) (dashboard.BearerToken, error) {
	s := &corev1.Secret{}
	if err := api.Get(ctx, name, s); err != nil {
		return "", fmt.Errorf("reading the token Secret %s: %w", name.Name, err)
	}
	if rayspec.UserAuthSecret(&rc.Spec) == "" && !metav1.IsControlledBy(s, rc) {
		return "", fmt.Errorf("the token Secret %s is not controlled by RayCluster %s", name.Name, rc.Name)
	}
	token := s.Data[rayspec.AuthTokenKey]
	if len(token) == 0 {
		return "", fmt.Errorf("the token Secret %s has no %q key", name.Name, rayspec.AuthTokenKey)
	}
	return dashboard.BearerToken(token), nil
}
