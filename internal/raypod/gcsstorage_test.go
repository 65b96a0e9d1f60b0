package raypod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func rocksDB(storage *rayv1.GcsEmbeddedStorage) func(*rayv1.RayCluster) {
	return func(rc *rayv1.RayCluster) {
		rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB, Storage: storage}
	}
}

func TestEmbeddedGCSStorageGolden(t *testing.T) {
	golden(t, "head-gcsft-rocksdb", HeadPod(cluster(rocksDB(&rayv1.GcsEmbeddedStorage{SubPath: "gcs"})), "hash1", Settings{}))
}

func TestEmbeddedGCSStoragePods(t *testing.T) {
	cases := map[string]struct {
		storage   *rayv1.GcsEmbeddedStorage
		userEnv   []corev1.EnvVar
		userMount []corev1.VolumeMount
		wantClaim string
		wantSub   string
	}{
		"raygate's claim": {wantClaim: "demo-gcs-pvc"},
		"the user's claim, a subdirectory of it": {
			storage:   &rayv1.GcsEmbeddedStorage{ClaimName: "mine", SubPath: "ray/demo"},
			wantClaim: "mine", wantSub: "ray/demo",
		},
		"a stored object's own settings are replaced, not duplicated": {
			userEnv:   []corev1.EnvVar{{Name: EnvGCSStorage, Value: "redis"}, {Name: EnvGCSStoragePath, Value: "/tmp"}},
			userMount: []corev1.VolumeMount{{Name: "x", MountPath: GCSStorageMountPath}},
			wantClaim: "demo-gcs-pvc",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := cluster(rocksDB(tc.storage), func(rc *rayv1.RayCluster) {
				c := &rc.Spec.HeadGroupSpec.Template.Spec.Containers[0]
				c.Env = append(c.Env, tc.userEnv...)
				c.VolumeMounts = append(c.VolumeMounts, tc.userMount...)
			})
			pod := HeadPod(rc, "h", Settings{})
			c := pod.Spec.Containers[rayv1.RayContainerIndex]
			env := envOf(c)
			if env[EnvGCSStorage].Value != GCSStorageRocksDB || env[EnvGCSStoragePath].Value != GCSStorageMountPath {
				t.Errorf("env: %s=%q %s=%q", EnvGCSStorage, env[EnvGCSStorage].Value, EnvGCSStoragePath, env[EnvGCSStoragePath].Value)
			}
			for _, absent := range []string{EnvRedisAddress, EnvExternalStorageNamespace, EnvRedisPassword} {
				if _, ok := env[absent]; ok {
					t.Errorf("%s set on a rocksdb head", absent)
				}
			}
			if _, ok := pod.Annotations[rayv1.ExternalStorageNamespaceKey]; ok {
				t.Error("a rocksdb head has a Redis storage namespace annotation")
			}
			if pod.Annotations[rayv1.FTEnabledKey] != "true" {
				t.Errorf("%s = %q", rayv1.FTEnabledKey, pod.Annotations[rayv1.FTEnabledKey])
			}
			var mounts []corev1.VolumeMount
			for _, m := range c.VolumeMounts {
				if m.MountPath == GCSStorageMountPath || m.Name == GCSStorageVolume {
					mounts = append(mounts, m)
				}
			}
			want := []corev1.VolumeMount{{Name: GCSStorageVolume, MountPath: GCSStorageMountPath, SubPath: tc.wantSub}}
			if d := cmp.Diff(want, mounts); d != "" {
				t.Errorf("mounts (-want +got):\n%s", d)
			}
			var claims []string
			for _, v := range pod.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					claims = append(claims, v.Name+"="+v.PersistentVolumeClaim.ClaimName)
				}
			}
			if d := cmp.Diff([]string{GCSStorageVolume + "=" + tc.wantClaim}, claims); d != "" {
				t.Errorf("claims (-want +got):\n%s", d)
			}
			worker := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, Settings{})
			wenv := envOf(worker.Spec.Containers[rayv1.RayContainerIndex])
			if wenv[EnvGCSReconnectTimeout].Value != workerGCSReconnectTimeout {
				t.Errorf("worker reconnect timeout = %q", wenv[EnvGCSReconnectTimeout].Value)
			}
			for _, v := range worker.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					t.Errorf("a worker mounts the head's claim: %v", v)
				}
			}
			if _, ok := wenv[EnvGCSStorage]; ok {
				t.Errorf("a worker got %s", EnvGCSStorage)
			}
		})
	}
}

func TestGCSStoragePVC(t *testing.T) {
	retain := rayv1.RetainGCSStorageDeletionPolicy
	del := rayv1.DeleteWithClusterGCSStorageDeletionPolicy
	cases := map[string]struct {
		mutate    func(*rayv1.RayCluster)
		wantNil   bool
		wantSize  string
		wantModes []corev1.PersistentVolumeAccessMode
		wantClass *string
		wantOwner bool
	}{
		"no fault tolerance": {mutate: func(*rayv1.RayCluster) {}, wantNil: true},
		"the redis backend":  {mutate: redisFT, wantNil: true},
		"the user's claim":   {mutate: rocksDB(&rayv1.GcsEmbeddedStorage{ClaimName: "mine"}), wantNil: true},
		"defaults: 1Gi, RWO, the default class, deleted with the cluster": {
			mutate: rocksDB(nil), wantSize: "1Gi", wantModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, wantOwner: true,
		},
		"size, class and modes as asked; DeleteWithCluster": {
			mutate: rocksDB(&rayv1.GcsEmbeddedStorage{Size: ptr.To(resource.MustParse("5Gi")), StorageClassName: ptr.To("ssd"),
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, DeletionPolicy: &del}),
			wantSize: "5Gi", wantModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, wantClass: ptr.To("ssd"), wantOwner: true,
		},
		"Retain: not owned, so it outlives the cluster": {
			mutate: rocksDB(&rayv1.GcsEmbeddedStorage{DeletionPolicy: &retain}), wantSize: "1Gi",
			wantModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := cluster(tc.mutate)
			pvc := GCSStoragePVC(rc)
			if tc.wantNil {
				if pvc != nil {
					t.Fatalf("got a claim %s, want none", pvc.Name)
				}
				return
			}
			if pvc == nil {
				t.Fatal("no claim")
			}
			if pvc.Name != "demo-gcs-pvc" || pvc.Namespace != "team-a" {
				t.Errorf("name %s/%s", pvc.Namespace, pvc.Name)
			}
			if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != tc.wantSize {
				t.Errorf("size %s, want %s", got.String(), tc.wantSize)
			}
			if d := cmp.Diff(tc.wantModes, pvc.Spec.AccessModes); d != "" {
				t.Errorf("modes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantClass, pvc.Spec.StorageClassName); d != "" {
				t.Errorf("class (-want +got):\n%s", d)
			}
			if pvc.Labels[rayv1.ClusterLabelKey] != "demo" || pvc.Labels[rayv1.KubernetesCreatedByLabelKey] != rayv1.ComponentName {
				t.Errorf("labels %v", pvc.Labels)
			}
			owned := len(pvc.OwnerReferences) == 1 && pvc.OwnerReferences[0].UID == rc.UID && ptr.Deref(pvc.OwnerReferences[0].Controller, false)
			if owned != tc.wantOwner || (!tc.wantOwner && len(pvc.OwnerReferences) > 0) {
				t.Errorf("owner references %v, want owned=%v", pvc.OwnerReferences, tc.wantOwner)
			}
		})
	}
}
