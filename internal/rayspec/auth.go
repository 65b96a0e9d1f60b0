package rayspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Ray token authentication, as KubeRay sets it up: every Ray process of a cluster reads the
// mode and the token from its environment, the token from a Secret key (never inline).
const (
	// EnvRayAuthMode tells Ray which authentication to require ("token").
	EnvRayAuthMode = "RAY_AUTH_MODE"
	// EnvRayAuthToken holds the cluster's token, from a Secret.
	EnvRayAuthToken = "RAY_AUTH_TOKEN" // #nosec G101 -- a variable name, not a credential
	// AuthTokenKey is the Secret key holding the token, in the generated Secret and in one
	// a user names in authOptions.secretName.
	AuthTokenKey = "auth_token" // #nosec G101 -- a key name, not a credential
	// MinRayVersionForTokenAuth is the first Ray release that understands RAY_AUTH_MODE=token.
	MinRayVersionForTokenAuth = "2.52.0"
)

// AuthEnabled reports whether the cluster asks for token authentication. As under KubeRay,
// only mode "token" turns it on: authOptions without a mode leaves the cluster open
// (admission warns about that).
func AuthEnabled(spec *rayv1.RayClusterSpec) bool {
	return spec.AuthOptions != nil && spec.AuthOptions.Mode == rayv1.AuthModeToken
}

// UserAuthSecret is the Secret a user named in authOptions.secretName, or "" when raygate
// generates the cluster's Secret.
func UserAuthSecret(spec *rayv1.RayClusterSpec) string {
	if spec.AuthOptions == nil {
		return ""
	}
	return ptr.Deref(spec.AuthOptions.SecretName, "")
}

// GeneratedAuthSecretName is the name of the Secret raygate generates for a cluster's token:
// the cluster's name, as under KubeRay.
func GeneratedAuthSecretName(cluster string) string { return cluster }

// AuthSecretName is the Secret the cluster's pods read their token from: the one the user
// named, else the generated one.
func AuthSecretName(cluster string, spec *rayv1.RayClusterSpec) string {
	if s := UserAuthSecret(spec); s != "" {
		return s
	}
	return GeneratedAuthSecretName(cluster)
}

// AuthEnv is the environment a Ray process of a token-authenticated cluster gets: the mode,
// and the token by reference to the Secret key.
func AuthEnv(cluster string, spec *rayv1.RayClusterSpec) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: EnvRayAuthMode, Value: string(rayv1.AuthModeToken)},
		{Name: EnvRayAuthToken, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: AuthSecretName(cluster, spec)},
			Key:                  AuthTokenKey,
		}}},
	}
}
