package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/kuberay"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/internal/testenv/tools"
	"github.com/raygate/raygate/test/builders"
)

const (
	defaultRestartClusters = 1000
	defaultRestartServices = 100
	// restartSettle is how long the operator must have written nothing (leases aside) before
	// it is killed: a converged fleet, not one still settling. restartSettleTimeout bounds
	// the wait; an operator that never goes quiet is killed anyway and the run says so.
	restartSettle        = 5 * time.Second
	restartSettleTimeout = 3 * time.Minute
	// restartQuiet is the window after every object has been reconciled in which writes are
	// still counted: late requeues and periodic checks land there.
	restartQuiet = 30 * time.Second
	// restartLeaseNamespace holds both operators' leader election Lease (outside a pod
	// neither has a namespace of its own).
	restartLeaseNamespace = "default"
	raygateLease          = "raygate.ray.io"      // internal/app DefaultOptions
	kubeRayLease          = "ray-operator-leader" // KubeRay's main.go, not a flag
	restartDeployDelay    = 500 * time.Millisecond
	restartLeaderTimeout  = 2 * time.Minute
)

// restartResult is the "restart" scenario: a converged fleet of RayClusters and RayServices
// whose operator is SIGKILLed and started again, then handed over between two replicas,
// under raygate and under KubeRay, each on its own fresh cluster.
type restartResult struct {
	Scenario string `json:"scenario"`
	Clusters int    `json:"clusters"`
	Services int    `json:"services"`
	// QuietSeconds is the window after every object was reconciled in which writes count.
	QuietSeconds float64      `json:"quietSeconds"`
	Raygate      restartSide  `json:"raygate"`
	KubeRay      *restartSide `json:"kuberay,omitempty"`
	// DurationSeconds is the scenario's own duration, both operators with their clusters.
	DurationSeconds float64 `json:"durationSeconds"`
}

// restartSide is one operator's fleet, its restart and its handover.
type restartSide struct {
	Operator string   `json:"operator"`
	Flags    []string `json:"flags,omitempty"`
	Lease    string   `json:"lease"`
	// BringUpSeconds is from the first create to every object converged; SettledQuiet says
	// whether the operator then wrote nothing (leases aside) for restartSettle before the kill.
	BringUpSeconds float64 `json:"bringUpSeconds"`
	SettledQuiet   bool    `json:"settledQuiet"`
	// ExtraClusters are RayClusters beyond one per object still there when the leader was
	// killed (after waiting restartSettleTimeout for them to go).
	ExtraClusters int         `json:"extraClusters,omitempty"`
	Kill          *restartRun `json:"kill,omitempty"`
	Handover      *restartRun `json:"handover,omitempty"`
	Error         string      `json:"error,omitempty"`
}

// restartRun is one change of leader: a SIGKILLed operator replaced by a new process, or a
// SIGTERMed leader replaced by a running standby. Times are from the signal.
type restartRun struct {
	// ReadySeconds is until the new process answers /readyz (kill: it starts after the kill).
	ReadySeconds float64 `json:"readySeconds,omitempty"`
	// LeadSeconds is until the Lease names the new process: a SIGKILLed leader's Lease must
	// expire first; a leader that releases it on SIGTERM hands over at the standby's next retry.
	LeadSeconds float64 `json:"leadSeconds"`
	// ReconciledSeconds is until the new leader's reconcile counters reach the objects.
	ReconciledSeconds float64                       `json:"reconciledSeconds"`
	Reconciles        map[string]map[string]float64 `json:"reconciles,omitempty"`
	// Writes are the operator user's writes from the signal to QuietSeconds after
	// ReconciledSeconds, leader election's own (the Lease and its events) apart.
	Writes       int            `json:"writes"`
	WritesByKind map[string]int `json:"writesByKind,omitempty"`
	StatusWrites int            `json:"statusWrites"`
	PodWrites    int            `json:"podWrites"`
	LeaseWrites  int            `json:"leaseWrites"`
	// ServeSubmissions are serve configs the simulated dashboards accepted in the window:
	// a converged fleet needs none.
	ServeSubmissions int `json:"serveSubmissions"`
	// CPUSeconds is the new leader's CPU over the window; PeakRSSMB its VmHWM.
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSSMB  float64 `json:"peakRSSMB"`
	Error      string  `json:"error,omitempty"`
}

