package raygatectl

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/validation"
)

// ClusterView is what status and why read of a RayCluster.
type ClusterView struct {
	Cluster *rayv1.RayCluster
	// Now is when the view is rendered, for ages.
	Now time.Time
}

// RenderClusterStatus writes a RayCluster's status: what `kubectl ray get cluster` shows
// (state, desired and available workers, desired CPUs, GPUs, TPUs and memory), the head's
// Service and pod IP (what `kubectl ray session` forwards to), the worker groups as the spec
// asks for them, and the conditions.
func RenderClusterStatus(w io.Writer, v ClusterView) error {
	rc := v.Cluster
	st := &rc.Status
	var b strings.Builder
	fmt.Fprintf(&b, "RayCluster %s/%s (generation %d, observed %d)\n", rc.Namespace, rc.Name, rc.Generation, st.ObservedGeneration)
	fmt.Fprintf(&b, "State:     %s\n", stateLine(st, v.Now))
	fmt.Fprintf(&b, "Reason:    %s\n", orDash(oneLine(st.Reason)))
	fmt.Fprintf(&b, "Workers:   %d desired, %d available, %d ready (min %d, max %d)\n",
		st.DesiredWorkerReplicas, st.AvailableWorkerReplicas, st.ReadyWorkerReplicas, st.MinWorkerReplicas, st.MaxWorkerReplicas)
	fmt.Fprintf(&b, "Resources: %s CPU, %s GPU, %s TPU, %s memory (desired)\n",
		quantity(st.DesiredCPU), quantity(st.DesiredGPU), quantity(st.DesiredTPU), quantity(st.DesiredMemory))
	fmt.Fprintf(&b, "Head:      Service %s, pod %s, pod IP %s\n", orDash(st.Head.ServiceName), orDash(st.Head.PodName), orDash(st.Head.PodIP))
	if len(rc.Spec.WorkerGroupSpecs) > 0 {
		b.WriteString("Worker groups:\n")
		for i := range rc.Spec.WorkerGroupSpecs {
			g := &rc.Spec.WorkerGroupSpecs[i]
			fmt.Fprintf(&b, "  %s: %d replicas x %d hosts (min %d, max %d)%s\n", g.GroupName, ptr.Deref(g.Replicas, 0), max(g.NumOfHosts, 1),
				ptr.Deref(g.MinReplicas, 0), ptr.Deref(g.MaxReplicas, 0), suspendedNote(g))
		}
	}
	if len(st.Conditions) > 0 {
		b.WriteString("Conditions:\n")
		for _, c := range st.Conditions {
			fmt.Fprintf(&b, "  %s=%s %s\n", c.Type, c.Status, c.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderClusterWhy writes the conditions of a RayCluster with their messages, and says
// when the status is older than the spec.
func RenderClusterWhy(w io.Writer, v ClusterView) error {
	rc := v.Cluster
	st := &rc.Status
	var b strings.Builder
	switch {
	case validation.ManagedByOther(rc.Spec.ManagedBy):
		fmt.Fprintf(&b, "spec.managedBy is %s: that controller runs this RayCluster, raygate leaves it alone.\n", *rc.Spec.ManagedBy)
	case ptr.Deref(rc.Spec.Suspend, false):
		b.WriteString("spec.suspend is true: the cluster's pods are deleted and none are created until it is false.\n")
	}
	if st.Reason != "" {
		fmt.Fprintf(&b, "Reason: %s\n", st.Reason)
	}
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "%s=%s (%s): %s\n", c.Type, c.Status, orDash(c.Reason), orDash(oneLine(c.Message)))
	}
	if len(st.Conditions) == 0 && st.State == "" {
		b.WriteString("raygate has not written a status yet.\n")
	}
	if st.ObservedGeneration != rc.Generation && !validation.ManagedByOther(rc.Spec.ManagedBy) {
		fmt.Fprintf(&b, "The controller has not seen generation %d yet (status is of generation %d).\n", rc.Generation, st.ObservedGeneration)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// stateLine is the state with when it was last entered.
func stateLine(st *rayv1.RayClusterStatus, now time.Time) string {
	s := orDash(string(st.State))
	if st.StateTransitionTimes != nil {
		if t, ok := st.StateTransitionTimes[st.State]; ok && t != nil {
			s += " since " + timeLine(t, now)
		}
	}
	return s
}

// suspendedNote marks a worker group spec.workerGroupSpecs[].suspend stops.
func suspendedNote(g *rayv1.WorkerGroupSpec) string {
	if ptr.Deref(g.Suspend, false) {
		return ", suspended"
	}
	return ""
}

func quantity(q resource.Quantity) string { return q.String() }
