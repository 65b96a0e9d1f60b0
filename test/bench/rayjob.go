package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/kuberay"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/raysim"
	"github.com/raygate/raygate/test/builders"
)

// The rayjob scenario's jobs: each creates a RayCluster of the builders' head and one worker
// and runs a Ray job the simulated Jobs API keeps PENDING for rayJobPending, then RUNNING
// for rayJobRunning, then ends SUCCEEDED.
const (
	rayJobNamespaces  = 10
	rayJobPending     = 200 * time.Millisecond
	rayJobRunning     = time.Second
	rayJobEntrypoint  = "python /home/ray/samples/short.py"
	rayJobPodsPerJob  = 2 // head + one worker; the submitter pod is the Job controller's
	rayJobSubmitPoll  = 200 * time.Millisecond
	defaultRayJobs    = 1000
	defaultRayJobMode = rayv1.K8sJobMode
)

// rayJobResult is the "rayjob" scenario: N short RayJobs under raygate and under KubeRay,
// each operator on its own fresh cluster.
type rayJobResult struct {
	Scenario   string `json:"scenario"`
	Jobs       int    `json:"jobs"`
	Namespaces int    `json:"namespaces"`
	Mode       string `json:"mode"`
	Nodes      int    `json:"nodes"`
	// PendingSeconds and RunSeconds are how long the simulated Jobs API keeps each job
	// PENDING, then RUNNING.
	PendingSeconds float64 `json:"pendingSeconds"`
	RunSeconds     float64 `json:"runSeconds"`
	// MinWrites are the writes a controller cannot avoid per RayJob (minRayJobWrites), and
	// MinWritesPerJob their sum.
	MinWrites       []minWrite `json:"minWrites"`
	MinWritesPerJob int        `json:"minWritesPerJob"`
	Raygate         rayJobRun  `json:"raygate"`
	KubeRay         *rayJobRun `json:"kuberay,omitempty"`
	DurationSeconds float64    `json:"durationSeconds"`
}

// minWrite is one kind of write in the minimum, per RayJob.
type minWrite struct {
	What  string `json:"what"`
	Count int    `json:"count"`
}

// rayJobRun is one operator running the N jobs.
type rayJobRun struct {
	System      string `json:"system"`
	Concurrency int    `json:"concurrency,omitempty"`
	// Flags are the flags the scenario gives the operator beyond the harness's own (KubeRay:
	// kubeRayRayJobFlags).
	Flags []string `json:"flags,omitempty"`
	// Seconds is from the first create to the last RayJob seen Complete/SUCCEEDED.
	Seconds   float64 `json:"seconds,omitempty"`
	Succeeded int     `json:"succeeded"`
	// Requests are the operator's requests from its start until the last job succeeded.
	Requests     *requestCounts `json:"requests,omitempty"`
	WritesPerJob float64        `json:"writesPerJob,omitempty"`
	Usage        *processUsage  `json:"usage,omitempty"`
	// Submissions counts the POSTs the simulated Jobs APIs answered; JobsSubmitted the RayJobs
	// with at least one; DuplicateSubmissions every POST after a cluster's first (each cluster
	// belongs to one RayJob attempt), accepted or not.
	Submissions          int       `json:"submissions"`
	JobsSubmitted        int       `json:"jobsSubmitted"`
	DuplicateSubmissions int       `json:"duplicateSubmissions"`
	Timeline             []float64 `json:"timeline,omitempty"`
	Error                string    `json:"error,omitempty"`
}

