package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/test/builders"
)

// The latency scenario: what one user waits for, on an idle cluster, one RayCluster at a time.
const (
	defaultLatencyTrials = 50
	// latencyStepTimeout bounds each step of a trial; far above what either operator needs.
	latencyStepTimeout = 2 * time.Minute
	// latencyReplaceWindow is how long the first trial waits for a template change to replace a
	// pod before the run records that the operator does not replace pods for it.
	latencyReplaceWindow = 30 * time.Second
	latencyPoll          = 20 * time.Millisecond
	// latencyEnv is the environment variable whose value makes each trial's pod templates new
	// (a user's manifest is new to the webhooks' pod dry-run) and whose change is the template
	// change.
	latencyEnv = "BENCH_TRIAL"
)

// latencyResult is the "latency" scenario: each stage set on fresh clusters, raygate then KubeRay.
type latencyResult struct {
	Scenario        string          `json:"scenario"`
	Trials          int             `json:"trials"`
	PodsPerCluster  int             `json:"podsPerCluster"`
	Runs            []latencyStages `json:"runs"`
	DurationSeconds float64         `json:"durationSeconds"`
}

// latencyStages are both operators under one set of kwok pod stages.
type latencyStages struct {
	Stages  string      `json:"stages"`
	Raygate latencyRun  `json:"raygate"`
	KubeRay *latencyRun `json:"kuberay,omitempty"`
}

// latencyRun is one operator's trials, each measure summarised over the trials.
type latencyRun struct {
	System string   `json:"system"`
	Flags  []string `json:"flags,omitempty"`
	// Webhooks: raygate runs with its mutating and validating webhooks; KubeRay without its own.
	Webhooks bool `json:"webhooks"`
	// Trials is the number of trials completed.
	Trials int `json:"trials"`
	// Apply is the create request's round trip as the client sees it (what `kubectl apply`
	// waits for); PodsCreated from sending it to the last pod's first watch event; Ready to the
	// RayCluster seen `status.state: ready`; ScaledUp from sending replicas 3 → 4 to the new
	// pod's first event; Replaced from sending a worker template change to the first pod
	// replaced (an old pod deleting or a new pod seen).
	Apply       latencySummary `json:"apply"`
	PodsCreated latencySummary `json:"podsCreated"`
	Ready       latencySummary `json:"ready"`
	ScaledUp    latencySummary `json:"scaledUp"`
	Replaced    latencySummary `json:"replaced"`
	// NotReplaced says why Replaced has no samples: no pod was replaced within
	// latencyReplaceWindow of the first trial's template change, so later trials skip it.
	NotReplaced string `json:"notReplaced,omitempty"`
	// ApplyNoWebhooks (raygate's run only) is the same creates on the same cluster with the
	// webhook configurations removed and no operator running: the API server alone.
	ApplyNoWebhooks *latencySummary `json:"applyNoWebhooks,omitempty"`
	Error           string          `json:"error,omitempty"`
}

// latencySummary is one measure over the trials, in milliseconds.
type latencySummary struct {
	N     int     `json:"n"`
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MinMs float64 `json:"minMs"`
	MaxMs float64 `json:"maxMs"`
	// SamplesMs are the trials' values in trial order (left out of the JSON line on stdout).
	SamplesMs []float64 `json:"samplesMs,omitempty"`
}

// quantile is the nearest-rank p-th percentile (0 < p ≤ 100) of xs: the smallest value with
// at least p% of the values at or below it, as load.Percentile. With 50 samples the p99 is
// the largest.
func quantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func summarizeLatency(samples []time.Duration) latencySummary {
	if len(samples) == 0 {
		return latencySummary{}
	}
	ms := make([]float64, len(samples))
	for i, d := range samples {
		ms[i] = float64(d.Microseconds()) / 1000
	}
	return latencySummary{N: len(ms), P50Ms: quantile(ms, 50), P99Ms: quantile(ms, 99), MinMs: slices.Min(ms), MaxMs: slices.Max(ms), SamplesMs: ms}
}

// line is the scenario's JSON line: the summaries without their samples.
func (r latencyResult) line() latencyResult {
	r.Runs = slices.Clone(r.Runs)
	for i := range r.Runs {
		r.Runs[i].Raygate = r.Runs[i].Raygate.withoutSamples()
		if k := r.Runs[i].KubeRay; k != nil {
			k2 := k.withoutSamples()
			r.Runs[i].KubeRay = &k2
		}
	}
	return r
}

