package framework

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/raygate/raygate/internal/testenv/kwokcluster"
)

// Behavior is what the fake kubelet does with a pod.
type Behavior int

const (
	// Ready: Running and Ready, every container running (the default).
	Ready Behavior = iota
	// NotReady: Running, containers running but not ready.
	NotReady
	// ImagePullBackOff: Pending, the containers waiting with reason ImagePullBackOff.
	ImagePullBackOff
	// Ignore: the pod is left as it is (e.g. Pending forever).
	Ignore
)

// KubeletOptions configure the fake kubelet.
type KubeletOptions struct {
	// StartDelay is how long after its creation a pod becomes Running.
	StartDelay time.Duration
	// PodIPs is the pool pod IPs come from (zero: SimulatedPodIPs, loopback, where the
	// simulators listen). A suite whose pods must appear in Endpoints or EndpointSlices (the
	// API server refuses loopback addresses there), such as one running KubeRay, sets a
	// private range and never dials it: raygate then reaches the simulators in process.
	PodIPs netip.Prefix
}

// Kubelet is a fake kubelet for envtest, which runs no nodes: it watches pods and writes the
// status a real kubelet would. Pods are never bound to a node, so the API server deletes
// them at once (no graceful termination to finish). Containers never exit on their own: a
// RayJob submitter pod stays Running until Submitters (started next to the kubelet, see
// Dashboards.RunSubmitters) has carried out its `ray job submit` against the simulated Jobs
// API and set its phase Succeeded or Failed, which the kubelet then leaves alone.
type Kubelet struct {
	c       client.Client
	opts    KubeletOptions
	bg      *background
	poke    chan event.GenericEvent
	nextIP  atomic.Uint32
	pool    netip.Prefix   // opts.PodIPs, else this process's block (processPodIPs)
	counter *atomic.Uint32 // &nextIP, else processNextIP
	mu      sync.Mutex
	rules   []rule
	injured map[types.UID]bool // pods whose status a test set; left alone
}

type rule struct {
	match func(*corev1.Pod) bool
	b     Behavior
}

// StartKubelet starts a fake kubelet against the control plane at cfg. Stop it when done.
func StartKubelet(cfg *rest.Config, opts KubeletOptions) (*Kubelet, error) {
	bg, err := newBackground(cfg)
	if err != nil {
		return nil, err
	}
	k := &Kubelet{c: bg.GetClient(), bg: bg, opts: opts, poke: make(chan event.GenericEvent, 1024), injured: map[types.UID]bool{}}
	k.pool, k.counter = opts.PodIPs, &k.nextIP
	if !k.pool.IsValid() {
		if k.pool, err = processPodIPs(); err != nil {
			return nil, err
		}
		k.counter = &processNextIP
	}
	err = ctrl.NewControllerManagedBy(bg).
		Named("fake-kubelet").
		For(&corev1.Pod{}).
		WatchesRawSource(source.Channel(k.poke, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4, SkipNameValidation: ptr.To(true)}).
		Complete(k)
	if err != nil {
		return nil, err
	}
	if err := bg.start("fake kubelet"); err != nil {
		return nil, err
	}
	return k, nil
}

// Stop stops the kubelet and waits for it to exit.
func (k *Kubelet) Stop() { k.bg.stop() }

// SetBehavior makes pods matching match behave as b (the latest matching rule wins) and
// re-applies the rules to existing pods.
func (k *Kubelet) SetBehavior(ctx context.Context, match func(*corev1.Pod) bool, b Behavior) error {
	k.mu.Lock()
	k.rules = append(k.rules, rule{match, b})
	k.mu.Unlock()
	return k.resync(ctx)
}

// ResetBehaviors makes every pod Ready again (failures injected into pods stay).
func (k *Kubelet) ResetBehaviors(ctx context.Context) error {
	k.mu.Lock()
	k.rules = nil
	k.mu.Unlock()
	return k.resync(ctx)
}

func (k *Kubelet) resync(ctx context.Context) error {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods); err != nil {
		return err
	}
	for i := range pods.Items {
		k.poke <- event.GenericEvent{Object: &pods.Items[i]}
	}
	return nil
}

