package features

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// rocksDB is a cluster whose GCS keeps its state in RocksDB on a claim.
func rocksDB(name, ns string, storage *rayv1.GcsEmbeddedStorage) *rayv1.RayCluster {
	rc := builders.RayCluster(name, ns).Obj()
	rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB, Storage: storage}
	return rc
}

func claim(ctx context.Context, ns, name string) func() *corev1.PersistentVolumeClaim {
	return func() *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pvc); err != nil {
			return nil
		}
		return pvc
	}
}

// claimOf is the claim a pod mounts as the GCS storage, with the mount's path and subPath.
func claimOf(pod corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			if m.Name == v.Name {
				out = append(out, v.PersistentVolumeClaim.ClaimName+" at "+m.MountPath+" subPath "+m.SubPath)
			}
		}
	}
	return out
}

var _ = Describe("GCS fault tolerance with the rocksdb backend", func() {
	It("creates the cluster's claim, mounts it on the head, keeps the workers when the head dies, and needs no cleanup", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		Expect(k8s.Create(ctx, rocksDB("rocks", ns, &rayv1.GcsEmbeddedStorage{Size: ptr.To(resource.MustParse("2Gi")), SubPath: "gcs"}))).To(Succeed())
		world.WaitReady(ctx, ns, "rocks")
		rc := world.Get(ctx, ns, "rocks")
		Expect(rc.Finalizers).To(BeEmpty(), "no Redis, so nothing to clean up on deletion")

		By("the claim: owned by the cluster, the size asked for, ReadWriteOnce")
		pvc := claim(ctx, ns, "rocks-gcs-pvc")()
		Expect(pvc).NotTo(BeNil())
		Expect(metav1.IsControlledBy(pvc, rc)).To(BeTrue())
		Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
		Expect(pvc.Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(resource.MustParse("2Gi")))
		Expect(pvc.Labels).To(HaveKeyWithValue(rayv1.ClusterLabelKey, "rocks"))

		By("the head: RocksDB in the mounted claim, no Redis settings; the workers wait for a restarted GCS")
		head := world.HeadPods(ctx, ns, "rocks")[0]
		Expect(head.Annotations).To(HaveKeyWithValue(rayv1.FTEnabledKey, "true"))
		Expect(claimOf(head)).To(Equal([]string{"rocks-gcs-pvc at /ray-gcs-storage subPath gcs"}))
		headEnv := envOf(ctx, ns, head.Spec.Containers[0])
		Expect(headEnv).To(HaveKeyWithValue("RAY_gcs_storage", "rocksdb"))
		Expect(headEnv).To(HaveKeyWithValue("RAY_gcs_storage_path", "/ray-gcs-storage"))
		Expect(headEnv).NotTo(HaveKey("RAY_REDIS_ADDRESS"))
		Expect(headEnv).NotTo(HaveKey("RAY_external_storage_namespace"))
		workers := world.WorkerPods(ctx, ns, "rocks", "workers")
		Expect(workers).To(HaveLen(1))
		Expect(claimOf(workers[0])).To(BeEmpty())
		Expect(envOf(ctx, ns, workers[0].Spec.Containers[0])).To(HaveKeyWithValue("RAY_gcs_rpc_server_reconnect_timeout_s", "600"))

		By("killing the head pod: a new head mounts the same claim, the workers stay")
		Expect(kubelet.DeletePod(ctx, ns, head.Name)).To(Succeed())
		Eventually(func() []types.UID { return uids(world.HeadPods(ctx, ns, "rocks")) }).Should(And(HaveLen(1), Not(ContainElement(head.UID))))
		world.WaitReady(ctx, ns, "rocks")
		Expect(claimOf(world.HeadPods(ctx, ns, "rocks")[0])).To(Equal([]string{"rocks-gcs-pvc at /ray-gcs-storage subPath gcs"}))
		Consistently(func() []types.UID { return uids(world.WorkerPods(ctx, ns, "rocks", "workers")) }, 2*time.Second).Should(Equal(uids(workers)))
		Expect(world.Events(ctx, ns, "rocks")()).To(ContainElement("Normal CreatedPVC: Created PersistentVolumeClaim rocks-gcs-pvc (2Gi) for the GCS storage"))

		By("deleting the cluster: no finalizer, no cleanup Job; the garbage collector takes the claim with it")
		Expect(k8s.Delete(ctx, rc)).To(Succeed())
		Eventually(gone(ctx, ns, "rocks")).Should(BeTrue())
		Expect(cleanupJob(ctx, ns, "rocks")()).To(BeNil())
	})

	It("keeps a Retain claim unowned and gives it to the next cluster of the same name", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		storage := &rayv1.GcsEmbeddedStorage{DeletionPolicy: ptr.To(rayv1.RetainGCSStorageDeletionPolicy)}
		Expect(k8s.Create(ctx, rocksDB("kept", ns, storage))).To(Succeed())
		Eventually(claim(ctx, ns, "kept-gcs-pvc")).ShouldNot(BeNil())
		first := claim(ctx, ns, "kept-gcs-pvc")()
		Expect(first.OwnerReferences).To(BeEmpty())
		Expect(first.Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(resource.MustParse("1Gi")))
		world.WaitReady(ctx, ns, "kept")
		Expect(k8s.Delete(ctx, world.Get(ctx, ns, "kept"))).To(Succeed())
		Eventually(gone(ctx, ns, "kept")).Should(BeTrue())

		Expect(k8s.Create(ctx, rocksDB("kept", ns, storage))).To(Succeed())
		world.WaitReady(ctx, ns, "kept")
		Expect(claim(ctx, ns, "kept-gcs-pvc")().UID).To(Equal(first.UID), "the same claim, so the GCS state carries over")
		Expect(claimOf(world.HeadPods(ctx, ns, "kept")[0])).To(Equal([]string{"kept-gcs-pvc at /ray-gcs-storage subPath "}))
		// envtest runs no garbage collector, so the first cluster's Services are still there
		// (a conflict of their own); the claim is not one.
		Expect(world.Get(ctx, ns, "kept").Status.Conditions).NotTo(ContainElement(HaveField("Message", ContainSubstring("PersistentVolumeClaim"))))
	})

	It("creates no pod while another object controls a claim of that name", func(ctx context.Context) {
		ns := world.NewNamespace(ctx)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "someone", Namespace: ns}}
		Expect(k8s.Create(ctx, cm)).To(Succeed())
		taken := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "taken-gcs-pvc", Namespace: ns, OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		Expect(k8s.Create(ctx, taken)).To(Succeed())
		Expect(k8s.Create(ctx, rocksDB("taken", ns, nil))).To(Succeed())
		Eventually(world.Status(ctx, ns, "taken")).Should(HaveField("Conditions", ContainElement(And(
			HaveField("Type", "OwnershipConflict"),
			HaveField("Message", HavePrefix("PersistentVolumeClaim taken-gcs-pvc exists and is not controlled by this RayCluster (it is controlled by ConfigMap someone)"))))))
		Consistently(func() []corev1.Pod { return world.Pods(ctx, ns, "taken") }, time.Second).Should(BeEmpty())
	})
})
