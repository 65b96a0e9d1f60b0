package admission

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/tools"
)

var _ = Describe("ray.io/v1alpha1 (deprecated, served with v1's schema)", func() {
	// The controllers of this suite watch only this namespace, so an object created here is
	// reconciled.
	const ns = "raygate-admission-unused"

	alphaCluster := func(name string) string {
		b, err := os.ReadFile(filepath.Join(tools.RepoRoot(), "config", "samples", "ray_v1_raycluster.yaml"))
		Expect(err).NotTo(HaveOccurred())
		s := strings.Replace(string(b), "apiVersion: ray.io/v1\n", "apiVersion: ray.io/v1alpha1\n", 1)
		return strings.Replace(s, "name: raycluster-sample", "name: "+name+"\n  namespace: "+ns, 1)
	}

	It("admits a v1alpha1 RayCluster with the deprecation warning, defaults and reconciles it, and rejects an invalid one", func(ctx context.Context) {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "%v", err)

		out, stderr, err := kubectl(ctx, alphaCluster("old-manifest"), "apply", "--server-side", "-f", "-")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(stderr).To(ContainSubstring("Warning: ray.io/v1alpha1 RayCluster is deprecated; use ray.io/v1 (same schema)"))
		Expect(out).To(ContainSubstring("raycluster.ray.io/old-manifest serverside-applied"))

		By("reading it as v1: defaulted by the webhook and reconciled by the controller")
		rc := &rayv1.RayCluster{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old-manifest"}, rc)).To(Succeed())
		Expect(rc.Spec.WorkerGroupSpecs[0].NumOfHosts).To(BeEquivalentTo(1), "defaulted by the mutating webhook")
		Eventually(func() ([]corev1.Pod, error) {
			var pods corev1.PodList
			err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: "old-manifest"})
			return pods.Items, err
		}).ShouldNot(BeEmpty(), "the controller creates its pods")

		By("rejecting an invalid v1alpha1 RayCluster at the webhook, with the field path")
		bad := strings.Replace(alphaCluster("old-invalid"), "maxReplicas: 3", "maxReplicas: 0", 1)
		_, stderr, err = kubectl(ctx, bad, "apply", "--server-side", "-f", "-")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring(`spec.workerGroupSpecs[0].maxReplicas: Invalid value: 0: must be greater than or equal to minReplicas (1)`))
		Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old-invalid"}, &rayv1.RayCluster{}))).To(BeTrue())
	})
})