func (k *Kubelet) behavior(p *corev1.Pod) Behavior {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := len(k.rules) - 1; i >= 0; i-- {
		if k.rules[i].match(p) {
			return k.rules[i].b
		}
	}
	return Ready
}

// Reconcile writes the status the pod's behavior calls for.
func (k *Kubelet) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := k.c.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	k.mu.Lock()
	injured := k.injured[pod.UID]
	k.mu.Unlock()
	// A kubelet never brings back a pod that ended: a RayJob submitter pod that Submitters
	// finished (or one a test finished) keeps its phase.
	if injured || !pod.DeletionTimestamp.IsZero() || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return ctrl.Result{}, nil
	}
	if wait := k.opts.StartDelay - time.Since(pod.CreationTimestamp.Time); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	b := k.behavior(pod)
	if b == Ignore {
		return ctrl.Result{}, nil
	}
	st := k.status(pod, b)
	if statusEqual(pod.Status, st) {
		return ctrl.Result{}, nil
	}
	pod.Status = st
	return ctrl.Result{}, client.IgnoreNotFound(k.c.Status().Update(ctx, pod))
}

// statusEqual compares what the kubelet sets, ignoring timestamps.
func statusEqual(a, b corev1.PodStatus) bool {
	if a.Phase != b.Phase || a.PodIP != b.PodIP || len(a.ContainerStatuses) != len(b.ContainerStatuses) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i].Type != b.Conditions[i].Type || a.Conditions[i].Status != b.Conditions[i].Status || a.Conditions[i].Reason != b.Conditions[i].Reason {
			return false
		}
	}
	for i := range a.ContainerStatuses {
		x, y := a.ContainerStatuses[i], b.ContainerStatuses[i]
		if x.Name != y.Name || x.Ready != y.Ready || (x.State.Running == nil) != (y.State.Running == nil) ||
			(x.State.Waiting == nil) != (y.State.Waiting == nil) || (x.State.Terminated == nil) != (y.State.Terminated == nil) {
			return false
		}
	}
	return true
}

func (k *Kubelet) podIP(pod *corev1.Pod) string {
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	return podIPIn(k.pool, k.counter.Add(1)-1)
}

// The default pool is one block of SimulatedPodIPs claimed by this process, shared by
// every fake kubelet it starts, so no two pods of the machine's parallel test processes,
// nor of one process's successive kubelets, ever get the same loopback IP.
var (
	processNextIP atomic.Uint32
	processPodIPs = sync.OnceValues(kwokcluster.ClaimPodIPBlock)
)

// PodIP is the n-th pod IP (n from 0) of SimulatedPodIPs.
func PodIP(n uint32) string { return podIPIn(SimulatedPodIPs, n) }

// podIPIn is the n-th address of pool (zero: SimulatedPodIPs), skipping those ending in .0
// or .255. A /10 holds about four million addresses, more pods than any suite creates, so
// an address is never handed out twice in a process, let alone while its pod is alive.
func podIPIn(pool netip.Prefix, n uint32) string {
	if !pool.IsValid() {
		pool = SimulatedPodIPs
	}
	const perBlock = 254 // .1 to .254 of each /24
	base := pool.Masked().Addr().As4()
	v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8
	v += (n/perBlock)<<8 | (n%perBlock + 1)
	ip := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	if !pool.Contains(ip) {
		panic(fmt.Sprintf("fake kubelet: pod IP pool %s exhausted after %d pods", pool, n))
	}
	return ip.String()
}

func cond(t corev1.PodConditionType, ok bool, reason, msg string, now metav1.Time) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now}
}

func unready(pod *corev1.Pod) string {
	names := ""
	for i, c := range pod.Spec.Containers {
		if i > 0 {
			names += " "
		}
		names += c.Name
	}
	return "containers with unready status: [" + names + "]"
}

// hostIP is the node address the fake kubelet reports: loopback too, like the pods.
const hostIP = "127.0.0.1"

