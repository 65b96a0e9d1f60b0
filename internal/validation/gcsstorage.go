package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raypod"
)

// embeddedGCSStorage checks the rocksdb backend's options, as KubeRay does and more, each
// at its path: the gate (on create), no Redis settings (there is no Redis), a claim name
// or the settings of a claim raygate creates but not both, a writable access mode, a
// relative subPath, and nothing in the head's template that the backend owns. oldSpec is
// the stored spec on update: storage cannot change, because the claim exists already.
func (c *check) embeddedGCSStorage(oldSpec, spec *rayv1.RayClusterSpec, optsPath, headPath *field.Path) field.ErrorList {
	if !c.admission() {
		// A stored cluster is served as it is: a claim the API server refuses is reported
		// in the status by the controller.
		return nil
	}
	opts := spec.GcsFaultToleranceOptions
	var errs field.ErrorList
	if gate := features.GCSFaultToleranceEmbeddedStorage; !c.gates.Enabled(gate) {
		errs = append(errs, field.Forbidden(optsPath.Child("backend"),
			fmt.Sprintf("the rocksdb backend needs the %s feature gate, which is disabled; %s", gate, GateHint(string(gate)))))
	}
	const noRedis = "the rocksdb backend keeps the GCS state on the head's volume, not in Redis; remove it"
	if opts.RedisAddress != "" {
		errs = append(errs, field.Forbidden(optsPath.Child("redisAddress"), noRedis))
	}
	if opts.RedisUsername != nil {
		errs = append(errs, field.Forbidden(optsPath.Child("redisUsername"), noRedis))
	}
	if opts.RedisPassword != nil {
		errs = append(errs, field.Forbidden(optsPath.Child("redisPassword"), noRedis))
	}
	if opts.ExternalStorageNamespace != "" {
		errs = append(errs, field.Forbidden(optsPath.Child("externalStorageNamespace"), noRedis))
	}
	errs = append(errs, gcsStorage(opts.Storage, optsPath.Child("storage"))...)
	errs = append(errs, embeddedStorageHeadSettings(spec, optsPath, headPath)...)
	if oldSpec != nil && oldSpec.GcsFaultToleranceOptions != nil && !apiequality.Semantic.DeepEqual(oldSpec.GcsFaultToleranceOptions.Storage, opts.Storage) {
		errs = append(errs, c.decide(field.Forbidden(optsPath.Child("storage"),
			"storage is immutable: the claim already holds the GCS state and cannot be resized, moved or re-owned in place; create a new cluster instead"))...)
	}
	return errs
}

// gcsStorage checks the storage block on its own.
func gcsStorage(s *rayv1.GcsEmbeddedStorage, p *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.ClaimName != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(s.ClaimName) {
			errs = append(errs, field.Invalid(p.Child("claimName"), s.ClaimName, msg))
		}
		const mine = "the claim named in claimName is yours: raygate creates none, so it takes no settings for one; remove it"
		if s.Size != nil {
			errs = append(errs, field.Forbidden(p.Child("size"), mine))
		}
		if s.StorageClassName != nil {
			errs = append(errs, field.Forbidden(p.Child("storageClassName"), mine))
		}
		if len(s.AccessModes) > 0 {
			errs = append(errs, field.Forbidden(p.Child("accessModes"), mine))
		}
		if s.DeletionPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("deletionPolicy"), "raygate never deletes a claim named in claimName; remove it"))
		}
	}
	if s.Size != nil && s.Size.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("size"), s.Size.String(), "must be greater than zero"))
	}
	if s.StorageClassName != nil && *s.StorageClassName != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(*s.StorageClassName) {
			errs = append(errs, field.Invalid(p.Child("storageClassName"), *s.StorageClassName, msg))
		}
	}
	for i, m := range s.AccessModes {
		// ReadOnlyMany is refused too: RocksDB writes.
		writable := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteOncePod, corev1.ReadWriteMany}
		if !slices.Contains(writable, m) {
			errs = append(errs, field.NotSupported(p.Child("accessModes").Index(i), m, writable))
		}
	}
	if sp := s.SubPath; sp != "" {
		if strings.HasPrefix(sp, "/") {
			errs = append(errs, field.Invalid(p.Child("subPath"), sp, "must be a relative path"))
		}
		for _, part := range strings.Split(sp, "/") {
			if part == ".." {
				errs = append(errs, field.Invalid(p.Child("subPath"), sp, "must not contain '..'"))
				break
			}
		}
	}
	return errs
}

// embeddedStorageHeadSettings refuses, in the head's template, the variables and the volume
// the backend owns: raygate's values would silently replace them.
func embeddedStorageHeadSettings(spec *rayv1.RayClusterSpec, optsPath, headPath *field.Path) field.ErrorList {
	head := spec.HeadGroupSpec.Template.Spec
	tmplPath := headPath.Child("template", "spec")
	var errs field.ErrorList
	owned := "set by raygate for the rocksdb backend (" + optsPath.Child("backend").String() + ")"
	for i, v := range head.Volumes {
		if v.Name == raypod.GCSStorageVolume {
			errs = append(errs, field.Forbidden(tmplPath.Child("volumes").Index(i).Child("name"), "the volume "+raypod.GCSStorageVolume+" is "+owned))
		}
	}
	if len(head.Containers) == 0 {
		return errs
	}
	cPath := tmplPath.Child("containers").Index(rayv1.RayContainerIndex)
	ray := head.Containers[rayv1.RayContainerIndex]
	for i, e := range ray.Env {
		if e.Name == raypod.EnvGCSStorage || e.Name == raypod.EnvGCSStoragePath {
			errs = append(errs, field.Forbidden(cPath.Child("env").Index(i), e.Name+" is "+owned))
		}
	}
	for i, m := range ray.VolumeMounts {
		if m.Name == raypod.GCSStorageVolume || m.MountPath == raypod.GCSStorageMountPath {
			errs = append(errs, field.Forbidden(cPath.Child("volumeMounts").Index(i),
				fmt.Sprintf("the volume %s at %s is %s", raypod.GCSStorageVolume, raypod.GCSStorageMountPath, owned)))
		}
	}
	return errs
}
