package validation

import (
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayspec"
)

var (
	specPath              = field.NewPath("spec")
	upgradeStrategyPath   = specPath.Child("upgradeStrategy")
	upgradeTypePath       = upgradeStrategyPath.Child("type")
	upgradeOptionsPath    = upgradeStrategyPath.Child("clusterUpgradeOptions")
	gatewayClassNamePath  = upgradeOptionsPath.Child("gatewayClassName")
	maxSurgePath          = upgradeOptionsPath.Child("maxSurgePercent")
	stepSizePath          = upgradeOptionsPath.Child("stepSizePercent")
	intervalPath          = upgradeOptionsPath.Child("intervalSeconds")
	rayClusterConfigPath  = specPath.Child("rayClusterConfig")
	supportedServiceTypes = []string{string(rayv1.NewCluster), string(rayv1.NewClusterWithIncrementalUpgrade), string(rayv1.None)}
)

// GateHint says how to turn a feature gate on, for error messages.
func GateHint(gate string) string {
	return fmt.Sprintf("enable it with %s on the manager, or the Helm value featureGates.%s=true",
		features.EnableFlag(features.Feature(gate)), gate)
}

// rayService holds every rule for a RayService; old is the stored object on update (nil
// otherwise), for the rules that compare.
func (c *check) rayService(old, svc *rayv1.RayService) (field.ErrorList, []string) {
	errs := validateName(&svc.ObjectMeta, serviceNames)
	errs = append(errs, rayServiceAnnotations(&svc.ObjectMeta)...)
	errs = append(errs, c.upgradeAction(old, svc)...)
	routeErrs, routeWarnings := c.routeAttachment(old, svc)
	errs = append(errs, routeErrs...)
	spec := &svc.Spec
	errs = append(errs, managedBy(old, svc)...)
	warnings := routeWarnings
	for _, d := range [...]struct {
		set   bool
		field string
	}{
		{spec.ServiceUnhealthySecondThreshold != nil, "serviceUnhealthySecondThreshold"},
		{spec.DeploymentUnhealthySecondThreshold != nil, "deploymentUnhealthySecondThreshold"},
	} {
		if d.set {
			warnings = append(warnings, fmt.Sprintf(WarnDeprecatedIgnored, specPath.Child(d.field)))
		}
	}
	if v := spec.RayClusterDeletionDelaySeconds; v != nil && *v < 0 {
		errs = append(errs, field.Invalid(specPath.Child("rayClusterDeletionDelaySeconds"), *v, "must be greater than or equal to 0"))
	}

	e, w := c.upgradeStrategy(old, svc)
	errs, warnings = append(errs, e...), append(warnings, w...)

	var oldCluster *rayv1.RayClusterSpec
	if old != nil {
		oldCluster = &old.Spec.RayClusterSpec
	}
	clusterErrs, clusterWarnings := c.clusterSpec(oldCluster, &spec.RayClusterSpec, rayClusterConfigPath)
	errs, warnings = append(errs, clusterErrs...), append(warnings, clusterWarnings...)
	clusterErrs, clusterWarnings = c.ingressPolicy(&svc.ObjectMeta, &spec.RayClusterSpec, rayClusterConfigPath)
	errs, warnings = append(errs, clusterErrs...), append(warnings, clusterWarnings...)
	// No old spec: a RayService changes its clusters' backend by building a new cluster.
	clusterErrs, clusterWarnings = c.gcsFaultTolerance(nil, &svc.ObjectMeta, &spec.RayClusterSpec, rayClusterConfigPath)
	errs, warnings = append(errs, clusterErrs...), append(warnings, clusterWarnings...)
	if c.admission() && svc.Name != "" {
		errs = append(errs, tlsNames(rayspec.ClusterNamePrefix(svc.Name)+"xxxxx", &spec.RayClusterSpec, rayClusterConfigPath)...)
	}
	warnings = append(warnings, c.upgradeSurgeWarnings(svc)...)
	if spec.RayClusterSpec.UpgradeStrategy != nil && c.admission() {
		// Create/update-only: the controllers ignore it in favour of spec.upgradeStrategy.
		errs = append(errs, field.Forbidden(rayClusterConfigPath.Child("upgradeStrategy"),
			"a RayService's clusters are upgraded by the RayService; set spec.upgradeStrategy instead"))
	}
	if hs := spec.RayClusterSpec.HeadGroupSpec.HeadService; hs != nil && hs.Name != "" {
		errs = append(errs, field.Forbidden(rayClusterConfigPath.Child("headGroupSpec", "headService", "metadata", "name"),
			"a RayService's clusters each get their own head Service name; leave it unset"))
	}
	errs = append(errs, validateServiceOverride(spec.ServeService, specPath.Child("serveService"), serveServiceWhy)...)
	errs = append(errs, c.policyService(svc)...)
	errs = append(errs, serveConfigErrors(svc.Namespace, spec.ServeConfigV2)...)
	warnings = append(warnings, batchscheduler.LabelWarnings(svc.Labels, labelsPath, c.policy.BatchScheduler)...)
	return errs, warnings
}