// status is the pod status a kubelet would report for the behavior.
func (k *Kubelet) status(pod *corev1.Pod, b Behavior) corev1.PodStatus {
	now := metav1.Now()
	start := pod.Status.StartTime
	if start == nil {
		start = &now
	}
	ip := k.podIP(pod)
	st := corev1.PodStatus{
		QOSClass:  pod.Status.QOSClass,
		HostIP:    hostIP,
		HostIPs:   []corev1.HostIP{{IP: hostIP}},
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: start,
	}
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "docker.io/" + c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: *start, FinishedAt: *start}}})
	}
	ready := b == Ready
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "docker.io/" + c.Image, Ready: ready, Started: ptr.To(b != ImagePullBackOff)}
		if b == ImagePullBackOff {
			cs.ImageID = ""
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q", c.Image)}
		} else {
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: *start}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	switch b {
	case ImagePullBackOff:
		st.Phase = corev1.PodPending
		st.Conditions = []corev1.PodCondition{
			cond(corev1.PodReadyToStartContainers, true, "", "", now), cond(corev1.PodInitialized, true, "", "", now),
			cond(corev1.PodReady, false, "ContainersNotReady", unready(pod), now), cond(corev1.ContainersReady, false, "ContainersNotReady", unready(pod), now),
			cond(corev1.PodScheduled, true, "", "", now),
		}
	default:
		st.Phase = corev1.PodRunning
		reason, msg := "", ""
		if !ready {
			reason, msg = "ContainersNotReady", unready(pod)
		}
		st.Conditions = []corev1.PodCondition{
			cond(corev1.PodReadyToStartContainers, true, "", "", now), cond(corev1.PodInitialized, true, "", "", now),
			cond(corev1.PodReady, ready, reason, msg, now), cond(corev1.ContainersReady, ready, reason, msg, now),
			cond(corev1.PodScheduled, true, "", "", now),
		}
	}
	return st
}

// injure applies a status change to a pod and stops managing it.
func (k *Kubelet) injure(ctx context.Context, namespace, name string, change func(*corev1.Pod)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := &corev1.Pod{}
		if err := k.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pod); err != nil {
			return err
		}
		k.mu.Lock()
		k.injured[pod.UID] = true
		k.mu.Unlock()
		change(pod)
		return k.c.Status().Update(ctx, pod)
	})
}

// FailPod puts a pod in phase Failed, every container terminated with exit code 1.
func (k *Kubelet) FailPod(ctx context.Context, namespace, name string) error {
	return k.injure(ctx, namespace, name, func(pod *corev1.Pod) {
		now := metav1.Now()
		pod.Status.Phase = corev1.PodFailed
		for i := range pod.Status.ContainerStatuses {
			cs := &pod.Status.ContainerStatuses[i]
			cs.Ready, cs.Started = false, ptr.To(false)
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: now}}
		}
		setPodCondition(pod, corev1.PodReady, false, "PodFailed", now)
		setPodCondition(pod, corev1.ContainersReady, false, "PodFailed", now)
	})
}

// TerminateRayContainer makes the pod's Ray container (the first) exit with exitCode while
// the pod stays Running (its other containers keep running).
func (k *Kubelet) TerminateRayContainer(ctx context.Context, namespace, name string, exitCode int32) error {
	return k.injure(ctx, namespace, name, func(pod *corev1.Pod) {
		now := metav1.Now()
		ray := pod.Spec.Containers[0].Name
		for i := range pod.Status.ContainerStatuses {
			cs := &pod.Status.ContainerStatuses[i]
			if cs.Name == ray {
				cs.Ready, cs.Started = false, ptr.To(false)
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: "Error", FinishedAt: now}}
			}
		}
		setPodCondition(pod, corev1.PodReady, false, "ContainersNotReady", now)
		setPodCondition(pod, corev1.ContainersReady, false, "ContainersNotReady", now)
	})
}

// DeletePod deletes a pod at once, as a node eviction would.
func (k *Kubelet) DeletePod(ctx context.Context, namespace, name string) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	err := k.c.Delete(ctx, pod, client.GracePeriodSeconds(0))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func setPodCondition(pod *corev1.Pod, t corev1.PodConditionType, ok bool, reason string, now metav1.Time) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			pod.Status.Conditions[i] = cond(t, ok, reason, "", now)
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond(t, ok, reason, "", now))
}