func (x latencyRun) withoutSamples() latencyRun {
	for _, s := range []*latencySummary{&x.Apply, &x.PodsCreated, &x.Ready, &x.ScaledUp, &x.Replaced} {
		s.SamplesMs = nil
	}
	if x.ApplyNoWebhooks != nil {
		a := *x.ApplyNoWebhooks
		a.SamplesMs = nil
		x.ApplyNoWebhooks = &a
	}
	return x
}

// latencyRayCluster is a trial's RayCluster: the scale scenario's head and 3 workers, the
// Recreate upgrade strategy (raygate replaces every pod on a spec change with it; KubeRay
// v1.5.1 has no RayCluster upgrade strategy and ignores the field), and an environment
// value of its own in every Ray container.
func latencyRayCluster(name, ns string) *rayv1.RayCluster {
	rc := builders.RayCluster(name, ns).Spec(benchClusterSpec()).Recreate().Obj()
	setTemplateEnv(&rc.Spec, name)
	return rc
}

// setTemplateEnv sets latencyEnv in every Ray container of the spec.
func setTemplateEnv(spec *rayv1.RayClusterSpec, value string) {
	setContainerEnv(&spec.HeadGroupSpec.Template, value)
	for i := range spec.WorkerGroupSpecs {
		setContainerEnv(&spec.WorkerGroupSpecs[i].Template, value)
	}
}

// setContainerEnv sets latencyEnv in the template's Ray container (the first).
func setContainerEnv(t *corev1.PodTemplateSpec, value string) {
	c := &t.Spec.Containers[0]
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == latencyEnv })
	c.Env = append(c.Env, corev1.EnvVar{Name: latencyEnv, Value: value})
}

func runLatency(ctx context.Context, b *bench, trials int, stages []kwokcluster.StageSet, withKubeRay bool) latencyResult {
	started := time.Now()
	res := latencyResult{Scenario: "latency", Trials: trials, PodsPerCluster: podsPerCluster}
	for _, st := range stages {
		run := latencyStages{Stages: string(st)}
		b.logf("latency (%s stages): raygate, %d trials", st, trials)
		run.Raygate = b.latencyOperator(ctx, st, trials, operatorOptions{Concurrency: defaultConcurrency(), Webhooks: true})
		if withKubeRay && ctx.Err() == nil {
			flags := kubeRayRayJobFlags(defaultConcurrency())
			b.logf("latency (%s stages): KubeRay, %d trials", st, trials)
			k := b.latencyOperator(ctx, st, trials, operatorOptions{KubeRay: true, Concurrency: defaultConcurrency(), ExtraArgs: flags})
			run.KubeRay = &k
		}
		res.Runs = append(res.Runs, run)
		if ctx.Err() != nil {
			break
		}
	}
	res.DurationSeconds = time.Since(started).Seconds()
	return res
}

// latencyOperator runs one operator's trials on a fresh cluster.
func (b *bench) latencyOperator(ctx context.Context, stages kwokcluster.StageSet, trials int, o operatorOptions) latencyRun {
	run := latencyRun{System: "raygate", Webhooks: o.Webhooks}
	if o.KubeRay {
		run.System, run.Flags = "kuberay", o.ExtraArgs
	}
	if err := b.latencyTrials(ctx, stages, trials, o, &run); err != nil {
		run.Error = err.Error()
	}
	b.logf("latency (%s stages): %s: %d trials; p50 apply %.1f ms, pods %.0f ms, ready %.0f ms, scaled up %.0f ms, replaced %.0f ms%s",
		stages, run.System, run.Trials, run.Apply.P50Ms, run.PodsCreated.P50Ms, run.Ready.P50Ms, run.ScaledUp.P50Ms, run.Replaced.P50Ms, errSuffix(run.Error))
	return run
}

// latencyTrial is one trial's measures; Replaced is zero when the template change was not
// tried or replaced nothing. Removed (how long the clean-up took) is only logged.
type latencyTrial struct {
	Apply, PodsCreated, Ready, ScaledUp, Replaced, Removed time.Duration
}

