package hostile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/gcsredis"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/webhooks"
)

// The deletion window: the webhooks skip objects being deleted so that finalizer removal
// never waits for them, and a fault-tolerant RayCluster's finalizer holds it while raygate
// builds its Redis cleanup Job. A tenant edits the spec of such a cluster to an image of its
// choosing and a privileged container: the edit is refused, and with the refusing webhook
// gone the controller still builds nothing from the edited spec. The deletion timeout, which
// holds the cluster and its namespace, is bounded.
const (
	evilImage       = "evil.example.com/miner:latest"
	holdFinalizer   = "example.com/hold"
	deletionPass    = "5ecret-for-the-deletion-spec"
	deletionTimeout = "10m"
)

var _ = Describe("A tenant editing a fault-tolerant RayCluster while it is being deleted", Serial, func() {
	It("is refused, the deletion timeout is bounded, and no cleanup Job is ever built from an edited spec", func(ctx context.Context) {
		ns := newNamespace(ctx, "deletion-")
		srv, err := gcsredis.Start(deletionPass)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Close)
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis", Namespace: ns},
			StringData: map[string]string{"password": deletionPass}})).To(Succeed())

		By("a deletion timeout above the bound is refused on create and on update")
		long := faultTolerantCluster("long", ns, srv.Addr())
		long.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: "720h"}
		Expect(k8s.Create(ctx, long)).To(MatchError(ContainSubstring(
			`metadata.annotations[ray.io/gcs-ft-deletion-timeout]: Invalid value: "720h": must be at most 1h0m0s (3600 seconds)`)))
		rc := faultTolerantCluster("held", ns, srv.Addr())
		rc.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: deletionTimeout}
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		Expect(editCluster(ctx, ns, "held", func(rc *rayv1.RayCluster) { rc.Annotations[rayv1.GCSFTDeletionTimeoutKey] = "2h" })).
			To(MatchError(ContainSubstring("must be at most 1h0m0s")))

		By("the cluster runs: finalizer added, its spec acted on (observedGeneration), a head pod held by a finalizer of ours")
		Eventually(func(g Gomega) {
			rc := getRayCluster(ctx, ns, "held")
			g.Expect(rc.Finalizers).To(ContainElement(rayv1.GCSFTRedisCleanupFinalizer))
			g.Expect(rc.Status.ObservedGeneration).To(Equal(rc.Generation))
		}).Should(Succeed())
		var head corev1.Pod
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: "held", rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			head = pods.Items[0]
		}).Should(Succeed())
		// The cleanup waits until the head pod is gone (its GCS would write the keys again):
		// this finalizer keeps the deletion window open for as long as the spec needs.
		head.Finalizers = append(head.Finalizers, holdFinalizer)
		Expect(k8s.Update(ctx, &head)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { releasePod(ctx, ns, head.Name) })

		By("deleting the cluster: the finalizer holds it")
		Expect(k8s.Delete(ctx, getRayCluster(ctx, ns, "held"))).To(Succeed())
		Expect(getRayCluster(ctx, ns, "held").DeletionTimestamp).NotTo(BeNil())

		By("the tenant's edits of the spec and of ray.io/ annotations are refused; finalizers and labels stay open")
		Expect(editCluster(ctx, ns, "held", func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = evilImage
		})).To(MatchError(ContainSubstring(`RayCluster.ray.io "held" is invalid: spec.headGroupSpec: Forbidden: the object is being deleted: its spec can no longer change`)))
		Expect(editCluster(ctx, ns, "held", makePrivileged)).To(MatchError(ContainSubstring("spec.headGroupSpec: Forbidden")))
		Expect(editCluster(ctx, ns, "held", func(rc *rayv1.RayCluster) { rc.Annotations[rayv1.GCSFTDeletionTimeoutKey] = "1h" })).
			To(MatchError(ContainSubstring("metadata.annotations[ray.io/gcs-ft-deletion-timeout]: Forbidden: the object is being deleted")))
		Expect(editCluster(ctx, ns, "held", func(rc *rayv1.RayCluster) { rc.Labels = map[string]string{"phase": "leaving"} })).To(Succeed())

		By("with raygate's deleting webhook removed (an admin who left it out), the edit is stored")
		withoutDeletingWebhook(ctx)
		Eventually(func() error {
			return editCluster(ctx, ns, "held", func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Image = evilImage
				makePrivileged(rc)
			})
		}).Should(Succeed())

		By("the head pod goes: the controller builds no Job from the edited spec and releases the cluster with a Warning")
		releasePod(ctx, ns, head.Name)
		// envtest runs no garbage collector: a Job created for the cluster stays here.
		job := &batchv1.Job{}
		jobKey := client.ObjectKey{Namespace: ns, Name: "held-redis-cleanup"}
		clusterGone := func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, &rayv1.RayCluster{}))
		}
		Eventually(func() bool { return clusterGone() || k8s.Get(ctx, jobKey, job) == nil }).Should(BeTrue())
		err = k8s.Get(ctx, jobKey, job)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a cleanup Job was built from the edited spec: %s", containersOf(job))
		Eventually(clusterGone).Should(BeTrue())
		Eventually(events(ctx, ns, "held")).Should(ContainSubstring("Warning RedisCleanupRefused: No Redis cleanup Job is built: the spec changed after the deletion started"))
	})
})

