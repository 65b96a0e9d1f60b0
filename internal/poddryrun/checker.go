package poddryrun

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/raygate/raygate/internal/sharedtable"
	"github.com/raygate/raygate/internal/validation"
)

// Creator creates a pod with dryRun=All and returns the API server's warnings.
type Creator interface {
	DryRunCreate(ctx context.Context, pod *corev1.Pod) (warnings []string, err error)
}

// Bounds of a Checker. A dry-run is one request to the API server, which calls the
// cluster's other pod webhooks: the bounds keep a burst of applies, or one object with many
// worker groups, from becoming a burst of pod requests.
const (
	// DefaultInFlight bounds the dry-runs one process runs at once.
	DefaultInFlight = 16
	// PerRequest bounds the dry-runs one admission review runs at once.
	PerRequest = 4
	// MaxPodsPerRequest bounds the distinct pods of one review sent at all; the rest are
	// named in a warning.
	MaxPodsPerRequest = 32
	// AdmittedFor is how long a pod the API server admitted in a namespace is not sent
	// again: a LimitRange or policy added since is seen by the next dry-run after that.
	AdmittedFor = 5 * time.Minute
)

// Limits of the table of admitted pods: keyed by namespace and pod, sized by the pod's JSON.
var admittedLimits = sharedtable.Limits{Entries: 4096, Bytes: 16 << 20, EntryBytes: 64 << 10}

// Checker dry-runs the pods of admission reviews. It is safe for concurrent use.
type Checker struct {
	creator  Creator
	admitted *sharedtable.Table[admittedPod]
	inFlight chan struct{}
	now      func() time.Time

	// flights are the dry-runs under way, by key: reviews that need the same pod at the
	// same time (a burst of objects from one chart) wait for one answer.
	mu      sync.Mutex
	flights map[sharedtable.Key]*flight
}

// flight is a dry-run under way; done is closed once its answer is set.
type flight struct {
	done     chan struct{}
	verdict  verdict
	warnings []string
}

// admittedPod is a pod the API server admitted, with the warnings it gave.
type admittedPod struct {
	warnings []string
	at       time.Time
}

// New returns a Checker that creates pods with c.
func New(c Creator) *Checker {
	return newChecker(c, DefaultInFlight, time.Now)
}

func newChecker(c Creator, inFlight int, now func() time.Time) *Checker {
	return &Checker{
		creator:  c,
		admitted: sharedtable.New[admittedPod](admittedLimits),
		inFlight: make(chan struct{}, inFlight),
		now:      now,
		flights:  map[sharedtable.Key]*flight{},
	}
}

// Request is what one admission review asks.
type Request struct {
	// Namespace the pods would be created in.
	Namespace string
	// Pods are the object's pods; Stored the stored object's on update, whose pods are not
	// sent again (a scale or a metadata change sends nothing; a changed template only its
	// own pods).
	Pods, Stored []Pod
	// PodSecurity is how a Pod Security refusal counts in this namespace: the admin's
	// --pod-security-check, off in namespaces it exempts.
	PodSecurity validation.PodSecurityMode
	// Budget is the review's time budget, for the warning that names the pods it left
	// unchecked; the caller's context carries the deadline.
	Budget time.Duration
}

// outcome is what became of one pod.
type outcome struct {
	pod      Pod
	verdict  verdict
	warnings []string
	skipped  bool // over MaxPodsPerRequest
}

// Check dry-runs the pods of r that need it, within ctx's deadline, and reports what the API
// server said.
func (c *Checker) Check(ctx context.Context, r Request) Report {
	return report(c.outcomes(ctx, r), r)
}

func (c *Checker) outcomes(ctx context.Context, r Request) []outcome {
	stored := map[string]bool{}
	for _, p := range r.Stored {
		if b, err := json.Marshal(p.Pod); err == nil {
			stored[string(b)] = true
		}
	}
	type job struct {
		pod  Pod
		key  sharedtable.Key
		size int
	}
	var jobs []job
	var out []outcome
	for _, p := range r.Pods {
		b, err := json.Marshal(p.Pod)
		if err != nil || stored[string(b)] {
			continue
		}
		stored[string(b)] = true // a pod two groups share is sent once
		if len(jobs) == MaxPodsPerRequest {
			out = append(out, outcome{pod: p, skipped: true})
			continue
		}
		jobs = append(jobs, job{pod: p, key: sharedtable.KeyIn(r.Namespace, b), size: len(b)})
	}
	done := make([]outcome, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(PerRequest, len(jobs)) {
		wg.Go(func() {
			for i := range next {
				done[i] = c.run(ctx, jobs[i].pod, jobs[i].key, jobs[i].size)
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return append(done, out...)
}

// run dry-runs one pod, unless the API server admitted it in this namespace lately or
// another review is dry-running it now (then its answer is taken, unless that review ran
// out of time and this one has time left).
func (c *Checker) run(ctx context.Context, p Pod, key sharedtable.Key, size int) outcome {
	if a, ok := c.admitted.Get(key); ok && c.now().Sub(a.at) < AdmittedFor {
		return outcome{pod: p, verdict: verdict{kind: admitted}, warnings: a.warnings}
	}
	c.mu.Lock()
	f, joined := c.flights[key]
	if !joined {
		f = &flight{done: make(chan struct{})}
		c.flights[key] = f
	}
	c.mu.Unlock()
	if joined {
		select {
		case <-f.done:
			if !f.verdict.timedOut || ctx.Err() != nil {
				return outcome{pod: p, verdict: f.verdict, warnings: f.warnings}
			}
			return c.send(ctx, p, key, size)
		case <-ctx.Done():
			return outcome{pod: p, verdict: classify(ctx.Err(), ctx.Err())}
		}
	}
	o := c.send(ctx, p, key, size)
	f.verdict, f.warnings = o.verdict, o.warnings
	c.mu.Lock()
	delete(c.flights, key)
	c.mu.Unlock()
	close(f.done)
	return o
}

// send dry-runs one pod, waiting for room among the dry-runs in flight.
func (c *Checker) send(ctx context.Context, p Pod, key sharedtable.Key, size int) outcome {
	select {
	case c.inFlight <- struct{}{}:
	case <-ctx.Done():
		return outcome{pod: p, verdict: classify(ctx.Err(), ctx.Err())}
	}
	defer func() { <-c.inFlight }()
	if ctx.Err() != nil {
		return outcome{pod: p, verdict: classify(ctx.Err(), ctx.Err())}
	}
	warnings, err := c.creator.DryRunCreate(ctx, p.Pod)
	v := classify(err, ctx.Err())
	if v.kind == admitted || v.kind == quotaOnly {
		c.admitted.Add(key, admittedPod{warnings: warnings, at: c.now()}, size)
	}
	return outcome{pod: p, verdict: v, warnings: warnings}
}
