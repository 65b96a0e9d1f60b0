package raycluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/batchscheduler/volcano"
	"github.com/raygate/raygate/internal/cacheneeds"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/cachewatch"
	"github.com/raygate/raygate/test/builders"
)

// Every kind the controller watches or indexes is one it declares (CacheNeeds), and the
// other way round: the manager's cache is configured from the declarations, so a kind
// watched without one would be cached whole, other tenants' objects included.
func TestTheControllerWatchesWhatItDeclares(t *testing.T) {
	scheme := rayscheme.New()
	podGroup := volcano.Scheduler{}.PodGroupKind()
	for _, tc := range []struct {
		name string
		cfg  raycluster.Config
	}{
		{"bare", raycluster.Config{}},
		{"cert-manager", raycluster.Config{Capabilities: capabilities.Capabilities{CertManager: true}}},
		{"a batch scheduler", raycluster.Config{Scheduler: volcano.Scheduler{}, Capabilities: capabilities.Capabilities{PodGroup: podGroup}}},
		{"a batch scheduler without its CRD", raycluster.Config{Scheduler: volcano.Scheduler{}}},
		{"OpenShift's Route", raycluster.Config{Capabilities: capabilities.Capabilities{Route: true}}},
		{"OpenShift's Route with USE_INGRESS_ON_OPENSHIFT", raycluster.Config{Capabilities: capabilities.Capabilities{Route: true}, IngressOnOpenShift: true}},
		{"the Gateway API changes nothing here", raycluster.Config{Capabilities: capabilities.Capabilities{GatewayAPI: true, GRPCRoute: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Recorder = events.NewFakeRecorder(1)
			got := cachewatch.Kinds(t, scheme, func(mgr ctrl.Manager) error { return raycluster.New(mgr, cfg).SetupWithManager(mgr) })
			want, err := raycluster.CacheNeeds(cfg).GVKs(scheme)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("declared (-) and watched (+) kinds differ:\n%s", diff)
			}
		})
	}
}

// The controller sees in slim cached pods (its own PodFields kept, nothing else) all it
// sees in whole pods: a pass over either makes the same status and replaces the same pods.
// A field read but not declared shows up here as a zero value and a different outcome.
func TestTheControllerDecidesTheSameOnSlimPods(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demo"}}
	// The pass reads through the cache only what it declares; the rest from the API server.
	reconciler := func(c client.Client) *raycluster.Reconciler {
		cfg := raycluster.Config{Recorder: events.NewFakeRecorder(100), Gates: features.Static{features.RayClusterStatusConditions: true},
			Now: func() time.Time { return now }}
		return &raycluster.Reconciler{Client: cachewatch.Guard(c.(client.WithWatch), rayscheme.New(), raycluster.CacheNeeds(cfg)), APIReader: c,
			Expectations: expectations.New(time.Hour), Metrics: raycluster.NewMetrics(), Config: cfg}
	}

	// The first pass creates the pods; a kubelet then runs them.
	rc := builders.RayCluster("demo", "ns").WorkerGroups(builders.WorkerGroup("workers", 3)).Obj()
	first := newStore(rc)
	if _, err := reconciler(first).Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := first.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 4 {
		t.Fatalf("%d pods after the first pass, want 4", len(pods.Items))
	}
	kubelet(pods.Items, metav1.NewTime(now.Add(-time.Minute)))
	stored := &rayv1.RayCluster{}
	if err := first.Get(ctx, req.NamespacedName, stored); err != nil {
		t.Fatal(err)
	}

	type outcome struct {
		Status rayv1.RayClusterStatus
		Kept   []string // the pods of the first pass still there
		Pods   int
	}
	pass := func(slim bool) outcome {
		objs := []client.Object{stored.DeepCopy()}
		for i := range pods.Items {
			p := pods.Items[i].DeepCopy()
			p.ResourceVersion = ""
			if slim {
				p = cacheneeds.SlimPod(p, raycluster.PodFields)
			}
			objs = append(objs, p)
		}
		store := newStore(objs...)
		if _, err := reconciler(store).Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		var out outcome
		got := &rayv1.RayCluster{}
		if err := store.Get(ctx, req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		out.Status = got.Status
		var after corev1.PodList
		if err := store.List(ctx, &after); err != nil {
			t.Fatal(err)
		}
		out.Pods = len(after.Items)
		for _, p := range after.Items {
			if slices.ContainsFunc(pods.Items, func(q corev1.Pod) bool { return q.Name == p.Name }) {
				out.Kept = append(out.Kept, p.Name)
			}
		}
		slices.Sort(out.Kept)
		return out
	}
	whole, slim := pass(false), pass(true)
	if diff := cmp.Diff(whole, slim); diff != "" {
		t.Errorf("the controller decides differently on slim pods (-whole +slim):\n%s", diff)
	}
	// The case is worth having: the pass read readiness, the head's IP and why it is not
	// ready, and replaced the worker whose Ray container ended under restartPolicy Never.
	if whole.Status.Head.PodIP != "127.0.0.10" || whole.Status.ReadyWorkerReplicas != 1 || len(whole.Kept) != 3 {
		t.Errorf("status %+v, kept %v: the case no longer exercises what it should", whole.Status, whole.Kept)
	}
	var headReady *metav1.Condition
	for i := range whole.Status.Conditions {
		if whole.Status.Conditions[i].Type == string(rayv1.HeadPodReady) {
			headReady = &whole.Status.Conditions[i]
		}
	}
	if headReady == nil || headReady.Reason != "CrashLoopBackOff" {
		t.Errorf("HeadPodReady %+v: want the Ray container's waiting reason", headReady)
	}
}

// kubelet sets what a kubelet reports: the head runs but its Ray container crash-loops; one
// worker is ready, one's Ray container ended (restartPolicy Never), one still starts.
func kubelet(pods []corev1.Pod, started metav1.Time) {
	workers := 0
	for i := range pods {
		p := &pods[i]
		ray := p.Spec.Containers[rayv1.RayContainerIndex].Name
		p.Spec.NodeName = "node-1"
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started, HostIP: "127.0.0.1", QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
		ready := func(ok bool) {
			s := corev1.ConditionFalse
			if ok {
				s = corev1.ConditionTrue
			}
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: s, Reason: "R", Message: "m"})
		}
		if p.Labels[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode) {
			p.Status.PodIP = "127.0.0.10"
			ready(false)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ray, RestartCount: 3, Image: "ray",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}}}}
			continue
		}
		workers++
		p.Status.PodIP = "127.0.0.2" + string(rune('0'+workers))
		switch workers {
		case 1:
			ready(true)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ray, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		case 2:
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			ready(false)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ray, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
		default:
			p.Status.Phase = corev1.PodPending
		}
	}
}
