package hostile

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// A tenant's flood of RayJobs must not starve another tenant's RayJob: the operator's work
// queue, its Jobs API pool and its status writes are shared, so one namespace's thousand
// objects compete with the other's one.
const (
	// floodSize is how many RayJobs the attacker creates, from floodClients clients at once.
	floodSize    = 1000
	floodClients = 8
	// floodDelayBound is how much later than with nobody flooding the other tenant's RayJob
	// may reach RUNNING. The RayJob reaches RUNNING in several passes, each queued anew (its
	// cluster, its pods, its submission). With a work queue first in, first out across
	// namespaces each pass waited behind the flood's backlog (up to 700 deep): 14.6 s alone on
	// 2 cores, 62-72 s under make test (which failed CI with a bound of +60 s). With namespaces
	// taking turns (internal/fairqueue) a pass waits behind at most one flood item: 1.6 s
	// alone, 5.8-12.3 s beside a whole make test, where the flood's 1,000 creates take 45-80 s:
	// what remains is the API server and the cores the flood's creates share with the
	// victim's writes. The bound fails the first-in-first-out queue under load, not a fair one
	// on a busy machine.
	floodDelayBound = 30 * time.Second
)

var _ = Describe("A tenant flooding the operator with RayJobs", func() {
	It("does not starve another tenant's RayJob: it reaches RUNNING within the bound", func(ctx context.Context) {
		unflooded := timeToRunning(ctx, newNamespace(ctx, "job-victim-"), nil)
		AddReportEntry("RayJob to RUNNING, nobody flooding", unflooded.Round(time.Millisecond).String())

		attacker := newNamespace(ctx, "job-flood-")
		var created atomic.Int64
		halfway := make(chan struct{})
		flood := startFlood(ctx, attacker, &created, halfway)
		DeferCleanup(func(ctx context.Context) { deleteFlood(ctx, attacker) })

		queue := watchQueue("rayjob")
		<-halfway
		flooded := timeToRunning(ctx, newNamespace(ctx, "job-victim-"), &created)
		floodTook := flood()
		maxDepth, passes := queue.stop()
		report := fmt.Sprintf("%v (nobody flooding: %v; bound: +%v), created during the flood %d of %d RayJobs (all %d in %v); RayJob queue: %d deep at most, %d passes",
			flooded.Round(time.Millisecond), unflooded.Round(time.Millisecond), floodDelayBound, created.Load(), floodSize, floodSize, floodTook.Round(time.Millisecond), maxDepth, passes)
		AddReportEntry("RayJob to RUNNING, another tenant flooding", report)
		GinkgoWriter.Println("RayJob to RUNNING under a flood of RayJobs:", report)
		Expect(flooded).To(BeNumerically("<=", unflooded+floodDelayBound), report)

		By("every attacker RayJob was seen: each is suspended, with no cluster")
		Eventually(func() string {
			var list rayv1.RayJobList
			Expect(k8s.List(ctx, &list, client.InNamespace(attacker))).To(Succeed())
			counts := map[string]int{}
			for _, j := range list.Items {
				counts[string(j.Status.JobDeploymentStatus)+" "+j.Status.RayClusterName]++
			}
			return fmt.Sprint(counts)
		}, 2*time.Minute, time.Second).Should(Equal(fmt.Sprintf("map[%s :%d]", rayv1.JobDeploymentStatusSuspended, floodSize)))
		var clusters rayv1.RayClusterList
		Expect(k8s.List(ctx, &clusters, client.InNamespace(attacker))).To(Succeed())
		Expect(clusters.Items).To(BeEmpty())
	}, SpecTimeout(4*time.Minute))
})

// queueWatch samples a controller's work queue depth (controller-runtime's workqueue_depth)
// and counts its passes (controller_runtime_reconcile_total) until stopped.
type queueWatch struct {
	stopped  chan struct{}
	done     chan struct{}
	maxDepth atomic.Int64
	passes0  float64
	name     string
}