func (b *bench) latencyTrials(ctx context.Context, stages kwokcluster.StageSet, trials int, o operatorOptions, run *latencyRun) (runErr error) {
	s, err := b.startScenarioCluster(ctx, fmt.Sprintf("latency-%s-%s", stages, run.System),
		withStages(stages), withWrittenOnlyPodIPs, func(co *kwokcluster.Options) { co.Webhooks = o.Webhooks })
	if err != nil {
		return err
	}
	defer b.stopScenarioCluster(s, &runErr)
	var toggle *webhookToggle
	if o.Webhooks {
		// The baseline first, while no operator runs: nothing reacts to its RayClusters.
		if toggle, err = removeWebhooks(ctx, s.cl); err != nil {
			return err
		}
		base, err := latencyCreatesAlone(ctx, s.cl, s.ns, trials)
		if err != nil {
			return fmt.Errorf("creates without webhooks: %w", err)
		}
		run.ApplyNoWebhooks = &base
		b.logf("latency: %s: %d creates without webhooks, p50 %.1f ms", run.System, base.N, base.P50Ms)
		host, port, certDir := s.WebhookServing()
		o.ExtraArgs = append(o.ExtraArgs, "--webhook-host="+host, "--webhook-port="+strconv.Itoa(port), "--webhook-cert-dir="+certDir)
	}
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
	op, err := b.startOperator(ctx, s.Cluster, o)
	if err != nil {
		return err
	}
	if toggle != nil {
		if err := toggle.set(ctx, true); err != nil {
			return err
		}
	}
	// The recorder's informers end before the cluster stops (deferred calls run last first).
	recCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	rec, err := recordLatency(recCtx, s.cfg)
	if err != nil {
		return err
	}
	t := &latencyTrialRunner{c: s.Cluster, cl: s.cl, ns: s.ns, rec: rec, op: op, b: b}
	// One trial first, not counted: the first request on every path (the webhooks' TLS
	// connection, the operator's first reconcile) is not what a user of a running cluster waits for.
	b.logf("latency: %s ready; warm-up trial", run.System)
	if _, _, err := t.trial(ctx, "lt-warmup", false); err != nil {
		return fmt.Errorf("warm-up trial: %w", err)
	}
	var all []latencyTrial
	tryReplace := true
	for i := range trials {
		tr, replaced, err := t.trial(ctx, fmt.Sprintf("lt-%03d", i), tryReplace)
		if err != nil {
			return fmt.Errorf("trial %d: %w", i+1, err)
		}
		if tryReplace && !replaced && i == 0 {
			tryReplace = false
			run.NotReplaced = fmt.Sprintf("no pod replaced within %.0f s of a worker template change (first trial); not tried again", latencyReplaceWindow.Seconds())
		}
		all = append(all, tr)
		b.logf("latency: %s trial %d/%d: apply %s, pods created %s, ready %s, scaled up %s, replaced %s; removed in %s", run.System, i+1, trials,
			tr.Apply.Round(time.Millisecond/10), tr.PodsCreated.Round(time.Millisecond), tr.Ready.Round(time.Millisecond),
			tr.ScaledUp.Round(time.Millisecond), tr.Replaced.Round(time.Millisecond), tr.Removed.Round(time.Millisecond))
		run.Trials = len(all)
		run.summarize(all)
	}
	return nil
}

// summarize fills the run's measures from the trials so far.
func (run *latencyRun) summarize(trials []latencyTrial) {
	pick := func(get func(latencyTrial) time.Duration) latencySummary {
		var ds []time.Duration
		for _, t := range trials {
			if d := get(t); d > 0 {
				ds = append(ds, d)
			}
		}
		return summarizeLatency(ds)
	}
	run.Apply = pick(func(t latencyTrial) time.Duration { return t.Apply })
	run.PodsCreated = pick(func(t latencyTrial) time.Duration { return t.PodsCreated })
	run.Ready = pick(func(t latencyTrial) time.Duration { return t.Ready })
	run.ScaledUp = pick(func(t latencyTrial) time.Duration { return t.ScaledUp })
	run.Replaced = pick(func(t latencyTrial) time.Duration { return t.Replaced })
}

// removeWebhooks deletes raygate's webhook configurations (kept to restore them with set(true)
// once the operator serves them) and waits until the API server admits without them.
func removeWebhooks(ctx context.Context, cl client.Client) (*webhookToggle, error) {
	t, err := listWebhooks(ctx, cl)
	if err != nil {
		return nil, err
	}
	return t, t.set(ctx, false)
}

