package raycluster

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/rayspec"
)

// statusInput is everything the status is computed from. No client calls happen here.
type statusInput struct {
	// Cluster is the defaulted cluster; its Status is the status last written.
	Cluster *rayv1.RayCluster
	// Invalid lists why the spec is refused; nothing was created or deleted for it.
	Invalid field.ErrorList
	// Pods are all pods of the cluster in the cache, terminating ones included.
	Pods []corev1.Pod
	// HeadService is the head Service, or nil.
	// Capped says which worker groups were lowered to the pod bounds ("" none).
	Capped string
	// Conflict says which objects with wanted names the cluster does not control ("" none).
	Conflict    string
	HeadService *corev1.Service
	// ReconcileErr is the error of this pass (nil when it succeeded).
	ReconcileErr error
	// Conditions is the RayClusterStatusConditions gate.
	Conditions bool
	Now        time.Time
}

// computeStatus is the status a cluster should have. lastUpdateTime and
// stateTransitionTimes move only when something else changed, so a converged cluster
// computes exactly the status it already has.
func computeStatus(in statusInput) rayv1.RayClusterStatus {
	old := in.Cluster.Status
	st := *old.DeepCopy()
	now := metav1.NewTime(in.Now)
	st.ObservedGeneration = in.Cluster.Generation
	if len(in.Invalid) > 0 {
		// Nothing was acted on, so the last observation stands; the reason says why.
		st.Reason = rayv1.ValidationFailed + ": " + in.Invalid.ToAggregate().Error()
	} else {
		observe(&st, in, now)
	}
	if statusChanged(old, st) {
		st.LastUpdateTime = &now
		if st.State != old.State {
			if st.StateTransitionTimes == nil {
				st.StateTransitionTimes = map[rayv1.ClusterState]*metav1.Time{}
			}
			st.StateTransitionTimes[st.State] = &now
		}
	}
	return st
}

// observe sets what the pods, the head Service and the pass's outcome say about a cluster.
func observe(st *rayv1.RayClusterStatus, in statusInput, now metav1.Time) {
	rc := in.Cluster
	old := rc.Status
	gen := rc.Generation

	if in.Conditions {
		if in.ReconcileErr == nil {
			meta.RemoveStatusCondition(&st.Conditions, string(rayv1.RayClusterReplicaFailure))
		} else if reason := replicaFailureReason(in.ReconcileErr); reason != "" {
			setCondition(&st.Conditions, rayv1.RayClusterReplicaFailure, metav1.ConditionTrue, reason, replicaFailureMessage(in.ReconcileErr), gen, now)
		}
	}
	st.Reason = ""
	if replicaFailureReason(in.ReconcileErr) != "" {
		st.Reason = replicaFailureMessage(in.ReconcileErr)
	}
	if in.Conditions {
		if in.Conflict == "" {
			meta.RemoveStatusCondition(&st.Conditions, string(rayv1.OwnershipConflict))
		} else {
			setCondition(&st.Conditions, rayv1.OwnershipConflict, metav1.ConditionTrue, rayv1.ForeignObject, in.Conflict, gen, now)
		}
	} else if in.Conflict != "" && st.Reason == "" {
		st.Reason = in.Conflict
	}
	if in.Capped != "" && st.Reason == "" {
		st.Reason = in.Capped
	}

	heads := headPods(in.Pods)
	st.ReadyWorkerReplicas, st.AvailableWorkerReplicas = 0, 0
	for i := range in.Pods {
		w := &in.Pods[i]
		if rayv1.RayNodeType(w.Labels[rayv1.NodeTypeLabelKey]) != rayv1.WorkerNode {
			continue
		}
		if w.Status.Phase == corev1.PodRunning {
			st.AvailableWorkerReplicas++
		}
		if rayspec.RunningAndReady(w) {
			st.ReadyWorkerReplicas++
		}
	}
	st.DesiredWorkerReplicas, st.MinWorkerReplicas, st.MaxWorkerReplicas = workerCounts(&rc.Spec)
	res := desiredResources(&rc.Spec)
	st.DesiredCPU = res[corev1.ResourceCPU]
	st.DesiredMemory = res[corev1.ResourceMemory]
	st.DesiredGPU = sumGPUs(res)
	st.DesiredTPU = res["google.com/tpu"]

	// Every desired pod exists and is running and ready.
	complete := len(in.Pods) == int(st.DesiredWorkerReplicas)+1 && rayspec.AllRunningAndReady(in.Pods)
	if in.ReconcileErr == nil && complete {
		st.State = rayv1.Ready
	}

	if in.Conditions {
		setHeadPodReady(st, heads, gen, now)
		suspend := suspendStatus(old.Conditions)
		if !meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayClusterProvisioned)) && suspend != rayv1.RayClusterSuspended {
			if complete {
				setCondition(&st.Conditions, rayv1.RayClusterProvisioned, metav1.ConditionTrue, rayv1.AllPodRunningAndReadyFirstTime, "All Ray Pods are ready for the first time", gen, now)
			} else {
				setCondition(&st.Conditions, rayv1.RayClusterProvisioned, metav1.ConditionFalse, rayv1.RayClusterPodsProvisioning, "RayCluster Pods are being provisioned for the first time", gen, now)
			}
		}
		setSuspendConditions(st, suspend, ptr.Deref(rc.Spec.Suspend, false), len(in.Pods), gen, now)
	}
	if ptr.Deref(rc.Spec.Suspend, false) && len(in.Pods) == 0 {
		st.State = rayv1.Suspended
	}

	st.Endpoints = endpoints(in.HeadService)
	st.Head = headInfo(heads, in.HeadService)
}

