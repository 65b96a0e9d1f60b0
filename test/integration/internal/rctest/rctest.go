// Package rctest reads and changes RayClusters, their pods and events for the RayCluster
// integration suites (test/integration/raycluster and raycluster/...), which share it so each
// asserts the same way. The suites run in separate packages so `go test -p` runs them side by
// side: most of their time is spent waiting on the controller's intervals, not computing.
package rctest

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/framework"
)

// ManagerOptions are the suites': the framework's, with token authentication allowed (specs
// create token-authenticated clusters; the option's off state is unit-tested).
func ManagerOptions() app.Options {
	o := framework.ManagerOptions()
	o.TokenAuthentication = true
	// The dashboard Ingress specs: class nginx, any host.
	o.AllowedIngressClasses = []string{"*/nginx"}
	o.AllowedIngressHosts = []string{"*/*"}
	o.AllowedIngressAnnotations = []string{"nginx.ingress.kubernetes.io/*"}
	return o
}

// World is one suite's API client and its current manager (a spec may replace the
// manager, so it is read at each call).
type World struct {
	Client  client.Client
	Manager func() *framework.Manager
}

// NewNamespace gives each test its own namespace.
func (w World) NewNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rc-"}}
	gomega.Expect(w.Client.Create(ctx, ns)).To(gomega.Succeed())
	return ns.Name
}

// Get reads a RayCluster.
func (w World) Get(ctx context.Context, ns, name string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	gomega.Expect(w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(gomega.Succeed())
	return rc
}

// Status polls a cluster's status.
func (w World) Status(ctx context.Context, ns, name string) func() rayv1.RayClusterStatus {
	return func() rayv1.RayClusterStatus { return w.Get(ctx, ns, name).Status }
}

// Pods lists a cluster's pods, terminating ones excluded.
func (w World) Pods(ctx context.Context, ns, cluster string, extra ...client.ListOption) []corev1.Pod {
	var list corev1.PodList
	opts := append([]client.ListOption{client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: cluster}}, extra...)
	gomega.Expect(w.Client.List(ctx, &list, opts...)).To(gomega.Succeed())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out
}

// WorkerPods lists the active pods of a worker group.
func (w World) WorkerPods(ctx context.Context, ns, cluster, group string) []corev1.Pod {
	return w.Pods(ctx, ns, cluster, client.MatchingLabels{rayv1.NodeGroupLabelKey: group, rayv1.NodeTypeLabelKey: "worker"})
}

// HeadPods lists a cluster's active head pods.
func (w World) HeadPods(ctx context.Context, ns, cluster string) []corev1.Pod {
	return w.Pods(ctx, ns, cluster, client.MatchingLabels{rayv1.NodeTypeLabelKey: "head"})
}

// PodCount polls the number of active pods of a worker group.
func (w World) PodCount(ctx context.Context, ns, cluster, group string) func() int {
	return func() int { return len(w.WorkerPods(ctx, ns, cluster, group)) }
}

// Names are the pods' names.
func Names(ps []corev1.Pod) []string {
	out := make([]string, len(ps))
	for i := range ps {
		out[i] = ps[i].Name
	}
	return out
}

// Events lists a cluster's events as "Type Reason: note". The recorder writes events
// asynchronously, after the status of the same pass, so tests poll it with Eventually.
func (w World) Events(ctx context.Context, ns, cluster string) func() []string {
	return func() []string {
		var list eventsv1.EventList
		gomega.Expect(w.Client.List(ctx, &list, client.InNamespace(ns))).To(gomega.Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == rayv1.RayClusterKind && e.Regarding.Name == cluster {
				out = append(out, e.Type+" "+e.Reason+": "+e.Note)
			}
		}
		return out
	}
}

// Condition is the status's condition of type t, else nil.
func Condition(st rayv1.RayClusterStatus, t rayv1.RayClusterConditionType) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == string(t) {
			return &st.Conditions[i]
		}
	}
	return nil
}

// HaveCondition matches a status with the condition at the given status and reason.
func HaveCondition(t rayv1.RayClusterConditionType, s metav1.ConditionStatus, reason string) gomega.OmegaMatcher {
	return gomega.WithTransform(func(st rayv1.RayClusterStatus) string {
		c := Condition(st, t)
		if c == nil {
			return "absent"
		}
		return string(c.Status) + "/" + c.Reason
	}, gomega.Equal(string(s)+"/"+reason))
}

// StateIs matches a status in state s.
func StateIs(s rayv1.ClusterState) gomega.OmegaMatcher {
	return gomega.WithTransform(func(st rayv1.RayClusterStatus) rayv1.ClusterState { return st.State }, gomega.Equal(s))
}

// WaitReady waits until the cluster is ready and provisioned.
func (w World) WaitReady(ctx context.Context, ns, name string) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(w.Status(ctx, ns, name)).Should(gomega.And(StateIs(rayv1.Ready),
		HaveCondition(rayv1.RayClusterProvisioned, metav1.ConditionTrue, rayv1.AllPodRunningAndReadyFirstTime)))
}

// Update changes a cluster's spec or metadata, retrying on conflicts.
func (w World) Update(ctx context.Context, ns, name string, change func(*rayv1.RayCluster)) {
	ginkgo.GinkgoHelper()
	gomega.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rc := w.Get(ctx, ns, name)
		change(rc)
		return w.Client.Update(ctx, rc)
	})).To(gomega.Succeed())
}

// ExpectQuiet waits until the manager has handled every event it has seen (nothing queued,
// no reconcile running), then resets the write counts, so what a spec counts next is caused
// by what it does next.
func (w World) ExpectQuiet() {
	ginkgo.GinkgoHelper()
	mgr := w.Manager()
	gomega.Eventually(func() (bool, error) { return mgr.Idle("raycluster") }).Should(gomega.BeTrue())
	mgr.Writes.Reset()
}

// WritesIn polls the manager's writes to the given namespaces since the last reset.
func (w World) WritesIn(namespaces ...string) func() map[string]int {
	return func() map[string]int { return w.Manager().Writes.SnapshotIn(namespaces...) }
}

// ReconcileCount is controller-runtime's reconcile counter of the RayCluster controller.
func ReconcileCount() float64 {
	n, err := framework.ReconcileCount("raycluster")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return n
}

// SetGate sets a feature gate of the running manager for the current spec.
func SetGate(f featuregate.Feature, on bool) {
	was := utilfeature.DefaultFeatureGate.Enabled(f)
	gomega.Expect(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(f): on})).To(gomega.Succeed())
	ginkgo.DeferCleanup(func() {
		gomega.Expect(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(f): was})).To(gomega.Succeed())
	})
}
