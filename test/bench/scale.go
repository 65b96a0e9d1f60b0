package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/testenv/kuberay"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/test/builders"
)

const (
	scaleNamespaces = 10
	workersPer      = 3 // each RayCluster: 1 head + 3 workers
	podsPerCluster  = 1 + workersPer
	createWorkers   = 20 // parallel creates by the benchmark's client
)

// minWritesPerCluster is the least a controller can write to bring one RayCluster up: each
// pod and the head Service created once, the status written twice (first observed, then
// ready), and one event per scaling action — bringing up the head group, and scaling the
// worker group from 0 to its replicas.
func minWritesPerCluster() int {
	const groups = 2 // head group + one worker group
	return podsPerCluster + 1 + 2 + groups
}

// scaleRun is one system bringing up the objects.
type scaleRun struct {
	System      string `json:"system"` // "raygate", "kuberay" or "replicaset"
	Concurrency int    `json:"concurrency,omitempty"`
	// Flags are KubeRay's flags beyond the harness's own (kubeRayRayJobFlags); results saved
	// before they were given have none: KubeRay ran with its defaults.
	Flags []string `json:"flags,omitempty"`
	// Seconds from the first create to the last object ready.
	Seconds float64 `json:"seconds,omitempty"`
	// Requests are the operator's requests from its start to convergence; Quiet those in
	// the quiet window after it.
	Requests     *requestCounts                `json:"requests,omitempty"`
	QuietSeconds float64                       `json:"quietSeconds,omitempty"`
	Quiet        *requestCounts                `json:"quiet,omitempty"`
	Usage        *processUsage                 `json:"usage,omitempty"`
	Reconciles   map[string]map[string]float64 `json:"reconciles,omitempty"`
	RBAC         string                        `json:"rbac,omitempty"`
	Error        string                        `json:"error,omitempty"`
	Timeline     []float64                     `json:"timeline,omitempty"` // seconds at which each object became ready
	ProfileDir   string                        `json:"profileDir,omitempty"`
	WritesPerObj float64                       `json:"writesPerCluster,omitempty"`
	// StatusWritesPerObj are the operator's writes of rayclusters/status (updates and
	// patches) per RayCluster.
	StatusWritesPerObj float64 `json:"statusWritesPerCluster,omitempty"`
	// ClusterWrites are every client program's writes from the first create to
	// convergence, per object (with -audit-all), and ClusterWritesByKind the same by
	// "client verb resource".
	ClusterWrites       map[string]float64 `json:"clusterWritesPerObject,omitempty"`
	ClusterWritesByKind map[string]float64 `json:"clusterWritesByKindPerObject,omitempty"`
}

// scaleResult is the "scale" scenario at one size.
type scaleResult struct {
	Scenario   string `json:"scenario"`
	Clusters   int    `json:"clusters"`
	Namespaces int    `json:"namespaces"`
	Pods       int    `json:"pods"`
	Nodes      int    `json:"nodes"`
	// Stages are kwok's pod stages of the run ("general" or "fast").
	Stages    string     `json:"stages,omitempty"`
	Raygate   scaleRun   `json:"raygate"`
	KubeRay   *scaleRun  `json:"kuberay,omitempty"`
	Reference scaleRun   `json:"reference"`
	Sweep     []scaleRun `json:"sweep,omitempty"`
	// Ratio is raygate's time over the ReplicaSet reference's (target: targetTimeRatio).
	Ratio float64 `json:"timeRatio,omitempty"`
	// MinWritesPerCluster and WritesRatio compare raygate's writes with the minimum
	// (target: targetWritesRatio).
	MinWritesPerCluster int     `json:"minWritesPerCluster"`
	WritesRatio         float64 `json:"writesRatio,omitempty"`
}

type scaleConfig struct {
	Clusters    int
	Concurrency int
	Sweep       []int
	Quiet       time.Duration
	Profile     bool
	Reference   bool
	KubeRay     bool
	Stages      kwokcluster.StageSet
}

// clusterRequests are the pod requests of one RayCluster (builders' head and workers).
func clusterRequests() corev1.ResourceList {
	spec := benchClusterSpec()
	total := corev1.ResourceList{}
	add := func(t corev1.PodTemplateSpec, n int) {
		for _, c := range t.Spec.Containers {
			for name, q := range c.Resources.Requests {
				sum := total[name]
				for range n {
					sum.Add(q)
				}
				total[name] = sum
			}
		}
	}
	add(spec.HeadGroupSpec.Template, 1)
	for _, g := range spec.WorkerGroupSpecs {
		add(g.Template, int(*g.Replicas))
	}
	return total
}

