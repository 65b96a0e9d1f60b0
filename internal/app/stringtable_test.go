package app

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/raygate/raygate/controllers/raycluster"
	"github.com/raygate/raygate/controllers/rayservice"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/test/builders"
)

// decodedWorkerPod is worker pod i (four per cluster) as the pod cache gets it: decoded from
// the API server's protobuf, running and ready like a kwok pod.
func decodedWorkerPod(t testing.TB, i int) *corev1.Pod {
	t.Helper()
	rc := builders.RayCluster(fmt.Sprintf("cluster-%04d", i/4), "bench").Obj()
	defaulting.RayCluster(rc)
	p := raypod.WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], nil, raypod.Settings{})
	p.Name = fmt.Sprintf("%s%05d", p.GenerateName, i)
	p.UID = types.UID(fmt.Sprintf("0c9a7a3e-8a1b-4c1d-9a0e-%012d", i))
	p.ResourceVersion = fmt.Sprint(1000 + i)
	p.Spec.NodeName = "kwok-node-0"
	now := metav1.Now()
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.1.0.5", StartTime: &now, QOSClass: corev1.PodQOSGuaranteed,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "ray-worker", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}}
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := &corev1.Pod{}
	if err := out.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameBytes: whether two strings share their bytes (the point of the table).
func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) } //nolint:gosec // compares addresses only

func TestStringTableSharesAndKeepsContent(t *testing.T) {
	transform := slimSharedPod(raycluster.PodFields|rayservice.PodFields, newStringTable(maxSharedStrings))
	var pods []*corev1.Pod
	for i := range 8 {
		plain, err := slimPod(decodedWorkerPod(t, i))
		if err != nil {
			t.Fatal(err)
		}
		out, err := transform(decodedWorkerPod(t, i))
		if err != nil {
			t.Fatal(err)
		}
		pod := out.(*corev1.Pod)
		if want := plain.(*corev1.Pod); !reflect.DeepEqual(pod, want) {
			t.Fatalf("pod %d changed by sharing:\n got %+v\nwant %+v", i, pod, want)
		}
		pods = append(pods, pod)
	}
	a, b, other := pods[0], pods[1], pods[4] // a and b: one cluster; other: the next one
	for k, v := range a.Labels {
		for k2, v2 := range b.Labels {
			if k == k2 && (!sameBytes(k, k2) || !sameBytes(v, v2)) {
				t.Errorf("label %s=%s is not shared by two pods of one cluster", k, v)
			}
		}
	}
	if !sameBytes(a.Namespace, other.Namespace) || !sameBytes(a.OwnerReferences[0].Kind, other.OwnerReferences[0].Kind) ||
		!sameBytes(string(a.Status.Phase), string(other.Status.Phase)) || !sameBytes(a.Spec.Containers[0].Name, other.Spec.Containers[0].Name) {
		t.Error("namespace, owner kind, phase or container name not shared across clusters")
	}
	if a.Name == b.Name || a.UID == b.UID {
		t.Error("pods lost their own names")
	}
	if passed, err := transform("not a pod"); err != nil || passed != "not a pod" {
		t.Errorf("other objects must pass through: %v %v", passed, err)
	}
}

// Tenants choose label values: the table never holds more than its bound, and long strings
// are never kept.
func TestStringTableIsBounded(t *testing.T) {
	tab := newStringTable(100)
	for i := range 1000 {
		if got := tab.share(fmt.Sprint("v", i)); got != fmt.Sprint("v", i) {
			t.Fatalf("share changed a string: %q", got)
		}
		if len(tab.strings) > 100 {
			t.Fatalf("%d strings kept, bound 100", len(tab.strings))
		}
	}
	long := strings.Repeat("x", maxSharedString+1)
	tab.share(long)
	if _, kept := tab.strings[long]; kept {
		t.Error("a string longer than the bound was kept")
	}
}

// Memory of 4,000 cached worker pods with and without shared strings, logged for the record;
// checked only for a saving.
func TestStringTableMemory(t *testing.T) {
	retained := func(share bool) uint64 {
		tab := newStringTable(maxSharedStrings)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		kept := make([]*corev1.Pod, 4000)
		for i := range kept {
			out, _ := slimPod(decodedWorkerPod(t, i))
			kept[i] = out.(*corev1.Pod)
			if share {
				tab.pod(kept[i])
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(kept)
		return after.HeapAlloc - before.HeapAlloc
	}
	plain, shared := retained(false), retained(true)
	t.Logf("4,000 cached pods: %.0f B each without shared strings, %.0f B with", float64(plain)/4000, float64(shared)/4000)
	if shared >= plain {
		t.Errorf("sharing strings saves nothing: %d vs %d bytes", shared, plain)
	}
}
