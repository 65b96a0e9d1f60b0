package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
)

// How long the rayjob scenario waits. A job goes through several statuses before it
// succeeds, and an operator with a long queue (KubeRay requeues every RayJob every 3 s)
// may take minutes before the first one does: the run stops when no RayJob's status has
// moved for rayJobStall, or at rayJobWaitTimeout, not when none has succeeded for a while.
const rayJobStall = 90 * time.Second

// rayJobWaitTimeout bounds the wait: two minutes plus 1.2 s per RayJob (22 min at 1,000),
// twice the scale scenario's allowance, as a RayJob is a cluster and a job.
func rayJobWaitTimeout(n int) time.Duration {
	return 2*time.Minute + time.Duration(n)*1200*time.Millisecond
}

// rayJobStage is how far a RayJob got: its deployment status and its Ray job's.
func rayJobStage(j *rayv1.RayJob) string {
	return string(j.Status.JobDeploymentStatus) + "/" + string(j.Status.JobStatus)
}

// rayJobProgress records when any RayJob last changed stage.
type rayJobProgress struct {
	mu    sync.Mutex
	stage map[string]string
	last  time.Time
}

func trackRayJobProgress(ctx context.Context, cfg *rest.Config) (*rayJobProgress, error) {
	p := &rayJobProgress{stage: map[string]string{}, last: time.Now()}
	err := watchKind(ctx, cfg, &rayv1.RayJob{}, func(o client.Object) {
		if j, ok := o.(*rayv1.RayJob); ok {
			p.observe(j.Namespace+"/"+j.Name, rayJobStage(j), time.Now())
		}
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// observe records a RayJob's stage at now; a new RayJob or a new stage is progress.
func (p *rayJobProgress) observe(key, stage string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, seen := p.stage[key]; seen && old == stage {
		return
	}
	p.stage[key] = stage
	p.last = now
}

// stalled says since when nothing moved, once that is longer than stall at now ("": it
// moves).
func (p *rayJobProgress) stalled(now time.Time, stall time.Duration) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if idle := now.Sub(p.last); idle > stall {
		return fmt.Sprintf("no RayJob changed status for %s", idle.Round(time.Second))
	}
	return ""
}

// serviceCache is a watch cache of the cluster's Services, started and synced; it stops
// with ctx.
func serviceCache(ctx context.Context, cfg *rest.Config) (client.Reader, error) {
	ca, err := cache.New(cfg, cache.Options{Scheme: rayscheme.New()})
	if err != nil {
		return nil, err
	}
	if _, err := ca.GetInformer(ctx, &corev1.Service{}); err != nil {
		return nil, err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the Service cache did not sync")
	}
	return ca, nil
}
