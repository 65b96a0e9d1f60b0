// Package batchscheduler tests raygate's --batch-scheduler integrations against a real API
// server with the real webhooks over TLS: Volcano's PodGroup and Queue CRDs (generated from
// volcano.sh/apis by `make tools`) and scheduler-plugins' PodGroup CRD (from its module) are
// installed, kube-controller-manager's garbage collector runs, and the fake kubelet runs
// the pods (the schedulers themselves do not run). Each Describe starts raygate with its own
// --batch-scheduler.
package batchscheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/tools"
)

var (
	harness *suite.Suite
	env     *controlplane.Env
	k8s     client.Client
)

var (
	volcanoPodGroup = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}
	pluginsPodGroup = schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"}
)

func TestBatchScheduler(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "batch schedulers")
}

var _ = BeforeSuite(func(ctx context.Context) {
	harness = suite.Start(suite.Options{ControlPlane: controlplane.Options{Webhooks: true}, Kubelet: &framework.KubeletOptions{}})
	env, k8s = harness.Env, harness.Client
	installCRDs("volcano-crds")
	stop, err := env.StartControllers(context.Background(), GinkgoWriter, "garbage-collector-controller")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stop)
}, NodeTimeout(3*time.Minute))

// installCRDs installs the CRDs of a cached tool (hack/tools.sh) and waits until they are
// served.
func installCRDs(tool string) {
	GinkgoHelper()
	dir, err := tools.Path(tool)
	Expect(err).NotTo(HaveOccurred())
	_, err = envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
	Expect(err).NotTo(HaveOccurred())
}

// startRaygate runs raygate, webhooks included, with the given --batch-scheduler until the
// end of the current container.
func startRaygate(batchScheduler string) *framework.Manager {
	GinkgoHelper()
	opts := framework.ManagerOptions()
	opts.EnableWebhooks = true
	opts.BatchScheduler = batchScheduler
	mgr := harness.StartManager(opts)
	DeferCleanup(mgr.Stop)
	return mgr
}

func newNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bs-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// kubectl runs the real kubectl in a namespace and logs what a user sees.
func kubectl(ctx context.Context, ns, stdin string, args ...string) (stdout, stderr string, err error) {
	args = append([]string{"-n", ns}, args...)
	stdout, stderr, err = env.Kubectl(ctx, stdin, args...)
	GinkgoWriter.Printf("$ kubectl %s\n%s%s\n", strings.Join(args, " "), stdout, stderr)
	return stdout, stderr, err
}

// apply applies a manifest and returns kubectl's stderr (where it prints warnings).
func apply(ctx context.Context, ns, manifest string) string {
	GinkgoHelper()
	_, stderr, err := kubectl(ctx, ns, manifest, "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), stderr)
	return stderr
}

// podGroup polls a PodGroup; nil while it does not exist.
func podGroup(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) func() *unstructured.Unstructured {
	return func() *unstructured.Unstructured {
		pg := &unstructured.Unstructured{}
		pg.SetGroupVersionKind(gvk)
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
			Expect(client.IgnoreNotFound(err)).To(Succeed())
			return nil
		}
		return pg
	}
}

// field matches an unstructured object's field.
func field(matcher OmegaMatcher, path ...string) OmegaMatcher {
	return WithTransform(func(u *unstructured.Unstructured) any {
		if u == nil {
			return nil
		}
		v, _, _ := unstructured.NestedFieldCopy(u.Object, path...)
		return v
	}, matcher)
}

// pods lists a cluster's pods, terminating ones excluded.
func pods(ctx context.Context, ns, cluster string) func() []corev1.Pod {
	return func() []corev1.Pod {
		var list corev1.PodList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{rayv1.ClusterLabelKey: cluster})).To(Succeed())
		var out []corev1.Pod
		for _, p := range list.Items {
			if p.DeletionTimestamp.IsZero() {
				out = append(out, p)
			}
		}
		return out
	}
}

// events lists a cluster's events as "Type Reason: note".
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

// cluster polls a RayCluster.
func cluster(ctx context.Context, ns, name string) func() *rayv1.RayCluster {
	return func() *rayv1.RayCluster {
		rc := &rayv1.RayCluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rc)).To(Succeed())
		return rc
	}
}

func ownerUIDs(u *unstructured.Unstructured) []types.UID {
	var out []types.UID
	for _, r := range u.GetOwnerReferences() {
		out = append(out, r.UID)
	}
	return out
}