// statusChanged compares two statuses ignoring lastUpdateTime. observedGeneration counts.
func statusChanged(old, cur rayv1.RayClusterStatus) bool {
	a, b := old, cur // copies of the struct: clearing a pointer field leaves the callers' alone
	a.LastUpdateTime, b.LastUpdateTime = nil, nil
	return !equality.Semantic.DeepEqual(a, b)
}

// setCondition sets a condition; its transition time moves only when its status changes.
func setCondition(conds *[]metav1.Condition, t rayv1.RayClusterConditionType, s metav1.ConditionStatus, reason, msg string, gen int64, now metav1.Time) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: string(t), Status: s, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: now})
}

// workerCounts sums desired, minimum and maximum worker pods (replicas × numOfHosts) over
// the groups; suspended groups count for nothing. Sums saturate at MaxInt32.
func workerCounts(spec *rayv1.RayClusterSpec) (desired, minimum, maximum int32) {
	var d, lo, hi int64
	for _, g := range spec.WorkerGroupSpecs {
		d += int64(rayspec.WorkerGroupDesiredPods(g))
		if ptr.Deref(g.Suspend, false) {
			continue
		}
		hosts := int64(rayspec.NumOfHosts(g))
		lo += int64(ptr.Deref(g.MinReplicas, 0)) * hosts
		hi += int64(ptr.Deref(g.MaxReplicas, math.MaxInt32)) * hosts
	}
	return rayspec.SaturateInt32(d), rayspec.SaturateInt32(lo), rayspec.SaturateInt32(hi)
}

// podResources is what a pod template asks for: each container's requests, falling back to
// its limits for resources it does not request.
func podResources(spec *corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range spec.Containers {
		per := corev1.ResourceList{}
		for n, q := range c.Resources.Limits {
			per[n] = q.DeepCopy()
		}
		for n, q := range c.Resources.Requests {
			per[n] = q.DeepCopy()
		}
		for n, q := range per {
			sum := total[n]
			sum.Add(q)
			total[n] = sum
		}
	}
	return total
}

// desiredResources is what the head and every desired worker pod ask for together.
func desiredResources(spec *rayv1.RayClusterSpec) corev1.ResourceList {
	total := podResources(&spec.HeadGroupSpec.Template.Spec)
	for _, g := range spec.WorkerGroupSpecs {
		n := int64(rayspec.WorkerGroupDesiredPods(g))
		if n == 0 {
			continue
		}
		for name, q := range podResources(&g.Template.Spec) {
			q.Mul(n)
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

func sumGPUs(res corev1.ResourceList) resource.Quantity {
	total := resource.Quantity{}
	for n, q := range res {
		if rayspec.IsGPUResource(string(n)) && !q.IsZero() {
			total.Add(q)
		}
	}
	return total
}

var invalidReasonChars = regexp.MustCompile(`[^A-Za-z0-9_,:]`)

// conditionReason makes a container or pod reason usable as a condition reason.
func conditionReason(s string) string {
	s = invalidReasonChars.ReplaceAllString(s, "")
	for len(s) > 0 && !isLetter(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ',' || s[len(s)-1] == ':') {
		s = s[:len(s)-1]
	}
	if s == "" {
		return rayv1.UnknownReason
	}
	return s
}

func isLetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }

// setHeadPodReady mirrors the head pod's Ready condition. When its containers are not ready,
// the Ray container's own waiting or terminated reason (e.g. ImagePullBackOff) is reported.
func setHeadPodReady(st *rayv1.RayClusterStatus, heads []corev1.Pod, gen int64, now metav1.Time) {
	switch {
	case len(heads) == 0:
		setCondition(&st.Conditions, rayv1.HeadPodReady, metav1.ConditionFalse, rayv1.HeadPodNotFound, "Head Pod not found", gen, now)
		return
	case len(heads) > 1:
		setCondition(&st.Conditions, rayv1.HeadPodReady, metav1.ConditionFalse, rayv1.MultipleHeadPods, strconv.Itoa(len(heads))+" head pods exist; delete the extra ones", gen, now)
		return
	}
	head := &heads[0]
	status, reason, msg := metav1.ConditionFalse, rayv1.UnknownReason, ""
	for _, c := range head.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		status, msg = metav1.ConditionStatus(c.Status), c.Message
		switch {
		case c.Status == corev1.ConditionTrue:
			reason = rayv1.HeadPodRunningAndReady
		case c.Reason != "":
			reason = c.Reason
		}
		if c.Status != corev1.ConditionTrue {
			if r, m := rayContainerWaitReason(head); r != "" {
				reason, msg = r, m
			}
		}
		break
	}
	setCondition(&st.Conditions, rayv1.HeadPodReady, status, conditionReason(reason), msg, gen, now)
}

// rayContainerWaitReason is why the Ray container is not running, if it says.
func rayContainerWaitReason(pod *corev1.Pod) (reason, msg string) {
	if len(pod.Spec.Containers) == 0 {
		return "", ""
	}
	name := pod.Spec.Containers[rayv1.RayContainerIndex].Name
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name != name {
			continue
		}
		switch {
		case s.State.Waiting != nil && s.State.Waiting.Reason != "":
			return s.State.Waiting.Reason, s.State.Waiting.Message
		case s.State.Terminated != nil && s.State.Terminated.Reason != "":
			return s.State.Terminated.Reason, s.State.Terminated.Message
		}
	}
	return "", ""
}