// latencyCreatesAlone times n creates of the trials' RayClusters with no webhook and no
// operator, deleting each before the next. The first create, not counted, warms the API
// server up as the trials' warm-up does (on a fresh cluster it can take seconds).
func latencyCreatesAlone(ctx context.Context, cl client.Client, ns string, n int) (latencySummary, error) {
	var ds []time.Duration
	for i := -1; i < n; i++ {
		name := "lb-warmup"
		if i >= 0 {
			name = fmt.Sprintf("lb-%03d", i)
		}
		rc := latencyRayCluster(name, ns)
		start := time.Now()
		if err := cl.Create(ctx, rc); err != nil {
			return latencySummary{}, err
		}
		if i >= 0 {
			ds = append(ds, time.Since(start))
		}
		if err := cl.Delete(ctx, rc); err != nil {
			return latencySummary{}, err
		}
		if err := pollUntil(ctx, latencyStepTimeout, func() (bool, error) {
			err := cl.Get(ctx, client.ObjectKeyFromObject(rc), &rayv1.RayCluster{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}); err != nil {
			return latencySummary{}, fmt.Errorf("%s not gone: %w", rc.Name, err)
		}
	}
	return summarizeLatency(ds), nil
}

// latencyTrialRunner runs trials on one cluster with one operator.
type latencyTrialRunner struct {
	c   *kwokcluster.Cluster
	cl  client.Client
	ns  string
	rec *latencyRecorder
	op  *operator
	b   *bench
}

// trial creates a RayCluster, waits for its pods and ready, scales its workers up by one,
// changes its worker template (if tryReplace) and removes it with everything it owns. replaced
// says whether the template change replaced a pod within latencyReplaceWindow.
func (t *latencyTrialRunner) trial(ctx context.Context, name string, tryReplace bool) (tr latencyTrial, replaced bool, err error) {
	rc := latencyRayCluster(name, t.ns)
	defer func() {
		start := time.Now()
		rmErr := t.remove(ctx, rc)
		tr.Removed = time.Since(start)
		if rmErr != nil && err == nil {
			err = fmt.Errorf("removing %s: %w", name, rmErr)
		}
	}()
	start := time.Now()
	if err := t.cl.Create(ctx, rc); err != nil {
		return tr, false, err
	}
	tr.Apply = time.Since(start)
	at, err := t.await(ctx, "all pods created", latencyStepTimeout, func() (time.Time, bool) {
		return nthPodSeen(t.rec.podsOf(name), podsPerCluster)
	})
	if err != nil {
		return tr, false, err
	}
	tr.PodsCreated = at.Sub(start)
	if at, err = t.await(ctx, "ready", latencyStepTimeout, func() (time.Time, bool) { return t.rec.readyAt(name) }); err != nil {
		return tr, false, err
	}
	tr.Ready = at.Sub(start)

	// Replicas 3 → 4: a spec change both operators act on.
	before := podNames(t.rec.podsOf(name))
	start = time.Now()
	if err := t.patchSpec(ctx, rc, func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].Replicas = ptr.To[int32](workersPer + 1) }); err != nil {
		return tr, false, err
	}
	if at, err = t.await(ctx, "the scaled-up pod", latencyStepTimeout, func() (time.Time, bool) {
		return firstNewPod(t.rec.podsOf(name), before)
	}); err != nil {
		return tr, false, err
	}
	tr.ScaledUp = at.Sub(start)
	// Settled again (every pod ready) before the next change, so it starts from an idle cluster.
	if _, err := t.await(ctx, "every pod ready after scaling up", latencyStepTimeout, func() (time.Time, bool) {
		return time.Now(), readyPods(t.rec.podsOf(name)) >= podsPerCluster+1
	}); err != nil {
		return tr, false, err
	}
	if !tryReplace {
		return tr, false, nil
	}

	// A worker template change: raygate (Recreate) replaces every pod.
	pods := t.rec.podsOf(name)
	before, deleting := podNames(pods), deletingPods(pods)
	start = time.Now()
	if err := t.patchSpec(ctx, rc, func(s *rayv1.RayClusterSpec) {
		setContainerEnv(&s.WorkerGroupSpecs[0].Template, name+"-changed")
	}); err != nil {
		return tr, false, err
	}
	at, err = t.await(ctx, "a pod replaced", latencyReplaceWindow, func() (time.Time, bool) {
		return firstReplacement(t.rec.podsOf(name), before, deleting)
	})
	var timeout *stepTimeout
	if errors.As(err, &timeout) {
		return tr, false, nil
	}
	if err != nil {
		return tr, false, err
	}
	tr.Replaced = at.Sub(start)
	return tr, true, nil
}

