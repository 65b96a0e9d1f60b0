package raypod

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// cert-manager's objects are built as unstructured ones from the small typed views below:
// importing cert-manager's Go API would upgrade about twenty modules of raygate's build
// (gRPC, OpenTelemetry, golang.org/x) for five plain objects.

// CertManagerGroup is cert-manager's API group; raygate uses its v1 Certificate and Issuer.
const CertManagerGroup = "cert-manager.io"

var (
	CertificateGVK = schema.GroupVersionKind{Group: CertManagerGroup, Version: "v1", Kind: "Certificate"}
	IssuerGVK      = schema.GroupVersionKind{Group: CertManagerGroup, Version: "v1", Kind: "Issuer"}
)

// Lifetimes: KubeRay's. The CA lives ten years and keeps its key when renewed
// (rotationPolicy Never), so a renewed CA still verifies the certificates running pods hold;
// leaf certificates live 90 days and are renewed 15 days before they expire, with a new key.
const (
	CADuration       = 10 * 365 * 24 * time.Hour
	CARenewBefore    = 30 * 24 * time.Hour
	LeafDuration     = 90 * 24 * time.Hour
	LeafRenewBefore  = 15 * 24 * time.Hour
	caKeySize        = 4096
	loopbackIP       = "127.0.0.1"
	componentLabel   = "app.kubernetes.io/component"
	rotationNever    = "Never"
	rotationAlways   = "Always"
	algorithmRSA     = "RSA"
	issuerKind       = "Issuer"
	selfSignedIssuer = "selfsigned-issuer"
)

// CertificateSpec is the part of a cert-manager Certificate's spec raygate sets.
type CertificateSpec struct {
	SecretName     string           `json:"secretName"`
	SecretTemplate *SecretTemplate  `json:"secretTemplate,omitempty"`
	IsCA           bool             `json:"isCA,omitempty"`
	CommonName     string           `json:"commonName,omitempty"`
	Duration       *metav1.Duration `json:"duration,omitempty"`
	RenewBefore    *metav1.Duration `json:"renewBefore,omitempty"`
	DNSNames       []string         `json:"dnsNames,omitempty"`
	IPAddresses    []string         `json:"ipAddresses,omitempty"`
	Usages         []string         `json:"usages,omitempty"`
	PrivateKey     *PrivateKey      `json:"privateKey,omitempty"`
	IssuerRef      IssuerReference  `json:"issuerRef"`
}

// SecretTemplate labels the Secret cert-manager writes.
type SecretTemplate struct {
	Labels map[string]string `json:"labels,omitempty"`
}

// PrivateKey is how the certificate's key is made and renewed.
type PrivateKey struct {
	Algorithm      string `json:"algorithm,omitempty"`
	Size           int    `json:"size,omitempty"`
	RotationPolicy string `json:"rotationPolicy,omitempty"`
}

// IssuerReference names the Issuer that signs a Certificate.
type IssuerReference struct {
	Name  string `json:"name"`
	Kind  string `json:"kind,omitempty"`
	Group string `json:"group,omitempty"`
}

// IssuerSpec is the part of a cert-manager Issuer's spec raygate sets: self-signed or CA.
type IssuerSpec struct {
	SelfSigned *struct{} `json:"selfSigned,omitempty"`
	CA         *CAIssuer `json:"ca,omitempty"`
}

// CAIssuer signs with the CA in a Secret.
type CAIssuer struct {
	SecretName string `json:"secretName"`
}

// TLSObjects are the cert-manager objects of a (defaulted) TLS cluster, in the order they
// depend on each other: the self-signed Issuer, the CA Certificate, the CA Issuer, the head's
// and the workers' Certificates. headIPs and workerIPs are the IPs of the cluster's running
// head and worker pods; each leaf certificate names its own pods' IPs (GCS dials workers by
// IP), so scaling workers never reissues the head's. clusterDomain is the cluster's DNS
// domain ("": cluster.local), in the head's names. Nil when TLS is off.
func TLSObjects(rc *rayv1.RayCluster, headIPs, workerIPs []string, clusterDomain string) []*unstructured.Unstructured {
	if !rayspec.TLSEnabled(&rc.Spec) {
		return nil
	}
	name := rc.Name
	selfSigned := newTLSObject(rc, IssuerGVK, rayspec.SelfSignedIssuerName(name), selfSignedIssuer, &IssuerSpec{SelfSigned: &struct{}{}})
	ca := newTLSObject(rc, CertificateGVK, rayspec.CACertificateName(name), "ca-certificate", &CertificateSpec{
		SecretName:     rayspec.CASecretName(name),
		SecretTemplate: &SecretTemplate{Labels: secretLabels(name)},
		IsCA:           true,
		CommonName:     "ray-ca-" + name,
		Duration:       &metav1.Duration{Duration: CADuration},
		RenewBefore:    &metav1.Duration{Duration: CARenewBefore},
		Usages:         []string{"cert sign", "crl sign"},
		PrivateKey:     &PrivateKey{Algorithm: algorithmRSA, Size: caKeySize, RotationPolicy: rotationNever},
		IssuerRef:      IssuerReference{Name: rayspec.SelfSignedIssuerName(name), Kind: issuerKind, Group: CertManagerGroup},
	})
	caIssuer := newTLSObject(rc, IssuerGVK, rayspec.CAIssuerName(name), "ca-issuer", &IssuerSpec{CA: &CAIssuer{SecretName: rayspec.CASecretName(name)}})
	head := newTLSObject(rc, CertificateGVK, rayspec.TLSCertificateName(name, rayv1.HeadNode), "head-certificate",
		leafSpec(name, rayv1.HeadNode, HeadDNSNames(rc, clusterDomain), headIPs))
	worker := newTLSObject(rc, CertificateGVK, rayspec.TLSCertificateName(name, rayv1.WorkerNode), "worker-certificate",
		leafSpec(name, rayv1.WorkerNode, []string{"localhost"}, workerIPs))
	return []*unstructured.Unstructured{selfSigned, ca, caIssuer, head, worker}
}

