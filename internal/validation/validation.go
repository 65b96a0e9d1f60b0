// Package validation checks RayCluster and RayService objects. The validating webhook and
// both controllers call it. Every function returns all problems at once (up to MaxErrors) as
// a field.ErrorList with exact paths, plus warnings for legal-but-risky specs (warnings.go).
//
// The functions are pure: anything they cannot know from the object (feature gates, the
// admin's limits, whether a GatewayClass exists) is passed in. An object that is being
// deleted is never rejected, so finalizers can always be removed.
//
// There are three entry points per kind, for three situations:
//   - create (Validator.RayCluster): every rule;
//   - update (Validator.RayClusterUpdate): every rule, ratcheted (ratchet.go): only errors
//     about what the update changed count, so an object stored under older rules can still
//     be relabelled, scaled and fixed; plus the rules about the change itself;
//   - stored (Validator.StoredRayCluster): for the controllers, only the rules whose
//     violation would make a controller misbehave.
//
// The webhook calls AdmitRayCluster and AdmitRayService, which add what it knows of the
// object's namespace (Namespace): the Pod Security of the pods raygate would create
// (namespace.go) and whether they fit in its ResourceQuotas. The admin's Policy (allowed
// Service types, GatewayClasses, image registries; policy.go) applies at create and update.
package validation

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/podsecurity"
)

// Validator holds what validation cannot learn from an object.
type Validator struct {
	// Gates is read on every call; nil means features.Default() (the --feature-gates state).
	Gates features.Gates
	// Limits bound what one object may ask for; the zero value means DefaultLimits().
	Limits Limits
	// Policy is what the cluster admin allows; the zero value allows everything but
	// dashboard Ingresses.
	Policy Policy
}

func (v Validator) check(stage stage) *check {
	c := &check{stage: stage, gates: v.Gates, limits: v.Limits.orDefault(), policy: v.Policy}
	if c.gates == nil {
		c.gates = features.Default()
	}
	return c
}

// kubeRayManager is spec.managedBy meaning raygate (KubeRay's operator name).
const kubeRayManager = "ray.io/kuberay-operator"

// RayCluster validates a (defaulted) RayCluster on create.
func (v Validator) RayCluster(rc *rayv1.RayCluster) (field.ErrorList, []string) {
	return v.AdmitRayCluster(nil, nil, rc)
}

// RayClusterUpdate validates an update of a (defaulted) RayCluster, ratcheted against old.
func (v Validator) RayClusterUpdate(old, rc *rayv1.RayCluster) (field.ErrorList, []string) {
	return v.AdmitRayCluster(nil, old, rc)
}

// AdmitRayCluster validates a (defaulted) RayCluster on create (old nil) or update, and,
// with what the webhook knows of its namespace (ns, may be nil), the pods raygate would
// create for it: their Pod Security (errors and warnings) and whether they fit in the
// namespace's quotas (warnings).
func (v Validator) AdmitRayCluster(ns *Namespace, old, rc *rayv1.RayCluster) (field.ErrorList, []string) {
	if rc == nil || rc.DeletionTimestamp != nil {
		return nil, nil
	}
	if ManagedByOther(rc.Spec.ManagedBy) {
		ns = nil // its pods run where the other controller puts them (MultiKueue: another cluster)
	}
	return admit(v, old, rc, (*check).rayCluster, defaultedCluster, func(c *check, stored *rayv1.RayCluster) (field.ErrorList, []string) {
		e, w := c.podSecurity(ns, stored, rc, specPath)
		return e, append(w, quotaWarnings(ns, stored, rc, specPath, v.Policy.PodSettings)...)
	})
}

// admit is what every Admit* does around its kind's rules: on create (old nil) the rules;
// on update the rules ratcheted against the defaulted stored object (so only errors on
// changed paths count); then what more is checked with the stored object (nil on create):
// the pods', the update rules. Errors are capped.
func admit[T interface {
	comparable
	runtime.Object
}](v Validator, old, obj T, rules func(c *check, old, obj T) (field.ErrorList, []string),
	defaulted func(T) T, more func(c *check, stored T) (field.ErrorList, []string)) (field.ErrorList, []string) {
	var none, stored T
	c := v.check(onCreate)
	if old != none {
		c = v.check(onUpdate)
	}
	errs, warnings := rules(c, old, obj)
	if old != none {
		stored = defaulted(old)
		if len(errs) > 0 {
			errs = c.ratchet(errs, stored, obj)
		}
	}
	e, w := more(c, stored)
	return capped(append(errs, e...), append(warnings, w...))
}

