package framework

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
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

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// Submitters runs RayJob submitter pods without containers. A RayJob in K8sJobMode
// submits through a batch/v1 Job whose pod runs `ray job submit` against the head's
// dashboard (see raysim.ParseSubmitter for what is understood of its command). Once such a
// pod runs (the fake kubelet or kwok made it Running), Submitters reads its container's
// command and environment (Secrets, ConfigMaps and the pod's own fields resolved as the
// kubelet does), finds the RayCluster its --address names (the head Service's selector, or
// a head pod's IP), waits until that cluster has a running head, and carries the script out
// against the cluster's simulated Jobs API exactly as the container would: status check,
// one submission, following the job. Then it writes the pod status the kubelet would: phase
// Succeeded with the container terminated with exit code 0, or Failed with the script's exit
// code (restartPolicy OnFailure runs the script again instead, counting restarts), the end
// of the script's output as the termination message. The batch Job controller
// (kube-controller-manager in the local mode) and the tests then see a real finish.
//
// The fake kubelet leaves pods in a terminal phase alone, and a local cluster started with
// kwokcluster.Options.HeldJobPods = SubmitterPods() keeps kwok from completing these pods
// itself.
type Submitters struct {
	c    client.Client
	api  client.Reader // uncached reads: Services, Secrets, ConfigMaps
	reg  *raysim.Registry
	opts SubmitterOptions
	log  logr.Logger
	bg   *background

	mu      sync.Mutex
	runs    map[types.NamespacedName]podRun
	results map[types.NamespacedName][]raysim.SubmitterResult
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

// SubmitterOptions tune Submitters.
type SubmitterOptions struct {
	// Poll is how often a run polls the simulated dashboard (default 200 ms).
	Poll time.Duration
	// RestartBackoff is how long a failed container with restartPolicy OnFailure waits
	// before it runs again (default 1 s).
	RestartBackoff time.Duration
	// Sidecars also carries out the submitter container of SidecarMode head pods (see
	// IsSidecarHead): the container ends with the script's exit code and the pod, the Ray
	// head, keeps running. Off where a test drives that container itself.
	Sidecars bool
}

// StartSubmitters starts running the submitter pods of the control plane at cfg against
// the registry's simulators. Stop it when done.
func StartSubmitters(cfg *rest.Config, reg *raysim.Registry, opts SubmitterOptions) (*Submitters, error) {
	if opts.Poll <= 0 {
		opts.Poll = 200 * time.Millisecond
	}
	if opts.RestartBackoff <= 0 {
		opts.RestartBackoff = time.Second
	}
	bg, err := newBackground(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Submitters{c: bg.GetClient(), api: bg.GetAPIReader(), reg: reg, opts: opts, bg: bg, log: ctrl.Log.WithName("simulated-submitters"),
		runs: map[types.NamespacedName]podRun{}, results: map[types.NamespacedName][]raysim.SubmitterResult{}, ctx: ctx, cancel: cancel}
	err = ctrl.NewControllerManagedBy(bg).
		Named("simulated-rayjob-submitters").
		For(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: ptr.To(true)}).
		Complete(s)
	if err != nil {
		cancel()
		return nil, err
	}
	if err := bg.start("simulated RayJob submitters"); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

// Stop ends every run (their pods are left as they are) and stops watching pods.
func (s *Submitters) Stop() {
	s.bg.stop()
	s.cancel()
	s.wg.Wait()
}

// Results returns the runs of a pod's script that ended, in order (one per container
// start).
func (s *Submitters) Results(namespace, name string) []raysim.SubmitterResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]raysim.SubmitterResult(nil), s.results[types.NamespacedName{Namespace: namespace, Name: name}]...)
}

// podRun is the run started for a pod (by UID: a new pod of the same name gets its own).
type podRun struct {
	uid    types.UID
	cancel context.CancelFunc
}

// Reconcile starts a run for a submitter pod that runs and has none, and ends the run of a
// pod that is going away.
func (s *Submitters) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := s.c.Get(ctx, req.NamespacedName, pod); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	} else if err != nil {
		s.forget(req.NamespacedName, "")
		return ctrl.Result{}, nil
	}
	if !raysim.IsSubmitterPod(pod) && (!s.opts.Sidecars || !IsSidecarHead(pod)) {
		return ctrl.Result{}, nil
	}
	if pod.DeletionTimestamp != nil {
		s.forget(req.NamespacedName, "")
		return ctrl.Result{}, nil
	}
	s.forget(req.NamespacedName, pod.UID) // an older pod of the same name
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, started := s.runs[req.NamespacedName]; started || pod.Status.Phase != corev1.PodRunning || !containerRunning(pod) {
		return ctrl.Result{}, nil
	}
	rctx, cancel := context.WithCancel(s.ctx)
	s.runs[req.NamespacedName] = podRun{uid: pod.UID, cancel: cancel}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		s.run(rctx, pod.DeepCopy())
	}()
	return ctrl.Result{}, nil
}

