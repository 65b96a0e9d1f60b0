package plan

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// Observed is what one reconcile read about the world before deciding anything. The plan
// reads it and never changes it.
type Observed struct {
	// GatewayAPI: the Gateway API CRDs were installed when raygate started.
	GatewayAPI bool
	// Clusters are the RayClusters the RayService controls, sorted by name.
	Clusters []*ClusterView
	// NewClusterName is the name a RayCluster created in this pass gets. Names are random;
	// drawing one here keeps the plan a function of what it is given.
	NewClusterName string
	// Gateway and Route are the RayService's Gateway and HTTPRoute (nil: none).
	Gateway *gwv1.Gateway
	Route   *gwv1.HTTPRoute
	// GRPCRouteAPI: the GRPCRoute CRD was installed when raygate started; GRPCRoute is the
	// RayService's `<service>-grpcroute` (nil: none).
	GRPCRouteAPI bool
	GRPCRoute    *gwv1.GRPCRoute
	// Services are the Services raygate manages for the RayService that exist, by name: the
	// head and serve Services and the per-cluster serve Services.
	Services map[string]*corev1.Service
	// Gates are the UpgradePolicy's gates and their results, evaluated only when a pass asked
	// for them (nil: not evaluated in this pass).
	Gates *GateObservation
	// ForeignRecords are, by cluster, the serve config records (ConfigMaps) whose names are
	// taken by an object the cluster does not control, described.
	ForeignRecords map[string]string
}

// ClusterView is one RayCluster and, when it may serve, its pods and Serve applications.
type ClusterView struct {
	Cluster *rayv1.RayCluster
	// Pods are the pods the cluster controls, read for the clusters the status names and
	// those the plan could adopt.
	Pods  []corev1.Pod
	Serve ServeView
}

// ServeView is what the dashboard pool last heard from a cluster's head.
type ServeView struct {
	// Apps are the applications by name; nil when the dashboard was not read yet (or not
	// since it accepted a config, or the head pod is not ready).
	Apps map[string]rayv1.AppStatus
	// ReadAt is when Apps were read (a metav1.Time, which the semantic equality the tests
	// compare observations with can handle).
	ReadAt metav1.Time
	// TargetCapacity is the target_capacity the dashboard reported with Apps: that of the
	// config it runs (nil: unset, or Apps not read).
	TargetCapacity *int32
	// Err is why the last read failed.
	Err string
	// Submission is the last serve config asked of this head and what became of it.
	Submission *Submission
	// Accepted is the last serve config this head accepted (nil: none seen by this
	// process).
	Accepted *AcceptedConfig
	// Proxy is what the last check of the head's Serve proxy found (nil: not checked).
	Proxy *ProxyHealth
}

// ProxyHealth is whether a head's Serve proxy answered its health check, and why not.
type ProxyHealth struct {
	Healthy bool
	Err     string
}

// Submission is what became of the last serve config asked of a head.
type Submission struct {
	ID      string
	Outcome SubmitOutcome
	// BadRequest: the dashboard refused the config itself.
	BadRequest bool
	Message    string
}

// AcceptedConfig is a serve config and target capacity a dashboard accepted.
type AcceptedConfig struct {
	Hash           string
	TargetCapacity *int32
}

func (o *Observed) cluster(name string) *ClusterView {
	for _, c := range o.Clusters {
		if c.Cluster.Name == name {
			return c
		}
	}
	return nil
}

// SubmitOutcome is the dashboard's answer to a submission, as the dashboard pool reports it.
type SubmitOutcome int

const (
	// SubmitNotAnswered: the submission is queued or being sent.
	SubmitNotAnswered SubmitOutcome = iota
	// SubmitAccepted: the dashboard took the config.
	SubmitAccepted
	// SubmitRefused: the dashboard refused it; sent unchanged it fails the same way.
	SubmitRefused
	// SubmitFailed: no answer in time, or a server error; it is sent again after a backoff.
	SubmitFailed
)

// MayServe picks the clusters whose pods and applications observe reads: those the status
// names and those the plan could adopt as the pending cluster (see adopt). The others are
// only waiting to be retired or deleted.
func MayServe(rc *rayv1.RayCluster, st *rayv1.RayServiceStatuses, want *Desired) bool {
	if rc.DeletionTimestamp != nil {
		return false
	}
	return recordedIn(st, rc.Name) || (rc.Annotations[rayv1.DeleteAfterKey] == "" && matchGoal(stampOf(rc), want.Goal).runsGoal() && submittedOn(rc).Hash == "")
}

// HeadReady reports whether a cluster's head pod is ready, so its dashboard can be asked.
func HeadReady(pods []corev1.Pod) bool {
	for i := range pods {
		if pods[i].Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) && rayspec.Serving(&pods[i]) {
			return true
		}
	}
	return false
}
