package raycluster

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestSplitControlled(t *testing.T) {
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "rc-uid"}}
	ref := func(uid types.UID, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: rayv1.RayClusterKind, Name: "c", UID: uid, Controller: ptr.To(controller)}}
	}
	pod := func(name string, refs []metav1.OwnerReference) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", OwnerReferences: refs}}
	}
	cases := []struct {
		name        string
		pods        []corev1.Pod
		wantOwned   []string
		wantForeign []string
	}{
		{name: "none"},
		{name: "controlled by the cluster", pods: []corev1.Pod{pod("a", ref("rc-uid", true))}, wantOwned: []string{"a"}},
		{name: "no owner", pods: []corev1.Pod{pod("b", nil)}, wantForeign: []string{"b"}},
		{name: "the cluster's name, another UID", pods: []corev1.Pod{pod("c", ref("old-uid", true))}, wantForeign: []string{"c"}},
		{name: "owned but not as controller", pods: []corev1.Pod{pod("d", ref("rc-uid", false))}, wantForeign: []string{"d"}},
		{name: "mixed, foreign names sorted", pods: []corev1.Pod{pod("z", nil), pod("a", ref("rc-uid", true)), pod("m", nil), pod("b", ref("rc-uid", true))},
			wantOwned: []string{"a", "b"}, wantForeign: []string{"m", "z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			owned, foreign := splitControlled(tc.pods, rc)
			var names []string
			for _, p := range owned {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tc.wantOwned) || !slices.Equal(foreign, tc.wantForeign) {
				t.Errorf("controlled %v, foreign %v; want %v, %v", names, foreign, tc.wantOwned, tc.wantForeign)
			}
		})
	}
}

func TestStrayPodsReportEachSetOnce(t *testing.T) {
	k := types.NamespacedName{Namespace: "ns", Name: "c"}
	var s strayPods
	steps := []struct {
		names []string
		want  bool
	}{
		{names: nil, want: false},
		{names: []string{"a"}, want: true},
		{names: []string{"a"}, want: false},
		{names: []string{"a", "b"}, want: true},
		{names: []string{"ab"}, want: true}, // not the same as a, b
		{names: nil, want: false},
		{names: []string{"ab"}, want: true}, // gone and back: reported again
	}
	for i, st := range steps {
		if got := s.changed(k, st.names); got != st.want {
			t.Fatalf("step %d (%v): changed = %v, want %v", i, st.names, got, st.want)
		}
	}
	s.forget(k)
	if !s.changed(k, []string{"ab"}) {
		t.Fatal("after forget, the set is reported again")
	}
}