// forget ends and drops the run of the pod of that name, unless it is keep's.
func (s *Submitters) forget(key types.NamespacedName, keep types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runs[key]; ok && r.uid != keep {
		r.cancel()
		delete(s.runs, key)
	}
}

func containerRunning(pod *corev1.Pod) bool {
	c := raysim.SubmitterContainer(pod)
	if c == nil {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == c.Name {
			return cs.State.Running != nil
		}
	}
	return false
}

// run carries out the pod's script, again after each failure under restartPolicy
// OnFailure, and writes the pod's final status.
func (s *Submitters) run(ctx context.Context, pod *corev1.Pod) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	log := s.log.WithValues("pod", key)
	for restarts := int32(0); ; restarts++ {
		started := metav1.Now()
		res := s.runOnce(ctx, pod)
		if ctx.Err() != nil {
			return // the pod is going away, or the harness stops
		}
		s.mu.Lock()
		s.results[key] = append(s.results[key], res)
		s.mu.Unlock()
		log.Info("submitter script ended", "exitCode", res.ExitCode, "submissionID", res.SubmissionID, "submitted", res.Submitted)
		if res.ExitCode != 0 && restartsOnFailure(pod) {
			if err := s.writeStatus(ctx, pod, restartedStatus(pod, res, started, restarts+1)); err != nil {
				log.Error(err, "recording the container's restart")
				return
			}
			if !sleepCtx(ctx, s.opts.RestartBackoff) {
				return
			}
			continue
		}
		finish := func(st *corev1.PodStatus) { finishedStatus(pod, st, res, started) }
		if IsSidecarHead(pod) {
			finish = func(st *corev1.PodStatus) { sidecarFinishedStatus(pod, st, res, started) }
		}
		if err := s.writeStatus(ctx, pod, finish); err != nil {
			log.Error(err, "writing the finished pod's status")
		}
		return
	}
}

// runOnce runs the script once: a command the simulation cannot carry out ends as a
// command line ray refuses would (exit code 2).
func (s *Submitters) runOnce(ctx context.Context, pod *corev1.Pod) raysim.SubmitterResult {
	cont := raysim.SubmitterContainer(pod)
	env, err := s.containerEnv(ctx, pod, cont)
	if err != nil {
		return raysim.SubmitterResult{ExitCode: 1, Output: "simulated submitter: " + err.Error()}
	}
	sc, err := raysim.ParseSubmitter(cont.Command, cont.Args, env)
	if err != nil {
		return raysim.SubmitterResult{ExitCode: 2, Output: "simulated submitter: " + err.Error()}
	}
	return raysim.RunSubmitter(ctx, sc, raysim.SubmitterEnv{
		Token: dashboard.BearerToken(env["RAY_AUTH_TOKEN"]),
		Poll:  s.opts.Poll,
		Resolve: func(ctx context.Context, address string) (string, error) {
			if IsSidecarHead(pod) && isLocalAddress(address) {
				// The sidecar shares the head's network: its loopback is the head's dashboard.
				return s.headDashboard(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[rayv1.ClusterLabelKey]})
			}
			return s.dashboardFor(ctx, pod.Namespace, address)
		},
	})
}

// dashboardFor is the URL of the simulator of the cluster whose dashboard address names,
// once that cluster has a running head pod (before, nothing would answer there).
func (s *Submitters) dashboardFor(ctx context.Context, namespace, address string) (string, error) {
	cluster, err := s.clusterFor(ctx, namespace, address)
	if err != nil {
		return "", err
	}
	return s.headDashboard(ctx, cluster)
}

// headDashboard is the URL of a cluster's simulator, once the cluster has a running head.
func (s *Submitters) headDashboard(ctx context.Context, cluster types.NamespacedName) (string, error) {
	var heads corev1.PodList
	if err := s.c.List(ctx, &heads, client.InNamespace(cluster.Namespace),
		client.MatchingLabels{rayv1.ClusterLabelKey: cluster.Name, rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)}); err != nil {
		return "", err
	}
	up := false
	for i := range heads.Items {
		p := &heads.Items[i]
		up = up || (p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning)
	}
	if !up {
		return "", fmt.Errorf("the head of RayCluster %s is not running", cluster)
	}
	sim, err := s.reg.Ensure(cluster)
	if err != nil {
		return "", err
	}
	return sim.URL(), nil
}

// clusterFor finds the RayCluster behind a dashboard address: a head pod's IP, a Service's
// cluster IP, or a Service's DNS name (<svc>, <svc>.<ns>, <svc>.<ns>.svc[.<domain>]),
// whose selector (or label) names the cluster.
func (s *Submitters) clusterFor(ctx context.Context, namespace, address string) (types.NamespacedName, error) {
	u, err := url.Parse(address)
	if err != nil || u.Hostname() == "" {
		return types.NamespacedName{}, fmt.Errorf("the address %q names no host", address)
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		return s.clusterByIP(ctx, namespace, host)
	}
	ref := serviceRef(host, namespace)
	svc := &corev1.Service{}
	if err := s.api.Get(ctx, ref, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return types.NamespacedName{}, fmt.Errorf("no Service %s for the address %q", ref, address)
		}
		return types.NamespacedName{}, err
	}
	if name := clusterOfService(svc); name != "" {
		return types.NamespacedName{Namespace: svc.Namespace, Name: name}, nil
	}
	return types.NamespacedName{}, fmt.Errorf("the Service %s selects no RayCluster", ref)
}

