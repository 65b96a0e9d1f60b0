package podquota

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// strings turns a ResourceList into comparable text.
func strs(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func cluster(change func(*rayv1.RayCluster)) *rayv1.RayCluster {
	rc := builders.RayCluster("demo", "ns").Obj()
	if change != nil {
		change(rc)
	}
	defaulting.RayCluster(rc)
	return rc
}

func TestUsageCountsAsQuotaDoes(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
		w := &rc.Spec.WorkerGroupSpecs[0].Template.Spec
		// limits only: the API server defaults requests to them
		w.Containers[0].Resources = corev1.ResourceRequirements{Limits: list("cpu", "100m", "memory", "128Mi", "nvidia.com/gpu", "1", "hugepages-2Mi", "2Mi")}
		w.Overhead = list("cpu", "10m")
	})
	pods, _ := ClusterPods(rc, raypod.Settings{})
	if len(pods) != 2 {
		t.Fatalf("got %d pod kinds, want the head and one worker", len(pods))
	}
	head := strs(Usage(pods[0].Pod))
	// ray-head 1 CPU/2Gi plus the autoscaler sidecar's 500m/512Mi
	if d := cmp.Diff(map[string]string{"count/pods": "1", "pods": "1", "cpu": "1500m", "requests.cpu": "1500m", "limits.cpu": "1500m",
		"memory": "2560Mi", "requests.memory": "2560Mi", "limits.memory": "2560Mi"}, head); d != "" {
		t.Errorf("head usage (-want +got):\n%s", d)
	}
	worker := strs(Usage(pods[1].Pod))
	// the wait-gcs-ready init container (200m, 256Mi) is larger than the Ray container, plus the overhead
	if d := cmp.Diff(map[string]string{"count/pods": "1", "pods": "1", "cpu": "210m", "requests.cpu": "210m", "limits.cpu": "210m",
		"memory": "256Mi", "requests.memory": "256Mi", "limits.memory": "256Mi",
		"requests.nvidia.com/gpu": "1", "hugepages-2Mi": "2Mi", "requests.hugepages-2Mi": "2Mi"}, worker); d != "" {
		t.Errorf("worker usage (-want +got):\n%s", d)
	}
}

// The admin's sidecars (the operator's configuration) ask for resources in every pod they
// join, and ENABLE_INIT_CONTAINER_INJECTION=false leaves wait-gcs-ready's out.
func TestUsageWithOperatorSettings(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: list("cpu", "100m", "memory", "128Mi")}
	})
	sidecar := corev1.Container{Name: "log-shipper", Image: "fluent/fluent-bit:3", Resources: corev1.ResourceRequirements{Requests: list("cpu", "50m", "memory", "64Mi")}}
	s := raypod.Settings{NoWaitGCSInitContainer: true, Defaults: raypod.PodDefaults{HeadSidecars: []corev1.Container{sidecar}, WorkerSidecars: []corev1.Container{sidecar}}}
	pods, _ := ClusterPods(rc, s)
	head, worker := strs(Usage(pods[0].Pod)), strs(Usage(pods[1].Pod))
	if head["requests.cpu"] != "1050m" || head["requests.memory"] != "2112Mi" {
		t.Errorf("head usage %v: ray-head 1 CPU/2Gi plus the sidecar's 50m/64Mi", head)
	}
	if worker["requests.cpu"] != "150m" || worker["requests.memory"] != "192Mi" {
		t.Errorf("worker usage %v: ray-worker 100m/128Mi plus the sidecar's, no wait-gcs-ready", worker)
	}
}

func TestClusterPodsCounts(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		g := &rc.Spec.WorkerGroupSpecs[0]
		g.Replicas, g.MinReplicas, g.NumOfHosts = ptr.To[int32](2), ptr.To[int32](3), 2
		off := builders.WorkerGroup("off", 5)
		off.Suspend = ptr.To(true)
		rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, off, builders.WorkerGroup("none", 0))
	})
	var counts []int64
	pods, _ := ClusterPods(rc, raypod.Settings{})
	for _, p := range pods {
		counts = append(counts, p.Count)
	}
	if d := cmp.Diff([]int64{1, 6}, counts); d != "" {
		t.Errorf("the head and max(replicas, minReplicas) × numOfHosts, suspended and empty groups left out (-want +got):\n%s", d)
	}
	if got := Surge(pods, 40); got[0].Count != 1 || got[1].Count != 3 {
		t.Errorf("a 40%% surge of 6 workers is a new head and 3 workers, got %d and %d", got[0].Count, got[1].Count)
	}
	rc.Spec.Suspend = ptr.To(true)
	if got, _ := ClusterPods(rc, raypod.Settings{}); len(got) != 0 {
		t.Errorf("a suspended cluster has no pods, got %d", len(got))
	}
}

