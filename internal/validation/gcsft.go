package validation

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// GCS fault tolerance settings that live in the head's env or rayStartParams.
const (
	redisAddressEnvVar   = "RAY_REDIS_ADDRESS"
	redisUsernameEnvVar  = "REDIS_USERNAME"
	redisPasswordEnvVar  = "REDIS_PASSWORD"
	redisUsernameParam   = "redis-username"
	redisPasswordParam   = "redis-password"
	gcsFTOptionsJSONName = "gcsFaultToleranceOptions"
)

// Warnings about GCS fault tolerance.
const (
	// WarnInlineRedisPassword: the password is readable by anyone who can read the object.
	WarnInlineRedisPassword = "%s: the Redis password is stored in plain text in this object; use valueFrom.secretKeyRef" //nolint:gosec // a warning text, not a credential
	// WarnLegacyFTWithoutAddress: the legacy annotation without RAY_REDIS_ADDRESS persists nothing.
	WarnLegacyFTWithoutAddress = "%s is true but the head's Ray container sets no RAY_REDIS_ADDRESS, so the GCS has no external Redis to keep its state in; " +
		"set spec.gcsFaultToleranceOptions.redisAddress (and remove the annotation) instead"
	// WarnRetainOnRayService: each cluster of a RayService has a new name, so no claim is reused.
	WarnRetainOnRayService = "%s is Retain: every cluster of the RayService (a new one per upgrade, with a new name) leaves its claim <cluster>-gcs-pvc behind, " +
		"and no later cluster uses it; delete them yourself, or use DeleteWithCluster"
	// WarnLegacyFTForm: the annotation form still works but the options say it all in one place.
	WarnLegacyFTForm = "%s is the legacy way to enable GCS fault tolerance; prefer spec.gcsFaultToleranceOptions"
)

// DeletionTimeoutAboveBound: the finalizer holds the cluster, and its namespace, in deletion
// until the timeout; a tenant must not be able to hold them for days.
const DeletionTimeoutAboveBound = "must be at most %s (%d seconds): the cluster, and its namespace, stay in deletion until the Redis cleanup finished or this timeout passed"

var annotationsPath = field.NewPath("metadata", "annotations")

// gcsFaultTolerance checks GCS fault tolerance as KubeRay accepts it (gcsFaultToleranceOptions,
// or the legacy ray.io/ft-enabled annotation with the Redis address in the head's env), with
// every mistake at its own path. meta holds the annotations that reach the cluster (a
// RayService's propagate to its clusters); oldSpec is the stored spec on update.
func (c *check) gcsFaultTolerance(oldSpec *rayv1.RayClusterSpec, meta *metav1.ObjectMeta, spec *rayv1.RayClusterSpec, path *field.Path) (field.ErrorList, []string) {
	opts := spec.GcsFaultToleranceOptions
	optsPath := path.Child(gcsFTOptionsJSONName)
	headPath := path.Child("headGroupSpec")
	if rayspec.GCSFaultToleranceBackend(opts) == rayv1.GcsFTBackendRocksDB {
		errs := c.embeddedGCSStorage(oldSpec, spec, optsPath, headPath)
		var warnings []string
		if c.admission() {
			errs = append(errs, gcsFTHeadSettings(meta, spec, headPath, optsPath)...)
			errs = append(errs, c.backendChange(oldSpec, opts, optsPath)...)
			if s := opts.Storage; path.String() == rayClusterConfigPath.String() && s != nil && s.DeletionPolicy != nil && *s.DeletionPolicy == rayv1.RetainGCSStorageDeletionPolicy {
				warnings = append(warnings, fmt.Sprintf(WarnRetainOnRayService, optsPath.Child("storage", "deletionPolicy")))
			}
		}
		return errs, warnings
	}
	errs, warnings := gcsFTOptions(opts, optsPath)
	timeout, hasTimeout := meta.Annotations[rayv1.GCSFTDeletionTimeoutKey]
	var d time.Duration
	var err error
	if hasTimeout { // parsing nothing costs an error value
		d, err = rayspec.ParseGCSFTDeletionTimeout(timeout)
	}
	if hasTimeout && err != nil {
		errs = append(errs, field.Invalid(annotationsPath.Key(rayv1.GCSFTDeletionTimeoutKey), timeout, err.Error()))
	}
	if !c.admission() {
		return errs, nil
	}
	// Create/update only: the controller waits at most the bound whatever is stored.
	if hasTimeout && err == nil && d > rayspec.MaxGCSFTDeletionTimeout {
		errs = append(errs, field.Invalid(annotationsPath.Key(rayv1.GCSFTDeletionTimeoutKey), timeout,
			fmt.Sprintf(DeletionTimeoutAboveBound, rayspec.MaxGCSFTDeletionTimeout, int64(rayspec.MaxGCSFTDeletionTimeout/time.Second))))
	}
	// Create/update-only from here: a stored object breaking them still builds pods that do
	// what the options say (the options' values are set over the user's).
	errs = append(errs, gcsFTHeadSettings(meta, spec, headPath, optsPath)...)
	errs = append(errs, c.backendChange(oldSpec, opts, optsPath)...)
	if opts == nil && rayspec.GCSFaultToleranceEnabled(spec, meta.Annotations) {
		p := annotationsPath.Key(rayv1.FTEnabledKey).String()
		if _, _, ok := headEnv(spec, redisAddressEnvVar); !ok {
			warnings = append(warnings, fmt.Sprintf(WarnLegacyFTWithoutAddress, p))
		} else {
			warnings = append(warnings, fmt.Sprintf(WarnLegacyFTForm, p))
		}
	}
	return errs, warnings
}