func watchQueue(name string) *queueWatch {
	q := &queueWatch{stopped: make(chan struct{}), done: make(chan struct{}), name: name}
	q.passes0 = metricSum("controller_runtime_reconcile_total", "controller", name)
	go func() {
		defer close(q.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if d := int64(metricSum("workqueue_depth", "name", name)); d > q.maxDepth.Load() {
				q.maxDepth.Store(d)
			}
			select {
			case <-q.stopped:
				return
			case <-tick.C:
			}
		}
	}()
	return q
}

// stop ends the sampling: the deepest the queue was, and the passes since the start.
func (q *queueWatch) stop() (maxDepth int64, passes int) {
	close(q.stopped)
	<-q.done
	return q.maxDepth.Load(), int(metricSum("controller_runtime_reconcile_total", "controller", q.name) - q.passes0)
}

// metricSum adds up the values of a metric's series in controller-runtime's registry whose
// label key has the value.
func metricSum(metric, key, value string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return 0
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == key && l.GetValue() == value {
					sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// timeToRunning creates an HTTPMode RayJob in ns and returns how long it took to RUNNING.
// created, if set, is printed with the wait.
func timeToRunning(ctx context.Context, ns string, created *atomic.Int64) time.Duration {
	GinkgoHelper()
	job := builders.RayJob("victim", ns).Mode(rayv1.HTTPMode).Shutdown(0).Obj()
	start := time.Now()
	Expect(k8s.Create(ctx, job)).To(Succeed())
	Eventually(func() rayv1.JobStatus {
		j := &rayv1.RayJob{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "victim"}, j)).To(Succeed())
		return j.Status.JobStatus
	}, 2*time.Minute, 50*time.Millisecond).Should(Equal(rayv1.JobStatusRunning))
	took := time.Since(start)
	if created != nil {
		GinkgoWriter.Printf("victim RUNNING after %v, %d flood RayJobs created by then\n", took, created.Load())
	}
	return took
}

// startFlood creates floodSize suspended RayJobs in ns from floodClients clients; halfway
// closes when half are created (or a create failed). The function returned waits for the rest and returns how
// long the whole flood took.
func startFlood(ctx context.Context, ns string, created *atomic.Int64, halfway chan<- struct{}) func() time.Duration {
	start := time.Now()
	next := atomic.Int64{}
	var once sync.Once
	var wg sync.WaitGroup
	errs := make(chan error, floodClients)
	for range floodClients {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			for i := next.Add(1); i <= floodSize; i = next.Add(1) {
				job := builders.RayJob(fmt.Sprintf("flood-%04d", i), ns).Mode(rayv1.HTTPMode).Shutdown(0).Obj()
				job.Spec.Suspend = true
				if err := k8s.Create(ctx, job); err != nil {
					errs <- err
					once.Do(func() { close(halfway) }) // the wait ends; the error fails the spec
					return
				}
				if created.Add(1) == floodSize/2 {
					once.Do(func() { close(halfway) })
				}
			}
		}()
	}
	return func() time.Duration {
		GinkgoHelper()
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		return time.Since(start)
	}
}

// deleteFlood deletes the attacker's RayJobs and waits until they are gone, so the
// operator's cache is back to its size for the other specs.
func deleteFlood(ctx context.Context, ns string) {
	// On a loaded machine the collection delete of a thousand RayJobs can outlast the API
	// server's request timeout; the server goes on deleting, and is asked again only then.
	asked := false
	Eventually(func(g Gomega) int {
		if !asked {
			err := k8s.DeleteAllOf(ctx, &rayv1.RayJob{}, client.InNamespace(ns))
			if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
				return -1
			}
			g.Expect(err).NotTo(HaveOccurred())
			asked = true
		}
		var list rayv1.RayJobList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		return len(list.Items)
	}, 3*time.Minute, time.Second).Should(BeZero())
}
