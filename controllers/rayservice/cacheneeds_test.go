package rayservice

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	rayscheme "github.com/raygate/raygate/apis/scheme"
	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/internal/cacheneeds"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/testenv/cachewatch"
	"github.com/raygate/raygate/test/builders"
)

// Every kind the controller watches or reads through the cache at set-up is one it declares
// (CacheNeeds), and the other way round: the manager's cache is configured from the
// declarations, so a kind watched without one would be cached whole.
func TestTheControllerWatchesWhatItDeclares(t *testing.T) {
	scheme := rayscheme.New()
	for _, tc := range []struct {
		name string
		caps capabilities.Capabilities
	}{
		{"no Gateway API", capabilities.Capabilities{}},
		{"the Gateway API", capabilities.Capabilities{GatewayAPI: true}},
		{"the Gateway API with GRPCRoute", capabilities.Capabilities{GatewayAPI: true, GRPCRoute: true}},
		{"cert-manager changes nothing here", capabilities.Capabilities{CertManager: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Capabilities: tc.caps, Recorder: events.NewFakeRecorder(1)}
			got := cachewatch.Kinds(t, scheme, func(mgr ctrl.Manager) error { return New(mgr, cfg).SetupWithManager(mgr) })
			want, err := CacheNeeds(cfg).GVKs(scheme)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("declared (-) and watched (+) kinds differ:\n%s", diff)
			}
		})
	}
}

// headsSeen records the heads the controller asks for the dashboards of.
type headsSeen struct {
	mu    sync.Mutex
	heads []dashboard.Head
}

func (h *headsSeen) DashboardURL(_ context.Context, head dashboard.Head) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.heads = append(h.heads, head)
	return "http://127.0.0.1:1", nil
}

// The controller sees in slim cached pods (its own PodFields kept, nothing else) all it
// sees in whole pods: which pods serve, the head's IP, Serve port and restarts (where its
// dashboard and proxy are, and whether it forgot its config). A field read but not declared
// shows up here as a zero value and a different head or status.
func TestTheControllerSeesTheSameInSlimPods(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "svc"}}
	// The pass reads through the cache only what it declares; the rest from the API server.
	reconciler := func(c client.WithWatch, heads *headsSeen) *Reconciler {
		cfg := Config{Resolver: heads, Gates: features.Static{}, Now: func() time.Time { return now }, DeployingPoll: time.Second,
			AppStatusResync: time.Minute, Capabilities: capabilities.Capabilities{}}
		return &Reconciler{
			Config: cfg, Metrics: NewMetrics(), client: cachewatch.Guard(c, rayscheme.New(), CacheNeeds(cfg)), apiReader: c, recorder: events.NewFakeRecorder(100),
			dashboards: dashboard.NewPool(dashboard.PoolOptions{}), newName: func(s string) string { return s + "-a" },
		}
	}
	newStore := func(objs ...client.Object) client.WithWatch {
		return fake.NewClientBuilder().WithScheme(rayscheme.New()).WithStatusSubresource(&rayv1.RayService{}, &rayv1.RayCluster{}).
			WithIndex(&rayv1.RayCluster{}, clusterServiceIndex, serviceOfCluster).WithIndex(&corev1.Pod{}, podClusterIndex, raycluster.ClusterOfPod).
			WithObjects(objs...).Build()
	}

	// The first pass creates the cluster; its pods then run.
	first := newStore(builders.RayService("svc", "ns").Obj())
	if _, err := reconciler(first, &headsSeen{}).Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	svc, rc := &rayv1.RayService{}, &rayv1.RayCluster{}
	if err := first.Get(ctx, req.NamespacedName, svc); err != nil {
		t.Fatal(err)
	}
	if err := first.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "svc-a"}, rc); err != nil {
		t.Fatalf("the first pass made no cluster svc-a: %v", err)
	}
	pods := runningPods(rc)

	type outcome struct {
		Heads  []dashboard.Head
		Status rayv1.RayServiceStatuses
		Labels map[string]map[string]string
	}
	pass := func(slim bool) outcome {
		objs := []client.Object{svc.DeepCopy(), rc.DeepCopy()}
		for _, p := range pods {
			p = p.DeepCopy()
			if slim {
				p = cacheneeds.SlimPod(p, PodFields)
			}
			objs = append(objs, p)
		}
		store, heads := newStore(objs...), &headsSeen{}
		if _, err := reconciler(store, heads).Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		out := outcome{Heads: heads.heads, Labels: map[string]map[string]string{}}
		got := &rayv1.RayService{}
		if err := store.Get(ctx, req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		out.Status = got.Status
		var after corev1.PodList
		if err := store.List(ctx, &after); err != nil {
			t.Fatal(err)
		}
		for _, p := range after.Items {
			out.Labels[p.Name] = p.Labels
		}
		return out
	}
	whole, slim := pass(false), pass(true)
	if diff := cmp.Diff(whole, slim); diff != "" {
		t.Errorf("the controller sees differently in slim pods (-whole +slim):\n%s", diff)
	}
	want := dashboard.Head{Cluster: types.NamespacedName{Namespace: "ns", Name: "svc-a"}, Pod: "head-uid", Restarts: 2, PodName: "svc-a-head",
		PodIP: "127.0.0.10", Port: 8265, ServePort: 8001}
	if !slices.Contains(whole.Heads, want) {
		t.Errorf("heads asked for %+v; want %+v among them (the case no longer exercises what it should)", whole.Heads, want)
	}
}

// runningPods are a cluster's head and worker, running and ready, as a kubelet reports them.
// The head's Ray container serves on a port of its own and restarted twice.
func runningPods(rc *rayv1.RayCluster) []*corev1.Pod {
	owner := ownerOf(rc)
	pod := func(name, uid string, node rayv1.RayNodeType, ip string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name, p.Namespace, p.UID = name, rc.Namespace, types.UID(uid)
		p.Labels = map[string]string{rayv1.ClusterLabelKey: rc.Name, rayv1.NodeTypeLabelKey: string(node)}
		p.OwnerReferences = owner
		p.Spec = corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "ray-" + string(node), Image: "rayproject/ray",
			Ports: []corev1.ContainerPort{{Name: "gcs", ContainerPort: 6379}, {Name: "serve", ContainerPort: 8001}}}}}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, HostIP: "127.0.0.1", QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "ray-" + string(node), Ready: true, RestartCount: 2, Image: "rayproject/ray",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
		return p
	}
	return []*corev1.Pod{pod("svc-a-head", "head-uid", rayv1.HeadNode, "127.0.0.10"), pod("svc-a-worker", "worker-uid", rayv1.WorkerNode, "127.0.0.11")}
}

func ownerOf(rc *rayv1.RayCluster) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind(rayv1.RayClusterKind))}
}