func TestClusterPodsShareWhatQuotaCannotTellApart(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs = nil
		for i := range MaxPodKinds + 10 {
			g := builders.WorkerGroup(fmt.Sprintf("g%d", i), 1)
			g.Template.Spec.Containers[0].Image = fmt.Sprintf("rayproject/ray:2.52.%d", i)
			rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, g)
		}
	})
	pods, ok := ClusterPods(rc, raypod.Settings{})
	if !ok || len(pods) != 2 || pods[1].Count != MaxPodKinds+10 {
		t.Fatalf("groups differing in their image only share one pod: ok %v, %d kinds", ok, len(pods))
	}
	for i := range rc.Spec.WorkerGroupSpecs {
		rc.Spec.WorkerGroupSpecs[i].Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(fmt.Sprintf("%dm", 100+i))
	}
	if pods, ok := ClusterPods(rc, raypod.Settings{}); ok || pods != nil {
		t.Errorf("more than %d kinds of pod are not counted: ok %v, %d kinds", MaxPodKinds, ok, len(pods))
	}
}

func TestDemandAndShortfalls(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3) })
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "ns"},
		Spec:   corev1.ResourceQuotaSpec{Hard: list("requests.cpu", "4", "pods", "10", "limits.memory", "100Gi")},
		Status: corev1.ResourceQuotaStatus{Hard: list("requests.cpu", "4", "pods", "10", "limits.memory", "100Gi"), Used: list("requests.cpu", "1500m", "pods", "2")}}
	pods, _ := ClusterPods(rc, raypod.Settings{})
	need := Demand(q, pods)
	if d := cmp.Diff(map[string]string{"requests.cpu": "4", "pods": "4", "limits.memory": "5Gi"}, strs(need)); d != "" {
		t.Errorf("demand, masked to what the quota limits (-want +got):\n%s", d)
	}
	var got []string
	for _, s := range Shortfalls(q, need) {
		got = append(got, s.String())
	}
	if d := cmp.Diff([]string{"requests.cpu 4, 2500m left (hard 4, used 1500m)"}, got); d != "" {
		t.Errorf("shortfalls (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"requests.cpu": "1"}, strs(Sub(list("requests.cpu", "4", "pods", "2"), list("requests.cpu", "3", "pods", "3")))); d != "" {
		t.Errorf("Sub keeps only what grows (-want +got):\n%s", d)
	}
}

func TestScopes(t *testing.T) {
	pods, _ := ClusterPods(cluster(func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.Template.Spec.PriorityClassName = "high" }), raypod.Settings{})
	head, worker := pods[0].Pod, pods[1].Pod
	for _, tt := range []struct {
		name         string
		spec         corev1.ResourceQuotaSpec
		head, worker bool
	}{
		{"no scope", corev1.ResourceQuotaSpec{}, true, true},
		{"BestEffort: Ray pods request resources", corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}, false, false},
		{"NotTerminating", corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}}, true, true},
		{"PriorityClass In high", corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}}, true, false},
		{"PriorityClass DoesNotExist", corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpDoesNotExist}}}}, false, true},
	} {
		q := &corev1.ResourceQuota{Spec: tt.spec}
		if Matches(q, head) != tt.head || Matches(q, worker) != tt.worker {
			t.Errorf("%s: head %v worker %v, want %v %v", tt.name, Matches(q, head), Matches(q, worker), tt.head, tt.worker)
		}
	}
}

func TestMissingRequests(t *testing.T) {
	rc := cluster(func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: list("cpu", "1")}
	})
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("requests.cpu", "10", "limits.memory", "10Gi", "pods", "5")}}
	pods, _ := ClusterPods(rc, raypod.Settings{})
	got := MissingRequests(q, pods)
	if d := cmp.Diff(map[corev1.ResourceName][]string{"limits.memory": {"ray-worker"}}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// The CrossNamespacePodAffinity scope holds pods with any affinity or anti-affinity term,
// required or preferred, that names other namespaces.
func TestCrossNamespacePodAffinityScope(t *testing.T) {
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity}}}
	term := func(cross bool) corev1.PodAffinityTerm {
		t := corev1.PodAffinityTerm{TopologyKey: "zone"}
		if cross {
			t.NamespaceSelector = &metav1.LabelSelector{}
		}
		return t
	}
	for _, tt := range []struct {
		name     string
		affinity *corev1.Affinity
		want     bool
	}{
		{"no affinity", nil, false},
		{"same-namespace terms", &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(false)}}}, false},
		{"required affinity across namespaces", &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(false), term(true)}}}, true},
		{"preferred anti-affinity across namespaces", &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term(true)}}}}, true},
		{"namespaces listed", &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone", Namespaces: []string{"other"}}}}}, true},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: tt.affinity}}
		if got := Matches(q, pod); got != tt.want {
			t.Errorf("%s: matches %v, want %v", tt.name, got, tt.want)
		}
	}
}
