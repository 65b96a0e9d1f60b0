package raycluster

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// service reads a Service; nil when there is none.
func service(ctx context.Context, ns, name string) func() *corev1.Service {
	return func() *corev1.Service {
		s := &corev1.Service{}
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)
		if apierrors.IsNotFound(err) {
			return nil
		}
		Expect(err).NotTo(HaveOccurred())
		return s
	}
}

// controlledBy checks a Service's controller reference.
func controlledBy(rc *rayv1.RayCluster) OmegaMatcher {
	return WithTransform(func(s *corev1.Service) bool { return s != nil && metav1.IsControlledBy(s, rc) }, BeTrue())
}

var _ = Describe("the Services of a RayCluster besides the head Service", func() {
	It("gives a cluster with a multi-host worker group the headless worker Service, and none to others", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		g := builders.WorkerGroup("tpu", 1)
		g.NumOfHosts = 2
		Expect(k8s.Create(ctx, builders.RayCluster("mh", ns).WorkerGroups(g).Obj())).To(Succeed())
		Expect(k8s.Create(ctx, builders.RayCluster("single", ns).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "mh")
		rc := world.Get(ctx, ns, "mh")

		Eventually(service(ctx, ns, "mh-headless")).Should(And(Not(BeNil()), controlledBy(rc)))
		s := service(ctx, ns, "mh-headless")()
		Expect(s.Labels).To(HaveKeyWithValue(rayv1.HeadlessWorkerServiceLabelKey, "mh"))
		Expect(s.Spec.Selector).To(Equal(map[string]string{rayv1.ClusterLabelKey: "mh", rayv1.NodeTypeLabelKey: "worker"}))
		Expect(s.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		Expect(s.Spec.PublishNotReadyAddresses).To(BeTrue())
		Expect(s.Spec.Ports).To(BeEmpty())
		Eventually(world.Events(ctx, ns, "mh")).Should(ContainElement("Normal CreatedService: Created headless worker service mh-headless"))

		world.WaitReady(ctx, ns, "single")
		Consistently(service(ctx, ns, "single-headless"), time.Second).Should(BeNil())

		By("a single-host spec keeps the Service until the cluster goes, as in KubeRay")
		world.Update(ctx, ns, "mh", func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].NumOfHosts = 1 })
		Consistently(service(ctx, ns, "mh-headless"), time.Second).ShouldNot(BeNil())
	})

	It("gives a cluster annotated ray.io/enable-serve-service=true a serve Service, and removes it with the annotation", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("web", ns).Annotation(rayv1.EnableServeServiceKey, "true").Obj()
		rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
			{Name: "serve", ContainerPort: 9000}, {Name: "serve-grpc", ContainerPort: 9001},
		}
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "web")
		rc = world.Get(ctx, ns, "web")

		Eventually(service(ctx, ns, "web-serve-svc")).Should(And(Not(BeNil()), controlledBy(rc)))
		s := service(ctx, ns, "web-serve-svc")()
		Expect(s.Labels).To(And(
			HaveKeyWithValue(rayv1.OriginatedFromCRNameLabelKey, "web"),
			HaveKeyWithValue(rayv1.OriginatedFromCRDLabelKey, "RayCluster"),
			HaveKeyWithValue(rayv1.ServeLabelKey, "web-serve")))
		Expect(s.Spec.Selector).To(Equal(map[string]string{rayv1.ClusterLabelKey: "web"}))
		Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		Expect(s.Spec.ClusterIP).NotTo(Equal(corev1.ClusterIPNone))
		Expect(s.Spec.Ports).To(HaveLen(2), "serve and serve-grpc, not the head's other ports")
		Expect([]any{s.Spec.Ports[0].Name, s.Spec.Ports[0].Port, s.Spec.Ports[0].TargetPort.IntValue()}).To(Equal([]any{"serve", int32(9000), 9000}))
		Expect([]any{s.Spec.Ports[1].Name, s.Spec.Ports[1].Port, s.Spec.Ports[1].TargetPort.IntValue()}).To(Equal([]any{"serve-grpc", int32(9001), 9001}))

		By("an annotation value other than \"true\" removes it")
		world.Update(ctx, ns, "web", func(rc *rayv1.RayCluster) { rc.Annotations[rayv1.EnableServeServiceKey] = "false" })
		Eventually(service(ctx, ns, "web-serve-svc")).Should(BeNil())
		Eventually(world.Events(ctx, ns, "web")).Should(ContainElement(
			"Normal DeletedService: Deleted serve service web-serve-svc: the cluster no longer asks for it"))
		Expect(service(ctx, ns, "web-head-svc")()).NotTo(BeNil(), "the head Service stays")
	})

	It("admits a worker group name with upper-case letters and runs its pods under lower-case names", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, builders.RayCluster("mixed", ns).WorkerGroups(builders.WorkerGroup("GPU-Workers", 2)).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "mixed")

		ps := world.WorkerPods(ctx, ns, "mixed", "GPU-Workers") // ray.io/group keeps the name as written
		Expect(ps).To(HaveLen(2))
		for _, p := range ps {
			Expect(strings.HasPrefix(p.Name, "mixed-gpu-workers-worker-")).To(BeTrue(), p.Name)
			Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		}
		Expect(world.Get(ctx, ns, "mixed").Status.AvailableWorkerReplicas).To(BeEquivalentTo(2))
	})
})
