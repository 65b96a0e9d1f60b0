package migration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/test/integration/internal/rstest"
)

// podUIDs maps the pods of a namespace's RayClusters, by name, to their UIDs: a recreated
// pod gets a new UID even under the same name. The pods of a deleted RayCluster are left
// out: envtest runs no garbage collector to delete them.
func podUIDs(ctx context.Context, ns string) func() map[string]types.UID {
	return func() map[string]types.UID {
		live := map[string]bool{}
		for _, c := range clusterNames(ctx, ns)() {
			live[c] = true
		}
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		out := map[string]types.UID{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && live[p.Labels[rayv1.ClusterLabelKey]] {
				out[p.Name] = p.UID
			}
		}
		return out
	}
}

// clusterNames are a namespace's RayClusters not being deleted, sorted.
func clusterNames(ctx context.Context, ns string) func() []string {
	return rstest.ClusterNames(ctx, k8s, ns)
}

func getCluster(ctx context.Context, ns, name string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(Succeed())
	return rc
}

// clusterFacts are the RayCluster status fields users and tools read, one per line, with
// values both operators must agree on for the same pods.
func clusterFacts(ctx context.Context, ns, name string) func() string {
	return func() string {
		st := getCluster(ctx, ns, name).Status
		lines := []string{
			"state=" + string(st.State),
			fmt.Sprintf("workers ready=%d available=%d desired=%d min=%d max=%d", st.ReadyWorkerReplicas, st.AvailableWorkerReplicas,
				st.DesiredWorkerReplicas, st.MinWorkerReplicas, st.MaxWorkerReplicas),
			"desired cpu=" + st.DesiredCPU.String() + " memory=" + st.DesiredMemory.String() + " gpu=" + st.DesiredGPU.String(),
			"head pod=" + st.Head.PodName + " ip=" + st.Head.PodIP + " service=" + st.Head.ServiceName + " serviceIP=" + st.Head.ServiceIP,
		}
		for _, t := range []rayv1.RayClusterConditionType{rayv1.RayClusterProvisioned, rayv1.HeadPodReady, rayv1.RayClusterReplicaFailure} {
			c := meta.FindStatusCondition(st.Conditions, string(t))
			if c == nil {
				lines = append(lines, string(t)+"=<none>")
			} else {
				lines = append(lines, string(t)+"="+string(c.Status))
			}
		}
		return strings.Join(lines, "\n")
	}
}

// serviceFacts are the RayService status fields users and tools read.
func serviceFacts(ctx context.Context, ns, name string) func() string {
	return func() string {
		svc := &rayv1.RayService{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, svc)).To(Succeed())
		st := svc.Status
		lines := []string{
			"serviceStatus=" + string(st.ServiceStatus),
			fmt.Sprintf("numServeEndpoints=%d", st.NumServeEndpoints),
			"active=" + st.ActiveServiceStatus.RayClusterName,
			"pending=" + st.PendingServiceStatus.RayClusterName,
		}
		var apps []string
		for app, s := range st.ActiveServiceStatus.Applications {
			apps = append(apps, app+":"+s.Status)
		}
		sort.Strings(apps)
		lines = append(lines, "active applications="+strings.Join(apps, ","))
		for _, t := range []rayv1.RayServiceConditionType{rayv1.RayServiceReady, rayv1.UpgradeInProgress} {
			c := meta.FindStatusCondition(st.Conditions, string(t))
			if c == nil {
				lines = append(lines, string(t)+"=<none>")
			} else {
				lines = append(lines, string(t)+"="+string(c.Status)+"/"+c.Reason)
			}
		}
		return strings.Join(lines, "\n")
	}
}

// readiness records every state of a RayService, as a watch delivers it, in which its Ready
// condition is not True: a drop between two polls cannot hide from it.
type readiness struct {
	once     sync.Once
	mu       sync.Mutex
	seen     int
	notReady []string
	cancel   context.CancelFunc
	done     chan struct{}
}

// watchReadiness starts recording; the RayService must be Ready now. Stop it with stop().
func watchReadiness(ns, name string) *readiness {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: rayscheme.New()})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	r := &readiness{cancel: cancel, done: make(chan struct{})}
	list := &rayv1.RayServiceList{}
	Expect(wc.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	rv := list.ResourceVersion
	found := false
	for i := range list.Items {
		if list.Items[i].Name == name {
			found = true
			r.observe(&list.Items[i], watch.Added)
		}
	}
	Expect(found).To(BeTrue(), "RayService %s/%s", ns, name)
	DeferCleanup(func() { r.stop() })
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &rayv1.RayServiceList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				if ctx.Err() == nil {
					r.record(fmt.Sprintf("%s watch failed: %v", time.Now().Format("15:04:05.000"), err))
				}
				return
			}
			for ev := range w.ResultChan() {
				svc, ok := ev.Object.(*rayv1.RayService)
				if !ok {
					continue // a watch error: re-watch from the last version seen
				}
				rv = svc.ResourceVersion
				if svc.Name == name {
					r.observe(svc, ev.Type)
				}
			}
			w.Stop()
		}
	}()
	return r
}

func (r *readiness) observe(svc *rayv1.RayService, t watch.EventType) {
	r.mu.Lock()
	r.seen++
	r.mu.Unlock()
	c := meta.FindStatusCondition(svc.Status.Conditions, string(rayv1.RayServiceReady))
	switch {
	case t == watch.Deleted:
		r.record("deleted")
	case c == nil:
		r.record(fmt.Sprintf("%s rv=%s: no Ready condition", time.Now().Format("15:04:05.000"), svc.ResourceVersion))
	case c.Status != metav1.ConditionTrue:
		r.record(fmt.Sprintf("%s rv=%s: Ready=%s/%s %q", time.Now().Format("15:04:05.000"), svc.ResourceVersion, c.Status, c.Reason, c.Message))
	}
}

func (r *readiness) record(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notReady = append(r.notReady, s)
}

// stop ends the watch and returns how many states it saw and those that were not Ready.
func (r *readiness) stop() (seen int, notReady []string) {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen, append([]string(nil), r.notReady...)
}

// expectReadyThroughout stops the watch and fails on any state that was not Ready.
func (r *readiness) expectReadyThroughout() {
	seen, notReady := r.stop()
	GinkgoWriter.Printf("readiness watch: %d states of the RayService observed, %d not Ready\n", seen, len(notReady))
	Expect(notReady).To(BeEmpty(), "the RayService was not Ready in these observed states")
}

// imagesOf lists the images of a cluster's pods, deduplicated.
func imagesOf(ctx context.Context, ns, cluster string) func() []string {
	return func() []string {
		var pods corev1.PodList
		Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: cluster})).To(Succeed())
		set := map[string]bool{}
		for _, p := range pods.Items {
			set[p.Spec.Containers[0].Image] = true
		}
		var out []string
		for i := range set {
			out = append(out, i)
		}
		sort.Strings(out)
		return out
	}
}
