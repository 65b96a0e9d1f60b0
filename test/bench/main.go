// Command bench measures raygate on a cluster without containers (internal/testenv/kwokcluster):
// the operator runs as its own process, as its own user, and the API server's audit log
// counts that user's requests, so the figures cover the operator alone. `make bench` runs
// every scenario and rewrites docs/benchmarks.md; see that file for what is measured.
//
//	go run ./test/bench -scenarios scale -sizes 100
//	go run ./test/bench -scenarios memory -memory-sizes 500,2000
//	go run ./test/bench -scenarios upgrade-load -docs /tmp/bench/benchmarks.md   # leaves docs/ alone
//	go run ./test/bench -scenarios upgrade-fleet -fleet-size 5 -docs /tmp/fleet.md
//	go run ./test/bench -scenarios rayjob -rayjobs 50 -docs /tmp/rayjob.md
//	go run ./test/bench -scenarios latency -latency-trials 5 -partial -docs /tmp/latency.md
//	go run ./test/bench -scenarios restart -restart-clusters 50 -restart-services 5 -docs /tmp/restart.md
//	go run ./test/bench -report-only   # re-render docs/benchmarks.md from the saved results
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/tools"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == hogWorkerFlag {
		hogMain(os.Args[2:]) // the loaded scenario's CPU hog (loaded.go)
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type flags struct {
	scenarios   []string
	sizes       []int
	memorySizes []int
	concurrency int
	sweep       []int
	quiet       time.Duration
	admissionN  int
	fleetSize   int
	fleetCPU    bool
	rayJobs     int
	clusters10k int
	stages10k   string
	rayJobMode  string
	restartRCs  int
	restartSvcs int
	docs        string
	reportOnly  bool
	keepLogs    bool
	profile     bool
	reference   bool
	kuberay     bool
	stages      []kwokcluster.StageSet
	commit      string
	out         string
	operatorEnv []string
	auditAll    bool
	partial     bool

	// The latency scenario's trials and stage sets.
	latencyTrials int
	latencyStages []kwokcluster.StageSet
}

