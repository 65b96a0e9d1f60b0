package features

import (
	"context"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

// ingress reads an Ingress; nil when there is none.
func ingress(ctx context.Context, ns, name string) func() *networkingv1.Ingress {
	return func() *networkingv1.Ingress {
		ing := &networkingv1.Ingress{}
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ing)
		if apierrors.IsNotFound(err) {
			return nil
		}
		Expect(err).NotTo(HaveOccurred())
		return ing
	}
}

// ingressRule is "host path pathType -> service:port" of an Ingress's only rule.
func ingressRule(ing *networkingv1.Ingress) string {
	if ing == nil || len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].HTTP == nil || len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
		return "no single rule"
	}
	r := ing.Spec.Rules[0]
	p := r.HTTP.Paths[0]
	return r.Host + " " + p.Path + " " + string(ptr.Deref(p.PathType, "")) + " -> " +
		p.Backend.Service.Name + ":" + strconv.Itoa(int(p.Backend.Service.Port.Number))
}

var _ = Describe("the dashboard Ingress of a RayCluster", func() {
	It("is created as KubeRay names it, follows the spec and the annotations, and goes with enableIngress", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("dash", ns).
			Annotation("kubernetes.io/ingress.class", "nginx").
			Annotation("nginx.ingress.kubernetes.io/rewrite-target", "/$1").Obj()
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "dash")
		rc = world.Get(ctx, ns, "dash")

		Eventually(ingress(ctx, ns, "dash-head-ingress")).ShouldNot(BeNil())
		ing := ingress(ctx, ns, "dash-head-ingress")()
		Expect(metav1.IsControlledBy(ing, rc)).To(BeTrue())
		Expect(ing.Spec.IngressClassName).To(HaveValue(Equal("nginx")))
		Expect(ing.Annotations).To(HaveKeyWithValue("nginx.ingress.kubernetes.io/rewrite-target", "/$1"))
		Expect(ing.Annotations).NotTo(HaveKey("kubernetes.io/ingress.class"))
		Expect(ing.Labels).To(And(HaveKeyWithValue(rayv1.ClusterLabelKey, "dash"), HaveKeyWithValue(rayv1.IdentifierLabelKey, "dash-head"),
			HaveKeyWithValue(rayv1.KubernetesCreatedByLabelKey, rayv1.ComponentName)))
		Expect(ingressRule(ing)).To(Equal(" /dash/(.*) Exact -> dash-head-svc:8265"))
		Eventually(world.Events(ctx, ns, "dash")).Should(ContainElement("Normal CreatedIngress: Created ingress dash-head-ingress"))

		By("ingressOptions change the rule and add TLS")
		world.Update(ctx, ns, "dash", func(rc *rayv1.RayCluster) {
			prefix := rayv1.IngressPathTypePrefix
			rc.Spec.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{
				Host: ptr.To("ray.example.com"), Path: ptr.To("/"), PathType: &prefix,
				TLS: []networkingv1.IngressTLS{{Hosts: []string{"ray.example.com"}, SecretName: "ray-tls"}},
			}
		})
		Eventually(func() string { return ingressRule(ingress(ctx, ns, "dash-head-ingress")()) }).
			Should(Equal("ray.example.com / Prefix -> dash-head-svc:8265"))
		Expect(ingress(ctx, ns, "dash-head-ingress")().Spec.TLS).To(Equal([]networkingv1.IngressTLS{{Hosts: []string{"ray.example.com"}, SecretName: "ray-tls"}}))
		Eventually(world.Events(ctx, ns, "dash")).Should(ContainElement("Normal UpdatedIngress: Updated ingress dash-head-ingress"))

		By("an edit of the rule by hand is put back; an annotation added to the Ingress stays")
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "dash-head-ingress"}, ing)).To(Succeed())
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number = 80
		ing.Annotations["controller.example.com/seen"] = "yes"
		Expect(k8s.Update(ctx, ing)).To(Succeed())
		Eventually(func() string { return ingressRule(ingress(ctx, ns, "dash-head-ingress")()) }).
			Should(Equal("ray.example.com / Prefix -> dash-head-svc:8265"))
		Expect(ingress(ctx, ns, "dash-head-ingress")().Annotations).To(HaveKeyWithValue("controller.example.com/seen", "yes"))

		By("an annotation removed from the cluster is removed from the Ingress")
		world.Update(ctx, ns, "dash", func(rc *rayv1.RayCluster) {
			delete(rc.Annotations, "nginx.ingress.kubernetes.io/rewrite-target")
		})
		Eventually(func() map[string]string { return ingress(ctx, ns, "dash-head-ingress")().Annotations }).
			ShouldNot(HaveKey("nginx.ingress.kubernetes.io/rewrite-target"))
		Expect(ingress(ctx, ns, "dash-head-ingress")().Annotations).To(HaveKeyWithValue("controller.example.com/seen", "yes"))

		By("enableIngress: false removes it")
		world.Update(ctx, ns, "dash", func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(false) })
		Eventually(ingress(ctx, ns, "dash-head-ingress")).Should(BeNil())
		Eventually(world.Events(ctx, ns, "dash")).Should(ContainElement("Normal DeletedIngress: Deleted ingress dash-head-ingress: enableIngress is no longer true"))
	})

	// No webhooks here: the controller's own check is all that stands between a cluster the
	// admin's policy refuses (stored before the policy changed, or while the webhook was
	// down) and an Ingress created with raygate's rights.
	It("is not created when the admin's policy refuses it, and unsafe annotations are never copied", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("refused", ns).
			Annotation("kubernetes.io/ingress.class", "public").
			Annotation("nginx.ingress.kubernetes.io/rewrite-target", "/$1").
			Annotation("nginx.ingress.kubernetes.io/configuration-snippet", "proxy_pass http://127.0.0.1:10250;").
			Annotation("nginx.ingress.kubernetes.io/auth-tls-secret", "kube-system/admin-tls").Obj()
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "refused")
		Eventually(world.Events(ctx, ns, "refused")).Should(ContainElement(
			"Warning IngressNotAllowed: Not creating ingress refused-head-ingress: the admin's Ingress policy refuses it: IngressClass public is not allowed in namespace " + ns))
		Consistently(ingress(ctx, ns, "refused-head-ingress"), time.Second).Should(BeNil())

		By("with an allowed class it is created, without the snippet and auth annotations")
		world.Update(ctx, ns, "refused", func(rc *rayv1.RayCluster) { rc.Annotations["kubernetes.io/ingress.class"] = "nginx" })
		Eventually(ingress(ctx, ns, "refused-head-ingress")).ShouldNot(BeNil())
		ing := ingress(ctx, ns, "refused-head-ingress")()
		Expect(ing.Annotations).To(HaveKeyWithValue("nginx.ingress.kubernetes.io/rewrite-target", "/$1"))
		Expect(ing.Annotations).NotTo(HaveKey("nginx.ingress.kubernetes.io/configuration-snippet"))
		Expect(ing.Annotations).NotTo(HaveKey("nginx.ingress.kubernetes.io/auth-tls-secret"))

		By("refused again, the Ingress it created is deleted")
		world.Update(ctx, ns, "refused", func(rc *rayv1.RayCluster) { rc.Annotations["kubernetes.io/ingress.class"] = "public" })
		Eventually(ingress(ctx, ns, "refused-head-ingress")).Should(BeNil())
		Eventually(world.Events(ctx, ns, "refused")).Should(ContainElement(
			"Normal DeletedIngress: Deleted ingress refused-head-ingress: the admin's Ingress policy refuses it"))
	})

	It("leaves an Ingress of that name it does not control alone and reports it", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		exact := networkingv1.PathTypeExact
		theirs := &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: "taken-head-ingress", Namespace: ns},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/theirs", PathType: &exact,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}},
			}}}},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		rc := builders.RayCluster("taken", ns).Annotation("kubernetes.io/ingress.class", "nginx").Obj()
		rc.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
		Expect(k8s.Create(ctx, rc)).To(Succeed())

		Eventually(world.Status(ctx, ns, "taken")).Should(rctest.HaveCondition(rayv1.OwnershipConflict, metav1.ConditionTrue, rayv1.ForeignObject))
		Expect(rctest.Condition(world.Get(ctx, ns, "taken").Status, rayv1.OwnershipConflict).Message).To(ContainSubstring("Ingress taken-head-ingress exists and is not controlled by this RayCluster"))
		Consistently(func() string { return ingressRule(ingress(ctx, ns, "taken-head-ingress")()) }, time.Second).
			Should(Equal(" /theirs Exact -> web:80"))
	})
})