func runRestart(ctx context.Context, b *bench, clusters, services int, withKubeRay bool) restartResult {
	started := time.Now()
	res := restartResult{Scenario: "restart", Clusters: clusters, Services: services, QuietSeconds: restartQuiet.Seconds()}
	b.logf("restart: %d RayClusters and %d RayServices", clusters, services)
	res.Raygate = b.restartSide(ctx, clusters, services, false)
	if withKubeRay && ctx.Err() == nil {
		k := b.restartSide(ctx, clusters, services, true)
		res.KubeRay = &k
	}
	res.DurationSeconds = time.Since(started).Seconds()
	return res
}

// restartOperator is how one side starts its operator processes, and what it watches them with.
type restartOperator struct {
	name  string
	lease string
	opts  operatorOptions

	c      *kwokcluster.Cluster
	leases *leaseWatch
	tail   *auditTail
	subs   *submissionLog
	want   map[string]int // controller → objects it must reconcile
}

func (b *bench) restartSide(ctx context.Context, clusters, services int, kuberayOp bool) (side restartSide) {
	side.Operator, side.Lease = "raygate", raygateLease
	if kuberayOp {
		side.Operator, side.Lease = "kuberay", kubeRayLease
	}
	if err := b.restartSideRun(ctx, clusters, services, kuberayOp, &side); err != nil {
		side.Error = err.Error()
	}
	for _, r := range []struct {
		what string
		run  *restartRun
	}{{"SIGKILL", side.Kill}, {"handover", side.Handover}} {
		if r.run != nil {
			b.logf("restart: %s %s: leads after %.1fs, all reconciled after %.1fs, %d writes (%d status, %d pods; %d lease), CPU %.1fs, peak RSS %.0f MB%s",
				side.Operator, r.what, r.run.LeadSeconds, r.run.ReconciledSeconds, r.run.Writes, r.run.StatusWrites, r.run.PodWrites, r.run.LeaseWrites,
				r.run.CPUSeconds, r.run.PeakRSSMB, errSuffix(r.run.Error))
		}
	}
	if side.Error != "" {
		b.logf("restart: %s: %s", side.Operator, firstLine(side.Error))
	}
	return side
}

