// Package kueue tests raygate under the real Kueue (v0.15, built from its module by
// `make tools`): Kueue's manager runs as a process against the envtest API server, which
// calls Kueue's webhooks and raygate's over TLS; raygate's controllers run in-process with
// the fake kubelet. Kueue queues RayClusters (its ray.io/raycluster integration): it
// suspends them at admission, unsuspends them when their ClusterQueue admits them and
// suspends them again when they are preempted. It queues RayJobs the same way (its
// ray.io/rayjob integration, rayjob_test.go): raygate creates a RayJob's cluster only once
// Kueue admits the job, and deletes it when Kueue preempts the job.
package kueue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/kueue"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// flavor is the ResourceFlavor every ClusterQueue uses; Kueue puts its node labels into the
// pod templates of the clusters it admits.
const (
	flavor      = "on-demand"
	flavorLabel = "instance-type"
	queueLabel  = "kueue.x-k8s.io/queue-name"
)

var (
	env        *controlplane.Env
	k8s        client.Client
	kubelet    *framework.Kubelet
	mgr        *framework.Manager
	dashboards *framework.Dashboards
)

var workloadGVK = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}

func TestKueue(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second) // generous: two cores are shared with other suites
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "raygate under Kueue")
}

var _ = BeforeSuite(func(ctx context.Context) {
	harness := suite.Start(suite.Options{ControlPlane: controlplane.Options{Webhooks: true}, Kubelet: &framework.KubeletOptions{}})
	env, k8s, kubelet = harness.Env, harness.Client, harness.Kubelet
	kq, err := kueue.Start(ctx, env, kueue.Options{Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(kq.Stop)
	// The garbage collector deletes the pods of a RayCluster a RayJob deleted.
	stopControllers, err := env.StartControllers(context.Background(), GinkgoWriter, "garbage-collector-controller")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stopControllers)

	// A Ray job runs for a while (long enough to see it RUNNING on its cluster), or until
	// told otherwise when its entrypoint is `hangs` (rayjob_test.go).
	dashboards = framework.StartDashboardsWith(raysim.Options{Jobs: raysim.JobOptions{
		PendingDelay: 100 * time.Millisecond, RunDelay: time.Second, Outcome: outcomeOf,
	}})
	DeferCleanup(dashboards.Close)
	opts := dashboards.Wire(framework.ManagerOptions())
	opts.EnableWebhooks = true
	opts.RayJob = plan.Settings{JobStatusPoll: 200 * time.Millisecond, Recheck: time.Second}
	mgr = harness.StartManager(opts)
	DeferCleanup(mgr.Stop)

	kubectlOK(ctx, fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: %s
spec:
  nodeLabels:
    %s: %s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: low
value: 100
`, flavor, flavorLabel, flavor), "apply", "-f", "-")
}, NodeTimeout(5*time.Minute))

// kubectl runs the real kubectl and logs what a user sees.
func kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	stdout, stderr, err = env.Kubectl(ctx, stdin, args...)
	GinkgoWriter.Printf("$ kubectl %s\n%s%s\n", strings.Join(args, " "), stdout, stderr)
	return stdout, stderr, err
}

func kubectlOK(ctx context.Context, stdin string, args ...string) string {
	GinkgoHelper()
	stdout, stderr, err := kubectl(ctx, stdin, args...)
	Expect(err).NotTo(HaveOccurred(), stderr)
	return stdout
}

// newQueue creates a namespace with a LocalQueue named queue in front of its own
// ClusterQueue (named after the namespace) with the given CPU quota; lower priorities are
// preempted when a higher one does not fit. It waits until both queues are active.
func newQueue(ctx context.Context, queue, cpu string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kq-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	kubectlOK(ctx, fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: %[1]s
spec:
  namespaceSelector: {}
  preemption:
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: %[2]s
      resources:
      - name: cpu
        nominalQuota: "%[3]s"
      - name: memory
        nominalQuota: 64Gi
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: %[4]s
  namespace: %[1]s
spec:
  clusterQueue: %[1]s
`, ns.Name, flavor, cpu, queue), "apply", "-f", "-")
	kubectlOK(ctx, "", "wait", "--for=condition=Active", "clusterqueue/"+ns.Name, "--timeout=60s")
	kubectlOK(ctx, "", "-n", ns.Name, "wait", "--for=condition=Active", "localqueue/"+queue, "--timeout=60s")
	return ns.Name
}

func getCluster(ctx context.Context, ns, name string) *rayv1.RayCluster {
	GinkgoHelper()
	rc := &rayv1.RayCluster{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rc)).To(Succeed())
	return rc
}

// clusterPods polls a cluster's pods, terminating ones excluded.
func clusterPods(ctx context.Context, ns, cluster string) func() []corev1.Pod {
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

// clusterState polls "spec.suspend state Suspended-condition" of a cluster, e.g.
// "true suspended True".
func clusterState(ctx context.Context, ns, name string) func() string {
	return func() string {
		rc := getCluster(ctx, ns, name)
		suspended := "absent"
		if c := findCondition(rc.Status.Conditions, string(rayv1.RayClusterSuspended)); c != nil {
			suspended = string(c.Status)
		}
		suspend := "unset"
		if rc.Spec.Suspend != nil {
			suspend = fmt.Sprint(*rc.Spec.Suspend)
		}
		return fmt.Sprintf("%s %s %s", suspend, rc.Status.State, suspended)
	}
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// workload returns the Workload Kueue made for a RayCluster, or nil.
func workload(ctx context.Context, ns, cluster string) *unstructured.Unstructured {
	GinkgoHelper()
	return workloadOf(ctx, ns, rayv1.RayClusterKind, cluster)
}

// workloadOf returns the Workload Kueue made for the object of a kind, or nil.
func workloadOf(ctx context.Context, ns, kind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(workloadGVK.GroupVersion().WithKind("WorkloadList"))
	Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	for i := range list.Items {
		for _, o := range list.Items[i].GetOwnerReferences() {
			if o.Kind == kind && o.Name == name {
				return &list.Items[i]
			}
		}
	}
	return nil
}

// workloadCondition polls "status reason: message" of a condition of a cluster's Workload
// ("absent" without the Workload or the condition).
func workloadCondition(ctx context.Context, ns, cluster, condition string) func() string {
	return kindWorkloadCondition(ctx, ns, rayv1.RayClusterKind, cluster, condition)
}

// kindWorkloadCondition is workloadCondition for the Workload of an object of any kind.
func kindWorkloadCondition(ctx context.Context, ns, kind, name, condition string) func() string {
	return func() string {
		wl := workloadOf(ctx, ns, kind, name)
		if wl == nil {
			return "absent"
		}
		conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == condition {
				return fmt.Sprintf("%s %s: %s", m["status"], m["reason"], m["message"])
			}
		}
		return "absent"
	}
}

// expectQuiet waits until raygate has handled every event it has seen, then resets its
// write counts.
func expectQuiet() {
	GinkgoHelper()
	Eventually(func() (bool, error) { return mgr.Idle("raycluster", "rayservice") }).Should(BeTrue())
	mgr.Writes.Reset()
}
