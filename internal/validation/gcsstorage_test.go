package validation

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raypod"
)

var embeddedOn = features.Static{features.GCSFaultToleranceEmbeddedStorage: true}

func rocks(mutate func(*rayv1.GcsFaultToleranceOptions)) func(*rayv1.RayCluster) {
	return func(rc *rayv1.RayCluster) {
		o := &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB}
		if mutate != nil {
			mutate(o)
		}
		rc.Spec.GcsFaultToleranceOptions = o
	}
}

func TestEmbeddedGCSStorage(t *testing.T) {
	opts := "spec.gcsFaultToleranceOptions"
	st := opts + ".storage"
	tmpl := "spec.headGroupSpec.template.spec"
	cases := map[string]struct {
		mutate func(*rayv1.RayCluster)
		want   field.ErrorList
	}{
		"defaults: a claim raygate creates": {mutate: rocks(nil)},
		"a claim raygate creates, every setting": {mutate: rocks(func(o *rayv1.GcsFaultToleranceOptions) {
			o.Storage = &rayv1.GcsEmbeddedStorage{Size: ptr.To(resource.MustParse("5Gi")), StorageClassName: ptr.To("fast-ssd"),
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, SubPath: "ray/gcs",
				DeletionPolicy: ptr.To(rayv1.RetainGCSStorageDeletionPolicy)}
		})},
		"the user's claim": {mutate: rocks(func(o *rayv1.GcsFaultToleranceOptions) {
			o.Storage = &rayv1.GcsEmbeddedStorage{ClaimName: "team-gcs", SubPath: "a"}
		})},
		"Redis settings with rocksdb": {
			mutate: rocks(func(o *rayv1.GcsFaultToleranceOptions) {
				o.RedisAddress = "redis:6379"
				o.RedisUsername = &rayv1.RedisCredential{Value: "u"}
				o.RedisPassword = &rayv1.RedisCredential{Value: "p"}
				o.ExternalStorageNamespace = "ns"
			}),
			want: field.ErrorList{
				field.Forbidden(p(opts+".redisAddress"), ""), field.Forbidden(p(opts+".redisUsername"), ""),
				field.Forbidden(p(opts+".redisPassword"), ""), field.Forbidden(p(opts+".externalStorageNamespace"), ""),
			},
		},
		"claimName with the settings of a claim raygate would create": {
			mutate: rocks(func(o *rayv1.GcsFaultToleranceOptions) {
				o.Storage = &rayv1.GcsEmbeddedStorage{ClaimName: "Not_A_Name", Size: ptr.To(resource.MustParse("1Gi")), StorageClassName: ptr.To("x"),
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, DeletionPolicy: ptr.To(rayv1.DeleteWithClusterGCSStorageDeletionPolicy)}
			}),
			want: field.ErrorList{
				field.Invalid(p(st+".claimName"), "", ""),
				field.Forbidden(p(st+".size"), ""), field.Forbidden(p(st+".storageClassName"), ""),
				field.Forbidden(p(st+".accessModes"), ""), field.Forbidden(p(st+".deletionPolicy"), ""),
			},
		},
		"zero size, read-only or unknown access modes, a subPath leaving the volume": {
			mutate: rocks(func(o *rayv1.GcsFaultToleranceOptions) {
				o.Storage = &rayv1.GcsEmbeddedStorage{Size: ptr.To(resource.MustParse("0")),
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, "Sometimes"}, SubPath: "a/../../b"}
			}),
			want: field.ErrorList{
				field.Invalid(p(st+".size"), "", ""),
				field.NotSupported[string](p(st+".accessModes[0]"), "", nil), field.NotSupported[string](p(st+".accessModes[1]"), "", nil),
				field.Invalid(p(st+".subPath"), "", ""),
			},
		},
		"an absolute subPath": {
			mutate: rocks(func(o *rayv1.GcsFaultToleranceOptions) { o.Storage = &rayv1.GcsEmbeddedStorage{SubPath: "/gcs"} }),
			want:   field.ErrorList{field.Invalid(p(st+".subPath"), "", "")},
		},
		"the head's template setting what the backend owns": {
			mutate: all(rocks(nil), func(rc *rayv1.RayCluster) {
				ps := &rc.Spec.HeadGroupSpec.Template.Spec
				ps.Volumes = append(ps.Volumes, corev1.Volume{Name: raypod.GCSStorageVolume})
				c := &ps.Containers[0]
				c.Env = []corev1.EnvVar{{Name: "KEEP", Value: "1"}, {Name: raypod.EnvGCSStorage, Value: "rocksdb"}, {Name: raypod.EnvGCSStoragePath, Value: "/d"}}
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "mine", MountPath: raypod.GCSStorageMountPath})
			}),
			want: field.ErrorList{
				field.Forbidden(p(tmpl+".volumes[0].name"), ""),
				field.Forbidden(p(tmpl+".containers[0].env[1]"), ""), field.Forbidden(p(tmpl+".containers[0].env[2]"), ""),
				field.Forbidden(p(tmpl+".containers[0].volumeMounts[0]"), ""),
			},
		},
		"the legacy annotation with the options": {
			mutate: all(rocks(nil), func(rc *rayv1.RayCluster) { rc.Annotations = map[string]string{rayv1.FTEnabledKey: "true"} }),
			want:   field.ErrorList{field.Forbidden(p("metadata.annotations[ray.io/ft-enabled]"), "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := RayCluster(cluster(tc.mutate), embeddedOn)
			diffErrors(t, tc.want, errs)
			if len(warnings) > 0 {
				t.Errorf("warnings: %v", warnings)
			}
		})
	}
}

