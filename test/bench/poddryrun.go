package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
)

// The pods' dry-run (--pod-dry-run, internal/poddryrun) adds the API server's answer for
// the pods of each reviewed object: a pod create with dryRun=All per distinct pod template
// the namespace's table has not seen lately. Cold: every request brings new templates (two
// dry-runs, head and worker); warm: the same templates as the requests before (none).
const (
	podDryRunRequestsConcurrent = 400
	podDryRunRequestsSequential = 100
)

// podDryRunLatency is the latency with the pods' dry-run on (cold and warm table) and off,
// at one client concurrency, for the same requests: off, new templates cost more too (the
// webhooks share decoded templates between requests).
type podDryRunLatency struct {
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requestsPerSetting"`
	Cold        latency `json:"cold"`
	Warm        latency `json:"warm"`
	OffCold     latency `json:"offCold"`
	OffWarm     latency `json:"offWarm"`
	// Added* are on minus off, for the same requests.
	AddedColdP50Ms float64 `json:"addedColdP50Ms"`
	AddedColdP99Ms float64 `json:"addedColdP99Ms"`
	AddedWarmP50Ms float64 `json:"addedWarmP50Ms"`
	AddedWarmP99Ms float64 `json:"addedWarmP99Ms"`
}

// coldRayService has templates no request had before: an environment value of its own in the
// head's and the worker's Ray container.
func coldRayService(name string) *rayv1.RayService {
	svc := benchRayService(name)
	spec := &svc.Spec.RayClusterSpec
	for _, t := range []*corev1.PodTemplateSpec{&spec.HeadGroupSpec.Template, &spec.WorkerGroupSpecs[0].Template} {
		c := &t.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "BENCH_TEMPLATE", Value: name})
	}
	return svc
}

// measurePodDryRun measures cold and warm with the running operator (its default,
// --pod-dry-run=true), then restarts it with --pod-dry-run=false and measures the same
// requests. It returns the operator now running.
func (b *bench) measurePodDryRun(ctx context.Context, c *kwokcluster.Cluster, cl client.Client, op *operator, args []string) ([]podDryRunLatency, *operator, error) {
	settings := []struct{ concurrency, requests int }{{1, podDryRunRequestsSequential}, {admissionConcurrency, podDryRunRequestsConcurrent}}
	out := make([]podDryRunLatency, len(settings))
	for i, s := range settings {
		out[i] = podDryRunLatency{Concurrency: s.concurrency, Requests: s.requests}
		prefix := "d" + strconv.Itoa(s.concurrency)
		var err error
		b.logf("admission: pods' dry-run on, %d client(s): cold, then warm", s.concurrency)
		if out[i].Cold, err = timeCreates(ctx, cl, s.requests, s.concurrency, func(n int) *rayv1.RayService { return coldRayService(fmt.Sprintf("%s-cold-%d", prefix, n)) }); err != nil {
			return nil, op, err
		}
		warm := func(n int) *rayv1.RayService { return benchRayService(fmt.Sprintf("%s-warm-%d", prefix, n)) }
		if _, err := timeCreates(ctx, cl, 1, 1, warm); err != nil { // fills the table
			return nil, op, err
		}
		if out[i].Warm, err = timeCreates(ctx, cl, s.requests, s.concurrency, warm); err != nil {
			return nil, op, err
		}
	}
	if err := op.proc.Stop(10 * time.Second); err != nil {
		return nil, op, err
	}
	host, port, certDir := c.WebhookServing()
	op, err := b.startOperator(ctx, c, operatorOptions{Concurrency: 4, Webhooks: true, ExtraArgs: append(args,
		"--webhook-host="+host, "--webhook-port="+strconv.Itoa(port), "--webhook-cert-dir="+certDir, "--pod-dry-run=false")})
	if err != nil {
		return nil, op, err
	}
	for i, s := range settings {
		b.logf("admission: pods' dry-run off, %d client(s): new templates, then repeated ones", s.concurrency)
		prefix := "o" + strconv.Itoa(s.concurrency)
		r := &out[i]
		if r.OffCold, err = timeCreates(ctx, cl, s.requests, s.concurrency, func(n int) *rayv1.RayService { return coldRayService(fmt.Sprintf("%s-cold-%d", prefix, n)) }); err != nil {
			return nil, op, err
		}
		if r.OffWarm, err = timeCreates(ctx, cl, s.requests, s.concurrency, func(n int) *rayv1.RayService { return benchRayService(fmt.Sprintf("%s-warm-%d", prefix, n)) }); err != nil {
			return nil, op, err
		}
		r.AddedColdP50Ms, r.AddedColdP99Ms = r.Cold.P50Ms-r.OffCold.P50Ms, r.Cold.P99Ms-r.OffCold.P99Ms
		r.AddedWarmP50Ms, r.AddedWarmP99Ms = r.Warm.P50Ms-r.OffWarm.P50Ms, r.Warm.P99Ms-r.OffWarm.P99Ms
	}
	return out, op, nil
}

// timeCreates sends count dry-run creates of the objects of build from concurrency clients.
func timeCreates(ctx context.Context, cl client.Client, count, concurrency int, build func(int) *rayv1.RayService) (latency, error) {
	d, errs, wall, err := dryRunCreatesOf(ctx, cl, count, concurrency, build)
	if err != nil {
		return latency{}, err
	}
	return summarise(d, errs, wall), nil
}

// renderPodDryRun adds the pods' dry-run measurements to the admission section.
func renderPodDryRun(m *md, rows []podDryRunLatency) {
	if len(rows) == 0 {
		return
	}
	m.p("The pods' dry-run (`--pod-dry-run`, on by default) on top: the validating webhook creates\n" +
		"each distinct pod of the RayService with dryRun=All. Cold: every request brings templates the\n" +
		"namespace's table has not seen (two dry-runs, head and worker); warm: the templates of earlier\n" +
		"requests (none sent). Off: the operator restarted with `--pod-dry-run=false`, the same requests.")
	lat := func(name string, l latency) []string {
		return []string{name, fmt.Sprint(l.Requests), f2(l.P50Ms), f2(l.P90Ms), f2(l.P99Ms), f2(l.MeanMs), f1(l.PerSecond), fmt.Sprint(l.Errors)}
	}
	for _, r := range rows {
		m.p("%d client(s), %d requests per setting:", r.Concurrency, r.Requests)
		m.table([]string{"pods' dry-run", "requests", "p50 ms", "p90 ms", "p99 ms", "mean ms", "requests/s", "errors"},
			[][]string{lat("off, new templates", r.OffCold), lat("on, cold table", r.Cold),
				{"**added, cold**", "", f2(r.AddedColdP50Ms), f2(r.Cold.P90Ms - r.OffCold.P90Ms), f2(r.AddedColdP99Ms), f2(r.Cold.MeanMs - r.OffCold.MeanMs), "", ""},
				lat("off, repeated templates", r.OffWarm), lat("on, warm table", r.Warm),
				{"**added, warm**", "", f2(r.AddedWarmP50Ms), f2(r.Warm.P90Ms - r.OffWarm.P90Ms), f2(r.AddedWarmP99Ms), f2(r.Warm.MeanMs - r.OffWarm.MeanMs), "", ""}})
	}
}
