package rayspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Ray token authentication, as KubeRay sets it up: every Ray process of a cluster reads the
// mode and the token from its environment, the token from a Secret key (never inline). In
// the Kubernetes-delegated mode there is no shared token: each process presents its pod's
// projected ServiceAccount token and Ray checks callers' tokens with the API server.
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

	// EnvRayEnableK8sTokenAuth makes Ray use the pod's ServiceAccount token and check the
	// tokens it receives through TokenReview and SubjectAccessReview.
	EnvRayEnableK8sTokenAuth = "RAY_ENABLE_K8S_TOKEN_AUTH" // #nosec G101 -- a variable name, not a credential
	// RayTokenVolumeName is the projected ServiceAccount token volume of the delegated mode.
	RayTokenVolumeName = "ray-token" // #nosec G101 -- a volume name, not a credential
	// RayTokenMountPath is where Ray reads that token (its file "token").
	RayTokenMountPath = "/var/run/secrets/ray.io/serviceaccount" // #nosec G101 -- a path, not a credential
	// rayTokenPath is the token's file in the volume.
	rayTokenPath = "token"
	// MinRayVersionForK8sTokenAuth is the first Ray release that understands
	// RAY_ENABLE_K8S_TOKEN_AUTH.
	MinRayVersionForK8sTokenAuth = "2.55.0"
)

// AuthEnabled reports whether the cluster asks for token authentication. As under KubeRay,
// only mode "token" turns it on: authOptions without a mode leaves the cluster open
// (admission warns about that).
func AuthEnabled(spec *rayv1.RayClusterSpec) bool {
	return spec.AuthOptions != nil && spec.AuthOptions.Mode == rayv1.AuthModeToken
}

// K8sTokenAuth reports whether the cluster delegates token checks to Kubernetes: mode token
// with enableK8sTokenAuth. Its pods then need no token Secret.
func K8sTokenAuth(spec *rayv1.RayClusterSpec) bool {
	return AuthEnabled(spec) && ptr.Deref(spec.AuthOptions.EnableK8sTokenAuth, false)
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
// and the token by reference to the Secret key, or in the delegated mode the switch that
// makes Ray read the projected ServiceAccount token instead.
func AuthEnv(cluster string, spec *rayv1.RayClusterSpec) []corev1.EnvVar {
	if K8sTokenAuth(spec) {
		return []corev1.EnvVar{
			{Name: EnvRayAuthMode, Value: string(rayv1.AuthModeToken)},
			{Name: EnvRayEnableK8sTokenAuth, Value: "true"},
		}
	}
	return []corev1.EnvVar{
		{Name: EnvRayAuthMode, Value: string(rayv1.AuthModeToken)},
		{Name: EnvRayAuthToken, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: AuthSecretName(cluster, spec)},
			Key:                  AuthTokenKey,
		}}},
	}
}

// RayTokenVolume is the pod volume of the delegated mode: the pod's ServiceAccount token,
// projected with the API server's default audience and expiry, as KubeRay does.
func RayTokenVolume() corev1.Volume {
	return corev1.Volume{Name: RayTokenVolumeName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: rayTokenPath}}},
	}}}
}

// RayTokenMount mounts RayTokenVolume read-only where Ray looks for it.
func RayTokenMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: RayTokenVolumeName, MountPath: RayTokenMountPath, ReadOnly: true}
}