// faultTolerantCluster keeps its GCS in the Redis at addr, the password in the Secret "redis".
func faultTolerantCluster(name, ns, addr string) *rayv1.RayCluster {
	rc := builders.RayCluster(name, ns).Obj()
	rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{
		RedisAddress: addr,
		RedisPassword: &rayv1.RedisCredential{ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Key: "password"}}},
	}
	return rc
}

// containersOf names a Job's containers' images and whether they are privileged.
func containersOf(j *batchv1.Job) string {
	var out []string
	for _, c := range j.Spec.Template.Spec.Containers {
		out = append(out, fmt.Sprintf("%s (privileged: %v)", c.Image, c.SecurityContext != nil && ptr.Deref(c.SecurityContext.Privileged, false)))
	}
	return strings.Join(out, ", ")
}

func makePrivileged(rc *rayv1.RayCluster) {
	rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
}

func getRayCluster(ctx context.Context, ns, name string) *rayv1.RayCluster {
	GinkgoHelper()
	rc := &rayv1.RayCluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rc)).To(Succeed())
	return rc
}

// editCluster reads the cluster, changes it and writes it back once, returning the write's
// error (a conflict is retried).
func editCluster(ctx context.Context, ns, name string, change func(*rayv1.RayCluster)) error {
	for {
		rc := getRayCluster(ctx, ns, name)
		if rc.Annotations == nil {
			rc.Annotations = map[string]string{}
		}
		change(rc)
		if err := k8s.Update(ctx, rc); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// releasePod removes holdFinalizer from a pod, if it is still there.
func releasePod(ctx context.Context, ns, name string) {
	Eventually(func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !slices.Contains(p.Finalizers, holdFinalizer) {
			return nil
		}
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == holdFinalizer })
		return k8s.Update(ctx, p)
	}).Should(Succeed())
}

// withoutDeletingWebhook takes vdeleting.ray.io out of the validating configuration until the
// spec ends.
func withoutDeletingWebhook(ctx context.Context) {
	GinkgoHelper()
	var removed admissionregistrationv1.ValidatingWebhook
	Eventually(func() error {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, vwc); err != nil {
			return err
		}
		i := slices.IndexFunc(vwc.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == webhooks.DeletingWebhookName })
		Expect(i).To(BeNumerically(">=", 0), "the suite installs %s", webhooks.DeletingWebhookName)
		removed = vwc.Webhooks[i]
		vwc.Webhooks = slices.Delete(vwc.Webhooks, i, i+1)
		return k8s.Update(ctx, vwc)
	}).Should(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Eventually(func() error {
			vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, vwc); err != nil {
				return err
			}
			vwc.Webhooks = append(vwc.Webhooks, removed)
			return k8s.Update(ctx, vwc)
		}).Should(Succeed())
	})
}
