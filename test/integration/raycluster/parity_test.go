package raycluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

// Behaviour KubeRay users depend on, checked on the pods raygate creates (issue 17's parity
// list; docs/migrating-from-kuberay.md names these specs).
var _ = Describe("KubeRay parity in the pods", func() {
	envOf := func(c corev1.Container, name string) string {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
		return "<unset>"
	}

	It("points workers at the head in the operator's CLUSTER_DOMAIN and backs /dev/shm with memory when the Ray container sets none", func(ctx context.Context) {
		// The operator reads CLUSTER_DOMAIN once at start (the chart's clusterDomain value sets
		// it) into its options: run one with the domain set.
		Expect(mgr.Stop()).To(Succeed())
		opts := rctest.ManagerOptions()
		opts.ClusterDomain = "corp.example"
		mgr = harness.StartManager(opts)
		DeferCleanup(func() {
			Expect(mgr.Stop()).To(Succeed())
			mgr = harness.StartManager(rctest.ManagerOptions())
		})
		ns := world.NewNamespace(ctx)
		rc := builders.RayCluster("dom", ns).Obj()
		worker := &rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0]
		delete(worker.Resources.Requests, corev1.ResourceMemory)
		delete(worker.Resources.Limits, corev1.ResourceMemory)
		Expect(k8s.Create(ctx, rc)).To(Succeed())
		world.WaitReady(ctx, ns, "dom")

		want := "dom-head-svc." + ns + ".svc.corp.example"
		workers := world.WorkerPods(ctx, ns, "dom", "workers")
		Expect(workers).To(HaveLen(1))
		w := workers[0]
		Expect(envOf(w.Spec.Containers[0], raypod.EnvFQRayIP)).To(Equal(want))
		Expect(w.Spec.InitContainers).NotTo(BeEmpty())
		for _, ic := range w.Spec.InitContainers {
			Expect(envOf(ic, raypod.EnvFQRayIP)).To(Equal(want), ic.Name)
		}

		var shm *corev1.Volume
		for i := range w.Spec.Volumes {
			if w.Spec.Volumes[i].Name == raypod.SharedMemoryVolumeName {
				shm = &w.Spec.Volumes[i]
			}
		}
		Expect(shm).NotTo(BeNil(), "a /dev/shm volume")
		Expect(shm.EmptyDir).NotTo(BeNil())
		Expect(shm.EmptyDir.Medium).To(Equal(corev1.StorageMediumMemory))
		Expect(shm.EmptyDir.SizeLimit).To(BeNil(), "no memory set: no size limit")
		Expect(w.Spec.Containers[0].VolumeMounts).To(ContainElement(And(
			HaveField("Name", raypod.SharedMemoryVolumeName), HaveField("MountPath", raypod.SharedMemoryMountPath))))
	})
})
