package validation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func redisOpts(mutate func(*rayv1.GcsFaultToleranceOptions)) func(*rayv1.RayCluster) {
	return func(rc *rayv1.RayCluster) {
		o := &rayv1.GcsFaultToleranceOptions{
			RedisAddress:  "redis:6379",
			RedisPassword: &rayv1.RedisCredential{ValueFrom: secretRef("redis", "password")},
		}
		if mutate != nil {
			mutate(o)
		}
		rc.Spec.GcsFaultToleranceOptions = o
	}
}

func secretRef(name, key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
}

func withHeadEnv(env ...corev1.EnvVar) func(*rayv1.RayCluster) {
	return func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = env }
}

func all(fs ...func(*rayv1.RayCluster)) func(*rayv1.RayCluster) {
	return func(rc *rayv1.RayCluster) {
		for _, f := range fs {
			f(rc)
		}
	}
}

func TestGCSFaultTolerance(t *testing.T) {
	opts := "spec.gcsFaultToleranceOptions"
	env := "spec.headGroupSpec.template.spec.containers[0].env"
	cases := map[string]struct {
		mutate   func(*rayv1.RayCluster)
		want     field.ErrorList
		warnings []string
	}{
		"redis with a password from a Secret": {mutate: redisOpts(nil)},
		"username and password from a Secret and a ConfigMap, a storage namespace": {mutate: redisOpts(func(o *rayv1.GcsFaultToleranceOptions) {
			o.RedisUsername = &rayv1.RedisCredential{ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "user"}}}
			o.ExternalStorageNamespace = "team-a"
			o.Backend = rayv1.GcsFTBackendRedis
		})},
		"inline password is legal but warned about": {
			mutate: redisOpts(func(o *rayv1.GcsFaultToleranceOptions) {
				o.RedisPassword = &rayv1.RedisCredential{Value: "5241590000000000"}
			}),
			warnings: []string{fmt.Sprintf(WarnInlineRedisPassword, opts+".redisPassword.value")},
		},
		"address missing": {
			mutate: redisOpts(func(o *rayv1.GcsFaultToleranceOptions) { o.RedisAddress = "" }),
			want:   field.ErrorList{field.Required(p(opts+".redisAddress"), "")},
		},
		"address with whitespace": {
			mutate: redisOpts(func(o *rayv1.GcsFaultToleranceOptions) { o.RedisAddress = "redis :6379" }),
			want:   field.ErrorList{field.Invalid(p(opts+".redisAddress"), "", "")},
		},
		"password both as a value and from a Secret, username empty": {
			mutate: redisOpts(func(o *rayv1.GcsFaultToleranceOptions) {
				o.RedisPassword.Value = "x"
				o.RedisUsername = &rayv1.RedisCredential{}
			}),
			want: field.ErrorList{
				field.Required(p(opts+".redisUsername"), ""),
				field.Forbidden(p(opts+".redisPassword.valueFrom"), ""),
			},
		},
		"a source without key, two sources": {
			mutate: redisOpts(func(o *rayv1.GcsFaultToleranceOptions) {
				o.RedisPassword.ValueFrom.SecretKeyRef.Key = ""
				o.RedisUsername = &rayv1.RedisCredential{ValueFrom: secretRef("s", "u")}
				o.RedisUsername.ValueFrom.FieldRef = &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}
			}),
			want: field.ErrorList{
				field.Invalid(p(opts+".redisUsername.valueFrom"), "", ""),
				field.Required(p(opts+".redisPassword.valueFrom.secretKeyRef.key"), ""),
			},
		},
		"rocksdb needs its feature gate": {
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{Backend: rayv1.GcsFTBackendRocksDB, Storage: &rayv1.GcsEmbeddedStorage{ClaimName: "gcs"}}
			},
			want: field.ErrorList{field.Forbidden(p(opts+".backend"), "")},
		},
		"storage with redis": {
			mutate: redisOpts(func(o *rayv1.GcsFaultToleranceOptions) { o.Storage = &rayv1.GcsEmbeddedStorage{ClaimName: "gcs"} }),
			want:   field.ErrorList{field.Forbidden(p(opts+".storage"), "")},
		},
		"annotation together with the options, and Redis settings beside them": {
			mutate: all(redisOpts(nil), withHeadEnv(
				corev1.EnvVar{Name: "A", Value: "1"},
				corev1.EnvVar{Name: "RAY_REDIS_ADDRESS", Value: "other:6379"},
				corev1.EnvVar{Name: "REDIS_PASSWORD", Value: "p"},
				corev1.EnvVar{Name: "REDIS_USERNAME", Value: "u"},
			), func(rc *rayv1.RayCluster) {
				rc.Annotations = map[string]string{rayv1.FTEnabledKey: "true", rayv1.ExternalStorageNamespaceKey: "ns"}
				rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"redis-password": "p", "redis-username": "u"}
			}),
			want: field.ErrorList{
				field.Forbidden(p("spec.headGroupSpec.rayStartParams[redis-username]"), ""),
				field.Forbidden(p("metadata.annotations[ray.io/ft-enabled]"), ""),
				field.Forbidden(p("metadata.annotations[ray.io/external-storage-namespace]"), ""),
				field.Forbidden(p("spec.headGroupSpec.rayStartParams[redis-password]"), ""),
				field.Forbidden(p(env+"[1]"), ""),
				field.Forbidden(p(env+"[2]"), ""),
				field.Forbidden(p(env+"[3]"), ""),
			},
		},
		"Redis address without fault tolerance": {
			mutate: withHeadEnv(corev1.EnvVar{Name: "RAY_REDIS_ADDRESS", Value: "redis:6379"}),
			want:   field.ErrorList{field.Forbidden(p(env+"[0]"), "")},
		},
		"legacy annotation form with the address in env": {
			mutate: all(withHeadEnv(corev1.EnvVar{Name: "RAY_REDIS_ADDRESS", Value: "redis:6379"}, corev1.EnvVar{Name: "REDIS_PASSWORD", Value: "p"}),
				func(rc *rayv1.RayCluster) { rc.Annotations = map[string]string{rayv1.FTEnabledKey: "true"} }),
			warnings: []string{fmt.Sprintf(WarnLegacyFTForm, "metadata.annotations[ray.io/ft-enabled]")},
		},
		"legacy annotation form without an address": {
			mutate:   func(rc *rayv1.RayCluster) { rc.Annotations = map[string]string{rayv1.FTEnabledKey: "true"} },
			warnings: []string{fmt.Sprintf(WarnLegacyFTWithoutAddress, "metadata.annotations[ray.io/ft-enabled]")},
		},
		"annotation false without options is KubeRay's no-op": {
			mutate: func(rc *rayv1.RayCluster) { rc.Annotations = map[string]string{rayv1.FTEnabledKey: "false"} },
		},
		"deletion timeout": {mutate: all(redisOpts(nil), func(rc *rayv1.RayCluster) {
			rc.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: "10m"}
		})},
		"unreadable deletion timeout": {
			mutate: all(redisOpts(nil), func(rc *rayv1.RayCluster) {
				rc.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: "-1"}
			}),
			want: field.ErrorList{field.Invalid(p("metadata.annotations[ray.io/gcs-ft-deletion-timeout]"), "", "")},
		},
		"deletion timeout at the bound": {mutate: all(redisOpts(nil), func(rc *rayv1.RayCluster) {
			rc.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: "3600"}
		})},
		"deletion timeout above the bound": {
			mutate: all(redisOpts(nil), func(rc *rayv1.RayCluster) {
				rc.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: "3601"}
			}),
			want: field.ErrorList{field.Invalid(p("metadata.annotations[ray.io/gcs-ft-deletion-timeout]"), "", "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs, warnings := RayCluster(cluster(tc.mutate), gateOff)
			diffErrors(t, tc.want, errs)
			diffWarnings(t, tc.warnings, warnings)
		})
	}
}