// minRayJobWrites is the least an operator can write to run one RayJob that creates its
// cluster (head and one worker) and ends SUCCEEDED, by what it writes:
//   - the job's RayCluster brought up, as in the scale scenario (minWritesPerCluster for
//     rayJobPodsPerJob pods): each pod and the head Service created once, two status writes,
//     one event per scaling action;
//   - the stop-job finalizer added to the RayJob (a metadata write: without it a RayJob
//     deleted while its Ray job runs could not stop it);
//   - the RayCluster created;
//   - K8sJobMode: the submitter Job created (HTTPMode submits over HTTP: no API write);
//   - the RayJob's own head Service (<job>-head-svc, KubeRay's address of the job's head that
//     outlives a retry's new cluster) created;
//   - three status writes: Initializing (the job id and cluster name stored before anything
//     is created or sent), Running (submitted), Complete/SUCCEEDED; a job short enough may
//     end between two reads, so its PENDING and RUNNING need not each be written;
//   - one event per object created (the RayCluster, the submitter Job, the head Service; the
//     submission in place of the submitter in HTTPMode) and one when the job ends: the end
//     of a batch job is what its user waits for, and Kubernetes' own Job controller records
//     it (`Completed`); KubeRay v1.5.1 records none.
func minRayJobWrites(mode rayv1.JobSubmissionMode) []minWrite {
	out := []minWrite{
		{"RayCluster brought up (pods, head Service, 2 status writes, 1 event per group)", clusterMinWrites(rayJobPodsPerJob, 2)},
		{"finalizer added to the RayJob", 1},
		{"RayCluster created", 1},
	}
	if mode == rayv1.K8sJobMode {
		out = append(out, minWrite{"submitter Job created", 1})
	}
	return append(out,
		minWrite{"the RayJob's head Service created", 1},
		minWrite{"RayJob status: Initializing, Running, Complete", 3},
		minWrite{"events: RayCluster, submitter (HTTPMode: the submission) and head Service created; the job ended", 4})
}

// clusterMinWrites is the scale scenario's minimum for a cluster of pods in groups.
func clusterMinWrites(pods, groups int) int { return pods + 1 + 2 + groups }

func sumWrites(ws []minWrite) int {
	n := 0
	for _, w := range ws {
		n += w.Count
	}
	return n
}

// submissionCounts reads the simulated Jobs APIs' POSTs: all of them, the clusters with
// one, and every POST after a cluster's first.
func submissionCounts(posts map[types.NamespacedName][]raysim.JobPost) (total, clusters, duplicates int) {
	for _, ps := range posts {
		if len(ps) == 0 {
			continue
		}
		total += len(ps)
		clusters++
		duplicates += len(ps) - 1
	}
	return total, clusters, duplicates
}

// rayJobSucceeded: the RayJob's deployment completed with its Ray job SUCCEEDED.
func rayJobSucceeded(o client.Object) bool {
	j := o.(*rayv1.RayJob)
	return j.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusComplete && j.Status.JobStatus == rayv1.JobStatusSucceeded
}

func runRayJobs(ctx context.Context, b *bench, n int, mode rayv1.JobSubmissionMode, withKubeRay bool) rayJobResult {
	started := time.Now()
	mins := minRayJobWrites(mode)
	res := rayJobResult{
		Scenario: fmt.Sprintf("rayjob-%d", n), Jobs: n, Namespaces: rayJobNamespaces, Mode: string(mode),
		Nodes:          nodesFor(scale(n), n*(rayJobPodsPerJob+1)),
		PendingSeconds: rayJobPending.Seconds(), RunSeconds: rayJobRunning.Seconds(),
		MinWrites: mins, MinWritesPerJob: sumWrites(mins),
	}
	b.logf("rayjob %d (%s): raygate", n, mode)
	res.Raygate = b.rayJobs(ctx, res, operatorOptions{Concurrency: defaultConcurrency()})
	if withKubeRay && ctx.Err() == nil {
		flags := kubeRayRayJobFlags(defaultConcurrency())
		b.logf("rayjob %d (%s): KubeRay %s", n, mode, strings.Join(flags, " "))
		k := b.rayJobs(ctx, res, operatorOptions{KubeRay: true, Concurrency: defaultConcurrency(), ExtraArgs: flags})
		res.KubeRay = &k
	}
	res.DurationSeconds = time.Since(started).Seconds()
	return res
}