func (b *bench) restartSideRun(ctx context.Context, clusters, services int, kuberayOp bool, side *restartSide) (runErr error) {
	objects := clusters + services // every RayService owns one RayCluster once converged
	c, err := b.startCluster(ctx, nodesFor(scale(objects), objects*podsPerCluster), "restart-"+side.Operator, withWrittenOnlyPodIPs)
	if err != nil {
		return err
	}
	msg := ""
	defer func() {
		if runErr != nil {
			msg = runErr.Error()
		}
		b.stopCluster(c, &msg)
		if runErr != nil {
			runErr = fmt.Errorf("%s", msg)
		}
	}()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	cl, cfg, nss, err := scaleClient(ctx, c)
	if err != nil {
		return err
	}
	dashboards := raysim.NewRegistry(raysim.Options{DeployDelay: restartDeployDelay})
	defer dashboards.Close()

	ro := restartOperator{name: side.Operator, lease: side.Lease}
	// Pod IPs are only written (withWrittenOnlyPodIPs): KubeRay reaches the simulators through
	// a proxy that answers its in-cluster dashboard calls; raygate through its URL template,
	// with a proxy that refuses every other call.
	var proxy *kuberay.Proxy
	if kuberayOp {
		if proxy, err = kuberay.StartProxy(kuberay.SimulatorRoutes(cl, dashboards)); err != nil {
			return err
		}
		side.Flags = append(kubeRayRayJobFlags(defaultConcurrency()), "--enable-leader-election=true", "--leader-election-namespace="+restartLeaseNamespace)
		ro.opts = operatorOptions{KubeRay: true, ExtraArgs: side.Flags, Env: proxy.Env()}
	} else {
		urlFlag, stopFront, ferr := serveDashboards(dashboards)
		if ferr != nil {
			return ferr
		}
		defer stopFront()
		side.Flags = []string{"--leader-elect=true", "--leader-election-namespace=" + restartLeaseNamespace, urlFlag}
		ro.opts = operatorOptions{Concurrency: defaultConcurrency(), ExtraArgs: side.Flags}
		if proxy, err = noDialProxy(&ro.opts); err != nil {
			return err
		}
	}
	defer func() {
		_ = proxy.Close()
		if runErr == nil && !kuberayOp {
			runErr = dialRefusals(proxy)
		}
	}()

	if !kuberayOp {
		if err := leaderElectionRBAC(ctx, cl); err != nil {
			return err
		}
	}
	first, err := b.startRestartOperator(ctx, c, ro, 1)
	if err != nil {
		return err
	}
	ro.c, ro.leases, ro.tail, ro.subs = c, &leaseWatch{cl: cl, name: ro.lease}, &auditTail{path: c.AuditLogPath}, &submissionLog{}
	ro.want = map[string]int{"raycluster": objects, "rayservice": services}
	dashboards.OnSubmit(ro.subs.add)
	if _, err := ro.leases.waitHolder(ctx, c, "", restartLeaderTimeout); err != nil {
		return fmt.Errorf("the first %s never led: %w", side.Operator, err)
	}
	if side.BringUpSeconds, err = bringUpFleet(ctx, runCtx, c, cl, cfg, nss, clusters, services, first); err != nil {
		return err
	}
	// A cluster left over from the bring-up (a RayService's superseded cluster waits out its
	// deletion delay) would be deleted in the measured window: wait for it to go.
	extra, err := waitClusterCount(ctx, cl, objects, restartSettleTimeout)
	if err != nil {
		return err
	}
	side.ExtraClusters = extra
	b.logf("restart: %s: %d RayClusters and %d RayServices converged in %.1fs (%d extra clusters); waiting for %s without writes", side.Operator, clusters, services, side.BringUpSeconds, extra, restartSettle)
	if side.SettledQuiet, err = ro.tail.waitQuiet(ctx, ro.lease, restartSettle, restartSettleTimeout); err != nil {
		return err
	}

	kill := &restartRun{}
	side.Kill = kill
	second, err := b.killAndRestart(ctx, ro, first, kill)
	if err != nil {
		kill.Error = err.Error()
		return fmt.Errorf("SIGKILL and restart: %w", err)
	}
	handover := &restartRun{}
	side.Handover = handover
	if err := b.handOver(ctx, ro, second, handover); err != nil {
		handover.Error = err.Error()
		return fmt.Errorf("handover: %w", err)
	}
	return nil
}

// leaderElectionRBAC applies config/rbac/leader_election_role.yaml in the Lease's namespace
// and binds it to the operator's user, as the chart does in its release namespace (the
// generated ClusterRole has no Lease rule: leader election is namespaced).
func leaderElectionRBAC(ctx context.Context, cl client.Client) error {
	path := filepath.Join(tools.RepoRoot(), "config", "rbac", "leader_election_role.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var role rbacv1.Role
	if err := yaml.Unmarshal(data, &role); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	role.Namespace = restartLeaseNamespace
	if err := cl.Create(ctx, &role); err != nil {
		return err
	}
	return cl.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-" + role.Name, Namespace: restartLeaseNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: operatorUser}},
	})
}

// startRestartOperator starts the side's i-th operator process with its own log.
func (b *bench) startRestartOperator(ctx context.Context, c *kwokcluster.Cluster, ro restartOperator, i int) (*operator, error) {
	o := ro.opts
	o.Process = fmt.Sprintf("%s-%d", ro.name, i)
	return b.startOperator(ctx, c, o)
}