func parseFlags() (flags, error) {
	var f flags
	scenarios := flag.String("scenarios", "scale,loaded,upgrade,upgrade-load,upgrade-fleet,rayjob,restart,admission,latency,noise,memory", "comma-separated scenarios: scale, scale-10k (not in the default: 10,000 RayClusters, raygate and KubeRay), loaded (scale at 100 with a CPU hog), upgrade, upgrade-load, upgrade-fleet (many RayServices upgrading at once, raygate and KubeRay), rayjob (many short RayJobs, raygate and KubeRay), restart (SIGKILL and leader handover with a converged fleet, raygate and KubeRay), admission, latency (one RayCluster at a time, raygate and KubeRay), noise, memory")
	flag.IntVar(&f.latencyTrials, "latency-trials", defaultLatencyTrials, "trials per operator and stage set in the latency scenario")
	latencyStages := flag.String("latency-stages", "fast", "kwok pod stages of the latency scenario, each a labelled run (see -stages; general adds about 20 minutes per operator at 50 trials, mostly kwok's own 1-6 s transitions)")
	flag.IntVar(&f.restartRCs, "restart-clusters", defaultRestartClusters, "RayClusters of the restart scenario")
	flag.IntVar(&f.restartSvcs, "restart-services", defaultRestartServices, "RayServices of the restart scenario")
	flag.IntVar(&f.fleetSize, "fleet-size", 50, "RayServices upgrading at once in the upgrade-fleet scenario")
	flag.StringVar(&f.stages10k, "scale-10k-stages", string(kwokcluster.FastStages), "kwok pod stages of the scale-10k scenario: fast (default: with general stages kwok's own 120,000 status patches take longer than the operators) or general")
	flag.IntVar(&f.clusters10k, "scale-10k-clusters", scale10kClusters, "RayClusters of the scale-10k scenario (not in the default run: -scenarios=scale-10k -partial; a smaller count for a smoke run)")
	flag.BoolVar(&f.fleetCPU, "fleet-profile", false, "save a CPU profile of raygate over the upgrade-fleet scenario's window (in -out)")
	flag.IntVar(&f.rayJobs, "rayjobs", defaultRayJobs, "RayJobs of the rayjob scenario")
	flag.StringVar(&f.rayJobMode, "rayjob-mode", string(defaultRayJobMode), "submissionMode of the rayjob scenario's RayJobs: K8sJobMode or HTTPMode")
	memorySizes := flag.String("memory-sizes", "500,2000", "numbers of RayClusters of the memory scenario (RSS growth per 1,000 pods between the smallest and the largest)")
	sizes := flag.String("sizes", "100,1000", "numbers of RayClusters for the scale scenario")
	flag.IntVar(&f.concurrency, "concurrency", defaultConcurrency(), "raygate's --reconcile-concurrency in the main scale runs (its default)")
	sweep := flag.String("sweep", "8", "other --reconcile-concurrency values, measured at the largest size (empty: none)")
	flag.DurationVar(&f.quiet, "quiet", 60*time.Second, "quiet window after convergence in which writes are counted")
	flag.IntVar(&f.admissionN, "admission-requests", 2000, "server-side dry-run creates per webhook setting")
	flag.StringVar(&f.docs, "docs", filepath.Join(tools.RepoRoot(), "docs", "benchmarks.md"), "report to rewrite")
	flag.BoolVar(&f.reportOnly, "report-only", false, "only re-render the report from the saved results")
	flag.BoolVar(&f.keepLogs, "keep-logs", false, "keep every run's component logs and audit log")
	flag.BoolVar(&f.profile, "profile", true, "profile the operator (CPU, heap) in the largest scale run")
	flag.BoolVar(&f.reference, "reference", true, "also run the ReplicaSet reference (off: raygate only, for quick experiments)")
	flag.BoolVar(&f.kuberay, "kuberay", true, "also run KubeRay's operator (hack/tools.sh path kuberay) in the scale, upgrade-fleet and rayjob scenarios")
	stages := flag.String("stages", "general,fast", "kwok pod stages of the scale scenario, each a labelled run: general (1-6 s per transition, like a kubelet) and fast (Ready at once)")
	operatorEnv := flag.String("operator-env", "", "comma-separated K=V added to the operator's environment (e.g. GOMEMLIMIT=90MiB)")
	flag.BoolVar(&f.auditAll, "audit-all", true, "in the scale scenario, audit every user and report the whole cluster's writes per object by component and by write (costs API server CPU in those runs)")
	flag.BoolVar(&f.partial, "partial", false, "merge this run's scenarios into the saved results instead of replacing them (the report names the commit of each partial run)")
	flag.StringVar(&f.out, "out", "", "directory for logs and profiles (default: a new temporary directory)")
	flag.StringVar(&f.commit, "commit", "", "commit to report when the checkout has no .git (e.g. a git archive export); default: git rev-parse HEAD")
	flag.Parse()
	f.scenarios = splitList(*scenarios)
	for _, st := range splitList(*stages) {
		switch kwokcluster.StageSet(st) {
		case kwokcluster.GeneralStages, kwokcluster.FastStages:
			f.stages = append(f.stages, kwokcluster.StageSet(st))
		default:
			return f, fmt.Errorf("-stages: unknown stage set %q", st)
		}
	}
	f.operatorEnv = splitList(*operatorEnv)
	if f.fleetSize < 1 {
		return f, fmt.Errorf("-fleet-size: %d is not a positive integer", f.fleetSize)
	}
	if st := kwokcluster.StageSet(f.stages10k); st != kwokcluster.GeneralStages && st != kwokcluster.FastStages {
		return f, fmt.Errorf("-scale-10k-stages: unknown stage set %q", f.stages10k)
	}
	if f.clusters10k < 1 {
		return f, fmt.Errorf("-scale-10k-clusters: %d is not a positive integer", f.clusters10k)
	}
	if f.restartRCs < 1 || f.restartSvcs < 0 {
		return f, fmt.Errorf("-restart-clusters %d, -restart-services %d: need at least one RayCluster and no negative count", f.restartRCs, f.restartSvcs)
	}
	if f.rayJobs < 1 {
		return f, fmt.Errorf("-rayjobs: %d is not a positive integer", f.rayJobs)
	}
	if m := rayv1.JobSubmissionMode(f.rayJobMode); m != rayv1.K8sJobMode && m != rayv1.HTTPMode {
		return f, fmt.Errorf("-rayjob-mode: %q is not K8sJobMode or HTTPMode", f.rayJobMode)
	}
	var err error
	if f.sizes, err = ints(*sizes); err != nil {
		return f, fmt.Errorf("-sizes: %w", err)
	}
	if f.memorySizes, err = ints(*memorySizes); err != nil {
		return f, fmt.Errorf("-memory-sizes: %w", err)
	}
	if f.sweep, err = ints(*sweep); err != nil {
		return f, fmt.Errorf("-sweep: %w", err)
	}
	if f.latencyStages, err = parseStageSets("-latency-stages", *latencyStages); err != nil {
		return f, err
	}
	if f.latencyTrials < 1 {
		return f, fmt.Errorf("-latency-trials: %d is not a positive integer", f.latencyTrials)
	}
	for _, s := range f.scenarios {
		switch s {
		case "scale", "scale-10k", "loaded", "upgrade", "upgrade-load", "upgrade-fleet", "rayjob", "restart", "admission", "latency", "noise", "memory":
		default:
			return f, fmt.Errorf("unknown scenario %q", s)
		}
	}
	return f, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func ints(s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", p)
		}
		out = append(out, n)
	}
	return out, nil
}