// kubeRayRayJobFlags are KubeRay's flags in the rayjob, scale, scale-10k and loaded
// scenarios, what a user running many objects sets through its chart
// (reconcileConcurrency, kubeClient.qps and .burst), so that both operators run on like terms: raygate's reconcile concurrency (its default), and a
// client-side request limit as high as the harness gives kube-scheduler and
// kube-controller-manager (raygate has none by default; KubeRay's default is 100 QPS, burst
// 200). With one worker, KubeRay's default, its RayJob controller requeues each of 1,000
// RayJobs every 3 s through a single reconcile at a time.
func kubeRayRayJobFlags(concurrency int) []string {
	return []string{"--reconcile-concurrency=" + strconv.Itoa(concurrency), "--qps=1000", "--burst=2000"}
}

// rayJobs runs one operator — raygate, or KubeRay with o.KubeRay — through the scenario's
// jobs on a fresh cluster.
func (b *bench) rayJobs(ctx context.Context, res rayJobResult, o operatorOptions) (run rayJobRun) {
	run = rayJobRun{System: "raygate", Concurrency: o.Concurrency}
	if o.KubeRay {
		run.System, run.Flags = "kuberay", o.ExtraArgs
	}
	if err := b.rayJobsRun(ctx, res, o, &run); err != nil {
		run.Error = err.Error()
	}
	b.logf("rayjob: %s: %d/%d SUCCEEDED in %.1fs, %.1f writes per RayJob (minimum %d), %d duplicate submissions%s",
		run.System, run.Succeeded, res.Jobs, run.Seconds, run.WritesPerJob, res.MinWritesPerJob, run.DuplicateSubmissions, errSuffix(run.Error))
	return run
}