// backendChange refuses a change of backend on an existing cluster.
func (c *check) backendChange(oldSpec *rayv1.RayClusterSpec, opts *rayv1.GcsFaultToleranceOptions, optsPath *field.Path) field.ErrorList {
	if oldSpec == nil || oldSpec.GcsFaultToleranceOptions == nil || opts == nil {
		return nil
	}
	was, is := rayspec.GCSFaultToleranceBackend(oldSpec.GcsFaultToleranceOptions), rayspec.GCSFaultToleranceBackend(opts)
	if was == is {
		return nil
	}
	return c.decide(field.Forbidden(optsPath.Child("backend"),
		fmt.Sprintf("the backend of an existing cluster is immutable (was %s): the GCS state already kept there would be lost; create a new cluster instead", was)))
}

// gcsFTOptions checks gcsFaultToleranceOptions on its own.
func gcsFTOptions(opts *rayv1.GcsFaultToleranceOptions, path *field.Path) (field.ErrorList, []string) {
	if opts == nil {
		return nil, nil
	}
	var errs field.ErrorList
	var warnings []string
	if opts.Storage != nil {
		errs = append(errs, field.Forbidden(path.Child("storage"), "storage is only for the rocksdb backend; the redis backend keeps the GCS state in Redis"))
	}
	switch addr := opts.RedisAddress; {
	case addr == "":
		errs = append(errs, field.Required(path.Child("redisAddress"), "the redis backend needs the Redis server's address, e.g. redis:6379 or rediss://redis:6380"))
	case strings.ContainsAny(addr, " \t\r\n"):
		errs = append(errs, field.Invalid(path.Child("redisAddress"), addr, "must not contain whitespace"))
	}
	errs = append(errs, redisCredential(opts.RedisUsername, path.Child("redisUsername"))...)
	errs = append(errs, redisCredential(opts.RedisPassword, path.Child("redisPassword"))...)
	if p := opts.RedisPassword; p != nil && p.Value != "" && p.ValueFrom == nil {
		warnings = append(warnings, fmt.Sprintf(WarnInlineRedisPassword, path.Child("redisPassword", "value")))
	}
	return errs, warnings
}

