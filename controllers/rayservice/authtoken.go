package rayservice

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/rayspec"
)

// A cluster with authOptions.mode token refuses dashboard calls without its token. raygate
// reads it from the one Secret the cluster's pods read: the one raygate generated (from the
// cache, which holds only Secrets raygate labelled, and only if the cluster controls it), or
// the one named in authOptions.secretName (by name, from the API server), in the cluster's
// namespace. The token goes into the Authorization header and nowhere else.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// dashboardToken is the token to send to the cluster's dashboard; "" without token auth.
func (r *Reconciler) dashboardToken(ctx context.Context, rc *rayv1.RayCluster) (dashboard.BearerToken, error) {
	spec := &rc.Spec
	if !rayspec.AuthEnabled(spec) {
		return "", nil
	}
	name := rayspec.AuthSecretName(rc.Name, spec)
	k := client.ObjectKey{Namespace: rc.Namespace, Name: name}
	s := &corev1.Secret{}
	if rayspec.UserAuthSecret(spec) == "" {
		if err := r.client.Get(ctx, k, s); err != nil {
			return "", fmt.Errorf("reading the token Secret %s: %w", name, err)
		}
		if !metav1.IsControlledBy(s, rc) {
			return "", fmt.Errorf("the token Secret %s is not controlled by RayCluster %s", name, rc.Name)
		}
	} else if err := r.apiReader.Get(ctx, k, s); err != nil {
		return "", fmt.Errorf("reading the token Secret %s named in authOptions.secretName: %w", name, err)
	}
	token := s.Data[rayspec.AuthTokenKey]
	if len(token) == 0 {
		return "", fmt.Errorf("the token Secret %s has no %q key", name, rayspec.AuthTokenKey)
	}
	return dashboard.BearerToken(token), nil
}
