package rayjob

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

// A cluster with authOptions.mode token refuses Jobs API calls without its token, read as the
// RayService controller reads it: from the one Secret the cluster's pods read, by name, never
// listed, watched or cached; kept in memory for tokenTTL; sent in the Authorization header
// only. Without --token-authentication raygate may not read Secrets and sends none.

const tokenTTL = 30 * time.Second

type tokenEntry struct {
	token dashboard.BearerToken
	read  time.Time
}

type tokenCache struct {
	mu sync.Mutex
	m  map[types.NamespacedName]tokenEntry // by Secret
}

// dashboardToken is the token to send to the cluster's Jobs API ("" without token auth).
func (r *Reconciler) dashboardToken(ctx context.Context, rc *rayv1.RayCluster) (dashboard.BearerToken, error) {
	spec := &rc.Spec
	if !r.TokenAuthentication || !rayspec.AuthEnabled(spec) {
		return "", nil
	}
	key := types.NamespacedName{Namespace: rc.Namespace, Name: rayspec.AuthSecretName(rc.Name, spec)}
	now := r.Now()
	r.tokens.mu.Lock()
	e, ok := r.tokens.m[key]
	r.tokens.mu.Unlock()
	if ok && now.Sub(e.read) < tokenTTL {
		return e.token, nil
	}
	s := &corev1.Secret{}
	if err := r.apiReader.Get(ctx, key, s); err != nil {
		return "", fmt.Errorf("reading the token Secret %s: %w", key.Name, err)
	}
	if rayspec.UserAuthSecret(spec) == "" && !metav1.IsControlledBy(s, rc) {
		return "", fmt.Errorf("the token Secret %s is not controlled by RayCluster %s", key.Name, rc.Name)
	}
	token := dashboard.BearerToken(s.Data[rayspec.AuthTokenKey])
	if token == "" {
		return "", fmt.Errorf("the token Secret %s has no %q key", key.Name, rayspec.AuthTokenKey)
	}
	r.tokens.mu.Lock()
	defer r.tokens.mu.Unlock()
	if r.tokens.m == nil {
		r.tokens.m = map[types.NamespacedName]tokenEntry{}
	}
	for k, old := range r.tokens.m { // what expired goes, so deleted clusters cost nothing
		if now.Sub(old.read) >= tokenTTL {
			delete(r.tokens.m, k)
		}
	}
	r.tokens.m[key] = tokenEntry{token: token, read: now}
	return token, nil
}
