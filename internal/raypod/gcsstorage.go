package raypod

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// The embedded (rocksdb) GCS backend: Ray keeps the GCS tables in RocksDB in a directory of
// the head pod, which raygate mounts from a PersistentVolumeClaim so that a new head pod
// finds the state the old one wrote.
const (
	// EnvGCSStorage selects the GCS storage backend (Ray reads this name).
	EnvGCSStorage = "RAY_gcs_storage"
	// EnvGCSStoragePath is the directory RocksDB keeps its files in.
	EnvGCSStoragePath = "RAY_gcs_storage_path"
	// GCSStorageRocksDB is EnvGCSStorage's value for the embedded backend.
	GCSStorageRocksDB = "rocksdb"
	// GCSStorageVolume is the head pod's volume holding the claim.
	GCSStorageVolume = "ray-gcs-storage"
	// GCSStorageMountPath is where the head's Ray container mounts it.
	GCSStorageMountPath = "/ray-gcs-storage"
	// GCSStoragePVCSuffix makes the name of the claim raygate creates: <cluster>-gcs-pvc.
	GCSStoragePVCSuffix = "-gcs-pvc"
	// GCSStorageDefaultSize is the size of a claim created without storage.size: the GCS
	// tables are small (tens of MB even for large clusters).
	GCSStorageDefaultSize = "1Gi"
)

// EmbeddedGCSStorage reports whether the cluster keeps its GCS state in RocksDB on a claim.
func EmbeddedGCSStorage(spec *rayv1.RayClusterSpec) bool {
	o := spec.GcsFaultToleranceOptions
	return o != nil && rayspec.GCSFaultToleranceBackend(o) == rayv1.GcsFTBackendRocksDB
}

// GCSStorageClaimName is the claim the head mounts: the user's storage.claimName, else the
// one raygate creates.
func GCSStorageClaimName(rc *rayv1.RayCluster) string {
	if s := rc.Spec.GcsFaultToleranceOptions.Storage; s != nil && s.ClaimName != "" {
		return s.ClaimName
	}
	return rc.Name + GCSStoragePVCSuffix
}

// GCSStoragePVC is the claim raygate creates for a rocksdb cluster, or nil when the cluster
// needs none (another backend, or the user's own claim). It is controlled by the cluster,
// and so deleted with it, unless storage.deletionPolicy is Retain. A RayService's cluster
// owns its claim too: each cluster a RayService creates has its own GCS.
func GCSStoragePVC(rc *rayv1.RayCluster) *corev1.PersistentVolumeClaim {
	if !EmbeddedGCSStorage(&rc.Spec) {
		return nil
	}
	s := rc.Spec.GcsFaultToleranceOptions.Storage
	if s == nil {
		s = &rayv1.GcsEmbeddedStorage{}
	}
	if s.ClaimName != "" {
		return nil
	}
	modes := s.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	size := resource.MustParse(GCSStorageDefaultSize)
	if s.Size != nil {
		size = *s.Size
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      GCSStorageClaimName(rc),
			Namespace: rc.Namespace,
			Labels: map[string]string{
				rayv1.ClusterLabelKey:                   rc.Name,
				rayv1.KubernetesApplicationNameLabelKey: rayv1.ApplicationName,
				rayv1.KubernetesCreatedByLabelKey:       rayv1.ComponentName,
			},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      append([]corev1.PersistentVolumeAccessMode(nil), modes...),
			StorageClassName: s.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if s.DeletionPolicy == nil || *s.DeletionPolicy != rayv1.RetainGCSStorageDeletionPolicy {
		pvc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))}
	}
	return pvc
}

// addEmbeddedGCSStorage points the head's GCS at RocksDB on the claim. The variables and
// the mount are raygate's: its values replace any the user gave (admission refuses them).
func addEmbeddedGCSStorage(rc *rayv1.RayCluster, pod *corev1.Pod) {
	c := &pod.Spec.Containers[rayv1.RayContainerIndex]
	addEnv(c, corev1.EnvVar{Name: EnvGCSStorage, Value: GCSStorageRocksDB}, true)
	addEnv(c, corev1.EnvVar{Name: EnvGCSStoragePath, Value: GCSStorageMountPath}, true)
	var subPath string
	if s := rc.Spec.GcsFaultToleranceOptions.Storage; s != nil {
		subPath = s.SubPath
	}
	mounts := c.VolumeMounts[:0:0]
	for _, m := range c.VolumeMounts {
		if m.Name != GCSStorageVolume && m.MountPath != GCSStorageMountPath {
			mounts = append(mounts, m)
		}
	}
	c.VolumeMounts = append(mounts, corev1.VolumeMount{Name: GCSStorageVolume, MountPath: GCSStorageMountPath, SubPath: subPath})
	volumes := pod.Spec.Volumes[:0:0]
	for _, v := range pod.Spec.Volumes {
		if v.Name != GCSStorageVolume {
			volumes = append(volumes, v)
		}
	}
	pod.Spec.Volumes = append(volumes, corev1.Volume{Name: GCSStorageVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: GCSStorageClaimName(rc)},
	}})
}