// StoredRayCluster validates a RayCluster already stored, for the controllers (after
// defaulting a copy in memory): only the rules whose violation would make a controller
// misbehave, so an object admitted under older rules or while the webhook was off keeps
// being served unless acting on it would be wrong.
//
// It checks: names and derived names, pod templates (a container with an image), worker
// group names, replica bounds and numOfHosts, label syntax, the pod bounds of Limits, KubeRay
// fields raygate does not implement (acting as if they were absent would be wrong), the
// upgrade strategy of a cluster a RayService owns, and the head Service override (no
// ExternalName or external IPs).
//
// Create/update-only, not checked here: Ray resources given both in rayStartParams and
// resources, rayStartParams[labels], the autoscaler's consistency rules (restartPolicy,
// idleTimeoutSeconds, priority, suspend, RAY_enable_autoscaler_v2, autoscalerOptions'
// idleTimeoutSeconds and env), the head's Redis settings, warnings, and the update rules
// of RayClusterUpdate.
func (v Validator) StoredRayCluster(rc *rayv1.RayCluster) field.ErrorList {
	if rc == nil || rc.DeletionTimestamp != nil {
		return nil
	}
	errs, _ := capped(v.check(stored).rayCluster(nil, rc))
	return errs
}

// RayService validates a (defaulted) RayService on create.
func (v Validator) RayService(svc *rayv1.RayService) (field.ErrorList, []string) {
	return v.AdmitRayService(nil, nil, svc)
}

// RayServiceUpdate validates an update of a (defaulted) RayService, ratcheted against old,
// plus the update rules: no change of upgrade strategy or GatewayClass while an upgrade is
// in progress, and no change of a strategy whose feature gate is off.
func (v Validator) RayServiceUpdate(old, svc *rayv1.RayService) (field.ErrorList, []string) {
	return v.AdmitRayService(nil, old, svc)
}

// AdmitRayService is AdmitRayCluster for a RayService: the pods are those of the RayCluster
// its controller builds from spec.rayClusterConfig. An update that starts an upgrade is
// warned about when the namespace's quotas cannot hold the new cluster next to the current
// one.
func (v Validator) AdmitRayService(ns *Namespace, old, svc *rayv1.RayService) (field.ErrorList, []string) {
	if svc == nil || svc.DeletionTimestamp != nil {
		return nil, nil
	}
	cluster := podsecurity.ClusterOf(svc)
	return admit(v, old, svc, (*check).rayService, defaultedService, func(c *check, stored *rayv1.RayService) (field.ErrorList, []string) {
		if stored == nil {
			e, w := c.podSecurity(ns, nil, cluster, rayClusterConfigPath)
			return e, append(w, quotaWarnings(ns, nil, cluster, rayClusterConfigPath, v.Policy.PodSettings)...)
		}
		storedCluster := podsecurity.ClusterOf(stored)
		e, w := c.podSecurity(ns, storedCluster, cluster, rayClusterConfigPath)
		if upgrade, starts := upgradeQuotaWarnings(ns, stored, svc, v.Policy.PodSettings); starts {
			w = append(w, upgrade...)
		} else {
			w = append(w, quotaWarnings(ns, storedCluster, cluster, rayClusterConfigPath, v.Policy.PodSettings)...)
		}
		return append(e, validateNoStrategyChangeDuringUpgrade(old, svc)...), w
	})
}

// StoredRayService validates a RayService already stored, for the controllers (after
// defaulting a copy in memory): only the rules whose violation would make a controller
// misbehave.
//
// It checks what StoredRayCluster checks of spec.rayClusterConfig, and: the upgrade
// strategy's type and, for NewClusterWithIncrementalUpgrade, its options and the autoscaler
// it needs (an upgrade would stall or misroute without them), rayClusterDeletionDelaySeconds,
// serveConfigV2 (its bounds, YAML, applications), the serve Service override (no
// ExternalName or external IPs), no head Service name (each cluster names its own), and
// KubeRay fields raygate does not implement.
//
// Create/update-only, not checked here: the RayServiceIncrementalUpgrade gate (with the gate
// off, the controller runs a stored incremental RayService as NewCluster and says so),
// rayClusterConfig.upgradeStrategy, the create/update-only rules of StoredRayCluster,
// warnings, and the update rules of RayServiceUpdate.
func (v Validator) StoredRayService(svc *rayv1.RayService) field.ErrorList {
	if svc == nil || svc.DeletionTimestamp != nil {
		return nil
	}
	errs, _ := capped(v.check(stored).rayService(nil, svc))
	return errs
}

// RayCluster validates a (defaulted) RayCluster on create, with DefaultLimits.
func RayCluster(rc *rayv1.RayCluster, gates features.Gates) (field.ErrorList, []string) {
	return Validator{Gates: gates}.RayCluster(rc)
}

// RayClusterUpdate validates an update of a RayCluster, with DefaultLimits.
func RayClusterUpdate(old, rc *rayv1.RayCluster, gates features.Gates) (field.ErrorList, []string) {
	return Validator{Gates: gates}.RayClusterUpdate(old, rc)
}

// RayService validates a (defaulted) RayService on create, with DefaultLimits.
func RayService(svc *rayv1.RayService, gates features.Gates) (field.ErrorList, []string) {
	return Validator{Gates: gates}.RayService(svc)
}

// RayServiceUpdate validates an update of a RayService, with DefaultLimits.
func RayServiceUpdate(old, svc *rayv1.RayService, gates features.Gates) (field.ErrorList, []string) {
	return Validator{Gates: gates}.RayServiceUpdate(old, svc)
}