// effectiveStrategy is the upgrade strategy after defaulting, so comparisons between a
// stored object and an update do not depend on which defaults each was written with.
// Defaulting sets only the type and the options' maxSurgePercent, so copies of those two
// structs keep spec as it is; the rest is shared, for reading only.
func effectiveStrategy(spec *rayv1.RayServiceSpec) *rayv1.RayServiceUpgradeStrategy {
	if st := spec.UpgradeStrategy; st != nil && st.Type != nil &&
		(*st.Type != rayv1.NewClusterWithIncrementalUpgrade || st.ClusterUpgradeOptions == nil || st.ClusterUpgradeOptions.MaxSurgePercent != nil) {
		return st // defaulted already (as the mutating webhook leaves it): nothing to copy
	}
	var s rayv1.RayServiceSpec
	if st := spec.UpgradeStrategy; st != nil {
		c := *st
		if o := st.ClusterUpgradeOptions; o != nil {
			opts := *o
			c.ClusterUpgradeOptions = &opts
		}
		s.UpgradeStrategy = &c
	}
	defaulting.RayServiceUpgradeStrategy(&s)
	return s.UpgradeStrategy
}

func (c *check) upgradeStrategy(old, svc *rayv1.RayService) (field.ErrorList, []string) {
	strategy := effectiveStrategy(&svc.Spec)
	t := *strategy.Type
	opts := strategy.ClusterUpgradeOptions
	switch t {
	case rayv1.NewCluster, rayv1.None:
		if opts != nil {
			return nil, []string{fmt.Sprintf(WarnIgnoredUpgradeOptions, upgradeOptionsPath, t)}
		}
		return nil, nil
	case rayv1.NewClusterWithIncrementalUpgrade:
	default:
		return field.ErrorList{field.NotSupported(upgradeTypePath, t, supportedServiceTypes)}, nil
	}

	var errs field.ErrorList
	if gate := string(features.RayServiceIncrementalUpgrade); c.admission() && !c.gates.Enabled(features.RayServiceIncrementalUpgrade) {
		// Create/update-only. A gate turned off after the object was stored must not block
		// updates that leave the gated strategy as it was (e.g. an image change, or removing
		// a finalizer); any change to the strategy, its options included, is refused.
		unchanged := old != nil && apiequality.Semantic.DeepEqual(effectiveStrategy(&old.Spec), strategy)
		if !unchanged {
			errs = append(errs, c.decide(field.Forbidden(upgradeTypePath, fmt.Sprintf(
				"%s needs the %s feature gate, which is disabled; %s", t, gate, GateHint(gate))))...)
		}
	}
	enablePath := rayClusterConfigPath.Child("enableInTreeAutoscaling")
	switch autoscaling := svc.Spec.RayClusterSpec.EnableInTreeAutoscaling; {
	case autoscaling == nil:
		errs = append(errs, c.related(field.Required(enablePath,
			"must be true with NewClusterWithIncrementalUpgrade: the Ray autoscaler sizes both clusters during the upgrade"), upgradeTypePath))
	case !*autoscaling:
		errs = append(errs, c.related(field.Invalid(enablePath, false,
			"must be true with NewClusterWithIncrementalUpgrade: the Ray autoscaler sizes both clusters during the upgrade"), upgradeTypePath))
	}
	if opts == nil {
		return append(errs, c.related(field.Required(upgradeOptionsPath,
			"required with NewClusterWithIncrementalUpgrade: stepSizePercent, intervalSeconds and gatewayClassName"), upgradeTypePath)), nil
	}
	e, warnings := c.clusterUpgradeOptions(opts)
	if svc.Spec.ExcludeHeadPodFromServeSvc && noWorkerAtStart(svc.Spec.RayClusterSpec.WorkerGroupSpecs) {
		warnings = append(warnings, fmt.Sprintf(WarnNoServingWorker, field.NewPath("spec", "excludeHeadPodFromServeSvc")))
	}
	return append(errs, e...), warnings
}

// noWorkerAtStart: no worker group starts with a pod (minReplicas unset or 0 everywhere).
func noWorkerAtStart(groups []rayv1.WorkerGroupSpec) bool {
	for i := range groups {
		if ptr.Deref(groups[i].MinReplicas, 0) > 0 {
			return false
		}
	}
	return true
}