// bringUpFleet creates the RayClusters and RayServices, spread over the namespaces, and
// waits until every RayCluster (the services' included) is ready and every RayService Ready.
func bringUpFleet(ctx, trackCtx context.Context, c *kwokcluster.Cluster, cl client.Client, cfg *rest.Config, nss []string, clusters, services int, op *operator) (float64, error) {
	rcs, err := trackReady(trackCtx, cfg, &rayv1.RayCluster{}, func(o client.Object) bool {
		return o.(*rayv1.RayCluster).Status.State == rayv1.Ready
	})
	if err != nil {
		return 0, err
	}
	svcs, err := trackReady(trackCtx, cfg, &rayv1.RayService{}, func(o client.Object) bool {
		return meta.IsStatusConditionTrue(o.(*rayv1.RayService).Status.Conditions, string(rayv1.RayServiceReady))
	})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	err = parallel(ctx, clusters+services, createWorkers, func(ctx context.Context, i int) error {
		if i < services {
			return cl.Create(ctx, builders.RayService(fmt.Sprintf("svc-%03d", i), nss[i%len(nss)]).Obj())
		}
		j := i - services
		return cl.Create(ctx, builders.RayCluster(fmt.Sprintf("rc-%04d", j), nss[j%len(nss)]).Spec(benchClusterSpec()).Obj())
	})
	if err != nil {
		return 0, fmt.Errorf("creating the fleet: %w", err)
	}
	objects := clusters + services
	diagnose := func() string {
		_, ready, _ := svcs.counts()
		return fmt.Sprintf("%d of %d RayServices Ready; operator log %s\n%s", ready, services, op.proc.LogPath(), op.proc.LogTail(1500))
	}
	last, err := rcs.waitReady(ctx, c, objects, waitTimeout(objects), 90*time.Second, op.forbidden, diagnose)
	if err != nil {
		return 0, fmt.Errorf("RayClusters: %w", err)
	}
	if services > 0 {
		lastSvc, err := svcs.waitReady(ctx, c, services, waitTimeout(services), 90*time.Second, op.forbidden, diagnose)
		if err != nil {
			return 0, fmt.Errorf("RayServices: %w", err)
		}
		if lastSvc.After(last) {
			last = lastSvc
		}
	}
	return last.Sub(start).Seconds(), nil
}

// killAndRestart SIGKILLs the leader, starts a new process at once and measures it.
func (b *bench) killAndRestart(ctx context.Context, ro restartOperator, dead *operator, run *restartRun) (*operator, error) {
	old, err := ro.leases.holder(ctx)
	if err != nil {
		return nil, err
	}
	killed := time.Now()
	if err := dead.proc.Kill(); err != nil {
		return nil, err
	}
	op, err := b.startRestartOperator(ctx, ro.c, ro, 2)
	if err != nil {
		return nil, err
	}
	run.ReadySeconds = time.Since(killed).Seconds()
	return op, b.measureLeader(ctx, ro, op, old, killed, run, 0)
}

// handOver starts a standby, SIGTERMs the leader and measures the standby taking over.
func (b *bench) handOver(ctx context.Context, ro restartOperator, leader *operator, run *restartRun) error {
	standby, err := b.startRestartOperator(ctx, ro.c, ro, 3)
	if err != nil {
		return err
	}
	// The standby's caches sync before it may lead; let it settle like the fleet did.
	if _, err := ro.tail.waitQuiet(ctx, ro.lease, restartSettle, restartSettleTimeout); err != nil {
		return err
	}
	old, err := ro.leases.holder(ctx)
	if err != nil {
		return err
	}
	before, err := standby.usage()
	if err != nil {
		return err
	}
	termed := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- leader.proc.Stop(time.Minute) }()
	err = b.measureLeader(ctx, ro, standby, old, termed, run, before.CPUSeconds)
	if serr := <-stopped; err == nil && serr != nil {
		err = serr
	}
	return err
}

