package cacheneeds

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := rayv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func unstructuredOf(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

func TestUnion(t *testing.T) {
	s := testScheme(t)
	podGroup := schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}
	a := Needs{Kinds: []Kind{{Object: &corev1.Pod{}, Scope: RayPods}, {Object: &corev1.Service{}, Scope: CreatedByRaygate}, {Object: unstructuredOf(podGroup), Scope: CreatedByRaygate}},
		Pods: Phase | ContainerStates}
	b := Needs{Kinds: []Kind{{Object: &corev1.Pod{}, Scope: RayPods}, {Object: &rayv1.RayService{}}, {Object: unstructuredOf(podGroup), Scope: CreatedByRaygate}},
		Pods: Phase | ServePort}
	u, err := Union(s, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if u.Pods != Phase|ContainerStates|ServePort {
		t.Errorf("pod fields %s", u.Pods)
	}
	got, err := u.GVKs(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Errorf("kinds %v: want Pod, Service, RayService and PodGroup, each once", got)
	}
	if !u.Has(podGroup, s) || !u.Has(rayv1.GroupVersion.WithKind("RayService"), s) || u.Has(rayv1.GroupVersion.WithKind("RayCluster"), s) {
		t.Errorf("Has is wrong for %v", got)
	}
}

// One kind, two selections: the cache can hold only one, so the union refuses.
func TestUnionRefusesConflictingDeclarations(t *testing.T) {
	s := testScheme(t)
	for _, tc := range []struct {
		name string
		a, b Kind
		want string
	}{
		{"scopes", Kind{Object: &corev1.Service{}, Scope: CreatedByRaygate}, Kind{Object: &corev1.Service{}}, "two scopes"},
		{"typed and unstructured", Kind{Object: &corev1.Service{}}, Kind{Object: unstructuredOf(corev1.SchemeGroupVersion.WithKind("Service"))}, "declared both as"},
	} {
		_, err := Union(s, Needs{Kinds: []Kind{tc.a}}, Needs{Kinds: []Kind{tc.b}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestScopeSelectors(t *testing.T) {
	ours := labels.Set{rayv1.KubernetesCreatedByLabelKey: rayv1.ComponentName}
	rayPod := labels.Set{rayv1.ClusterLabelKey: "demo"}
	other := labels.Set{"app": "other"}
	if Everything.Selector() != nil {
		t.Error("Everything has a selector")
	}
	if s := CreatedByRaygate.Selector(); !s.Matches(ours) || s.Matches(other) || s.Matches(rayPod) {
		t.Errorf("CreatedByRaygate selects %s", s)
	}
	if s := RayPods.Selector(); !s.Matches(rayPod) || s.Matches(other) || s.Matches(ours) {
		t.Errorf("RayPods selects %s", s)
	}
}