func (c *check) clusterUpgradeOptions(o *rayv1.ClusterUpgradeOptions) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	surgePath := maxSurgePath
	surge := ptr.Deref(o.MaxSurgePercent, defaulting.MaxSurgePercent)
	surgeOK := surge >= 1 && surge <= 100
	switch {
	case !surgeOK:
		errs = append(errs, field.Invalid(surgePath, surge, "must be between 1 and 100"))
	case surge == 100:
		warnings = append(warnings, fmt.Sprintf(WarnFullSurge, surgePath))
	}

	stepPath := stepSizePath
	switch {
	case o.StepSizePercent == nil:
		errs = append(errs, field.Required(stepPath, "the percentage of traffic moved to the new cluster at each step"))
	case *o.StepSizePercent < 1 || (surgeOK && *o.StepSizePercent > surge):
		upper := fmt.Sprintf("maxSurgePercent (%d)", surge)
		if !surgeOK {
			upper = "maxSurgePercent"
		}
		errs = append(errs, c.related(field.Invalid(stepPath, *o.StepSizePercent, fmt.Sprintf(
			"must be between 1 and %s: 0 would never move traffic, and a step larger than the surge outruns the new cluster's capacity", upper)),
			surgePath))
	}

	switch {
	case o.IntervalSeconds == nil:
		errs = append(errs, field.Required(intervalPath, "the seconds between traffic steps"))
	case *o.IntervalSeconds < 1:
		errs = append(errs, field.Invalid(intervalPath, *o.IntervalSeconds, "must be at least 1"))
	case *o.IntervalSeconds < 10:
		warnings = append(warnings, fmt.Sprintf(WarnShortInterval, intervalPath, *o.IntervalSeconds))
	}

	if o.GatewayClassName == "" {
		errs = append(errs, field.Required(gatewayClassNamePath, "the GatewayClass of the Gateway that splits traffic during the upgrade"))
	}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(o.GatewayClassName) {
		if o.GatewayClassName != "" {
			errs = append(errs, field.Invalid(gatewayClassNamePath, o.GatewayClassName, msg))
		}
	}
	return errs, warnings
}

// UpgradeInProgress reports whether a RayService is in the middle of an upgrade: a pending
// cluster is recorded, or the UpgradeInProgress condition is true.
func UpgradeInProgress(svc *rayv1.RayService) bool {
	return svc.Status.PendingServiceStatus.RayClusterName != "" ||
		meta.IsStatusConditionTrue(svc.Status.Conditions, string(rayv1.UpgradeInProgress))
}

// validateNoStrategyChangeDuringUpgrade rejects switching strategy or Gateway while a
// pending cluster exists: the running upgrade would be left half-way under rules it did not
// start with (e.g. traffic split by an HTTPRoute that the new strategy no longer manages).
func validateNoStrategyChangeDuringUpgrade(old, svc *rayv1.RayService) field.ErrorList {
	if !UpgradeInProgress(old) {
		return nil
	}
	upgrade := "an upgrade is in progress"
	if pending := old.Status.PendingServiceStatus.RayClusterName; pending != "" {
		upgrade = fmt.Sprintf("an upgrade to RayCluster %q is in progress", pending)
	}
	why := fmt.Sprintf("cannot change while %s; wait until it finishes (condition UpgradeInProgress becomes False), "+
		"or roll back by reverting spec.rayClusterConfig to the active cluster's spec, then change this", upgrade)
	oldS, newS := effectiveStrategy(&old.Spec), effectiveStrategy(&svc.Spec)
	var errs field.ErrorList
	if *oldS.Type != *newS.Type {
		errs = append(errs, field.Forbidden(upgradeTypePath, why))
	}
	// A type change already explains itself; a GatewayClass matters only to incremental upgrades.
	if *oldS.Type == *newS.Type && gatewayClass(oldS) != gatewayClass(newS) {
		errs = append(errs, field.Forbidden(gatewayClassNamePath, why))
	}
	return errs
}

func gatewayClass(s *rayv1.RayServiceUpgradeStrategy) string {
	if s.ClusterUpgradeOptions == nil {
		return ""
	}
	return s.ClusterUpgradeOptions.GatewayClassName
}

// MultiKueueManager is spec.managedBy handing an object to Kueue's MultiKueue.
const MultiKueueManager = "kueue.x-k8s.io/multikueue"

// managedBy checks spec.managedBy like the CRD's rules (a spec stored while the CRD lacked
// them is caught too): one of the two known values, and never handed from one controller
// to the other. Unset means raygate, like KubeRay's value, so setting or removing that
// value is no change; the CRD alone would let a running service be handed to MultiKueue
// by adding the field.
func managedBy(old, svc *rayv1.RayService) field.ErrorList {
	if old == nil {
		return managedByChange(nil, svc.Spec.ManagedBy, false)
	}
	return managedByChange(old.Spec.ManagedBy, svc.Spec.ManagedBy, true)
}

// managedByChange checks spec.managedBy of a RayService or RayJob: one of the two managers,
// and on update (isUpdate) the same manager as before, unset counting as raygate.
func managedByChange(old, m *string, isUpdate bool) field.ErrorList {
	path := specPath.Child("managedBy")
	var errs field.ErrorList
	if m != nil && *m != kubeRayManager && *m != MultiKueueManager {
		errs = append(errs, field.NotSupported(path, *m, []string{kubeRayManager, MultiKueueManager}))
	}
	if isUpdate && ManagerOf(old) != ManagerOf(m) {
		errs = append(errs, field.Invalid(path, ptr.Deref(m, ""), "the managedBy field is immutable"))
	}
	return errs
}

// ManagerOf is the controller spec.managedBy names, unset meaning raygate (KubeRay's value).
func ManagerOf(managedBy *string) string {
	if m := ptr.Deref(managedBy, ""); m != "" {
		return m
	}
	return kubeRayManager
}

// ManagedByOther reports whether spec.managedBy hands the object to another controller.
func ManagedByOther(managedBy *string) bool { return ManagerOf(managedBy) != kubeRayManager }
