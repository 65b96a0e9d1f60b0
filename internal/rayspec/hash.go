package rayspec

import (
	"crypto/sha1" //nolint:gosec // KubeRay's hash function; a fingerprint, not a security check
	"encoding/base32"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// SpecHash is the hash a RayService decides "new cluster" on (stored on its clusters under
// rayv1.SpecHashKey). It is HashWithoutReplicas without the pod templates' tolerations and
// scheduling gates: admission controllers such as Kueue add those to a cluster's templates,
// and that must neither replace a serving cluster nor look like a user change. Callers pass
// the *defaulted* spec. Changing what this function covers requires a new annotation key,
// or every running cluster would look changed.
func SpecHash(spec rayv1.RayClusterSpec) (string, error) {
	s := spec.DeepCopy()
	withoutScheduling(&s.HeadGroupSpec.Template.Spec)
	for i := range s.WorkerGroupSpecs {
		withoutScheduling(&s.WorkerGroupSpecs[i].Template.Spec)
	}
	return HashWithoutReplicas(*s)
}

func withoutScheduling(p *corev1.PodSpec) {
	p.Tolerations = nil
	p.SchedulingGates = nil
}

// FirstWorkerGroups is the spec with only its first n worker groups: hashing it tells
// "worker groups were only appended" from a real change.
func FirstWorkerGroups(spec rayv1.RayClusterSpec, n int) rayv1.RayClusterSpec {
	s := spec.DeepCopy()
	if n < len(s.WorkerGroupSpecs) {
		s.WorkerGroupSpecs = s.WorkerGroupSpecs[:n]
	}
	return *s
}

// KubeRayHash is the value KubeRay v1.5.1 stores under
// ray.io/hash-without-replicas-and-workers-to-delete on a RayService's cluster and compares
// with to decide on a new cluster: SHA-1 of the JSON of the spec *as stored* (not
// defaulted), with the worker groups' replicas, minReplicas, maxReplicas and
// workersToDelete cleared, in upper-case base32hex. raygate writes it so that KubeRay,
// started on clusters raygate made, sees them as up to date, and compares with it to adopt
// clusters KubeRay made. Fields KubeRay v1.5.1 does not know are left out (its decoder
// drops them), and its JSON layout is kept where raygate's differs (redisAddress is always
// written).
func KubeRayHash(spec rayv1.RayClusterSpec) (string, error) {
	b, err := json.Marshal(kubeRayView(spec))
	if err != nil {
		return "", fmt.Errorf("hashing spec: %w", err)
	}
	sum := sha1.Sum(b) //nolint:gosec // see the import
	return base32.HexEncoding.EncodeToString(sum[:]), nil
}

// KubeRayHashesBeforeDefaults are the KubeRayHash values the spec may have had before
// raygate's mutating webhook stored its defaults into it: KubeRay's JSON writes an unset
// rayStartParams as null, and the webhook sets it to {}. The other defaults the webhook
// stores are fields KubeRay leaves out of the hash or that KubeRay's schema defaults the
// same way (numOfHosts). Every combination of the empty rayStartParams being unset is
// tried (both extremes only, beyond a few groups). The first value is KubeRayHash(spec).
func KubeRayHashesBeforeDefaults(spec rayv1.RayClusterSpec) ([]string, error) {
	s := spec.DeepCopy()
	var empty []*map[string]string
	add := func(m *map[string]string) {
		if *m != nil && len(*m) == 0 {
			empty = append(empty, m)
		}
	}
	add(&s.HeadGroupSpec.RayStartParams)
	for i := range s.WorkerGroupSpecs {
		add(&s.WorkerGroupSpecs[i].RayStartParams)
	}
	masks := []int{0, 1<<len(empty) - 1}
	if len(empty) <= 6 {
		masks = masks[:0]
		for m := range 1 << len(empty) {
			masks = append(masks, m)
		}
	}
	var out []string
	for _, mask := range masks {
		for i, m := range empty {
			if mask&(1<<i) != 0 {
				*m = nil
			} else {
				*m = map[string]string{}
			}
		}
		h, err := KubeRayHash(*s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out, nil
}

// IsKubeRayHash tells a KubeRayHash value (upper case) from the hash older raygate versions
// stored under the same key (HashWithoutReplicas: lower case). Both are 32 base32hex
// characters; a 160-bit hash without a single letter does not happen in practice.
func IsKubeRayHash(h string) bool {
	return h != "" && strings.ToUpper(h) == h && strings.ToLower(h) != h
}

// kubeRaySpec is RayClusterSpec with KubeRay v1.5.1's fields, in its order.
type kubeRaySpec struct {
	AuthOptions              *rayv1.AuthOptions       `json:"authOptions,omitempty"`
	Suspend                  *bool                    `json:"suspend,omitempty"`
	ManagedBy                *string                  `json:"managedBy,omitempty"`
	AutoscalerOptions        *rayv1.AutoscalerOptions `json:"autoscalerOptions,omitempty"`
	HeadServiceAnnotations   map[string]string        `json:"headServiceAnnotations,omitempty"`
	EnableInTreeAutoscaling  *bool                    `json:"enableInTreeAutoscaling,omitempty"`
	GcsFaultToleranceOptions *kubeRayGcsFT            `json:"gcsFaultToleranceOptions,omitempty"`
	HeadGroupSpec            rayv1.HeadGroupSpec      `json:"headGroupSpec"`
	RayVersion               string                   `json:"rayVersion,omitempty"`
	WorkerGroupSpecs         []rayv1.WorkerGroupSpec  `json:"workerGroupSpecs,omitempty"`
}

// kubeRayGcsFT is GcsFaultToleranceOptions as KubeRay v1.5.1 writes it: redisAddress even
// when empty, no backend or storage.
type kubeRayGcsFT struct {
	RedisUsername            *rayv1.RedisCredential `json:"redisUsername,omitempty"`
	RedisPassword            *rayv1.RedisCredential `json:"redisPassword,omitempty"`
	ExternalStorageNamespace string                 `json:"externalStorageNamespace,omitempty"`
	RedisAddress             string                 `json:"redisAddress"`
}

// kubeRayView is the spec as KubeRay v1.5.1 decodes and hashes it. The fields cleared
// here are those raygate's API has and KubeRay v1.5.1's has not (kept in a table test
// against KubeRay's field list).
func kubeRayView(spec rayv1.RayClusterSpec) kubeRaySpec {
	s := spec.DeepCopy()
	if a := s.AuthOptions; a != nil {
		a.EnableK8sTokenAuth, a.SecretName = nil, nil
	}
	if a := s.AutoscalerOptions; a != nil {
		a.Command, a.Args = nil, nil
	}
	s.HeadGroupSpec.IngressOptions = nil
	for i := range s.WorkerGroupSpecs {
		g := &s.WorkerGroupSpecs[i]
		g.Replicas, g.MinReplicas, g.MaxReplicas, g.ScaleStrategy.WorkersToDelete = nil, nil, nil, nil
		g.Priority = nil
	}
	v := kubeRaySpec{
		AuthOptions: s.AuthOptions, Suspend: s.Suspend, ManagedBy: s.ManagedBy, AutoscalerOptions: s.AutoscalerOptions,
		HeadServiceAnnotations: s.HeadServiceAnnotations, EnableInTreeAutoscaling: s.EnableInTreeAutoscaling,
		HeadGroupSpec: s.HeadGroupSpec, RayVersion: s.RayVersion, WorkerGroupSpecs: s.WorkerGroupSpecs,
	}
	if g := s.GcsFaultToleranceOptions; g != nil {
		v.GcsFaultToleranceOptions = &kubeRayGcsFT{
			RedisUsername: g.RedisUsername, RedisPassword: g.RedisPassword,
			ExternalStorageNamespace: g.ExternalStorageNamespace, RedisAddress: g.RedisAddress,
		}
	}
	return v
}