// setSuspendConditions runs the suspend state machine: Normal → Suspending (spec.suspend
// set) → Suspended (no pods left) → Normal (spec.suspend cleared). Suspending and Suspended
// are never both true, and suspension resets RayClusterProvisioned.
func setSuspendConditions(st *rayv1.RayClusterStatus, current rayv1.RayClusterConditionType, suspend bool, pods int, gen int64, now metav1.Time) {
	switch current {
	case rayv1.RayClusterSuspending:
		if pods == 0 {
			setCondition(&st.Conditions, rayv1.RayClusterProvisioned, metav1.ConditionFalse, rayv1.RayClusterPodsProvisioning, "RayCluster Pods are being provisioned for the first time", gen, now)
			setCondition(&st.Conditions, rayv1.RayClusterSuspending, metav1.ConditionFalse, string(rayv1.RayClusterSuspending), "", gen, now)
			setCondition(&st.Conditions, rayv1.RayClusterSuspended, metav1.ConditionTrue, string(rayv1.RayClusterSuspended), "", gen, now)
		}
	case rayv1.RayClusterSuspended:
		if !suspend {
			setCondition(&st.Conditions, rayv1.RayClusterSuspended, metav1.ConditionFalse, string(rayv1.RayClusterSuspended), "", gen, now)
		}
	default:
		setCondition(&st.Conditions, rayv1.RayClusterSuspended, metav1.ConditionFalse, string(rayv1.RayClusterSuspended), "", gen, now)
		s := metav1.ConditionFalse
		if suspend {
			s = metav1.ConditionTrue
		}
		setCondition(&st.Conditions, rayv1.RayClusterSuspending, s, string(rayv1.RayClusterSuspending), "", gen, now)
	}
}

// endpoints maps the head Service's port names to the port a client uses: the node port if
// there is one, else the target port.
func endpoints(svc *corev1.Service) map[string]string {
	if svc == nil {
		return nil
	}
	out := map[string]string{}
	for _, p := range svc.Spec.Ports {
		switch {
		case p.NodePort != 0:
			out[p.Name] = strconv.Itoa(int(p.NodePort))
		case p.TargetPort.IntVal != 0:
			out[p.Name] = strconv.Itoa(int(p.TargetPort.IntVal))
		case p.TargetPort.StrVal != "":
			out[p.Name] = p.TargetPort.StrVal
		default:
			out[p.Name] = strconv.Itoa(int(p.Port))
		}
	}
	return out
}

// headInfo says where the head can be reached. A headless Service has no IP of its own, so
// its "service IP" is the head pod's.
func headInfo(heads []corev1.Pod, svc *corev1.Service) rayv1.HeadInfo {
	var h rayv1.HeadInfo
	if len(heads) == 1 {
		h.PodName, h.PodIP = heads[0].Name, heads[0].Status.PodIP
	}
	if svc == nil {
		return h
	}
	h.ServiceName = svc.Name
	switch {
	case isHeadless(svc):
		h.ServiceIP = h.PodIP
	case svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) > 0:
		ing := svc.Status.LoadBalancer.Ingress[0]
		h.ServiceIP = ing.IP
		if h.ServiceIP == "" {
			h.ServiceIP = ing.Hostname
		}
	default:
		h.ServiceIP = svc.Spec.ClusterIP
	}
	return h
}

// recordedConflict is the ownership conflict the stored status reports ("" none), so the
// Warning event is sent when a conflict appears or changes, not on every pass.
func recordedConflict(st rayv1.RayClusterStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, string(rayv1.OwnershipConflict)); c != nil {
		return c.Message
	}
	if strings.HasSuffix(st.Reason, "rename the RayCluster.") {
		return st.Reason
	}
	return ""
}

// cappedMessage is the status reason of a cluster served at the pod bounds ("" when none
// of its groups was lowered).
func cappedMessage(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return "PodLimits: " + strings.Join(notes, "; ")
}