func run() error {
	f, err := parseFlags()
	if err != nil {
		return err
	}
	assetsDir := filepath.Join(filepath.Dir(f.docs), "benchmarks")
	resultsPath := filepath.Join(assetsDir, "results.json")
	if f.reportOnly {
		res, err := loadResults(resultsPath)
		if err != nil {
			return err
		}
		return writeReport(f.docs, assetsDir, res)
	}
	// Quiet controller-runtime's own logging (the trackers use its cache).
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	outDir := f.out
	if outDir == "" {
		if outDir, err = os.MkdirTemp("", "raygate-bench-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	b := &bench{outDir: outDir, keepLogs: f.keepLogs, started: time.Now(), operatorEnv: f.operatorEnv, auditAll: f.auditAll}
	b.logf("output (logs, profiles) in %s", outDir)
	if _, err := kwokcluster.FindBinaries(); err != nil {
		return err
	}
	if b.operatorBin, err = buildOperator(outDir); err != nil {
		return err
	}

	res := &results{Machine: describeMachine(), Started: b.started, Command: "go run ./test/bench " + strings.Join(os.Args[1:], " ")}
	if f.commit != "" {
		res.Machine.Commit = f.commit
	}
	enc := json.NewEncoder(os.Stdout)
	for _, s := range f.scenarios {
		switch s {
		case "scale":
			for j, st := range f.stages {
				for i, n := range f.sizes {
					cfg := scaleConfig{Clusters: n, Concurrency: f.concurrency, Quiet: f.quiet, Reference: f.reference, KubeRay: f.kuberay, Stages: st}
					if i == len(f.sizes)-1 && j == 0 {
						cfg.Sweep, cfg.Profile = f.sweep, f.profile
					}
					r := runScale(ctx, b, cfg)
					res.Scale = append(res.Scale, r)
					_ = enc.Encode(r.line())
				}
			}
		case "scale-10k":
			r := runScale10k(ctx, b, f)
			res.Scale10k = &r
			_ = enc.Encode(r.line())
		case "loaded":
			r := runLoaded(ctx, b, f.concurrency, f.kuberay)
			res.Loaded = &r
			_ = enc.Encode(r)
		case "upgrade":
			r := runUpgrade(ctx, b)
			res.Upgrade = &r
			_ = enc.Encode(r)
		case "upgrade-load":
			r := runUpgradeLoad(ctx, b)
			res.UpgradeLoad = &r
			_ = enc.Encode(r)
		case "upgrade-fleet":
			r := runUpgradeFleet(ctx, b, f.fleetSize, f.kuberay, f.fleetCPU)
			res.UpgradeFleet = &r
			_ = enc.Encode(r)
		case "rayjob":
			r := runRayJobs(ctx, b, f.rayJobs, rayv1.JobSubmissionMode(f.rayJobMode), f.kuberay)
			res.RayJob = &r
			_ = enc.Encode(r.line())
		case "restart":
			r := runRestart(ctx, b, f.restartRCs, f.restartSvcs, f.kuberay)
			res.Restart = &r
			_ = enc.Encode(r)
		case "admission":
			r := runAdmission(ctx, b, f.admissionN)
			res.Admission = &r
			_ = enc.Encode(r.line())
		case "latency":
			r := runLatency(ctx, b, f.latencyTrials, f.latencyStages, f.kuberay)
			res.Latency = &r
			_ = enc.Encode(r.line())
		case "noise":
			r := runNoise(ctx, b)
			res.Noise = &r
			_ = enc.Encode(r.line())
		case "memory":
			r := runMemory(ctx, b, f.memorySizes, f.concurrency)
			res.Memory = &r
			_ = enc.Encode(r)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	res.DurationSeconds = time.Since(b.started).Seconds()
	if f.partial {
		saved, err := loadResults(resultsPath)
		if err != nil {
			return fmt.Errorf("-partial needs the saved results of a full run: %w", err)
		}
		res = overlay(saved, res, f.scenarios)
	}
	if err := saveResults(resultsPath, res); err != nil {
		return err
	}
	b.logf("done in %s; writing %s", time.Since(b.started).Round(time.Second), f.docs)
	return writeReport(f.docs, assetsDir, res)
}

// bench holds what every scenario shares.
type bench struct {
	operatorBin string
	outDir      string
	keepLogs    bool
	started     time.Time
	operatorEnv []string // extra environment of every operator run
	auditAll    bool     // audit every user in the scale runs, to compare whole-cluster work per object
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
}

// startCluster starts a fresh cluster for one run, logging to <outDir>/<name>.
func (b *bench) startCluster(ctx context.Context, nodes int, name string, mod ...func(*kwokcluster.Options)) (*kwokcluster.Cluster, error) {
	o := clusterOptions(nodes, filepath.Join(b.outDir, name), auditPolicy)
	o.KeepLogs = b.keepLogs
	for _, m := range mod {
		m(&o)
	}
	return kwokcluster.Start(ctx, o)
}

// stopCluster stops a run's cluster, keeping its logs (and saying where) if the run failed.
func (b *bench) stopCluster(c *kwokcluster.Cluster, runErr *string) {
	if *runErr != "" {
		c.KeepLogs = true
		*runErr += " (logs in " + c.LogDir + ")"
	}
	if err := c.Stop(); err != nil {
		b.logf("stopping the cluster: %v", err)
	}
}