func benchClusterSpec() rayv1.RayClusterSpec {
	spec := builders.ClusterSpec()
	spec.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{builders.WorkerGroup("workers", workersPer)}
	return spec
}

func scale(n int) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range clusterRequests() {
		v := q.DeepCopy()
		v.Mul(int64(n))
		out[name] = v
	}
	return out
}

func runScale(ctx context.Context, b *bench, cfg scaleConfig) scaleResult {
	scenario := fmt.Sprintf("scale-%d", cfg.Clusters)
	if cfg.Stages != kwokcluster.GeneralStages {
		scenario += "-" + string(cfg.Stages)
	}
	res := scaleResult{
		Scenario:            scenario,
		Stages:              string(cfg.Stages),
		Clusters:            cfg.Clusters,
		Namespaces:          scaleNamespaces,
		Pods:                cfg.Clusters * podsPerCluster,
		Nodes:               nodesFor(scale(cfg.Clusters), cfg.Clusters*podsPerCluster),
		MinWritesPerCluster: minWritesPerCluster(),
	}
	b.logf("scale %d (%s stages): raygate (reconcile concurrency %d)", cfg.Clusters, cfg.Stages, cfg.Concurrency)
	res.Raygate = b.scaleRaygate(ctx, cfg.Stages, res.Nodes, cfg.Clusters, operatorOptions{Concurrency: cfg.Concurrency}, cfg.Quiet, cfg.Profile)
	if cfg.KubeRay {
		b.logf("scale %d (%s stages): KubeRay", cfg.Clusters, cfg.Stages)
		k := b.scaleRaygate(ctx, cfg.Stages, res.Nodes, cfg.Clusters, operatorOptions{KubeRay: true, ExtraArgs: kubeRayRayJobFlags(cfg.Concurrency)}, cfg.Quiet, false)
		res.KubeRay = &k
	}
	if cfg.Reference {
		b.logf("scale %d (%s stages): ReplicaSet reference", cfg.Clusters, cfg.Stages)
		res.Reference = b.scaleReference(ctx, cfg.Stages, res.Nodes, cfg.Clusters)
	} else {
		res.Reference = scaleRun{System: "replicaset", Error: "not run (-reference=false)"}
	}
	for _, c := range cfg.Sweep {
		b.logf("scale %d: raygate (reconcile concurrency %d)", cfg.Clusters, c)
		run := b.scaleRaygate(ctx, cfg.Stages, res.Nodes, cfg.Clusters, operatorOptions{Concurrency: c}, 0, false)
		run.Timeline = nil
		res.Sweep = append(res.Sweep, run)
	}
	if res.Raygate.Error == "" && res.Reference.Error == "" && res.Reference.Seconds > 0 {
		res.Ratio = res.Raygate.Seconds / res.Reference.Seconds
	}
	if res.Raygate.WritesPerObj > 0 {
		res.WritesRatio = res.Raygate.WritesPerObj / float64(res.MinWritesPerCluster)
	}
	return res
}

