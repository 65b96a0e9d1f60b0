package eventrecorder

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// countingSink is client-go's EventSink that only counts: what stays on the heap is the
// broadcaster's own.
type countingSink struct{ n atomic.Int64 }

func (s *countingSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.n.Add(1)
	return e, nil
}

func (s *countingSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.n.Add(1)
	return e, nil
}

func (s *countingSink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	s.n.Add(1)
	return e, nil
}

const memEvents = 5000

// memPod is a RayCluster pod as the controllers report on it.
func memPod(i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: fmt.Sprintf("bench-%03d", i/4),
		Name:      fmt.Sprintf("cluster-%04d-worker-group-%05d", i/4, i),
		UID:       types.UID(fmt.Sprintf("0f8fad5b-d9cb-469f-a165-%012d", i)),
	}}
}

// emit records memEvents distinct Events, 100 at a time, waiting for each batch to be
// written so client-go's broadcaster (which drops when its queue is full) sees them all.
func emit(t *testing.T, rec events.EventRecorder, written func() int64) {
	t.Helper()
	for i := 0; i < memEvents; i++ {
		rec.Eventf(memPod(i), nil, corev1.EventTypeNormal, "CreatedWorkerPod", "Create",
			"Created worker pod %s for group %s (replica %d of %d)", memPod(i).Name, "worker-group", i%3+1, 3)
		if (i+1)%100 == 0 {
			deadline := time.Now().Add(60 * time.Second)
			for written() < int64(i+1) {
				if time.Now().After(deadline) {
					t.Fatalf("only %d of %d events written", written(), i+1)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
}

func heap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestRetainedHeapVersusClientGo logs the heap each recorder still holds after writing 5,000
// distinct Events (the figure quoted in issue 21's notes). Only a generous sanity bound is
// asserted: the heap is noisy on a shared machine.
func TestRetainedHeapVersusClientGo(t *testing.T) {
	if testing.Short() {
		t.Skip("memory comparison")
	}
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// client-go's events/v1 broadcaster, as controller-runtime's GetEventRecorder uses it.
	base := heap()
	sink := &countingSink{}
	b := events.NewBroadcaster(sink)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	emit(t, b.NewRecorder(scheme, "raycluster-controller"), sink.n.Load)
	clientGo := int64(heap()) - int64(base)
	runtime.KeepAlive(b)
	b.Shutdown()
	b = nil

	// Ours, against a client that accepts and forgets every write.
	var writes atomic.Int64
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			writes.Add(1)
			return nil
		},
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			writes.Add(1)
			return nil
		},
	})
	base = heap()
	w := New(c, scheme, Options{Log: testr.New(t)})
	go func() { _ = w.Start(ctx) }()
	emit(t, w.Recorder("raycluster-controller"), writes.Load)
	ours := int64(heap()) - int64(base)
	runtime.KeepAlive(w)
	entries := w.series.len() // locked: a worker may still be recording its last write

	t.Logf("retained heap after %d distinct events: client-go events broadcaster %.2f MB (%d B/event), raygate eventrecorder %.2f MB (%d B/event, series cache %d entries)",
		memEvents, float64(clientGo)/1e6, clientGo/memEvents, float64(ours)/1e6, ours/memEvents, entries)
	if ours > 16<<20 {
		t.Errorf("raygate's recorder retains %d bytes after %d events", ours, memEvents)
	}
}
