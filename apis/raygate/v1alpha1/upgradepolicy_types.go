package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpgradePolicyAnnotation on a RayService names the UpgradePolicy (same namespace) whose
// gates its incremental upgrades must pass.
const UpgradePolicyAnnotation = "raygate.ray.io/upgrade-policy"

// FailureAction is what a failing gate does to the upgrade.
// +kubebuilder:validation:Enum=Pause;Rollback
type FailureAction string

const (
	// FailurePause pauses the upgrade where it is (as raygate.ray.io/upgrade-action=pause).
	FailurePause FailureAction = "Pause"
	// FailureRollback aborts the upgrade (as raygate.ray.io/upgrade-action=abort): traffic and
	// capacity walk back to the active cluster step by step.
	FailureRollback FailureAction = "Rollback"
)

// Bounds of the spec, checked in the schema and at admission.
const (
	MaxGates               = 10
	MaxQueryLength         = 2048
	MaxSettleSeconds       = 3600
	MaxQueryTimeoutSeconds = 10
	// DefaultQueryTimeoutSeconds is queryTimeoutSeconds when unset.
	DefaultQueryTimeoutSeconds = 5
)

// The placeholders a gate's query may use; each is replaced by the value as an escaped
// PromQL string (use it inside quotes: pod=~"{{pending}}-.*").
const (
	PlaceholderNamespace  = "{{namespace}}"
	PlaceholderRayService = "{{rayservice}}"
	PlaceholderPending    = "{{pending}}"
	PlaceholderActive     = "{{active}}"
)

// Placeholders are every placeholder a query may use.
var Placeholders = []string{PlaceholderNamespace, PlaceholderRayService, PlaceholderPending, PlaceholderActive}

// Gate is one Prometheus query and the bounds its value must stay within.
type Gate struct {
	// Name identifies the gate in conditions, events and metrics.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Query is a PromQL instant query. It may use the placeholders {{namespace}},
	// {{rayservice}}, {{pending}} and {{active}} (replaced by escaped label values) and no
	// other. Every sample of the answer must be within the bounds; an empty answer or NaN
	// holds the upgrade until there is data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Query string `json:"query"`
	// Max is the highest value that passes, a decimal number such as "0.01".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Max string `json:"max,omitempty"`
	// Min is the lowest value that passes.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Min string `json:"min,omitempty"`
}

// UpgradePolicySpec is the gates an incremental upgrade must pass before each traffic step
// and, after the last one, for settleSeconds before the pending cluster is promoted.
type UpgradePolicySpec struct {
	// Gates are evaluated together; all must pass.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +listType=map
	// +listMapKey=name
	Gates []Gate `json:"gates"`
	// SettleSeconds keeps the gates evaluated after the last traffic step: the pending
	// cluster is promoted only once they passed for this long (default 0).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	SettleSeconds *int32 `json:"settleSeconds,omitempty"`
	// OnFailure is what a failing gate does: Pause (default) or Rollback.
	// +optional
	OnFailure FailureAction `json:"onFailure,omitempty"`
	// QueryTimeoutSeconds bounds each query (default 5, at most 10); the operator also
	// bounds all queries of one evaluation together.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	QueryTimeoutSeconds *int32 `json:"queryTimeoutSeconds,omitempty"`
}

// UpgradePolicy holds metric gates for RayService upgrades. A RayService opts in with the
// annotation raygate.ray.io/upgrade-policy: <name>.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=raygate
// +kubebuilder:printcolumn:name="On Failure",type=string,JSONPath=".spec.onFailure"
// +kubebuilder:printcolumn:name="Settle",type=integer,JSONPath=".spec.settleSeconds"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type UpgradePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec UpgradePolicySpec `json:"spec"`
}

// UpgradePolicyList is a list of UpgradePolicies.
// +kubebuilder:object:root=true
type UpgradePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UpgradePolicy `json:"items"`
}

// OnFailureOrDefault is OnFailure with its default.
func (s *UpgradePolicySpec) OnFailureOrDefault() FailureAction {
	if s.OnFailure == "" {
		return FailurePause
	}
	return s.OnFailure
}

// QueryTimeoutOrDefault is QueryTimeoutSeconds with its default, clamped to its bounds.
func (s *UpgradePolicySpec) QueryTimeoutOrDefault() int32 {
	if s.QueryTimeoutSeconds == nil {
		return DefaultQueryTimeoutSeconds
	}
	return min(max(*s.QueryTimeoutSeconds, 1), MaxQueryTimeoutSeconds)
}

// SettleOrDefault is SettleSeconds with its default, clamped to its bounds.
func (s *UpgradePolicySpec) SettleOrDefault() int32 {
	if s.SettleSeconds == nil {
		return 0
	}
	return min(max(*s.SettleSeconds, 0), MaxSettleSeconds)
}

// UpgradeGatesCondition is the RayService condition (raygate-only) that says what the
// metric gates of its UpgradePolicy found during an incremental upgrade: True while they
// pass, False while one failed or they cannot be evaluated (the upgrade waits).
const UpgradeGatesCondition = "UpgradeGates"

// Reasons of the UpgradeGates condition.
const (
	// GatesPassed: every gate passed at the last evaluation.
	GatesPassed = "GatesPassed"
	// GateFailed: a gate's value was out of bounds; the upgrade was paused or rolled back.
	GateFailed = "GateFailed"
	// GatesWaiting: Prometheus did not answer or had no data; the upgrade waits.
	GatesWaiting = "GatesWaiting"
	// GatesUnavailable: the policy, its CRD or --prometheus-url is missing, or the policy is
	// invalid; the upgrade waits.
	GatesUnavailable = "GatesUnavailable"
	// GatesEvaluating: the gates are evaluated again before the next step (after a resume).
	GatesEvaluating = "GatesEvaluating"
)