// scaleRaygate runs one operator — raygate, or KubeRay with o.KubeRay — bringing up n
// RayClusters on a fresh cluster with the given pod stages.
func (b *bench) scaleRaygate(ctx context.Context, stages kwokcluster.StageSet, nodes, n int, o operatorOptions, quiet time.Duration, profile bool) (run scaleRun) {
	run = scaleRun{System: "raygate", Concurrency: o.Concurrency}
	name := fmt.Sprintf("scale-%d-%s-raygate-c%d", n, stages, o.Concurrency)
	if o.KubeRay {
		run.System, run.Flags, name = "kuberay", o.ExtraArgs, fmt.Sprintf("scale-%d-%s-kuberay", n, stages)
	}
	c, err := b.startCluster(ctx, nodes, name, withStages(stages), b.scaleAudit, withWrittenOnlyPodIPs)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	defer b.stopCluster(c, &run.Error)
	cl, cfg, nss, err := scaleClient(ctx, c)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	proxy, err := noDialProxy(&o)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	defer func() {
		_ = proxy.Close()
		if err := dialRefusals(proxy); err != nil && run.Error == "" {
			run.Error = err.Error()
		}
	}()
	opStart := time.Now()
	op, err := b.startOperator(ctx, c, o)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.RBAC = op.RBAC
	// The tracker's informer must end before the cluster stops (deferred calls run last
	// first), or the API server waits for its watch.
	trackCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	tracker, err := trackReady(trackCtx, cfg, &rayv1.RayCluster{}, func(o client.Object) bool {
		return o.(*rayv1.RayCluster).Status.State == rayv1.Ready
	})
	if err != nil {
		run.Error = err.Error()
		return run
	}
	if profile {
		run.ProfileDir = filepath.Join(b.outDir, fmt.Sprintf("profile-scale-%d", n))
		_ = os.MkdirAll(run.ProfileDir, 0o755)
		go func() {
			if err := op.cpuProfile(ctx, 30*time.Second, filepath.Join(run.ProfileDir, "cpu.pprof")); err != nil {
				b.logf("cpu profile: %v", err)
			}
		}()
	}

	start := time.Now()
	err = parallel(ctx, n, createWorkers, func(ctx context.Context, i int) error {
		rc := builders.RayCluster(fmt.Sprintf("rc-%04d", i), nss[i%len(nss)]).Spec(benchClusterSpec()).Obj()
		return cl.Create(ctx, rc)
	})
	if err != nil {
		run.Error = "creating RayClusters: " + err.Error()
		return run
	}
	converged, err := tracker.waitReady(ctx, c, n, waitTimeout(n), stallTimeout(n), op.forbidden, func() string {
		return b.diagnoseRayClusters(ctx, cl, op)
	})
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.Seconds = converged.Sub(start).Seconds()
	run.Timeline = tracker.timeline(start)
	if profile {
		if err := op.heapProfile(ctx, filepath.Join(run.ProfileDir, "heap.pprof")); err != nil {
			b.logf("heap profile: %v", err)
		}
	}
	if quiet > 0 {
		b.logf("converged in %.1fs; quiet window of %s", run.Seconds, quiet)
		select {
		case <-ctx.Done():
			run.Error = ctx.Err().Error()
			return run
		case <-time.After(quiet):
		}
		run.QuietSeconds = quiet.Seconds()
	}
	if u, err := op.usage(); err == nil {
		run.Usage = &u
	} else {
		b.logf("usage: %v", err)
	}
	if r, err := op.reconciles(); err == nil {
		run.Reconciles = r
	}
	reqs, err := readAudit(c.AuditLogPath)
	if err != nil {
		run.Error = "reading the audit log: " + err.Error()
		return run
	}
	if b.auditAll {
		run.ClusterWrites, run.ClusterWritesByKind = b.clusterWrites(c, start, converged, n)
	}
	conv := count(window(reqs, opStart, converged))
	run.Requests = &conv
	if quiet > 0 {
		q := count(window(reqs, converged, converged.Add(quiet)))
		run.Quiet = &q
	}
	run.WritesPerObj = float64(conv.Writes) / float64(n)
	run.StatusWritesPerObj = float64(statusWrites(conv)) / float64(n)
	return run
}

// statusWrites counts the writes of rayclusters/status, whatever the verb.
func statusWrites(c requestCounts) int {
	n := 0
	for k, v := range c.WritesByKind {
		if strings.HasSuffix(k, " rayclusters/status") {
			n += v
		}
	}
	return n
}

// withStages runs a cluster with the given kwok pod stages.
func withStages(s kwokcluster.StageSet) func(*kwokcluster.Options) {
	return func(o *kwokcluster.Options) { o.PodStages = s }
}

// diagnoseRayClusters says why RayClusters are not ready: no pods at all usually means the
// controller is not there yet.
func (b *bench) diagnoseRayClusters(ctx context.Context, cl client.Client, op *operator) string {
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.HasLabels{rayv1.ClusterLabelKey}); err != nil {
		return err.Error()
	}
	ready := 0
	for _, p := range pods.Items {
		if rayspec.RunningAndReady(&p) {
			ready++
		}
	}
	msg := fmt.Sprintf("%d Ray pods exist, %d ready", len(pods.Items), ready)
	if len(pods.Items) == 0 {
		msg += " — the RayCluster controller created no pod (is it on main yet?)"
	}
	return msg + "; operator log: " + op.proc.LogPath() + "\n" + op.proc.LogTail(1500)
}

// scaleClient is the benchmark's client on a fresh cluster, with the scale namespaces created.
func scaleClient(ctx context.Context, c *kwokcluster.Cluster) (client.Client, *rest.Config, []string, error) {
	cl, cfg, err := benchClient(c.Config)
	if err != nil {
		return nil, nil, nil, err
	}
	nss, err := createNamespaces(ctx, cl, scaleNamespaces)
	return cl, cfg, nss, err
}

// waitTimeout allows a minute plus 600 ms per object: far above what either system needs.
func waitTimeout(n int) time.Duration { return time.Minute + time.Duration(n)*600*time.Millisecond }