func leafSpec(cluster string, node rayv1.RayNodeType, dnsNames, ips []string) *CertificateSpec {
	return &CertificateSpec{
		SecretName:     rayspec.TLSSecretName(cluster, node),
		SecretTemplate: &SecretTemplate{Labels: secretLabels(cluster)},
		Duration:       &metav1.Duration{Duration: LeafDuration},
		RenewBefore:    &metav1.Duration{Duration: LeafRenewBefore},
		DNSNames:       dnsNames,
		IPAddresses:    normalizeIPs(ips),
		Usages:         []string{"digital signature", "key encipherment", "server auth", "client auth"},
		PrivateKey:     &PrivateKey{RotationPolicy: rotationAlways},
		IssuerRef:      IssuerReference{Name: rayspec.CAIssuerName(cluster), Kind: issuerKind, Group: CertManagerGroup},
	}
}

// normalizeIPs is the loopback address and the given ones, sorted and without duplicates,
// so the same pods always give the same spec.
func normalizeIPs(ips []string) []string {
	out := []string{loopbackIP}
	for _, ip := range ips {
		if ip != "" {
			out = append(out, ip)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func secretLabels(cluster string) map[string]string {
	return map[string]string{rayv1.ClusterLabelKey: cluster, rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName}
}

// newTLSObject is a namespaced cert-manager object with KubeRay's labels, controlled by the
// cluster, so the garbage collector removes it with the cluster.
func newTLSObject(rc *rayv1.RayCluster, gvk schema.GroupVersionKind, name, component string, spec any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(rc.Namespace)
	u.SetName(name)
	u.SetLabels(map[string]string{
		rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName,
		rayv1.KubernetesCreatedByLabelKey:       rayv1.ComponentName,
		componentLabel:                          component,
		rayv1.ClusterLabelKey:                   rc.Name,
	})
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))})
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		panic(err) // plain structs of strings, numbers and slices always convert
	}
	u.Object["spec"] = m
	return u
}

// TLSSpecEqual reports whether an existing cert-manager object already has the desired
// object's spec, as far as raygate sets it (fields cert-manager or others added are ignored).
func TLSSpecEqual(existing, desired *unstructured.Unstructured) bool {
	if desired.GroupVersionKind().Kind == IssuerGVK.Kind {
		var a, b IssuerSpec
		return specOf(existing, &a) && specOf(desired, &b) && equality.Semantic.DeepEqual(a, b)
	}
	var a, b CertificateSpec
	return specOf(existing, &a) && specOf(desired, &b) && equality.Semantic.DeepEqual(a, b)
}

func specOf(u *unstructured.Unstructured, into any) bool {
	m, ok := u.Object["spec"].(map[string]any)
	return ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, into) == nil
}

// WithTLSSpec is existing with the desired spec fields and labels set (others kept).
func WithTLSSpec(existing, desired *unstructured.Unstructured) *unstructured.Unstructured {
	u := existing.DeepCopy()
	spec, _ := u.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	// Fields raygate sets but the desired spec leaves out (empty) are cleared.
	for _, k := range []string{"secretTemplate", "isCA", "commonName", "dnsNames", "ipAddresses", "selfSigned", "ca"} {
		delete(spec, k)
	}
	for k, v := range desired.Object["spec"].(map[string]any) {
		spec[k] = v
	}
	u.Object["spec"] = spec
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range desired.GetLabels() {
		labels[k] = v
	}
	u.SetLabels(labels)
	return u
}
