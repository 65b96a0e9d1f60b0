package features

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/gcsredis"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

const redisPassword = "5ecret-for-tests"

// faultTolerant is a cluster whose GCS keeps its state in srv, the password read from the
// Secret "redis" in its namespace.
func faultTolerant(name, ns string, srv *gcsredis.Server) *rayv1.RayCluster {
	rc := builders.RayCluster(name, ns).Obj()
	rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{
		RedisAddress: srv.Addr(),
		RedisPassword: &rayv1.RedisCredential{ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Key: "password"}}},
	}
	return rc
}

func startRedis(ctx context.Context, ns string) *gcsredis.Server {
	GinkgoHelper()
	srv, err := gcsredis.Start(redisPassword)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Close)
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis", Namespace: ns},
		StringData: map[string]string{"password": redisPassword}})).To(Succeed())
	return srv
}

// envOf resolves a container's env as the kubelet would.
func envOf(ctx context.Context, ns string, c corev1.Container) map[string]string {
	GinkgoHelper()
	env, err := gcsredis.ContainerEnv(ctx, k8s, ns, c)
	Expect(err).NotTo(HaveOccurred())
	return env
}

// dialAs connects to Redis with the settings a pod's Ray container gets.
func dialAs(env map[string]string) *gcsredis.Conn {
	GinkgoHelper()
	c, err := gcsredis.DialEnv(env)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return c
}

func cleanupJob(ctx context.Context, ns, cluster string) func() *batchv1.Job {
	return func() *batchv1.Job {
		j := &batchv1.Job{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: cluster + "-redis-cleanup"}, j); err != nil {
			return nil
		}
		return j
	}
}

// runCleanupJob plays the Job's pod (envtest runs no Job controller and no kubelet): with
// the Job's own env it deletes the storage namespace's keys, as Ray's cleanup does, then
// marks the Job complete.
func runCleanupJob(ctx context.Context, j *batchv1.Job) int {
	GinkgoHelper()
	env := envOf(ctx, j.Namespace, j.Spec.Template.Spec.Containers[0])
	deleted, err := dialAs(env).DeleteNamespace(env["RAY_external_storage_namespace"])
	Expect(err).NotTo(HaveOccurred())
	finishJob(ctx, j, batchv1.JobComplete)
	return deleted
}

func finishJob(ctx context.Context, j *batchv1.Job, how batchv1.JobConditionType) {
	GinkgoHelper()
	now := metav1.Now()
	j.Status.StartTime = &now
	cond := func(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, LastProbeTime: now, LastTransitionTime: now}
	}
	if how == batchv1.JobComplete {
		j.Status.CompletionTime = &now
		j.Status.Succeeded = 1
		j.Status.Conditions = nil
		for _, t := range env.JobSucceededConditions() {
			j.Status.Conditions = append(j.Status.Conditions, cond(t, "CompletionsReached"))
		}
	} else {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "BackoffLimitExceeded"), cond(batchv1.JobFailed, "BackoffLimitExceeded")}
	}
	Expect(k8s.Status().Update(ctx, j)).To(Succeed())
}

func uids(ps []corev1.Pod) []types.UID {
	out := make([]types.UID, len(ps))
	for i := range ps {
		out[i] = ps[i].UID
	}
	return out
}

func gone(ctx context.Context, ns, name string) func() bool {
	return func() bool {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rayv1.RayCluster{})
		return apierrors.IsNotFound(err)
	}
}