var _ = Describe("the history server collector (RayClusterHistoryServer)", func() {
	It("runs next to Ray in the head and every worker pod, sharing /tmp/ray, with Ray's event export pointed at it", func(ctx context.Context) {
		rctest.SetGate(features.RayClusterHistoryServer, true)
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("hist", ns).Obj()
		rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{CollectorOptions: &rayv1.CollectorOptions{
			Image: ptr.To("quay.io/kuberay/collector:v1.6.0"),
			Env:   []corev1.EnvVar{{Name: "STORAGE_BUCKET", Value: "s3://ray-history/hist"}},
		}}
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "hist")

		all := world.Pods(ctx, ns, "hist")
		Expect(all).To(HaveLen(1 + len(world.WorkerPods(ctx, ns, "hist", rc.Spec.WorkerGroupSpecs[0].GroupName))))
		for _, pod := range all {
			role := "--role=Worker"
			if pod.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) {
				role = "--role=Head"
			}
			Expect(pod.Spec.Containers).To(HaveLen(2), pod.Name)
			ray, collector := pod.Spec.Containers[0], pod.Spec.Containers[1]
			Expect(collector.Name).To(Equal("collector"))
			Expect(collector.Image).To(Equal("quay.io/kuberay/collector:v1.6.0"))
			Expect(collector.Args).To(ContainElements(role, "--ray-cluster-name=hist", "--ray-cluster-namespace="+ns, "--ray-root-dir=/tmp/ray", "--events-port=8084"))
			Expect(collector.Env).To(ContainElements(
				corev1.EnvVar{Name: "STORAGE_BUCKET", Value: "s3://ray-history/hist"},
				corev1.EnvVar{Name: "EVENTS_PORT", Value: "8084"}))
			Expect(collector.Env).To(ContainElement(HaveField("Name", "POD_IP")))
			Expect(collector.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "ray-logs", MountPath: "/tmp/ray"}))
			Expect(ray.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "ray-logs", MountPath: "/tmp/ray"}))
			Expect(ray.Env).To(ContainElements(
				corev1.EnvVar{Name: "RAY_enable_ray_event", Value: "true"},
				corev1.EnvVar{Name: "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR", Value: "http://localhost:8084/v1/events"}))
			Expect(ray.Lifecycle).NotTo(BeNil())
			Expect(ray.Lifecycle.PostStart.Exec.Command).To(HaveLen(3))
		}
	})

	It("is left out while the gate is off, as in KubeRay (a cluster stored with the options keeps running)", func(ctx context.Context) {
		rctest.SetGate(features.RayClusterHistoryServer, false)
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("nohist", ns).Obj()
		rc.Spec.HistoryServerOptions = &rayv1.HistoryServerOptions{CollectorOptions: &rayv1.CollectorOptions{Image: ptr.To("quay.io/kuberay/collector:v1.6.0")}}
		Expect(k8s.Create(ctx, rc)).To(Succeed()) // no webhook in this suite: as if stored before the gate went off
		world.WaitReady(ctx, ns, "nohist")
		for _, pod := range world.Pods(ctx, ns, "nohist") {
			Expect(pod.Spec.Containers).To(HaveLen(1), pod.Name)
			Expect(pod.Spec.Containers[0].Env).NotTo(ContainElement(HaveField("Name", "RAY_enable_ray_event")))
		}
	})
})
