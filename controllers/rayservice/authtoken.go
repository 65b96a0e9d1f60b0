package rayservice

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/rayspec"
)

// A cluster with authOptions.mode token refuses dashboard calls without its token. raygate
// reads it from the one Secret the cluster's pods read, in the cluster's namespace, by name:
// the one raygate generated (only if the cluster controls it), or the one named in
// authOptions.secretName. Secrets are never listed, watched or cached by the informers; the
// token is kept in memory for tokenTTL and goes into the Authorization header only.
// That needs get on Secrets, which the default install does not grant: the operator's
// --token-authentication (Helm value tokenAuthentication.enabled) comes with it.

// tokenTTL is how long a token read from a Secret is reused: a user who replaces the token
// in a named Secret sees raygate use the new one within it.
const tokenTTL = 30 * time.Second

type tokenEntry struct {
	token dashboard.BearerToken
	read  time.Time
}

// tokenCache holds tokens by cluster and Secret name (a later secretName reads afresh).
type tokenCache struct {
	mu sync.Mutex
	m  map[tokenKey]tokenEntry
}

type tokenKey struct {
	cluster types.UID
	secret  types.NamespacedName
}

// dashboardToken is the token to send to the cluster's dashboard; "" without token auth, and
// without --token-authentication (no Secret is read: raygate has no right to).
func (r *Reconciler) dashboardToken(ctx context.Context, rc *rayv1.RayCluster) (dashboard.BearerToken, error) {
	spec := &rc.Spec
	if !r.TokenAuthentication || !rayspec.AuthEnabled(spec) {
		return "", nil
	}
	k := tokenKey{cluster: rc.UID, secret: types.NamespacedName{Namespace: rc.Namespace, Name: rayspec.AuthSecretName(rc.Name, spec)}}
	now := r.Now()
	r.tokens.mu.Lock()
	e, ok := r.tokens.m[k]
	r.tokens.mu.Unlock()
	if ok && now.Sub(e.read) < tokenTTL {
		return e.token, nil
	}
	token, err := r.readToken(ctx, rc, k.secret)
	if err != nil {
		return "", err
	}
	r.tokens.mu.Lock()
	if r.tokens.m == nil {
		r.tokens.m = map[tokenKey]tokenEntry{}
	}
	for old, e := range r.tokens.m { // drop what expired, so deleted clusters cost nothing
		if now.Sub(e.read) >= tokenTTL {
			delete(r.tokens.m, old)
		}
	}
	r.tokens.m[k] = tokenEntry{token: token, read: now}
	r.tokens.mu.Unlock()
	return token, nil
}

func (r *Reconciler) readToken(ctx context.Context, rc *rayv1.RayCluster, name types.NamespacedName) (dashboard.BearerToken, error) {
	s := &corev1.Secret{}
	if err := r.apiReader.Get(ctx, name, s); err != nil {
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
