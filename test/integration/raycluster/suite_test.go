// Package raycluster tests the RayCluster controller against a real API server, with the
// fake kubelet making pods Running and Ready. Webhooks are not installed here, so invalid
// objects reach the controller.
package raycluster

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
)

var (
	harness *suite.Suite
	env     *controlplane.Env
	k8s     client.Client
	kubelet *framework.Kubelet
	mgr     *framework.Manager
)

func TestRayCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayCluster controller")
}

var _ = BeforeSuite(func() {
	harness = suite.Start(suite.Options{Kubelet: &framework.KubeletOptions{}})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	mgr = harness.StartManager(managerOptions())
	DeferCleanup(func() error { return mgr.Stop() }) // mgr may be replaced by a spec
})

// managerOptions are the suite's: the framework's, with token authentication allowed (specs
// here create token-authenticated clusters; the option's off state is unit-tested).
func managerOptions() app.Options {
	o := framework.ManagerOptions()
	o.TokenAuthentication = true
	// The dashboard Ingress specs (ingress_historyserver_test.go): class nginx, any host.
	o.AllowedIngressClasses = []string{"*/nginx"}
	o.AllowedIngressHosts = []string{"*/*"}
	o.AllowedIngressAnnotations = []string{"nginx.ingress.kubernetes.io/*"}
	return o
}

// newNamespace gives each test its own namespace.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rc-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func getCluster(ctx context.Context, ns, name string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rc)).To(Succeed())
	return rc
}

// clusterStatus polls a cluster's status.
func clusterStatus(ctx context.Context, ns, name string) func() rayv1.RayClusterStatus {
	return func() rayv1.RayClusterStatus { return getCluster(ctx, ns, name).Status }
}

// pods lists a cluster's pods, terminating ones excluded.
func pods(ctx context.Context, ns, cluster string, extra ...client.ListOption) []corev1.Pod {
	var list corev1.PodList
	opts := append([]client.ListOption{client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: cluster}}, extra...)
	Expect(k8s.List(ctx, &list, opts...)).To(Succeed())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out
}

func workerPods(ctx context.Context, ns, cluster, group string) []corev1.Pod {
	return pods(ctx, ns, cluster, client.MatchingLabels{rayv1.NodeGroupLabelKey: group, rayv1.NodeTypeLabelKey: "worker"})
}

func headPods(ctx context.Context, ns, cluster string) []corev1.Pod {
	return pods(ctx, ns, cluster, client.MatchingLabels{rayv1.NodeTypeLabelKey: "head"})
}

func names(ps []corev1.Pod) []string {
	out := make([]string, len(ps))
	for i := range ps {
		out[i] = ps[i].Name
	}
	return out
}

// events returns "type reason: note" of the events about a cluster.
// events lists a cluster's events as "Type Reason: note". The recorder writes events
// asynchronously, after the status of the same pass, so tests poll it with Eventually.
func events(ctx context.Context, ns, cluster string) func() []string {
	return func() []string {
		var list eventsv1.EventList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == rayv1.RayClusterKind && e.Regarding.Name == cluster {
				out = append(out, e.Type+" "+e.Reason+": "+e.Note)
			}
		}
		return out
	}
}

func condition(st rayv1.RayClusterStatus, t rayv1.RayClusterConditionType) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == string(t) {
			return &st.Conditions[i]
		}
	}
	return nil
}

// haveCondition matches a status with the condition at the given status and reason.
func haveCondition(t rayv1.RayClusterConditionType, s metav1.ConditionStatus, reason string) OmegaMatcher {
	return WithTransform(func(st rayv1.RayClusterStatus) string {
		c := condition(st, t)
		if c == nil {
			return "absent"
		}
		return string(c.Status) + "/" + c.Reason
	}, Equal(string(s)+"/"+reason))
}

func stateIs(s rayv1.ClusterState) OmegaMatcher {
	return WithTransform(func(st rayv1.RayClusterStatus) rayv1.ClusterState { return st.State }, Equal(s))
}

// waitReady waits until the cluster is ready and provisioned.
func waitReady(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Eventually(clusterStatus(ctx, ns, name)).Should(And(stateIs(rayv1.Ready),
		haveCondition(rayv1.RayClusterProvisioned, metav1.ConditionTrue, rayv1.AllPodRunningAndReadyFirstTime)))
}

// expectQuiet waits until the manager has handled every event it has seen (nothing queued,
// no reconcile running), then resets the write counts, so what a spec counts next is caused
// by what it does next.
func expectQuiet() {
	GinkgoHelper()
	Eventually(func() (bool, error) { return mgr.Idle("raycluster") }).Should(BeTrue())
	mgr.Writes.Reset()
}

// writesIn polls the manager's writes to the given namespaces since the last reset.
func writesIn(namespaces ...string) func() map[string]int {
	return func() map[string]int { return mgr.Writes.SnapshotIn(namespaces...) }
}

// reconcileCount is controller-runtime's reconcile counter of the RayCluster controller.
func reconcileCount() float64 {
	n, err := framework.ReconcileCount("raycluster")
	Expect(err).NotTo(HaveOccurred())
	return n
}

// updateCluster changes a cluster's spec or metadata, retrying on conflicts.
func updateCluster(ctx context.Context, ns, name string, change func(*rayv1.RayCluster)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rc := getCluster(ctx, ns, name)
		change(rc)
		return k8s.Update(ctx, rc)
	})).To(Succeed())
}

// podCount polls the number of active pods of a worker group.
func podCount(ctx context.Context, ns, cluster, group string) func() int {
	return func() int { return len(workerPods(ctx, ns, cluster, group)) }
}

// setGate sets a feature gate of the running manager for the current spec.
func setGate(f featuregate.Feature, on bool) {
	was := utilfeature.DefaultFeatureGate.Enabled(f)
	Expect(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(f): on})).To(Succeed())
	DeferCleanup(func() {
		Expect(utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(f): was})).To(Succeed())
	})
}
