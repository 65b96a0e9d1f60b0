package rayservice

import (
	"context"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
)

// dashboardToken is the token to send to the cluster's dashboard (headaccess.Tokens: "" without
// token auth or without --token-authentication).
func (r *Reconciler) dashboardToken(ctx context.Context, rc *rayv1.RayCluster) (dashboard.BearerToken, error) {
	return r.tokens.Token(ctx, r.apiReader, r.Now(), r.TokenAuthentication, rc)
}
