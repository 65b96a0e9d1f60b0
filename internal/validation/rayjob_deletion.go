package validation

import (
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/features"
)

var (
	deletionStrategyPath = specPath.Child("deletionStrategy")
	deletionRulesPath    = deletionStrategyPath.Child("deletionRules")
	jobAutoscalingPath   = rayJobClusterPath.Child("enableInTreeAutoscaling")
	supportedPolicies    = []string{string(rayv1.DeleteCluster), string(rayv1.DeleteWorkers), string(rayv1.DeleteSelf), string(rayv1.DeleteNone)}
	// deletionOrder: a rule that deletes more may not come before one that deletes less for
	// the same condition (workers, then the cluster, then the RayJob itself).
	deletionOrder = []rayv1.DeletionPolicyType{rayv1.DeleteWorkers, rayv1.DeleteCluster, rayv1.DeleteSelf}
)

// WarnLegacyDeletionPolicy: onSuccess and onFailure are deprecated in favour of deletionRules.
const WarnLegacyDeletionPolicy = "%s and onFailure are deprecated; use deletionRules, e.g. " +
	"[{policy: DeleteCluster, condition: {jobStatus: SUCCEEDED}}, {policy: DeleteCluster, condition: {jobStatus: FAILED}}]"

// deletionStrategy checks spec.deletionStrategy as KubeRay does, each mistake at its path:
// the RayJobDeletionPolicy gate (create, and updates that change the strategy), one of the
// two styles, and for each what the job's cluster allows.
func (c *check) deletionStrategy(old, job *rayv1.RayJob) (field.ErrorList, []string) {
	ds := job.Spec.DeletionStrategy
	if ds == nil {
		return nil, nil
	}
	var errs field.ErrorList
	var warnings []string
	if gate := string(features.RayJobDeletionPolicy); c.admission() && !c.gates.Enabled(features.RayJobDeletionPolicy) {
		// A gate turned off after the object was stored must not block updates that leave
		// the strategy as it was (e.g. removing a finalizer).
		if old == nil || !apiequality.Semantic.DeepEqual(old.Spec.DeletionStrategy, ds) {
			errs = append(errs, c.decide(field.Forbidden(deletionStrategyPath, fmt.Sprintf(
				"needs the %s feature gate, which is disabled; %s", gate, GateHint(gate))))...)
		}
	}
	legacy, rules := ds.OnSuccess != nil || ds.OnFailure != nil, len(ds.DeletionRules) > 0
	switch {
	case legacy && rules:
		errs = append(errs, c.related(field.Forbidden(deletionRulesPath,
			"not together with the legacy onSuccess and onFailure; use deletionRules only"), deletionStrategyPath.Child("onSuccess"), deletionStrategyPath.Child("onFailure")))
	case legacy:
		errs = append(errs, c.legacyDeletion(&job.Spec)...)
		if c.admission() {
			warnings = append(warnings, fmt.Sprintf(WarnLegacyDeletionPolicy, deletionStrategyPath.Child("onSuccess")))
		}
	case rules:
		errs = append(errs, c.deletionRules(&job.Spec)...)
	default:
		errs = append(errs, field.Required(deletionStrategyPath, "give deletionRules (at least one), or both onSuccess and onFailure"))
	}
	return errs, warnings
}

// legacyDeletion: both policies, each set, and allowed with the job's cluster.
func (c *check) legacyDeletion(spec *rayv1.RayJobSpec) field.ErrorList {
	var errs field.ErrorList
	for _, p := range []struct {
		policy *rayv1.DeletionPolicy
		name   string
	}{{spec.DeletionStrategy.OnSuccess, "onSuccess"}, {spec.DeletionStrategy.OnFailure, "onFailure"}} {
		path := deletionStrategyPath.Child(p.name)
		switch {
		case p.policy == nil:
			errs = append(errs, field.Required(path, "the legacy policies come in pairs: give both onSuccess and onFailure, or use deletionRules"))
			continue
		case p.policy.Policy == nil:
			errs = append(errs, field.Required(path.Child("policy"), "what to delete: DeleteCluster, DeleteWorkers, DeleteSelf or DeleteNone"))
			continue
		}
		errs = append(errs, c.policyAllowed(spec, *p.policy.Policy, path.Child("policy"))...)
		if spec.ShutdownAfterJobFinishes && *p.policy.Policy == rayv1.DeleteNone {
			errs = append(errs, c.related(field.Forbidden(path.Child("policy"),
				"DeleteNone contradicts shutdownAfterJobFinishes: true, which deletes the cluster"), shutdownPath))
		}
	}
	return errs
}

// policyAllowed: a known policy, and none that deletes a cluster the job did not create or
// workers the autoscaler would start again.
func (c *check) policyAllowed(spec *rayv1.RayJobSpec, p rayv1.DeletionPolicyType, path *field.Path) field.ErrorList {
	if !slices.Contains(rayv1.DeletionPolicyTypes, p) {
		return field.ErrorList{field.NotSupported(path, p, supportedPolicies)}
	}
	if p != rayv1.DeleteCluster && p != rayv1.DeleteWorkers {
		return nil
	}
	if len(spec.ClusterSelector) != 0 {
		return field.ErrorList{c.related(field.Forbidden(path, fmt.Sprintf(
			"%s is not allowed with clusterSelector: the job runs on an existing RayCluster it did not create", p)), clusterSelectorPath)}
	}
	if p == rayv1.DeleteWorkers && spec.RayClusterSpec != nil && ptr.Deref(spec.RayClusterSpec.EnableInTreeAutoscaling, false) {
		return field.ErrorList{c.related(field.Forbidden(path,
			"DeleteWorkers is not allowed with the autoscaler (enableInTreeAutoscaling), which would start workers again"), jobAutoscalingPath)}
	}
	return nil
}

