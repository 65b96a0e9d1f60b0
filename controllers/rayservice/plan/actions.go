package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// An Action is one change to the world the plan asks for. The objects in it belong to the
// action (the plan copies what it observed before changing it).
type Action interface {
	fmt.Stringer
}

// Object is a Kubernetes object an action writes: what a controller-runtime client takes,
// without the plan importing one.
type Object interface {
	metav1.Object
	runtime.Object
}

// CreateCluster creates a RayCluster.
type CreateCluster struct {
	Cluster *rayv1.RayCluster
	Done    Event
}

// UpdateCluster writes a RayCluster's spec and annotations (an in-place update).
type UpdateCluster struct {
	Cluster *rayv1.RayCluster
	Done    Event
}

// AnnotateCluster merges annotations onto a RayCluster and removes those in Remove.
type AnnotateCluster struct {
	Cluster     *rayv1.RayCluster
	Annotations map[string]string
	Remove      []string
	Done        *Event // nil: nothing worth an event
}

// DeleteCluster deletes a RayCluster and its per-cluster serve Service.
type DeleteCluster struct {
	Cluster *rayv1.RayCluster
	Done    Event
}

// CreateObject creates a Service, Gateway or HTTPRoute.
type CreateObject struct{ Object Object }

// DeleteObject deletes a Service, Gateway or HTTPRoute the RayService controls (UID
// precondition; already gone is fine).
type DeleteObject struct{ Object Object }

// UpdateObject writes a Service, Gateway or HTTPRoute as observed with raygate's fields set.
type UpdateObject struct{ Object Object }

// LabelPod sets a head pod's ray.io/serve label, which puts it behind the serve Services.
type LabelPod struct {
	Pod   *corev1.Pod
	Value string
	// Done is announced once the label is set (nil: nothing).
	Done *Event
}

// AnnotateService sets upgrade-action annotations on the RayService, as a user would.
type AnnotateService struct {
	Service     *rayv1.RayService
	Annotations map[string]string
}

func (a AnnotateService) String() string {
	return fmt.Sprintf("annotate RayService %s %v", a.Service.Name, a.Annotations)
}

// SubmitServeConfig asks a cluster's dashboard, through the dashboard pool, to run a serve
// config at a target capacity; the answer comes back on a later pass, which records it on
// the cluster. Before the config is sent it is kept in the cluster's serve config record
// (a ConfigMap the cluster owns), so it can be sent again after an operator restart.
type SubmitServeConfig struct {
	Cluster *rayv1.RayCluster
	Hash    string
	// Config is the config to send; nil: the one recorded for Hash, read from the record.
	Config         *ServeConfig
	TargetCapacity *int32 // nil: no target_capacity
	// Keep are the hashes of configs the cluster ran or runs, whose records stay when
	// Config is recorded (at most three configs are kept).
	Keep   []string
	Reason string
	// Done is announced once the dashboard accepted it (no Reason: nothing to announce).
	Done Event
}

func (s SubmitServeConfig) ID() string { return submissionID(s.Hash, s.TargetCapacity) }

// recordAnnotations say what a cluster's dashboard accepted; they survive an operator
// restart, so nothing is resubmitted or forgotten.
func recordAnnotations(hash string) map[string]string {
	return map[string]string{rayv1.ServeConfigHashKey: hash}
}

// staleRecordAnnotations are the annotations of older raygate versions a cluster still
// carries: the config itself, and the target capacity, which is no longer kept up to date.
func staleRecordAnnotations(rc *rayv1.RayCluster) []string {
	var out []string
	for _, k := range []string{LegacyServeConfigKey, rayv1.ServeConfigTargetCapacityKey} {
		if _, ok := rc.Annotations[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

func (a CreateCluster) String() string { return "create RayCluster " + a.Cluster.Name }
func (a UpdateCluster) String() string { return "update RayCluster " + a.Cluster.Name + " in place" }
func (a AnnotateCluster) String() string {
	return fmt.Sprintf("annotate RayCluster %s %v (remove %v)", a.Cluster.Name, a.Annotations, a.Remove)
}
func (a DeleteCluster) String() string { return "delete RayCluster " + a.Cluster.Name }
func (a CreateObject) String() string  { return "create " + KindOf(a.Object) + " " + a.Object.GetName() }
func (a DeleteObject) String() string  { return "delete " + KindOf(a.Object) + " " + a.Object.GetName() }
func (a UpdateObject) String() string  { return "update " + KindOf(a.Object) + " " + a.Object.GetName() }
func (a LabelPod) String() string {
	return fmt.Sprintf("label pod %s %s=%s", a.Pod.Name, rayv1.ServeLabelKey, a.Value)
}
func (s SubmitServeConfig) String() string {
	return fmt.Sprintf("submit serve config %s to %s at target capacity %s", s.Hash, s.Cluster.Name, Percent(s.TargetCapacity))
}

// KindOf names the kinds raygate writes besides RayClusters, for messages.
func KindOf(o Object) string {
	switch o.(type) {
	case *corev1.Service:
		return "Service"
	case *gwv1.Gateway:
		return "Gateway"
	case *gwv1.HTTPRoute:
		return "HTTPRoute"
	case *gwv1.GRPCRoute:
		return "GRPCRoute"
	case *corev1.ConfigMap:
		return "ConfigMap"
	}
	return fmt.Sprintf("%T", o)
}

// Event is a Kubernetes event about the RayService, optionally related to one of its clusters.
type Event struct {
	Type    string
	Reason  string
	Action  string
	Note    string
	Related *rayv1.RayCluster
}

func NormalEvent(related *rayv1.RayCluster, reason, action, format string, args ...any) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Note: fmt.Sprintf(format, args...), Related: related}
}

func WarningEvent(related *rayv1.RayCluster, reason, action, format string, args ...any) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Note: fmt.Sprintf(format, args...), Related: related}
}

// FinishedUpgrade is an upgrade that ended, for the duration histogram.
type FinishedUpgrade struct {
	Strategy rayv1.RayServiceUpgradeType
	Result   string
	Seconds  float64
}

// Results label finished upgrades.
const (
	ResultPromoted   = "promoted"
	ResultRolledBack = "rolled_back"
)