// stallTimeout is how long a run may go without a new object ready before it counts as
// stuck: 90 s, and longer for fleets whose pod transitions alone keep kwok busy that long
// (at 40,000 pods kwok makes one patch per transition at about 100 a second on two idle cores).
func stallTimeout(n int) time.Duration {
	return max(90*time.Second, time.Duration(n)*15*time.Millisecond)
}

// scaleReference runs the same pods as n ReplicaSets of 4 pods, reconciled by
// kube-controller-manager's ReplicaSet controller.
func (b *bench) scaleReference(ctx context.Context, stages kwokcluster.StageSet, nodes, n int) (run scaleRun) {
	run = scaleRun{System: "replicaset"}
	c, err := b.startCluster(ctx, nodes, fmt.Sprintf("scale-%d-%s-replicaset", n, stages), withStages(stages), b.scaleAudit, withWrittenOnlyPodIPs)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	defer b.stopCluster(c, &run.Error)
	cl, cfg, nss, err := scaleClient(ctx, c)
	if err != nil {
		run.Error = err.Error()
		return run
	}
	trackCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	tracker, err := trackReady(trackCtx, cfg, &appsv1.ReplicaSet{}, func(o client.Object) bool {
		rs := o.(*appsv1.ReplicaSet)
		return rs.Status.ReadyReplicas == *rs.Spec.Replicas
	})
	if err != nil {
		run.Error = err.Error()
		return run
	}
	start := time.Now()
	err = parallel(ctx, n, createWorkers, func(ctx context.Context, i int) error {
		return cl.Create(ctx, referenceReplicaSet(fmt.Sprintf("rs-%04d", i), nss[i%len(nss)]))
	})
	if err != nil {
		run.Error = "creating ReplicaSets: " + err.Error()
		return run
	}
	converged, err := tracker.waitReady(ctx, c, n, waitTimeout(n), stallTimeout(n), func() error { return nil }, func() string { return "" })
	if err != nil {
		run.Error = err.Error()
		return run
	}
	run.Seconds = converged.Sub(start).Seconds()
	run.Timeline = tracker.timeline(start)
	if b.auditAll {
		run.ClusterWrites, run.ClusterWritesByKind = b.clusterWrites(c, start, converged, n)
	}
	return run
}

// clusterWrites is every client program's writes in [from, to] per object.
func (b *bench) clusterWrites(c *kwokcluster.Cluster, from, to time.Time, n int) (byAgent, byKind map[string]float64) {
	time.Sleep(time.Second) // the audit log is written as requests complete
	reqs, err := readAuditAll(c.AuditLogPath)
	if err != nil {
		b.logf("reading the audit log: %v", err)
		return nil, nil
	}
	return writesPerObject(window(reqs, from, to.Add(time.Millisecond)), n)
}

// withWrittenOnlyPodIPs gives a scale run's pods addresses Endpoints accept (writtenOnlyPodIPs):
// nothing in it calls a pod.
func withWrittenOnlyPodIPs(o *kwokcluster.Options) { o.PodIPs = writtenOnlyPodIPs }

// noDialProxy starts an HTTP proxy on loopback that refuses every request and points the
// operator's HTTP_PROXY at it, so a call to a pod IP of writtenOnlyPodIPs never leaves the
// machine and is reported.
func noDialProxy(o *operatorOptions) (*kuberay.Proxy, error) {
	p, err := kuberay.StartProxy(kuberay.Routes{})
	if err != nil {
		return nil, err
	}
	o.Env = append(o.Env, p.Env()...)
	return p, nil
}

// scaleAudit audits every user in a scale run with -audit-all.
func (b *bench) scaleAudit(o *kwokcluster.Options) {
	if b.auditAll {
		o.AuditPolicy = auditPolicyAll
	}
}

// referenceReplicaSet has 4 pods that are the pods raygate builds for a worker of the
// benchmark's RayCluster (internal/raypod.WorkerPod: the same labels,
// annotations, command, environment, probes and volumes — about 3 KB of JSON each, against
// 0.2 KB for the bare container), so both systems move the same bytes through the API server.
func referenceReplicaSet(name, ns string) *appsv1.ReplicaSet {
	rc := builders.RayCluster(name, ns).Spec(benchClusterSpec()).Obj()
	defaulting.RayCluster(rc)
	pod := raypod.WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, raypod.Settings{})
	labels := map[string]string{"app": name}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations},
		Spec:       pod.Spec,
	}
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels["app"] = name
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](podsPerCluster),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: tmpl,
		},
	}
}
