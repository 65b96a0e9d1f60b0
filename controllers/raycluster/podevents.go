package raycluster

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// podUpdateChanged lets a pod update through only when the pod as cached changed beyond its
// resourceVersion. The cache keeps of a pod only what the controllers read
// (internal/app/cache.go), so a kubelet status update that moves only what is dropped there
// (the PodScheduled, Initialized and ContainersReady conditions, host IPs, image IDs,
// init containers' states) arrives as an update with nothing new, and its pass would find
// nothing to do. Creations and deletions always go through.
var podUpdateChanged = predicate.Funcs{
	UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*corev1.Pod)
		cur, okCur := e.ObjectNew.(*corev1.Pod)
		return !okOld || !okCur || !samePodApartFromVersion(old, cur)
	},
}

// samePodApartFromVersion compares two versions of a pod without their resourceVersion and
// managedFields. The comparison is strict (reflect.DeepEqual: nil and empty differ, so do
// two spellings of a quantity), so a doubt lets the update through; it costs a fraction of
// the time and memory of apimachinery's semantic comparison, on every pod update
// (docs/benchmarks.md).
func samePodApartFromVersion(a, b *corev1.Pod) bool {
	ma, mb := a.ObjectMeta, b.ObjectMeta // copies: clearing fields leaves the cache's alone
	ma.ResourceVersion, mb.ResourceVersion = "", ""
	ma.ManagedFields, mb.ManagedFields = nil, nil
	return reflect.DeepEqual(&ma, &mb) && reflect.DeepEqual(&a.Spec, &b.Spec) && reflect.DeepEqual(&a.Status, &b.Status)
}