var _ = Describe("GCS fault tolerance", func() {
	It("keeps the workers when the head dies and deletes the cluster's Redis keys when the cluster is deleted", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		srv := startRedis(ctx, ns)
		Expect(k8s.Create(ctx, faultTolerant("ha", ns, srv))).To(Succeed())
		world.WaitReady(ctx, ns, "ha")
		rc := world.Get(ctx, ns, "ha")
		Expect(rc.Finalizers).To(ContainElement(rayv1.GCSFTRedisCleanupFinalizer))

		By("the head's GCS writing its tables to Redis with the settings raygate gave the pod")
		head := world.HeadPods(ctx, ns, "ha")[0]
		Expect(head.Annotations).To(HaveKeyWithValue(rayv1.FTEnabledKey, "true"))
		headEnv := envOf(ctx, ns, head.Spec.Containers[0])
		Expect(headEnv).To(HaveKeyWithValue("RAY_external_storage_namespace", string(rc.UID)))
		Expect(dialAs(headEnv).WriteGCSTables(string(rc.UID))).To(Succeed())
		// Another cluster's keys in the same Redis must survive this cluster's cleanup.
		Expect(dialAs(headEnv).WriteGCSTables("someone-else")).To(Succeed())
		workers := world.WorkerPods(ctx, ns, "ha", "workers")
		Expect(workers).To(HaveLen(1))
		Expect(envOf(ctx, ns, workers[0].Spec.Containers[0])).To(HaveKeyWithValue("RAY_gcs_rpc_server_reconnect_timeout_s", "600"))

		By("killing the head pod: a new head comes up, the workers stay")
		Expect(kubelet.DeletePod(ctx, ns, head.Name)).To(Succeed())
		Eventually(func() []types.UID { return uids(world.HeadPods(ctx, ns, "ha")) }).Should(And(HaveLen(1), Not(ContainElement(head.UID))))
		world.WaitReady(ctx, ns, "ha")
		Consistently(func() []types.UID { return uids(world.WorkerPods(ctx, ns, "ha", "workers")) }, 2*time.Second).Should(Equal(uids(workers)))

		By("deleting the cluster: pods first, then the cleanup Job")
		Expect(k8s.Delete(ctx, rc)).To(Succeed())
		Eventually(cleanupJob(ctx, ns, "ha")).ShouldNot(BeNil())
		Expect(world.Pods(ctx, ns, "ha")).To(BeEmpty(), "the Job runs once the head's GCS is gone")
		Expect(world.Get(ctx, ns, "ha").Finalizers).To(ContainElement(rayv1.GCSFTRedisCleanupFinalizer), "held while the Job runs")
		j := cleanupJob(ctx, ns, "ha")()
		Expect(metav1.IsControlledBy(j, rc)).To(BeTrue())
		Expect(j.Labels).To(HaveKeyWithValue(rayv1.NodeTypeLabelKey, "redis-cleanup"))
		Expect(j.Spec.Template.Spec.Containers).To(HaveLen(1))
		Expect(j.Spec.Template.Spec.Containers[0].Args[0]).To(ContainSubstring("cleanup_redis_storage"))

		Expect(runCleanupJob(ctx, j)).To(Equal(4))
		Eventually(gone(ctx, ns, "ha")).Should(BeTrue())
		keys, err := dialAs(headEnv).Keys(string(rc.UID))
		Expect(err).NotTo(HaveOccurred())
		Expect(keys).To(BeEmpty())
		Expect(dialAs(headEnv).Keys("someone-else")).To(HaveLen(4))
		Eventually(world.Events(ctx, ns, "ha")).Should(ContainElements(
			`Normal CreatedRedisCleanupJob: Created the Redis cleanup Job ha-redis-cleanup for storage namespace "`+string(rc.UID)+`"`,
			`Normal RedisCleanupCompleted: Redis cleanup Job ha-redis-cleanup completed: the keys of storage namespace "`+string(rc.UID)+`" in Redis are deleted`,
		))
	})

	It("releases the finalizer with a Warning when the cleanup Job fails", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		srv := startRedis(ctx, ns)
		rc := faultTolerant("fails", ns, srv)
		rc.Spec.GcsFaultToleranceOptions.ExternalStorageNamespace = "team-a"
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		Eventually(func() []string { return world.Get(ctx, ns, "fails").Finalizers }).Should(ContainElement(rayv1.GCSFTRedisCleanupFinalizer))
		Expect(k8s.Delete(ctx, rc)).To(Succeed())
		Eventually(cleanupJob(ctx, ns, "fails")).ShouldNot(BeNil())
		finishJob(ctx, cleanupJob(ctx, ns, "fails")(), batchv1.JobFailed)
		Eventually(gone(ctx, ns, "fails")).Should(BeTrue())
		Eventually(world.Events(ctx, ns, "fails")).Should(ContainElement(
			`Warning RedisCleanupFailed: Redis cleanup Job fails-redis-cleanup failed; the finalizer is released, delete the keys of storage namespace "team-a" in Redis by hand (see the Job's pod log)`))
	})

	It("releases the finalizer after the deletion timeout when the cleanup never finishes", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		srv := startRedis(ctx, ns)
		rc := faultTolerant("stuck", ns, srv)
		rc.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: "4s"}
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "stuck")
		Expect(k8s.Delete(ctx, rc)).To(Succeed())
		Eventually(cleanupJob(ctx, ns, "stuck")).ShouldNot(BeNil())
		deleted := world.Get(ctx, ns, "stuck").DeletionTimestamp.Time

		By("nobody runs the Job: the cluster waits, then goes at the timeout")
		Eventually(gone(ctx, ns, "stuck"), 20*time.Second).Should(BeTrue())
		Expect(time.Since(deleted)).To(BeNumerically(">=", 3*time.Second), "not released before the timeout (deletionTimestamp has second precision)")
		Eventually(world.Events(ctx, ns, "stuck")).Should(ContainElement(
			`Warning ForceDeletedStuckCluster: The deletion timeout (ray.io/gcs-ft-deletion-timeout) passed: the Redis cleanup did not finish; ` +
				`the finalizer is released and the keys of storage namespace "` + string(rc.UID) + `" in Redis may be left behind, delete them by hand`))
	})

	It("adds no finalizer without fault tolerance and removes it when fault tolerance is turned off", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		srv := startRedis(ctx, ns)
		Expect(k8s.Create(ctx, builders.RayCluster("plain", ns).Obj())).To(Succeed())
		world.WaitReady(ctx, ns, "plain")
		Expect(world.Get(ctx, ns, "plain").Finalizers).To(BeEmpty())
		Expect(world.HeadPods(ctx, ns, "plain")[0].Annotations).To(HaveKeyWithValue(rayv1.FTEnabledKey, "false"))

		Expect(k8s.Create(ctx, faultTolerant("toggled", ns, srv))).To(Succeed())
		Eventually(func() []string { return world.Get(ctx, ns, "toggled").Finalizers }).Should(ContainElement(rayv1.GCSFTRedisCleanupFinalizer))
		world.Update(ctx, ns, "toggled", func(rc *rayv1.RayCluster) { rc.Spec.GcsFaultToleranceOptions = nil })
		Eventually(func() []string { return world.Get(ctx, ns, "toggled").Finalizers }).Should(BeEmpty())
		Expect(k8s.Delete(ctx, world.Get(ctx, ns, "toggled"))).To(Succeed())
		Eventually(gone(ctx, ns, "toggled")).Should(BeTrue())
		Expect(cleanupJob(ctx, ns, "toggled")()).To(BeNil())
	})

	It("releases the finalizer while the webhooks are down", Serial, func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		srv := startRedis(ctx, ns)
		rc := faultTolerant("webhook-down", ns, srv)
		rc.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: "2s"}
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		Eventually(func() []string { return world.Get(ctx, ns, "webhook-down").Finalizers }).Should(ContainElement(rayv1.GCSFTRedisCleanupFinalizer))

		By("webhooks for RayClusters, as shipped (failurePolicy Fail, the shipped matchConditions), where nothing listens")
		url := "https://127.0.0.1:1/unreachable"
		rules := []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"ray.io"}, APIVersions: []string{"v1"}, Resources: []string{"rayclusters"}},
		}}
		none := admissionregistrationv1.SideEffectClassNone
		down := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "gcsft-webhook-down"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "vraycluster.ray.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}, Rules: rules,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				MatchConditions: webhooks.MatchConditions,
			}},
		}
		Expect(k8s.Create(ctx, down)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(k8s.Delete(ctx, down)).To(Succeed()) })
		Eventually(func() error {
			return k8s.Create(ctx, builders.RayCluster("refused", ns).Obj(), client.DryRunAll)
		}).Should(MatchError(ContainSubstring(`failed calling webhook "vraycluster.ray.io"`)))

		By("deleting the cluster: the finalizer is released without the webhook (the timeout path, nobody runs the Job)")
		Expect(k8s.Delete(ctx, rc)).To(Succeed())
		Eventually(gone(ctx, ns, "webhook-down")).Should(BeTrue())
		Eventually(world.Events(ctx, ns, "webhook-down")).Should(ContainElement(HavePrefix("Warning ForceDeletedStuckCluster: ")))
	})
})