// measureLeader waits until op leads (the Lease names someone other than old) and has
// reconciled every object, keeps counting for restartQuiet, then reads its usage and the
// writes since the signal.
func (b *bench) measureLeader(ctx context.Context, ro restartOperator, op *operator, old string, signalled time.Time, run *restartRun, cpuBefore float64) error {
	c, want := ro.c, ro.want
	if _, err := ro.leases.waitHolder(ctx, c, old, restartLeaderTimeout); err != nil {
		return err
	}
	run.LeadSeconds = time.Since(signalled).Seconds()
	timeout := waitTimeout(want["raycluster"]+want["rayservice"]) + time.Minute
	reconciled, counts, err := waitReconciled(ctx, c, op, want, timeout)
	run.Reconciles = counts
	if err != nil {
		return err
	}
	run.ReconciledSeconds = reconciled.Sub(signalled).Seconds()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(reconciled.Add(restartQuiet))):
	}
	end := time.Now()
	if r, err := op.reconciles(); err == nil {
		run.Reconciles = r
	}
	u, err := op.usage()
	if err != nil {
		return err
	}
	run.CPUSeconds, run.PeakRSSMB = u.CPUSeconds-cpuBefore, u.PeakRSSMB
	time.Sleep(time.Second) // the audit log is written as requests complete
	reqs, err := readAudit(c.AuditLogPath)
	if err != nil {
		return err
	}
	w := splitRestartWrites(window(reqs, signalled, end), ro.lease)
	run.Writes, run.WritesByKind, run.StatusWrites, run.PodWrites, run.LeaseWrites = w.Objects.Writes, w.Objects.WritesByKind, w.Status, w.Pods, w.Lease
	run.ServeSubmissions = ro.subs.since(signalled)
	ro.tail.skip() // the next settle starts from here
	return nil
}

// waitReconciled polls the operator's reconcile counters until every controller named in
// want has reconciled at least want[controller] times.
func waitReconciled(ctx context.Context, c *kwokcluster.Cluster, op *operator, want map[string]int, timeout time.Duration) (time.Time, map[string]map[string]float64, error) {
	deadline := time.Now().Add(timeout)
	var counts map[string]map[string]float64
	for {
		if r, err := op.reconciles(); err == nil {
			counts = r
			if reconciledAll(r, want) {
				return time.Now(), counts, nil
			}
		}
		if err := c.Healthy(); err != nil {
			return time.Time{}, counts, err
		}
		if time.Now().After(deadline) {
			return time.Time{}, counts, fmt.Errorf("after %s the reconcile counters are %s, want %v; log %s", timeout, describeReconciles(counts), want, op.proc.LogPath())
		}
		select {
		case <-ctx.Done():
			return time.Time{}, counts, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// reconciledAll reports whether each controller in want has reconciled (any result) at
// least as often as it has objects. A count is not a per-object proof, but a fresh process
// reconciles each object once when its informers list them, before any event.
func reconciledAll(counts map[string]map[string]float64, want map[string]int) bool {
	for ctrl, n := range want {
		total := 0.0
		for _, v := range counts[ctrl] {
			total += v
		}
		if total < float64(n) {
			return false
		}
	}
	return true
}

func describeReconciles(counts map[string]map[string]float64) string {
	var parts []string
	for _, ctrl := range sortedKeys(counts) {
		total := 0.0
		for _, v := range counts[ctrl] {
			total += v
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", ctrl, total))
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// restartWrites are a window's writes with leader election's own set apart.
type restartWrites struct {
	Objects requestCounts // everything but the Lease and its events
	Status  int           // of which writes of a status subresource
	Pods    int           // of which writes of pods and their subresources
	Lease   int           // the Lease and the events leader election records on it
}

// splitRestartWrites sets apart the writes of leader election (the Lease named lease and the
// events recorded on it, which client-go names "<lease>.<hex>") and counts the rest.
func splitRestartWrites(reqs []request, lease string) restartWrites {
	var w restartWrites
	var rest []request
	for _, r := range reqs {
		if !isWrite(r.Verb) {
			continue
		}
		if isLeaseWrite(r, lease) {
			w.Lease++
			continue
		}
		rest = append(rest, r)
		if strings.HasSuffix(r.Resource, "/status") {
			w.Status++
		}
		if r.Resource == "pods" || strings.HasPrefix(r.Resource, "pods/") {
			w.Pods++
		}
	}
	w.Objects = count(rest)
	return w
}

func isLeaseWrite(r request, lease string) bool {
	return r.Resource == "leases" || (r.Resource == "events" && strings.HasPrefix(r.Name, lease+"."))
}
