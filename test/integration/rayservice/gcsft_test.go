package rayservice

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/gcsredis"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

var _ = Describe("High availability with GCS fault tolerance", func() {
	const name = "ha"

	// clusterPods lists the cluster's pods of one node type, terminating ones excluded.
	clusterPods := func(ctx context.Context, ns, cluster, nodeType string) []corev1.Pod {
		var list corev1.PodList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: cluster, rayv1.NodeTypeLabelKey: nodeType})).To(Succeed())
		var out []corev1.Pod
		for _, p := range list.Items {
			if p.DeletionTimestamp.IsZero() {
				out = append(out, p)
			}
		}
		return out
	}
	uids := func(ps []corev1.Pod) []types.UID {
		out := make([]types.UID, len(ps))
		for i := range ps {
			out[i] = ps[i].UID
		}
		return out
	}
	// gcsKeys lists, as a head pod's GCS would find them, the keys of its storage namespace.
	gcsKeys := func(ctx context.Context, ns string, head corev1.Pod) []string {
		env, err := gcsredis.ContainerEnv(ctx, k8s, ns, head.Spec.Containers[0])
		Expect(err).NotTo(HaveOccurred())
		c, err := gcsredis.DialEnv(env)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		keys, err := c.Keys(env["RAY_external_storage_namespace"])
		Expect(err).NotTo(HaveOccurred())
		return keys
	}

	// faultTolerantService is the RayService with GCS fault tolerance against a Redis of its
	// own, the password in the Secret "redis".
	faultTolerantService := func(ctx context.Context, ns string, w *builders.RayServiceWrapper) *rayv1.RayService {
		srv, err := gcsredis.Start("ha-password")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis", Namespace: ns},
			StringData: map[string]string{"password": "ha-password"}})).To(Succeed())
		svc := w.Obj()
		svc.Spec.RayClusterSpec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{
			RedisAddress: srv.Addr(),
			RedisPassword: &rayv1.RedisCredential{ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Key: "password"}}},
		}
		return svc
	}
	// writeGCSState plays a running head's GCS: it writes its tables under its storage namespace.
	writeGCSState := func(ctx context.Context, ns string, head corev1.Pod) {
		env, err := gcsredis.ContainerEnv(ctx, k8s, ns, head.Spec.Containers[0])
		Expect(err).NotTo(HaveOccurred())
		c, err := gcsredis.DialEnv(env)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(c.WriteGCSTables(env["RAY_external_storage_namespace"])).To(Succeed())
	}

	It("keeps serving when the head pod dies: workers not restarted, still Ready, nothing resubmitted", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		svc := faultTolerantService(ctx, ns, builders.RayService(name, ns))
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		sim := world.Simulator(ns, blue)
		Expect(sim.Submissions()).To(HaveLen(1))
		Expect(world.RayCluster(ctx, ns, blue).Finalizers).To(ContainElement(rayv1.GCSFTRedisCleanupFinalizer))

		By("the head's GCS persisting the cluster state, Serve applications included, in Redis")
		heads := clusterPods(ctx, ns, blue, "head")
		Expect(heads).To(HaveLen(1))
		writeGCSState(ctx, ns, heads[0])
		workers := clusterPods(ctx, ns, blue, "worker")
		Expect(workers).NotTo(BeEmpty())

		By("killing the head pod")
		Expect(kubelet.DeletePod(ctx, ns, heads[0].Name)).To(Succeed())
		Eventually(func() []types.UID { return uids(clusterPods(ctx, ns, blue, "head")) }).Should(And(HaveLen(1), Not(ContainElement(heads[0].UID))))
		// The new head's GCS restores from Redis what it finds under its storage namespace;
		// with nothing there it would start empty, and the dashboard would report no
		// applications (the simulator forgets them), as a head without fault tolerance does.
		if len(gcsKeys(ctx, ns, clusterPods(ctx, ns, blue, "head")[0])) == 0 {
			sim.Restart()
		}
		Expect(gcsKeys(ctx, ns, clusterPods(ctx, ns, blue, "head")[0])).To(HaveLen(4), "the new head finds the state of the old one")

		Consistently(func(g Gomega) {
			g.Expect(world.Condition(ctx, ns, name, rayv1.RayServiceReady)()).To(Equal("True/NonZeroServeEndpoints"))
			g.Expect(uids(clusterPods(ctx, ns, blue, "worker"))).To(Equal(uids(workers)), "workers are not restarted")
			g.Expect(sim.Submissions()).To(HaveLen(1), "the Serve config is not resubmitted")
		}, 3*time.Second, 100*time.Millisecond).Should(Succeed())
		Expect(world.ActiveName(ctx, ns, name)()).To(Equal(blue))
		Expect(sim.AllRunning()).To(BeTrue())
	})

	It("cleans the retired cluster's keys after an upgrade and keeps the new cluster's", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		world.WatchInvariants(ctx, ns)
		Expect(k8s.Create(ctx, faultTolerantService(ctx, ns, builders.RayService(name, ns).DeletionDelay(1)))).To(Succeed())
		blue := world.WaitServing(ctx, ns, name)
		blueHead := clusterPods(ctx, ns, blue, "head")[0]
		writeGCSState(ctx, ns, blueHead)

		world.Update(ctx, ns, name, func(s *rayv1.RayService) { rstest.SetImage(s, "rayproject/ray:2.53.0") })
		Eventually(world.ActiveName(ctx, ns, name)).ShouldNot(Equal(blue))
		green := world.ActiveName(ctx, ns, name)()
		greenHead := clusterPods(ctx, ns, green, "head")[0]
		writeGCSState(ctx, ns, greenHead)
		Expect(gcsKeys(ctx, ns, greenHead)).To(HaveLen(4))
		Expect(world.RayCluster(ctx, ns, green).UID).NotTo(Equal(world.RayCluster(ctx, ns, blue).UID), "each cluster has its own storage namespace")

		By("the retired cluster's cleanup Job, played by the test with the Job's env")
		job := &batchv1.Job{}
		Eventually(func() error {
			return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: blue + "-redis-cleanup"}, job)
		}).Should(Succeed())
		env, err := gcsredis.ContainerEnv(ctx, k8s, ns, job.Spec.Template.Spec.Containers[0])
		Expect(err).NotTo(HaveOccurred())
		c, err := gcsredis.DialEnv(env)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		Expect(c.DeleteNamespace(env["RAY_external_storage_namespace"])).To(Equal(4))
		now := metav1.Now()
		job.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1}
		for _, t := range world.Env.JobSucceededConditions() {
			job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastProbeTime: now, LastTransitionTime: now})
		}
		Expect(k8s.Status().Update(ctx, job)).To(Succeed())

		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: blue}, &rayv1.RayCluster{}))
		}).Should(BeTrue())
		Expect(gcsKeys(ctx, ns, blueHead)).To(BeEmpty())
		Expect(gcsKeys(ctx, ns, clusterPods(ctx, ns, green, "head")[0])).To(HaveLen(4), "the serving cluster's state is untouched")
		Expect(world.Condition(ctx, ns, name, rayv1.RayServiceReady)()).To(Equal("True/NonZeroServeEndpoints"))
	})
})
