package rayspec

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestWorkerGroupDesiredReplicas(t *testing.T) {
	cases := []struct {
		name                   string
		replicas, min, max     *int32
		hosts                  int32
		suspend                bool
		wantReplicas, wantPods int32
	}{
		{name: "normal", replicas: ptr.To[int32](3), min: ptr.To[int32](1), max: ptr.To[int32](10), hosts: 1, wantReplicas: 3, wantPods: 3},
		{name: "below min", replicas: ptr.To[int32](0), min: ptr.To[int32](2), max: ptr.To[int32](10), hosts: 1, wantReplicas: 2, wantPods: 2},
		{name: "above max", replicas: ptr.To[int32](15), min: ptr.To[int32](1), max: ptr.To[int32](10), hosts: 1, wantReplicas: 10, wantPods: 10},
		{name: "multi-host", replicas: ptr.To[int32](3), min: ptr.To[int32](1), max: ptr.To[int32](10), hosts: 4, wantReplicas: 3, wantPods: 12},
		{name: "suspended", replicas: ptr.To[int32](3), min: ptr.To[int32](1), max: ptr.To[int32](10), hosts: 1, suspend: true, wantReplicas: 0, wantPods: 0},
		{name: "nil replicas uses min", min: ptr.To[int32](2), hosts: 1, wantReplicas: 2, wantPods: 2},
		{name: "all nil", hosts: 0, wantReplicas: 0, wantPods: 0},
		{name: "saturates", replicas: ptr.To[int32](math.MaxInt32), hosts: 4, wantReplicas: math.MaxInt32, wantPods: math.MaxInt32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := rayv1.WorkerGroupSpec{Replicas: tc.replicas, MinReplicas: tc.min, MaxReplicas: tc.max, NumOfHosts: tc.hosts, Suspend: &tc.suspend}
			if got := WorkerGroupDesiredReplicas(g); got != tc.wantReplicas {
				t.Errorf("replicas = %d, want %d", got, tc.wantReplicas)
			}
			if got := WorkerGroupDesiredPods(g); got != tc.wantPods {
				t.Errorf("pods = %d, want %d", got, tc.wantPods)
			}
		})
	}
}

func spec(image string, groups ...rayv1.WorkerGroupSpec) rayv1.RayClusterSpec {
	return rayv1.RayClusterSpec{
		HeadGroupSpec:    rayv1.HeadGroupSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", Image: image}}}}},
		WorkerGroupSpecs: groups,
	}
}

func group(name string, replicas int32) rayv1.WorkerGroupSpec {
	return rayv1.WorkerGroupSpec{GroupName: name, Replicas: &replicas, MinReplicas: ptr.To[int32](0), MaxReplicas: ptr.To[int32](10), NumOfHosts: 1,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-worker", Image: "ray"}}}}}
}

func TestHashWithoutReplicas(t *testing.T) {
	base := spec("ray:1", group("a", 1))
	h := func(s rayv1.RayClusterSpec) string {
		t.Helper()
		v, err := HashWithoutReplicas(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	same := map[string]func(*rayv1.RayClusterSpec){
		"replicas": func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].Replicas = ptr.To[int32](7) },
		"min and max": func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs[0].MinReplicas = ptr.To[int32](2)
			s.WorkerGroupSpecs[0].MaxReplicas = ptr.To[int32](9)
		},
		"workersToDelete": func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{"p"} },
		"upgradeStrategy": func(s *rayv1.RayClusterSpec) {
			s.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
		},
	}
	for name, mutate := range same {
		s := *base.DeepCopy()
		mutate(&s)
		if h(s) != h(base) {
			t.Errorf("changing %s changed the hash", name)
		}
	}
	differ := map[string]func(*rayv1.RayClusterSpec){
		"head image":   func(s *rayv1.RayClusterSpec) { s.HeadGroupSpec.Template.Spec.Containers[0].Image = "ray:2" },
		"worker image": func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "ray:2" },
		"added group":  func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs = append(s.WorkerGroupSpecs, group("b", 1)) },
		"numOfHosts":   func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].NumOfHosts = 2 },
	}
	for name, mutate := range differ {
		s := *base.DeepCopy()
		mutate(&s)
		if h(s) == h(base) {
			t.Errorf("changing %s did not change the hash", name)
		}
	}
	if got := h(base); len(got) != 32 || strings.ToLower(got) != got {
		t.Errorf("hash %q: want 32 lower-case characters (fits an annotation value and a label)", got)
	}
	// Pods carry the hash: a different value for the same spec would make every cluster with
	// upgradeStrategy Recreate recreate its pods when raygate is upgraded.
	if got, want := h(base), "38dcucmqio7jvrs6ruocjgs31kuvodt8"; got != want {
		t.Errorf("hash of the base spec = %q, want %q as in every earlier version", got, want)
	}
	scaled := *base.DeepCopy()
	scaled.WorkerGroupSpecs[0].Replicas = ptr.To[int32](7)
	scaled.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{"p"}
	before := *scaled.DeepCopy()
	h(scaled)
	if !equality.Semantic.DeepEqual(scaled, before) {
		t.Error("hashing changed the spec it was given")
	}
}

func TestFirstWorkerGroupsDetectsAppendOnly(t *testing.T) {
	old := spec("ray:1", group("a", 1))
	appended := spec("ray:1", group("a", 3), group("b", 1))
	oldHash, _ := HashWithoutReplicas(old)
	prefixHash, _ := HashWithoutReplicas(FirstWorkerGroups(appended, len(old.WorkerGroupSpecs)))
	if oldHash != prefixHash {
		t.Fatal("appending a worker group must keep the hash of the existing groups")
	}
	changed := spec("ray:2", group("a", 1), group("b", 1))
	prefixHash, _ = HashWithoutReplicas(FirstWorkerGroups(changed, 1))
	if oldHash == prefixHash {
		t.Fatal("a changed image must change the prefix hash")
	}
}

func TestDerivedNamesFit(t *testing.T) {
	for _, n := range ServiceDerivedNames(strings.Repeat("s", 47)) {
		if len(n) > MaxLabelValueLength {
			t.Errorf("%q is %d characters", n, len(n))
		}
	}
	long := 0
	for _, n := range ServiceDerivedNames(strings.Repeat("s", 48)) {
		if len(n) > MaxLabelValueLength {
			long++
		}
	}
	if long == 0 {
		t.Error("a 48-character RayService name must produce a derived name over the limit")
	}
	for _, n := range ClusterDerivedNames(strings.Repeat("c", 53)) {
		if len(n) > MaxLabelValueLength {
			t.Errorf("%q is %d characters", n, len(n))
		}
	}
}