func (s *Submitters) clusterByIP(ctx context.Context, namespace, ip string) (types.NamespacedName, error) {
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.HasLabels{rayv1.ClusterLabelKey}); err != nil {
		return types.NamespacedName{}, err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Status.PodIP == ip && p.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) {
			return types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[rayv1.ClusterLabelKey]}, nil
		}
	}
	var svcs corev1.ServiceList
	if err := s.api.List(ctx, &svcs, client.InNamespace(namespace)); err != nil {
		return types.NamespacedName{}, err
	}
	for i := range svcs.Items {
		if svc := &svcs.Items[i]; svc.Spec.ClusterIP == ip && clusterOfService(svc) != "" {
			return types.NamespacedName{Namespace: svc.Namespace, Name: clusterOfService(svc)}, nil
		}
	}
	return types.NamespacedName{}, fmt.Errorf("no head pod or Service has the IP %s", ip)
}

// serviceRef is the Service a DNS name designates from a pod in namespace.
func serviceRef(host, namespace string) types.NamespacedName {
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	ref := types.NamespacedName{Namespace: namespace, Name: parts[0]}
	if len(parts) >= 2 && parts[1] != "svc" {
		ref.Namespace = parts[1]
	}
	return ref
}

// clusterOfService is the RayCluster a head Service serves: its selector's ray.io/cluster,
// else its own label.
func clusterOfService(svc *corev1.Service) string {
	if name := svc.Spec.Selector[rayv1.ClusterLabelKey]; name != "" {
		return name
	}
	return svc.Labels[rayv1.ClusterLabelKey]
}

// writeStatus applies change to the pod's latest status, unless it has ended already.
func (s *Submitters) writeStatus(ctx context.Context, pod *corev1.Pod, change func(*corev1.PodStatus)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &corev1.Pod{}
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if cur.UID != pod.UID || cur.Status.Phase == corev1.PodSucceeded || cur.Status.Phase == corev1.PodFailed {
			return nil
		}
		change(&cur.Status)
		return s.c.Status().Update(ctx, cur)
	})
}

// finishedStatus is the status of a pod whose submitter container exited: the pod ended
// (its other containers are taken to end with it), Succeeded for exit code 0.
func finishedStatus(pod *corev1.Pod, st *corev1.PodStatus, res raysim.SubmitterResult, started metav1.Time) {
	now := metav1.Now()
	st.Phase = corev1.PodSucceeded
	reason := "PodCompleted"
	if res.ExitCode != 0 {
		st.Phase, reason = corev1.PodFailed, "PodFailed"
	}
	submitter := raysim.SubmitterContainer(pod).Name
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		code, msg := int32(0), ""
		if cs.Name == submitter {
			code, msg = int32(res.ExitCode), res.Output
		}
		cs.Ready, cs.Started = false, ptr.To(false)
		cs.State = corev1.ContainerState{Terminated: terminated(code, msg, started, now)}
	}
	for _, c := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		setStatusCondition(st, c, reason, now)
	}
}

// restartedStatus records that the submitter container exited and was started again, as
// the kubelet does under restartPolicy OnFailure.
func restartedStatus(pod *corev1.Pod, res raysim.SubmitterResult, started metav1.Time, restarts int32) func(*corev1.PodStatus) {
	submitter := raysim.SubmitterContainer(pod).Name
	return func(st *corev1.PodStatus) {
		now := metav1.Now()
		for i := range st.ContainerStatuses {
			if cs := &st.ContainerStatuses[i]; cs.Name == submitter {
				cs.RestartCount = restarts
				cs.LastTerminationState = corev1.ContainerState{Terminated: terminated(int32(res.ExitCode), res.Output, started, now)}
				cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
			}
		}
	}
}

func terminated(code int32, msg string, started, finished metav1.Time) *corev1.ContainerStateTerminated {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg, StartedAt: started, FinishedAt: finished}
}

// setStatusCondition sets a condition of st to False with reason.
func setStatusCondition(st *corev1.PodStatus, t corev1.PodConditionType, reason string, now metav1.Time) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			st.Conditions[i] = cond(t, false, reason, "", now)
			return
		}
	}
	st.Conditions = append(st.Conditions, cond(t, false, reason, "", now))
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// SubmitterPods is what marks RayJob submitter pods for kwokcluster.Options.HeldJobPods:
// kwok must not complete them, Submitters finishes them.
func SubmitterPods() kwokcluster.HeldPods {
	return kwokcluster.HeldPods{
		Labels:         map[string]string{rayv1.OriginatedFromCRDLabelKey: raysim.RayJobKind},
		ContainerNames: []string{raysim.SubmitterContainerName},
	}
}