func (b *bench) rayJobsRun(ctx context.Context, res rayJobResult, o operatorOptions, run *rayJobRun) (runErr error) {
	n := res.Jobs
	c, err := b.startCluster(ctx, res.Nodes, fmt.Sprintf("rayjob-%d-%s", n, run.System), withWrittenOnlyPodIPs,
		func(o *kwokcluster.Options) { o.HeldJobPods = framework.SubmitterPods() })
	if err != nil {
		return err
	}
	defer func() {
		msg := ""
		if runErr != nil {
			msg = runErr.Error()
		}
		b.stopCluster(c, &msg)
		if msg != "" {
			runErr = fmt.Errorf("%s", msg)
		}
	}()
	cl, cfg, nss, err := scaleClient(ctx, c)
	if err != nil {
		return err
	}
	// The namespaces of scaleClient are scaleNamespaces; the scenario spreads its jobs over
	// rayJobNamespaces of them.
	nss = nss[:min(len(nss), rayJobNamespaces)]

	dashboards := raysim.NewRegistry(raysim.Options{Jobs: raysim.JobOptions{PendingDelay: rayJobPending, RunDelay: rayJobRunning}})
	defer dashboards.Close()
	if res.Mode == string(rayv1.K8sJobMode) {
		subs, err := framework.StartSubmitters(cfg, dashboards, framework.SubmitterOptions{Poll: rayJobSubmitPoll})
		if err != nil {
			return err
		}
		defer subs.Stop()
	}

	if o.KubeRay {
		// KubeRay calls http://<head svc>.<ns>.svc.cluster.local:8265; the proxy answers it
		// from the simulators and refuses everything else. It finds a Service's cluster in a
		// watch cache: a GET to the API server on every dashboard call would slow each of
		// KubeRay's reconciles (raygate reaches the simulators without one).
		cacheCtx, stopCache := context.WithCancel(ctx)
		defer stopCache()
		services, err := serviceCache(cacheCtx, cfg)
		if err != nil {
			return err
		}
		proxy, err := kuberay.StartProxy(kuberay.SimulatorRoutes(services, dashboards))
		if err != nil {
			return err
		}
		defer proxy.Close()
		o.Env = append(o.Env, proxy.Env()...)
	} else {
		urlFlag, stopFront, err := serveDashboards(dashboards)
		if err != nil {
			return err
		}
		defer stopFront()
		o.ExtraArgs = append(o.ExtraArgs, urlFlag)
		proxy, err := noDialProxy(&o)
		if err != nil {
			return err
		}
		defer func() {
			_ = proxy.Close()
			if runErr == nil {
				runErr = dialRefusals(proxy)
			}
		}()
	}
	opStart := time.Now()
	op, err := b.startOperator(ctx, c, o)
	if err != nil {
		return err
	}
	trackCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	tracker, err := trackReady(trackCtx, cfg, &rayv1.RayJob{}, rayJobSucceeded)
	if err != nil {
		return err
	}
	progress, err := trackRayJobProgress(trackCtx, cfg)
	if err != nil {
		return err
	}

	start := time.Now()
	err = parallel(ctx, n, createWorkers, func(ctx context.Context, i int) error {
		job := builders.RayJob(fmt.Sprintf("job-%04d", i), nss[i%len(nss)]).Mode(rayv1.JobSubmissionMode(res.Mode)).Obj()
		job.Spec.Entrypoint = rayJobEntrypoint
		return cl.Create(ctx, job)
	})
	if err != nil {
		return fmt.Errorf("creating RayJobs: %w", err)
	}
	// Stalled is judged on any RayJob's progress, not only on successes (rayJobStall).
	timeout := rayJobWaitTimeout(n)
	done, waitErr := tracker.waitReady(ctx, c, n, timeout, timeout, func() error {
		if err := op.forbidden(); err != nil {
			return err
		}
		if why := progress.stalled(time.Now(), rayJobStall); why != "" {
			_, ready, _ := tracker.counts()
			return fmt.Errorf("%d of %d SUCCEEDED after %s (%s): %s", ready, n, time.Since(start).Round(time.Second), why, diagnoseRayJobs(ctx, cl, op))
		}
		return nil
	}, func() string {
		return diagnoseRayJobs(ctx, cl, op)
	})
	_, run.Succeeded, _ = tracker.counts()
	run.Submissions, run.JobsSubmitted, run.DuplicateSubmissions = submissionCounts(dashboards.JobSubmissions())
	if u, err := op.usage(); err == nil {
		run.Usage = &u
	}
	if waitErr != nil {
		return waitErr
	}
	run.Seconds = done.Sub(start).Seconds()
	run.Timeline = tracker.timeline(start)
	time.Sleep(time.Second) // the audit log is written as requests complete
	reqs, err := readAudit(c.AuditLogPath)
	if err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	counts := count(window(reqs, opStart, done.Add(time.Millisecond)))
	run.Requests = &counts
	run.WritesPerJob = float64(counts.Writes) / float64(n)
	if run.DuplicateSubmissions > 0 {
		return fmt.Errorf("%d duplicate submissions at the simulated Jobs APIs", run.DuplicateSubmissions)
	}
	return nil
}

// diagnoseRayJobs says where the RayJobs that did not succeed are, by deployment and job
// status, with the operator's log.
func diagnoseRayJobs(ctx context.Context, cl client.Client, op *operator) string {
	var jobs rayv1.RayJobList
	if err := cl.List(ctx, &jobs); err != nil {
		return err.Error()
	}
	by := map[string]int{}
	example := map[string]string{}
	for _, j := range jobs.Items {
		if rayJobSucceeded(&j) {
			continue
		}
		k := fmt.Sprintf("%s/%s %s", j.Status.JobDeploymentStatus, j.Status.JobStatus, j.Status.Reason)
		by[k]++
		if _, ok := example[k]; !ok {
			example[k] = j.Namespace + "/" + j.Name + ": " + firstLine(j.Status.Message)
		}
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s (e.g. %s)", by[k], k, example[k]))
	}
	return "not succeeded: " + strings.Join(parts, "; ") + "; operator log: " + op.proc.LogPath() + "\n" + op.proc.LogTail(1500)
}
