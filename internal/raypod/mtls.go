package raypod

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// Names of what mutual TLS adds to a pod.
const (
	TLSVolumeName        = "ray-mtls"
	WaitTLSInitContainer = "wait-for-tls-ip-san"
	// EnvPodIP is the pod's IP, which its certificate must name before Ray starts.
	EnvPodIP = "POD_IP"
)

// TLSEnv is the environment a Ray process of a TLS cluster gets: TLS on, and where its
// certificate, key and CA are.
func TLSEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: rayspec.EnvRayUseTLS, Value: "1"},
		{Name: rayspec.EnvRayTLSServerCert, Value: rayspec.TLSMountPath + "/" + rayspec.TLSCertKey},
		{Name: rayspec.EnvRayTLSServerKey, Value: rayspec.TLSMountPath + "/" + rayspec.TLSKeyKey},
		{Name: rayspec.EnvRayTLSCACert, Value: rayspec.TLSMountPath + "/" + rayspec.TLSCAKey},
	}
}

// addMTLS gives every Ray process of a TLS cluster (the Ray container, the autoscaler
// sidecar, the wait-gcs-ready init container, as KubeRay does) the TLS environment and its
// node type's certificate Secret, read-only. raygate's values replace any the user gave.
//
// The certificate names the pods' IPs, which exist only once a pod is scheduled: the
// controller adds each new IP to the Certificate and cert-manager reissues it. A first init
// container therefore waits until the mounted certificate names this pod's IP, so Ray never
// starts with a certificate its peers would refuse. Until cert-manager has written the Secret
// at all, the kubelet keeps the pod in ContainerCreating.
func addMTLS(rc *rayv1.RayCluster, pod *corev1.Pod, node rayv1.RayNodeType) {
	if !rayspec.TLSEnabled(&rc.Spec) {
		return
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: TLSVolumeName, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: rayspec.TLSSecretName(rc.Name, node)},
	}})
	mount := corev1.VolumeMount{Name: TLSVolumeName, MountPath: rayspec.TLSMountPath, ReadOnly: true}
	forRayProcesses(pod, func(c *corev1.Container) {
		for _, e := range TLSEnv() {
			addEnv(c, e, true)
		}
		c.VolumeMounts = append(c.VolumeMounts, mount)
	})
	wait := waitTLSContainer(pod.Spec.Containers[rayv1.RayContainerIndex], mount)
	pod.Spec.InitContainers = append([]corev1.Container{wait}, pod.Spec.InitContainers...)
}

// waitTLSContainer waits until the certificate names the pod's IP (openssl is in Ray's
// images; KubeRay's TLS sample relies on it too). The kubelet refreshes a mounted Secret
// within about a minute of cert-manager updating it.
func waitTLSContainer(ray corev1.Container, mount corev1.VolumeMount) corev1.Container {
	cert := rayspec.TLSMountPath + "/" + rayspec.TLSCertKey
	script := fmt.Sprintf(`SECONDS=0
until openssl x509 -in %[1]s -noout -ext subjectAltName 2>/dev/null | grep -qw "IP Address:$%[2]s"; do
  echo "$SECONDS seconds elapsed: waiting for %[1]s to name this pod's IP $%[2]s."
  sleep 2
done
echo "The certificate names $%[2]s."`, cert, EnvPodIP)
	// Never a login shell: KubeRay's wait-for-tls-ip-san does not use one either.
	c := helperContainer(WaitTLSInitContainer, ray, script, resource.MustParse("100m"), resource.MustParse("64Mi"), Settings{})
	c.Env = []corev1.EnvVar{fieldEnv(EnvPodIP, "status.podIP")}
	c.VolumeMounts = []corev1.VolumeMount{mount}
	return c
}

// HeadDNSNames are the names under which a cluster's head is reached (its Service, short
// and qualified), which the head's certificate must name: workers dial the GCS at the
// fully qualified one, in the cluster's DNS domain ("": cluster.local).
func HeadDNSNames(rc *rayv1.RayCluster, clusterDomain string) []string {
	svc := HeadServiceName(rc)
	return []string{
		"localhost",
		svc,
		svc + "." + rc.Namespace,
		svc + "." + rc.Namespace + ".svc",
		headFQDN(rc, clusterDomain),
	}
}
