package ownerref

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func controlledBy(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: kind, Name: name, UID: uid, Controller: new(true)}}
}

func svc(name string, refs []metav1.OwnerReference, labels map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", OwnerReferences: refs, Labels: labels}}
}

func TestConflictMessages(t *testing.T) {
	want := svc("demo-abcde-serve-svc", controlledBy("RayCluster", "demo-abcde", "rc"), nil)
	for name, tc := range map[string]struct {
		found    *corev1.Service
		want     *corev1.Service
		passKind string
		text     string
	}{
		"no controller, wanted by the pass's object": {svc("web-head-svc", nil, nil), svc("web-head-svc", controlledBy("RayCluster", "web", "u"), nil), "RayCluster",
			"Service web-head-svc exists and is not controlled by this RayCluster (it has no controller)"},
		"another controller": {svc("svc-serve-svc", controlledBy("Deployment", "gitops", "d"), nil), svc("svc-serve-svc", controlledBy("RayService", "svc", "s"), nil), "RayService",
			"Service svc-serve-svc exists and is not controlled by this RayService (it is controlled by Deployment gitops)"},
		"wanted by another object than the pass's": {svc("demo-abcde-serve-svc", nil, nil), want, "RayService",
			"Service demo-abcde-serve-svc exists and is not controlled by RayCluster demo-abcde (it has no controller)"},
		"a wanted object without a controller is the pass's": {svc("x", nil, nil), svc("x", nil, nil), "RayService",
			"Service x exists and is not controlled by this RayService (it has no controller)"},
	} {
		t.Run(name, func(t *testing.T) {
			got := NewConflict("Service", tc.found, WantedOwner(tc.want, tc.passKind)).String()
			if got != tc.text {
				t.Errorf("got  %q\nwant %q", got, tc.text)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	if got := Message(nil, "anything"); got != "" {
		t.Errorf("no conflicts: %q", got)
	}
	got := Message([]string{"a exists", "b exists"}, "raygate leaves them untouched.")
	if want := "a exists; b exists. raygate leaves them untouched."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestControllers(t *testing.T) {
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o", UID: "o-uid"}}
	mine := svc("a", controlledBy("ConfigMap", "o", "o-uid"), nil)
	other := svc("a", controlledBy("ConfigMap", "o", "other-uid"), nil)
	none := svc("a", nil, nil)
	if !ControlledBy(mine, owner) || ControlledBy(other, owner) || ControlledBy(none, owner) {
		t.Error("ControlledBy compares the controller's UID")
	}
	if !SameController(mine, mine) || SameController(mine, other) || SameController(none, none) || SameController(mine, none) {
		t.Error("SameController needs both controllers, with one UID")
	}
	if Labelled(none) || !Labelled(svc("a", nil, map[string]string{"app.kubernetes.io/created-by": "kuberay-operator"})) {
		t.Error("Labelled reads the created-by label")
	}
}

func TestDecide(t *testing.T) {
	desired := svc("s", nil, map[string]string{"a": "1"})
	stale := svc("s", nil, map[string]string{"a": "0"})
	same := svc("s", nil, map[string]string{"a": "1"})
	headless := svc("s", nil, map[string]string{"recreate": "yes"})
	merge := func(existing, desired *corev1.Service) (*corev1.Service, bool) {
		if existing.Labels["recreate"] == "yes" {
			return nil, true
		}
		if HasEntries(existing.Labels, desired.Labels) {
			return nil, false
		}
		u := existing.DeepCopy()
		u.Labels = desired.Labels
		return u, false
	}
	for name, tc := range map[string]struct {
		desired, existing *corev1.Service
		controlled        bool
		op                Op
		object            *corev1.Service
	}{
		"neither":                        {nil, nil, false, Keep, nil},
		"missing: created":               {desired, nil, false, Create, desired},
		"foreign, wanted: reported":      {desired, stale, false, Report, stale},
		"foreign, not wanted: ignored":   {nil, stale, false, Keep, nil},
		"ours, not wanted: deleted":      {nil, stale, true, Delete, stale},
		"ours, as wanted: kept":          {desired, same, true, Keep, nil},
		"ours, differs: written":         {desired, stale, true, Update, nil},
		"ours, cannot change: recreated": {desired, headless, true, Recreate, headless},
	} {
		t.Run(name, func(t *testing.T) {
			c := Decide(tc.desired, tc.existing, tc.controlled, merge)
			if c.Op != tc.op {
				t.Fatalf("op %v, want %v", c.Op, tc.op)
			}
			switch {
			case tc.op == Update:
				if c.Object == stale || c.Object.Labels["a"] != "1" {
					t.Errorf("update writes a merged copy, got %+v", c.Object)
				}
			case c.Object != tc.object:
				t.Errorf("object %v, want %v", c.Object, tc.object)
			}
		})
	}
	if stale.Labels["a"] != "0" {
		t.Error("Decide changed the existing object")
	}
}

func TestOpNames(t *testing.T) {
	for op, want := range map[Op]string{Keep: "keep", Create: "create", Update: "update", Recreate: "recreate", Delete: "delete", Report: "report", Op(42): "unknown"} {
		if op.String() != want {
			t.Errorf("%d: %q, want %q", int(op), op.String(), want)
		}
	}
}