// At most MaxErrors errors and MaxWarnings warnings are returned, then one more saying how
// many were left out. A 422 response's message is built from every error by concatenating
// them one at a time, which is quadratic: a spec of tens of thousands of empty worker groups
// would otherwise keep a webhook busy far past its timeout (docs/benchmarks.md).
const (
	MaxErrors   = 100
	MaxWarnings = 20
)

func capped(errs field.ErrorList, warnings []string) (field.ErrorList, []string) {
	if n := len(errs); n > MaxErrors {
		errs = append(errs[:MaxErrors:MaxErrors], &field.Error{Type: field.ErrorTypeTooMany, Field: specPath.String(), BadValue: omit,
			Detail: fmt.Sprintf("and %d more problems not listed; fix the ones above first", n-MaxErrors)})
	}
	if n := len(warnings); n > MaxWarnings {
		warnings = append(warnings[:MaxWarnings:MaxWarnings], fmt.Sprintf("and %d more warnings not listed", n-MaxWarnings))
	}
	return errs, warnings
}

// stage is when validation runs.
type stage int

const (
	onCreate stage = iota
	onUpdate
	stored
)

// check is one validation run.
type check struct {
	stage  stage
	gates  features.Gates
	limits Limits
	policy Policy
	// comparedPaths: for an error from a rule that reads several fields, the paths whose
	// values the update ratchet compares (by default the error's own path).
	comparedPaths map[*field.Error][]string
	// decided: errors of rules that already compared old and new themselves; the ratchet
	// keeps them.
	decided map[*field.Error]bool
}

// admission reports whether create/update-only rules apply (not for a stored object).
func (c *check) admission() bool { return c.stage != stored }

// related records that an error's rule reads the given fields too, so changing any of them
// makes the error count on update.
func (c *check) related(e *field.Error, paths ...*field.Path) *field.Error {
	if c.comparedPaths == nil {
		c.comparedPaths = map[*field.Error][]string{}
	}
	compared := []string{e.Field}
	for _, p := range paths {
		compared = append(compared, p.String())
	}
	c.comparedPaths[e] = compared
	return e
}

// decide marks errors that a rule reported after comparing old and new itself.
func (c *check) decide(errs ...*field.Error) field.ErrorList {
	if c.decided == nil {
		c.decided = map[*field.Error]bool{}
	}
	for _, e := range errs {
		c.decided[e] = true
	}
	return errs
}

func (c *check) rayCluster(old, rc *rayv1.RayCluster) (field.ErrorList, []string) {
	errs := validateName(&rc.ObjectMeta, clusterNames)
	if c.admission() {
		errs = append(errs, ingressClassAnnotation(&rc.ObjectMeta, &rc.Spec)...)
	}
	errs = append(errs, validateClusterUpgradeStrategy(rc)...)
	var oldSpec *rayv1.RayClusterSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	specErrs, warnings := c.clusterSpec(oldSpec, &rc.Spec, specPath)
	ingErrs, ingWarnings := c.ingressPolicy(&rc.ObjectMeta, &rc.Spec, specPath)
	specErrs, warnings = append(specErrs, ingErrs...), append(warnings, ingWarnings...)
	if c.admission() {
		specErrs = append(specErrs, tlsNames(rc.Name, &rc.Spec, specPath)...)
		specErrs = append(specErrs, tlsToggle(oldSpec, &rc.Spec, specPath)...)
	}
	ftErrs, ftWarnings := c.gcsFaultTolerance(oldSpec, &rc.ObjectMeta, &rc.Spec, specPath)
	specErrs, warnings = append(specErrs, ftErrs...), append(warnings, ftWarnings...)
	warnings = append(warnings, batchscheduler.LabelWarnings(rc.Labels, labelsPath, c.policy.BatchScheduler)...)
	return append(errs, specErrs...), warnings
}

// defaultedCluster and defaultedService return the stored object of an update defaulted,
// for reading only. Defaulting assigns fields of the spec, of its upgrade strategy and of
// each worker group, and nothing below them, so only those are copied; the rest (pod
// templates, maps, the serve config) is shared with the decoded object rather than
// deep-copied for every update (TestDefaultedCopiesLeaveStoredAlone checks both).
func defaultedCluster(rc *rayv1.RayCluster) *rayv1.RayCluster {
	c := *rc
	c.Spec.WorkerGroupSpecs = slices.Clone(rc.Spec.WorkerGroupSpecs)
	defaulting.RayCluster(&c)
	return &c
}

func defaultedService(svc *rayv1.RayService) *rayv1.RayService {
	c := *svc
	if st := svc.Spec.UpgradeStrategy; st != nil {
		strategy := *st
		if o := st.ClusterUpgradeOptions; o != nil {
			opts := *o
			strategy.ClusterUpgradeOptions = &opts
		}
		c.Spec.UpgradeStrategy = &strategy
	}
	c.Spec.RayClusterSpec.WorkerGroupSpecs = slices.Clone(svc.Spec.RayClusterSpec.WorkerGroupSpecs)
	defaulting.RayService(&c)
	return &c
}