// ruleKey identifies a rule: its policy and the status that triggers it.
type ruleKey struct {
	policy    rayv1.DeletionPolicyType
	condition string
}

// deletionRules: each rule well-formed and allowed, unique by policy and condition, and for
// one condition the deletions in order (workers no later than the cluster, the cluster no
// later than the RayJob). The rules decide what is deleted, so shutdownAfterJobFinishes (and
// with it ttlSecondsAfterFinished) is not allowed beside them.
func (c *check) deletionRules(spec *rayv1.RayJobSpec) field.ErrorList {
	var errs field.ErrorList
	if spec.ShutdownAfterJobFinishes {
		errs = append(errs, c.related(field.Forbidden(deletionRulesPath,
			"not with shutdownAfterJobFinishes: true; the rules say what is deleted and when (set shutdownAfterJobFinishes to false, and use a DeleteCluster rule)"), shutdownPath))
	}
	first := map[ruleKey]int{}
	byCondition := map[string]map[rayv1.DeletionPolicyType]int{} // condition -> policy -> rule index
	var conditions []string
	for i := range spec.DeletionStrategy.DeletionRules {
		rule := &spec.DeletionStrategy.DeletionRules[i]
		path := deletionRulesPath.Index(i)
		condition, e := deletionCondition(&rule.Condition, path.Child("condition"))
		if len(e) == 0 {
			e = c.policyAllowed(spec, rule.Policy, path.Child("policy"))
		}
		if len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		key := ruleKey{rule.Policy, condition}
		if j, seen := first[key]; seen {
			errs = append(errs, c.related(field.Duplicate(path, fmt.Sprintf("policy %s on %s", rule.Policy, condition)), deletionRulesPath.Index(j)))
			continue
		}
		first[key] = i
		if byCondition[condition] == nil {
			byCondition[condition] = map[rayv1.DeletionPolicyType]int{}
			conditions = append(conditions, condition)
		}
		byCondition[condition][rule.Policy] = i
	}
	for _, condition := range conditions {
		errs = append(errs, c.deletionOrder(spec.DeletionStrategy.DeletionRules, byCondition[condition], condition)...)
	}
	return errs
}

// deletionCondition checks a rule's condition and names the status it waits for, e.g.
// "jobStatus FAILED".
func deletionCondition(cond *rayv1.DeletionCondition, path *field.Path) (string, field.ErrorList) {
	var errs field.ErrorList
	if cond.TTLSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("ttlSeconds"), cond.TTLSeconds, "must be greater than or equal to 0"))
	}
	switch js, jds := cond.JobStatus, cond.JobDeploymentStatus; {
	case js != nil && jds != nil:
		return "", append(errs, field.Forbidden(path.Child("jobDeploymentStatus"), "not together with jobStatus: a rule waits for one of them"))
	case js == nil && jds == nil:
		return "", append(errs, field.Required(path, "one of jobStatus (SUCCEEDED or FAILED) and jobDeploymentStatus (Failed)"))
	case js != nil:
		if *js != rayv1.JobStatusSucceeded && *js != rayv1.JobStatusFailed {
			errs = append(errs, field.NotSupported(path.Child("jobStatus"), *js, []string{string(rayv1.JobStatusSucceeded), string(rayv1.JobStatusFailed)}))
		}
		return "jobStatus " + string(*js), errs
	default:
		if *jds != rayv1.JobDeploymentStatusFailed {
			errs = append(errs, field.NotSupported(path.Child("jobDeploymentStatus"), *jds, []string{string(rayv1.JobDeploymentStatusFailed)}))
		}
		return "jobDeploymentStatus " + string(*jds), errs
	}
}

// deletionOrder reports a rule whose ttlSeconds comes before that of a rule, for the same
// condition, that deletes less.
func (c *check) deletionOrder(rules []rayv1.DeletionRule, byPolicy map[rayv1.DeletionPolicyType]int, condition string) field.ErrorList {
	var errs field.ErrorList
	prev := -1
	for _, p := range deletionOrder {
		i, ok := byPolicy[p]
		if !ok {
			continue
		}
		if prev >= 0 && rules[i].Condition.TTLSeconds < rules[prev].Condition.TTLSeconds {
			errs = append(errs, c.related(field.Invalid(deletionRulesPath.Index(i).Child("condition", "ttlSeconds"), rules[i].Condition.TTLSeconds, fmt.Sprintf(
				"must be at least the ttlSeconds of the %s rule for %s (%d): workers are deleted first, then the cluster, then the RayJob",
				rules[prev].Policy, condition, rules[prev].Condition.TTLSeconds)), deletionRulesPath.Index(prev).Child("condition", "ttlSeconds")))
		}
		prev = i
	}
	return errs
}
