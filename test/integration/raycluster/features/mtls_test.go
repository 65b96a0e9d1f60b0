package features

import (
	"context"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

// A RayCluster with mTLS as KubeRay's user guide writes it: the Ray container is all the
// template says; raygate adds the certificates, their mounts and the environment.
const mtlsCluster = `
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-mtls
spec:
  rayVersion: '2.46.0'
  tlsOptions: {}
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
          resources:
            limits: {cpu: "1", memory: 2G}
  workerGroupSpecs:
  - replicas: 1
    minReplicas: 1
    maxReplicas: 5
    groupName: small-group
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
          resources:
            limits: {cpu: "1", memory: 1G}
`

// The specs run in order: the first with a manager started before cert-manager's CRDs
// existed, the others after installing them (they stay installed for the rest of the suite;
// no other spec uses them).
var _ = Describe("mutual TLS (spec.tlsOptions)", Ordered, func() {
	It("creates no pods, and says why, while cert-manager is not installed", func(ctx SpecContext) {
		ns := world.NewNamespace(ctx)
		_, stderr, err := env.Kubectl(ctx, mtlsCluster, "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Eventually(world.Events(ctx, ns, "raycluster-mtls")).Should(ContainElement(ContainSubstring(
			"Warning MTLSFailedToReconcile: spec.tlsOptions needs cert-manager")))
		Consistently(func() []corev1.Pod { return world.Pods(ctx, ns, "raycluster-mtls") }, "2s").Should(BeEmpty())
	})

	It("creates the cluster's PKI and mounts each pod's certificate", func(ctx SpecContext) {
		installCertManagerCRDs()
		restartManager()
		ns := world.NewNamespace(ctx)
		_, stderr, err := env.Kubectl(ctx, mtlsCluster, "apply", "-n", ns, "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		world.WaitReady(ctx, ns, "raycluster-mtls")
		rc := world.Get(ctx, ns, "raycluster-mtls")

		By("the Issuers and Certificates, owned by the cluster, with KubeRay's labels")
		for _, o := range []struct{ kind, name string }{
			{"Issuer", "ray-selfsigned-issuer-raycluster-mtls"},
			{"Certificate", "ray-ca-certificate-raycluster-mtls"},
			{"Issuer", "ray-ca-issuer-raycluster-mtls"},
			{"Certificate", "ray-head-cert-raycluster-mtls"},
			{"Certificate", "ray-worker-cert-raycluster-mtls"},
		} {
			u := certManagerObject(ctx, ns, o.kind, o.name)()
			Expect(u).NotTo(BeNil(), o.name)
			Expect(u.GetLabels()).To(HaveKeyWithValue(rayv1.ClusterLabelKey, "raycluster-mtls"))
			Expect(u.GetLabels()).To(HaveKeyWithValue(rayv1.KubernetesCreatedByLabelKey, rayv1.ComponentName))
			Expect(u.GetOwnerReferences()).To(ConsistOf(HaveField("UID", rc.UID)))
		}
		ca := certificateSpec(certManagerObject(ctx, ns, "Certificate", "ray-ca-certificate-raycluster-mtls")())
		Expect(ca.IsCA).To(BeTrue())
		Expect(ca.IssuerRef.Name).To(Equal("ray-selfsigned-issuer-raycluster-mtls"))

		By("SANs: the head Service's names and the head pod's IP; the worker pods' IPs")
		head := world.HeadPods(ctx, ns, "raycluster-mtls")[0]
		Eventually(func() raypod.CertificateSpec {
			return certificateSpec(certManagerObject(ctx, ns, "Certificate", "ray-head-cert-raycluster-mtls")())
		}).Should(And(
			HaveField("DNSNames", ContainElements("localhost", "raycluster-mtls-head-svc."+ns+".svc.cluster.local")),
			HaveField("IPAddresses", ConsistOf("127.0.0.1", head.Status.PodIP)),
			HaveField("IssuerRef.Name", "ray-ca-issuer-raycluster-mtls"),
			HaveField("SecretName", "ray-head-secret-raycluster-mtls")))
		workerIPs := func() []string {
			ips := []string{"127.0.0.1"}
			for _, p := range world.WorkerPods(ctx, ns, "raycluster-mtls", "small-group") {
				ips = append(ips, p.Status.PodIP)
			}
			return ips
		}
		workerCert := func() raypod.CertificateSpec {
			return certificateSpec(certManagerObject(ctx, ns, "Certificate", "ray-worker-cert-raycluster-mtls")())
		}
		workerCertNamesWorkers := func(g Gomega) {
			ips := workerIPs()
			g.Expect(ips).NotTo(ContainElement(""))
			g.Expect(workerCert().IPAddresses).To(ConsistOf(ips))
		}
		Eventually(workerCertNamesWorkers).Should(Succeed())

		By("the pods: the Secret of their node type, the TLS environment, the wait for the certificate")
		worker := world.WorkerPods(ctx, ns, "raycluster-mtls", "small-group")[0]
		for _, pc := range []struct {
			pod    corev1.Pod
			secret string
		}{{head, "ray-head-secret-raycluster-mtls"}, {worker, "ray-worker-secret-raycluster-mtls"}} {
			pod := &corev1.Pod{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&pc.pod), pod)).To(Succeed())
			Expect(pod.Spec.Volumes).To(ContainElement(And(HaveField("Name", raypod.TLSVolumeName), HaveField("Secret.SecretName", pc.secret))))
			Expect(pod.Spec.InitContainers[0].Name).To(Equal(raypod.WaitTLSInitContainer))
			ray := pod.Spec.Containers[0]
			Expect(ray.Env).To(ContainElements(
				corev1.EnvVar{Name: "RAY_USE_TLS", Value: "1"},
				corev1.EnvVar{Name: "RAY_TLS_SERVER_CERT", Value: "/etc/ray/tls/tls.crt"},
				corev1.EnvVar{Name: "RAY_TLS_SERVER_KEY", Value: "/etc/ray/tls/tls.key"},
				corev1.EnvVar{Name: "RAY_TLS_CA_CERT", Value: "/etc/ray/tls/ca.crt"}))
			Expect(ray.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: raypod.TLSVolumeName, MountPath: "/etc/ray/tls", ReadOnly: true}))
		}

		By("a converged TLS cluster makes no writes")
		world.ExpectQuiet()
		Consistently(world.WritesIn(ns), "2s").Should(BeEmpty())

		By("scaling workers adds their IPs to the workers' certificate only")
		headRV := certManagerObject(ctx, ns, "Certificate", "ray-head-cert-raycluster-mtls")().GetResourceVersion()
		world.Update(ctx, ns, "raycluster-mtls", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) })
		Eventually(world.PodCount(ctx, ns, "raycluster-mtls", "small-group")).Should(Equal(3))
		Eventually(workerCertNamesWorkers).Should(Succeed())
		Expect(workerCert().IPAddresses).To(HaveLen(4))
		Expect(certManagerObject(ctx, ns, "Certificate", "ray-head-cert-raycluster-mtls")().GetResourceVersion()).To(Equal(headRV))

		By("a Certificate edited by hand is brought back")
		u := certManagerObject(ctx, ns, "Certificate", "ray-worker-cert-raycluster-mtls")()
		Expect(unstructured.SetNestedStringSlice(u.Object, []string{"127.0.0.1"}, "spec", "ipAddresses")).To(Succeed())
		Expect(k8s.Update(ctx, u)).To(Succeed())
		Eventually(workerCertNamesWorkers).Should(Succeed())
	})
})

func installCertManagerCRDs() {
	GinkgoHelper()
	dir, err := tools.Path("cert-manager-crds")
	Expect(err).NotTo(HaveOccurred())
	crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(dir, "cert-manager.io_certificates.yaml"), filepath.Join(dir, "cert-manager.io_issuers.yaml")},
		ErrorIfPathMissing: true,
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(crds).To(HaveLen(2))
}

// restartManager replaces the suite's manager with a new one, which finds out anew what the
// API server serves.
func restartManager() {
	GinkgoHelper()
	Expect(mgr.Stop()).To(Succeed())
	mgr = harness.StartManager(rctest.ManagerOptions())
}

func certManagerObject(ctx context.Context, ns, kind, name string) func() *unstructured.Unstructured {
	return func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: raypod.CertManagerGroup, Version: "v1", Kind: kind})
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
			return nil
		}
		return u
	}
}

func certificateSpec(u *unstructured.Unstructured) raypod.CertificateSpec {
	var s raypod.CertificateSpec
	if u == nil {
		return s
	}
	m, _, _ := unstructured.NestedMap(u.Object, "spec")
	ExpectWithOffset(1, runtime.DefaultUnstructuredConverter.FromUnstructured(m, &s)).To(Succeed())
	return s
}