func TestEmbeddedGCSStorageGateWording(t *testing.T) {
	errs, _ := RayCluster(cluster(rocks(nil)), features.Static{})
	want := "spec.gcsFaultToleranceOptions.backend: Forbidden: the rocksdb backend needs the GCSFaultToleranceEmbeddedStorage feature gate, which is disabled; " +
		"enable it with --feature-gates=GCSFaultToleranceEmbeddedStorage=true"
	if got := errs.ToAggregate().Error(); !strings.HasPrefix(got, want) {
		t.Errorf("got  %s\nwant %s...", got, want)
	}
}

func TestEmbeddedGCSStorageUpdate(t *testing.T) {
	old := cluster(rocks(func(o *rayv1.GcsFaultToleranceOptions) {
		o.Storage = &rayv1.GcsEmbeddedStorage{Size: ptr.To(resource.MustParse("1Gi"))}
	}))
	cases := map[string]struct {
		gates  features.Gates
		mutate func(*rayv1.RayCluster)
		want   field.ErrorList
	}{
		"relabelling, scaling": {gates: embeddedOn, mutate: func(rc *rayv1.RayCluster) {
			rc.Labels = map[string]string{"team": "ml"}
			rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(int32(2))
		}},
		"relabelling after the gate was turned off": {gates: features.Static{}, mutate: func(rc *rayv1.RayCluster) {
			rc.Labels = map[string]string{"team": "ml"}
		}},
		"resizing": {gates: embeddedOn, mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.GcsFaultToleranceOptions.Storage.Size = ptr.To(resource.MustParse("2Gi"))
		}, want: field.ErrorList{field.Forbidden(p("spec.gcsFaultToleranceOptions.storage"), "")}},
		"to redis": {gates: embeddedOn, mutate: func(rc *rayv1.RayCluster) {
			rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
		}, want: field.ErrorList{field.Forbidden(p("spec.gcsFaultToleranceOptions.backend"), "")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc := old.DeepCopy()
			tc.mutate(rc)
			errs, _ := RayClusterUpdate(old, rc, tc.gates)
			diffErrors(t, tc.want, errs)
		})
	}
	// A stored rocksdb cluster is served even with the gate off: it is never frozen.
	if errs := (Validator{Gates: features.Static{}}).StoredRayCluster(old); len(errs) != 0 {
		t.Errorf("stored: %v", errs)
	}
}

func TestEmbeddedGCSStorageOnRayService(t *testing.T) {
	svc := service(func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB, RedisAddress: "r:1"}
		s.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: raypod.EnvGCSStoragePath, Value: "/x"}}
	})
	errs, _ := RayService(svc, embeddedOn)
	diffErrors(t, field.ErrorList{
		field.Forbidden(p("spec.rayClusterConfig.gcsFaultToleranceOptions.redisAddress"), ""),
		field.Forbidden(p("spec.rayClusterConfig.headGroupSpec.template.spec.containers[0].env[0]"), ""),
	}, errs)
}

func TestEmbeddedGCSStorageRetainOnRayService(t *testing.T) {
	svc := service(func(s *rayv1.RayService) {
		s.Spec.RayClusterSpec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB,
			Storage: &rayv1.GcsEmbeddedStorage{DeletionPolicy: ptr.To(rayv1.RetainGCSStorageDeletionPolicy)}}
	})
	errs, warnings := RayService(svc, embeddedOn)
	diffErrors(t, nil, errs)
	want := []string{fmt.Sprintf(WarnRetainOnRayService, "spec.rayClusterConfig.gcsFaultToleranceOptions.storage.deletionPolicy")}
	if d := cmp.Diff(want, warnings); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
	// A RayCluster keeps its name, so a retained claim is picked up again: no warning.
	rc := cluster(rocks(func(o *rayv1.GcsFaultToleranceOptions) {
		o.Storage = &rayv1.GcsEmbeddedStorage{DeletionPolicy: ptr.To(rayv1.RetainGCSStorageDeletionPolicy)}
	}))
	if _, warnings := RayCluster(rc, embeddedOn); len(warnings) != 0 {
		t.Errorf("RayCluster warnings: %v", warnings)
	}
}