// redisCredential: a value or one source, not both, not neither.
func redisCredential(cred *rayv1.RedisCredential, path *field.Path) field.ErrorList {
	if cred == nil {
		return nil
	}
	switch {
	case cred.Value != "" && cred.ValueFrom != nil:
		return field.ErrorList{field.Forbidden(path.Child("valueFrom"), "give either value or valueFrom, not both")}
	case cred.Value == "" && cred.ValueFrom == nil:
		return field.ErrorList{field.Required(path, "set value or valueFrom (e.g. valueFrom.secretKeyRef), or remove it")}
	case cred.ValueFrom == nil:
		return nil
	}
	src, srcPath := cred.ValueFrom, path.Child("valueFrom")
	var errs field.ErrorList
	n := 0
	if r := src.SecretKeyRef; r != nil {
		n++
		errs = append(errs, keyRef(r.Name, r.Key, srcPath.Child("secretKeyRef"))...)
	}
	if r := src.ConfigMapKeyRef; r != nil {
		n++
		errs = append(errs, keyRef(r.Name, r.Key, srcPath.Child("configMapKeyRef"))...)
	}
	for _, set := range []bool{src.FieldRef != nil, src.ResourceFieldRef != nil, src.FileKeyRef != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		errs = append(errs, field.Invalid(srcPath, "", fmt.Sprintf("must name exactly one source (secretKeyRef or configMapKeyRef), found %d", n)))
	}
	return errs
}

func keyRef(name, key string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	if key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	}
	return errs
}

// gcsFTHeadSettings rejects, as KubeRay does, Redis settings given beside the options (the
// options would silently win) and, without fault tolerance, a Redis address that would
// enable it half-way (no finalizer, no cleanup). A Redis username is only ever given
// through the options.
func gcsFTHeadSettings(meta *metav1.ObjectMeta, spec *rayv1.RayClusterSpec, headPath, optsPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	head := &spec.HeadGroupSpec
	opts := spec.GcsFaultToleranceOptions
	// Paths are built only for an error.
	paramsPath := func() *field.Path { return headPath.Child("rayStartParams") }
	if v := head.RayStartParams[redisUsernameParam]; v != "" {
		errs = append(errs, field.Forbidden(paramsPath().Key(redisUsernameParam), "set the Redis username in "+optsPath.Child("redisUsername").String()+" instead"))
	}
	if opts != nil {
		if v, ok := meta.Annotations[rayv1.FTEnabledKey]; ok && v != "" {
			errs = append(errs, field.Forbidden(annotationsPath.Key(rayv1.FTEnabledKey),
				"GCS fault tolerance is configured by "+optsPath.String()+"; remove the annotation"))
		}
		if _, ok := meta.Annotations[rayv1.ExternalStorageNamespaceKey]; ok {
			errs = append(errs, field.Forbidden(annotationsPath.Key(rayv1.ExternalStorageNamespaceKey),
				"set "+optsPath.Child("externalStorageNamespace").String()+" instead"))
		}
		if v := head.RayStartParams[redisPasswordParam]; v != "" {
			errs = append(errs, field.Forbidden(paramsPath().Key(redisPasswordParam), "set the Redis password in "+optsPath.Child("redisPassword").String()+" instead"))
		}
	}
	containers := head.Template.Spec.Containers
	if len(containers) == 0 {
		return errs
	}
	envPath := func() *field.Path {
		return headPath.Child("template", "spec", "containers").Index(rayv1.RayContainerIndex).Child("env")
	}
	ft := rayspec.GCSFaultToleranceEnabled(spec, meta.Annotations)
	for i, e := range containers[rayv1.RayContainerIndex].Env {
		var detail string
		switch {
		case e.Name == redisUsernameEnvVar:
			detail = "set the Redis username in " + optsPath.Child("redisUsername").String() + " instead"
		case e.Name == redisAddressEnvVar && opts != nil:
			detail = "set the Redis address in " + optsPath.Child("redisAddress").String() + " instead"
		case e.Name == redisPasswordEnvVar && opts != nil:
			detail = "set the Redis password in " + optsPath.Child("redisPassword").String() + " instead"
		case e.Name == redisAddressEnvVar && !ft:
			detail = redisAddressEnvVar + " keeps the GCS in an external Redis, which needs GCS fault tolerance: set " + optsPath.Child("redisAddress").String() +
				" instead, so that the cluster is configured for it and the Redis keys are deleted with the cluster"
		}
		if detail != "" {
			errs = append(errs, field.Forbidden(envPath().Index(i), detail))
		}
	}
	return errs
}
