package rayspec

import (
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// Mutual TLS between a cluster's Ray processes (spec.tlsOptions), as KubeRay sets it up: Ray
// reads whether to use TLS and where its certificate, key and CA are from its environment.
// cert-manager issues the certificates into Secrets that raygate mounts into the pods.
const (
	// EnvRayUseTLS turns TLS on for Ray's gRPC channels ("1").
	EnvRayUseTLS = "RAY_USE_TLS"
	// EnvRayTLSServerCert, EnvRayTLSServerKey and EnvRayTLSCACert are the paths of the
	// process's certificate, its private key and the CA certificate it trusts.
	EnvRayTLSServerCert = "RAY_TLS_SERVER_CERT"
	EnvRayTLSServerKey  = "RAY_TLS_SERVER_KEY"
	EnvRayTLSCACert     = "RAY_TLS_CA_CERT"

	// TLSMountPath is where a pod's certificate Secret is mounted; cert-manager writes the
	// certificate, the key and the issuing CA under the keys below.
	TLSMountPath = "/etc/ray/tls"
	TLSCertKey   = "tls.crt"
	TLSKeyKey    = "tls.key"
	TLSCAKey     = "ca.crt"
)

// TLSEnabled reports whether the cluster asks for mutual TLS: tlsOptions is set and enabled
// is not false (an empty tlsOptions turns it on, as under KubeRay).
func TLSEnabled(spec *rayv1.RayClusterSpec) bool {
	return spec.TLSOptions != nil && ptr.Deref(spec.TLSOptions.Enabled, true)
}

// Names of the cert-manager objects of a TLS cluster (KubeRay's, suffixed with the cluster's
// name): a self-signed Issuer bootstraps the cluster's own CA Certificate, a CA Issuer backed
// by it signs one Certificate for the head and one shared by all workers.
func SelfSignedIssuerName(cluster string) string { return "ray-selfsigned-issuer-" + cluster }
func CAIssuerName(cluster string) string         { return "ray-ca-issuer-" + cluster }
func CACertificateName(cluster string) string    { return "ray-ca-certificate-" + cluster }
func CASecretName(cluster string) string         { return "ray-ca-secret-" + cluster }

// TLSCertificateName and TLSSecretName are the leaf Certificate of the head or the workers
// and the Secret cert-manager writes it to.
func TLSCertificateName(cluster string, node rayv1.RayNodeType) string {
	if node == rayv1.HeadNode {
		return "ray-head-cert-" + cluster
	}
	return "ray-worker-cert-" + cluster
}

func TLSSecretName(cluster string, node rayv1.RayNodeType) string {
	if node == rayv1.HeadNode {
		return "ray-head-secret-" + cluster
	}
	return "ray-worker-secret-" + cluster
}

// TLSCertificateNames are the Certificates of a TLS cluster. cert-manager labels each
// CertificateRequest with its Certificate's name, so each must fit in MaxLabelValueLength.
func TLSCertificateNames(cluster string) []string {
	return []string{CACertificateName(cluster), TLSCertificateName(cluster, rayv1.HeadNode), TLSCertificateName(cluster, rayv1.WorkerNode)}
}
