// Package features tests the RayCluster controller's optional features against a real API
// server, with the fake kubelet making pods Running and Ready: Ray token and Kubernetes
// token authentication, network isolation, mutual TLS, the dashboard's Ingress and
// OpenShift Route, the history server collector and GCS fault tolerance. Its parent package
// tests the rest; they are two packages so `go test -p` runs them side by side (both mostly
// wait on the controller). Webhooks are not installed here, so invalid objects reach the
// controller.
package features

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/app"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/test/integration/internal/rctest"
)

var (
	harness *suite.Suite
	env     *controlplane.Env
	k8s     client.Client
	kubelet *framework.Kubelet
	mgr     *framework.Manager
)

func TestRayClusterFeatures(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "RayCluster controller: optional features")
}

var _ = BeforeSuite(func() {
	harness = suite.Start(suite.Options{Kubelet: &framework.KubeletOptions{}})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	mgr = harness.StartManager(managerOptions())
	DeferCleanup(func() error { return mgr.Stop() }) // mgr may be replaced by a spec
})

// The helpers below bind test/integration/internal/rctest, which the RayCluster suites
// share, to this package's client and current manager.

func managerOptions() app.Options { return rctest.ManagerOptions() }

func newNamespace(ctx context.Context) string { return rctest.NewNamespace(ctx, k8s) }

func getCluster(ctx context.Context, ns, name string) *rayv1.RayCluster {
	return rctest.Get(ctx, k8s, ns, name)
}

func clusterStatus(ctx context.Context, ns, name string) func() rayv1.RayClusterStatus {
	return rctest.Status(ctx, k8s, ns, name)
}

func pods(ctx context.Context, ns, cluster string, extra ...client.ListOption) []corev1.Pod {
	return rctest.Pods(ctx, k8s, ns, cluster, extra...)
}

func workerPods(ctx context.Context, ns, cluster, group string) []corev1.Pod {
	return rctest.WorkerPods(ctx, k8s, ns, cluster, group)
}

func headPods(ctx context.Context, ns, cluster string) []corev1.Pod {
	return rctest.HeadPods(ctx, k8s, ns, cluster)
}

func podCount(ctx context.Context, ns, cluster, group string) func() int {
	return rctest.PodCount(ctx, k8s, ns, cluster, group)
}

func events(ctx context.Context, ns, cluster string) func() []string {
	return rctest.Events(ctx, k8s, ns, cluster)
}

func condition(st rayv1.RayClusterStatus, t rayv1.RayClusterConditionType) *metav1.Condition {
	return rctest.Condition(st, t)
}

func haveCondition(t rayv1.RayClusterConditionType, s metav1.ConditionStatus, reason string) OmegaMatcher {
	return rctest.HaveCondition(t, s, reason)
}

func stateIs(s rayv1.ClusterState) OmegaMatcher { return rctest.StateIs(s) }

func waitReady(ctx context.Context, ns, name string) {
	GinkgoHelper()
	rctest.WaitReady(ctx, k8s, ns, name)
}

func updateCluster(ctx context.Context, ns, name string, change func(*rayv1.RayCluster)) {
	GinkgoHelper()
	rctest.Update(ctx, k8s, ns, name, change)
}

// expectQuiet and writesIn read mgr when called: a spec may have replaced it.
func expectQuiet() {
	GinkgoHelper()
	rctest.ExpectQuiet(mgr)
}

func writesIn(namespaces ...string) func() map[string]int {
	return func() map[string]int { return rctest.WritesIn(mgr, namespaces...)() }
}

func setGate(f featuregate.Feature, on bool) { rctest.SetGate(f, on) }