func TestGCSFaultToleranceWording(t *testing.T) {
	errs, _ := RayCluster(cluster(all(redisOpts(func(o *rayv1.GcsFaultToleranceOptions) { o.RedisPassword.Value = "x" }),
		func(rc *rayv1.RayCluster) { rc.Annotations = map[string]string{rayv1.FTEnabledKey: "true"} })), gateOff)
	want := "[spec.gcsFaultToleranceOptions.redisPassword.valueFrom: Forbidden: give either value or valueFrom, not both, " +
		"metadata.annotations[ray.io/ft-enabled]: Forbidden: GCS fault tolerance is configured by spec.gcsFaultToleranceOptions; remove the annotation]"
	if got := errs.ToAggregate().Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestGCSFaultToleranceUpdate(t *testing.T) {
	old := cluster(redisOpts(nil))
	rocks := cluster(redisOpts(func(o *rayv1.GcsFaultToleranceOptions) { o.Backend = rayv1.GcsFTBackendRocksDB }))
	errs, _ := RayClusterUpdate(old, rocks, gateOff)
	diffErrors(t, field.ErrorList{field.Forbidden(p("spec.gcsFaultToleranceOptions.backend"), ""), field.Forbidden(p("spec.gcsFaultToleranceOptions.backend"), "")}, errs)

	// Turning fault tolerance on for a cluster stored before is allowed (and so is the ratchet:
	// an old cluster with a now-forbidden setting can still be relabelled).
	if errs, _ := RayClusterUpdate(cluster(nil), cluster(redisOpts(nil)), gateOff); len(errs) != 0 {
		t.Errorf("enabling: %v", errs)
	}
	legacy := cluster(all(redisOpts(nil), func(rc *rayv1.RayCluster) { rc.Annotations = map[string]string{rayv1.FTEnabledKey: "true"} }))
	relabelled := legacy.DeepCopy()
	relabelled.Labels = map[string]string{"team": "ml"}
	if errs, _ := RayClusterUpdate(legacy, relabelled, gateOff); len(errs) != 0 {
		t.Errorf("relabelling: %v", errs)
	}
}

func TestGCSFaultToleranceOnRayService(t *testing.T) {
	svc := service(func(s *rayv1.RayService) {
		s.Annotations = map[string]string{rayv1.FTEnabledKey: "true"}
		s.Spec.RayClusterSpec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{}
	})
	errs, _ := RayService(svc, gateOn)
	diffErrors(t, field.ErrorList{
		field.Required(p("spec.rayClusterConfig.gcsFaultToleranceOptions.redisAddress"), ""),
		field.Forbidden(p("metadata.annotations[ray.io/ft-enabled]"), ""),
	}, errs)
}

// The bound on the deletion timeout is admission's: a cluster stored with a larger one is
// not frozen (the controller waits at most the bound), can still be relabelled, and cannot
// be raised further.
func TestGCSFTDeletionTimeoutBound(t *testing.T) {
	long := cluster(all(redisOpts(nil), func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{rayv1.GCSFTDeletionTimeoutKey: "720h"}
	}))
	errs, _ := RayCluster(long, gateOff)
	if want := "metadata.annotations[ray.io/gcs-ft-deletion-timeout]: Invalid value: \"720h\": must be at most 1h0m0s (3600 seconds)"; len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), want) {
		t.Errorf("create: got %v, want %s...", errs, want)
	}
	if errs := (Validator{Gates: gateOff}).StoredRayCluster(long); len(errs) != 0 {
		t.Errorf("stored: %v", errs)
	}
	relabelled := long.DeepCopy()
	relabelled.Labels = map[string]string{"team": "ml"}
	if errs, _ := RayClusterUpdate(long, relabelled, gateOff); len(errs) != 0 {
		t.Errorf("relabelling: %v", errs)
	}
	raised := long.DeepCopy()
	raised.Annotations[rayv1.GCSFTDeletionTimeoutKey] = "8760h"
	if errs, _ := RayClusterUpdate(long, raised, gateOff); len(errs) != 1 {
		t.Errorf("raising: %v", errs)
	}
}

func TestStoredGCSFaultTolerance(t *testing.T) {
	// A stored cluster is refused for what would make the pods wrong, not for settings the
	// options override.
	rc := cluster(all(redisOpts(func(o *rayv1.GcsFaultToleranceOptions) { o.RedisAddress = "" }),
		withHeadEnv(corev1.EnvVar{Name: "REDIS_PASSWORD", Value: "p"})))
	diffErrors(t, field.ErrorList{field.Required(p("spec.gcsFaultToleranceOptions.redisAddress"), "")},
		Validator{Gates: gateOff}.StoredRayCluster(rc))
}