// patchSpec applies change to the RayCluster's spec with a merge patch (no resourceVersion:
// the operator's status writes must not make the user's change conflict).
func (t *latencyTrialRunner) patchSpec(ctx context.Context, rc *rayv1.RayCluster, change func(*rayv1.RayClusterSpec)) error {
	orig := rc.DeepCopy()
	change(&rc.Spec)
	return t.cl.Patch(ctx, rc, client.MergeFrom(orig))
}

// remove deletes the RayCluster, then its pods at once (kwok's general stages would keep a
// deleted pod up to its 30 s grace period), and waits until neither it, its pods nor its
// Services exist, so the next trial starts on an idle cluster.
func (t *latencyTrialRunner) remove(ctx context.Context, rc *rayv1.RayCluster) error {
	if err := t.cl.Delete(ctx, &rayv1.RayCluster{ObjectMeta: rc.ObjectMeta}); client.IgnoreNotFound(err) != nil {
		return err
	}
	err := pollUntil(ctx, latencyStepTimeout, func() (bool, error) {
		err := t.cl.Get(ctx, client.ObjectKeyFromObject(rc), &rayv1.RayCluster{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("RayCluster not gone: %w", err)
	}
	owned := []client.ListOption{client.InNamespace(t.ns), client.MatchingLabels{rayv1.ClusterLabelKey: rc.Name}}
	return pollUntil(ctx, latencyStepTimeout, func() (bool, error) {
		var pods corev1.PodList
		if err := t.cl.List(ctx, &pods, owned...); err != nil {
			return false, err
		}
		if len(pods.Items) > 0 {
			// Again on every pass: a pod the operator created from a stale cache is removed too.
			err := t.cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(t.ns), client.MatchingLabels{rayv1.ClusterLabelKey: rc.Name}, client.GracePeriodSeconds(0))
			return false, err
		}
		var svcs corev1.ServiceList
		if err := t.cl.List(ctx, &svcs, owned...); err != nil {
			return false, err
		}
		return len(svcs.Items) == 0, nil
	})
}

// stepTimeout is a trial step that did not happen in time.
type stepTimeout struct {
	what  string
	after time.Duration
}

func (e *stepTimeout) Error() string { return fmt.Sprintf("%s: not seen after %s", e.what, e.after) }

// await polls the recorder (in memory: the times come from the watch events, not from this
// loop) until found says ok, checking the cluster and the operator's RBAC on the way.
func (t *latencyTrialRunner) await(ctx context.Context, what string, timeout time.Duration, found func() (time.Time, bool)) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		if at, ok := found(); ok {
			return at, nil
		}
		if err := t.c.Healthy(); err != nil {
			return time.Time{}, err
		}
		if err := t.op.forbidden(); err != nil {
			return time.Time{}, err
		}
		if time.Now().After(deadline) {
			if timeout < latencyStepTimeout {
				return time.Time{}, &stepTimeout{what, timeout}
			}
			return time.Time{}, fmt.Errorf("%w; %s", &stepTimeout{what, timeout}, t.b.diagnoseRayClusters(ctx, t.cl, t.op))
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(latencyPoll):
		}
	}
}

// pollUntil calls done every 100 ms until it says true or fails, or timeout passes.
func pollUntil(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// parseStageSets reads a comma-separated list of kwok stage sets.
func parseStageSets(flagName, s string) ([]kwokcluster.StageSet, error) {
	var out []kwokcluster.StageSet
	for _, st := range splitList(s) {
		switch kwokcluster.StageSet(st) {
		case kwokcluster.GeneralStages, kwokcluster.FastStages:
			out = append(out, kwokcluster.StageSet(st))
		default:
			return nil, fmt.Errorf("%s: unknown stage set %q", flagName, st)
		}
	}
	return out, nil
}
