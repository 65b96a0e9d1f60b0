package eventrecorder

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// sent records the requests the writer sent.
type sent struct {
	mu      sync.Mutex
	creates int
	patches []string // "<ns>/<name> <patch>"
	patchFn func() error
}

func (s *sent) numPatches() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.patches) }

type fixture struct {
	w     *Writer
	c     client.Client
	clock *clock
	sent  *sent
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	base := fake.NewClientBuilder().WithScheme(scheme).Build()
	s := &sent{}
	c := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			s.mu.Lock()
			s.creates++
			s.mu.Unlock()
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			data, _ := p.Data(obj)
			s.mu.Lock()
			s.patches = append(s.patches, obj.GetNamespace()+"/"+obj.GetName()+" "+string(data))
			fn := s.patchFn
			s.mu.Unlock()
			if fn != nil {
				if err := fn(); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	})
	ck := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	o.Now = ck.now
	o.Hostname = "host-1"
	o.Log = testr.New(t)
	return &fixture{w: New(c, scheme, o), c: c, clock: ck, sent: s}
}

func (f *fixture) events(t *testing.T) []eventsv1.Event {
	t.Helper()
	var l eventsv1.EventList
	if err := f.c.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func (f *fixture) drain(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.w.Drain(ctx)
	if q := f.w.Queued(); q != 0 {
		t.Fatalf("%d events still queued after drain", q)
	}
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID("uid-" + name)}}
}

func TestFirstEventCreatesWithClientGoFields(t *testing.T) {
	f := newFixture(t, Options{})
	rec := f.w.Recorder("raycluster-controller")
	related := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "head-svc", UID: "svc-uid"}}
	rec.Eventf(pod("head"), related, corev1.EventTypeWarning, "FailedCreate", "Create", "could not create %s: %d", "pod", 3)
	f.drain(t)

	got := f.events(t)
	if len(got) != 1 {
		t.Fatalf("events: got %d, want 1", len(got))
	}
	ev := got[0]
	want := map[string]string{
		"namespace":           ev.Namespace + "=team-a",
		"reportingController": ev.ReportingController + "=raycluster-controller",
		"reportingInstance":   ev.ReportingInstance + "=raycluster-controller-host-1",
		"type":                ev.Type + "=Warning",
		"reason":              ev.Reason + "=FailedCreate",
		"action":              ev.Action + "=Create",
		"note":                ev.Note + "=could not create pod: 3",
		"regarding":           ev.Regarding.APIVersion + " " + ev.Regarding.Kind + " " + ev.Regarding.Namespace + "/" + ev.Regarding.Name + " " + string(ev.Regarding.UID) + "=v1 Pod team-a/head uid-head",
	}
	for field, pair := range want {
		g, w, _ := strings.Cut(pair, "=")
		if g != w {
			t.Errorf("%s: got %q, want %q", field, g, w)
		}
	}
	if ev.Related == nil || ev.Related.Kind != "Service" || ev.Related.Name != "head-svc" || ev.Related.UID != "svc-uid" {
		t.Errorf("related: got %+v", ev.Related)
	}
	wantName := "head." + strconv.FormatInt(f.clock.now().UnixNano(), 16)
	if ev.Name != wantName {
		t.Errorf("name: got %q, want %q", ev.Name, wantName)
	}
	if !ev.EventTime.Time.Equal(f.clock.now()) || ev.Series != nil {
		t.Errorf("eventTime %v series %+v", ev.EventTime, ev.Series)
	}
}

func TestRepeatPatchesSeries(t *testing.T) {
	f := newFixture(t, Options{})
	rec := f.w.Recorder("c")
	p := pod("a")
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Created", "Create", "made it")
	f.drain(t)
	first := f.events(t)[0].Name
	f.clock.add(2 * time.Minute)
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Created", "Create", "made it")
	f.drain(t)

	got := f.events(t)
	if len(got) != 1 || f.sent.creates != 1 {
		t.Fatalf("events %d creates %d, want 1 and 1", len(got), f.sent.creates)
	}
	if f.sent.numPatches() != 1 {
		t.Fatalf("patches: got %d, want 1", f.sent.numPatches())
	}
	at := f.clock.now().UTC().Format(metav1.RFC3339Micro)
	wantPatch := "team-a/" + first + ` {"series":{"count":2,"lastObservedTime":"` + at + `"}}`
	if f.sent.patches[0] != wantPatch {
		t.Errorf("patch sent:\n got %s\nwant %s", f.sent.patches[0], wantPatch)
	}
	var patch map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(f.sent.patches[0], " ", 2)[1]), &patch); err != nil {
		t.Fatalf("patch is not JSON: %v", err)
	}
	if s := got[0].Series; s == nil || s.Count != 2 || !s.LastObservedTime.Time.Equal(f.clock.now()) {
		t.Errorf("series after patch: %+v", s)
	}

	// within 6 minutes of the last occurrence, not of the first
	f.repeatWantsCount(t, 5*time.Minute, func() { rec.Eventf(p, nil, corev1.EventTypeNormal, "Created", "Create", "made it") }, 3)
}

// repeatWantsCount waits d, records an event with record and checks that the only Event's
// series count is then want.
func (f *fixture) repeatWantsCount(t *testing.T, d time.Duration, record func(), want int32) {
	t.Helper()
	f.clock.add(d)
	record()
	f.drain(t)
	if s := f.events(t)[0].Series; s == nil || s.Count != want {
		t.Errorf("series %+v, want count %d", s, want)
	}
}

func TestDifferentNoteOrObjectCreatesNewEvent(t *testing.T) {
	f := newFixture(t, Options{})
	rec := f.w.Recorder("c")
	rec.Eventf(pod("a"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "to %d", 1)
	f.clock.add(time.Millisecond)
	rec.Eventf(pod("a"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "to %d", 2)
	f.clock.add(time.Millisecond)
	rec.Eventf(pod("b"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "to %d", 2)
	f.clock.add(time.Millisecond)
	f.w.Recorder("other").Eventf(pod("b"), nil, corev1.EventTypeNormal, "Scaled", "Scale", "to %d", 2)
	f.drain(t)
	if n := len(f.events(t)); n != 4 || f.sent.numPatches() != 0 {
		t.Errorf("events %d patches %d, want 4 and 0", n, f.sent.numPatches())
	}
}

func TestSeriesCacheStaysBounded(t *testing.T) {
	f := newFixture(t, Options{SeriesEntries: 16})
	rec := f.w.Recorder("c")
	p := pod("a")
	for i := range 200 {
		f.clock.add(time.Millisecond)
		rec.Eventf(p, nil, corev1.EventTypeNormal, "Step", "Step", "step %d", i)
		f.drain(t)
	}
	if n := f.w.series.len(); n != 16 {
		t.Errorf("series cache holds %d entries, want 16", n)
	}
	if n := len(f.w.series.byKey); n != 16 {
		t.Errorf("series index holds %d keys, want 16", n)
	}
	// The newest are remembered; the oldest were evicted and a repeat of them creates anew.
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Step", "Step", "step %d", 199)
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Step", "Step", "step %d", 0)
	f.drain(t)
	if f.sent.numPatches() != 1 || f.sent.creates != 201 {
		t.Errorf("patches %d creates %d, want 1 and 201", f.sent.numPatches(), f.sent.creates)
	}
}

func TestSeriesExpires(t *testing.T) {
	f := newFixture(t, Options{})
	rec := f.w.Recorder("c")
	p := pod("a")
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Ready", "Check", "ready")
	f.drain(t)
	f.clock.add(6*time.Minute + time.Second)
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Ready", "Check", "ready")
	f.drain(t)
	if n := len(f.events(t)); n != 2 || f.sent.numPatches() != 0 {
		t.Errorf("events %d patches %d, want a new event after 6 minutes", n, f.sent.numPatches())
	}
	// Expired entries also leave the cache when others are added.
	f.clock.add(7 * time.Minute)
	rec.Eventf(pod("b"), nil, corev1.EventTypeNormal, "Ready", "Check", "ready")
	f.drain(t)
	if n := f.w.series.len(); n != 1 {
		t.Errorf("series cache holds %d entries after expiry, want 1", n)
	}
}

func TestQueueFullDropsAndCounts(t *testing.T) {
	f := newFixture(t, Options{QueueSize: 2})
	rec := f.w.Recorder("c")
	before := testutil.ToFloat64(droppedTotal)
	done := make(chan struct{})
	go func() {
		// No worker runs: a blocking queue would hang here.
		for i := range 5 {
			rec.Eventf(pod("a"), nil, corev1.EventTypeNormal, "Step", "Step", "step %d", i)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Eventf blocked on a full queue")
	}
	if d := testutil.ToFloat64(droppedTotal) - before; d != 3 {
		t.Errorf("raygate_events_dropped_total rose by %v, want 3", d)
	}
	f.drain(t)
	if n := len(f.events(t)); n != 2 {
		t.Errorf("events written: %d, want the 2 queued", n)
	}
}

func TestStopThenDrainWritesLastPass(t *testing.T) {
	f := newFixture(t, Options{})
	rec := f.w.Recorder("c")
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- f.w.Start(ctx) }()
	rec.Eventf(pod("a"), nil, corev1.EventTypeNormal, "Running", "Run", "while running")
	deadline := time.Now().Add(30 * time.Second)
	for len(f.events(t)) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not write the event")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	// The controllers' last pass, after the worker stopped.
	for i := range 3 {
		rec.Eventf(pod("b"), nil, corev1.EventTypeNormal, "Stopping", "Run", "last %d", i)
	}
	if n := len(f.events(t)); n != 1 {
		t.Fatalf("events before drain: %d, want 1", n)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), DefaultDrainTimeout)
	defer dcancel()
	if n := f.w.Drain(dctx); n != 3 {
		t.Errorf("drain wrote %d, want 3", n)
	}
	if n := len(f.events(t)); n != 4 {
		t.Errorf("events after drain: %d, want 4", n)
	}
}

func TestDrainStopsAtDeadline(t *testing.T) {
	f := newFixture(t, Options{})
	rec := f.w.Recorder("c")
	for i := range 3 {
		rec.Eventf(pod("a"), nil, corev1.EventTypeNormal, "Step", "Step", "step %d", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n := f.w.Drain(ctx); n != 0 || f.w.Queued() != 3 {
		t.Errorf("drain past its deadline wrote %d, left %d", n, f.w.Queued())
	}
}

func TestPatchNotFoundCreates(t *testing.T) {
	f := newFixture(t, Options{})
	rec := f.w.Recorder("c")
	p := pod("a")
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Ready", "Check", "ready")
	f.drain(t)
	first := f.events(t)[0]
	if err := f.c.Delete(context.Background(), &first); err != nil {
		t.Fatal(err)
	}
	f.clock.add(time.Second)
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Ready", "Check", "ready")
	f.drain(t)
	got := f.events(t)
	if f.sent.numPatches() != 1 || len(got) != 1 || got[0].Name == first.Name || got[0].Series != nil {
		t.Fatalf("after a patch NotFound: patches %d events %+v, want one new Event without series", f.sent.numPatches(), got)
	}
	// The new Event is the one the next repeat joins.
	f.repeatWantsCount(t, time.Second, func() { rec.Eventf(p, nil, corev1.EventTypeNormal, "Ready", "Check", "ready") }, 2)
}

func TestPatchOtherErrorDoesNotCreate(t *testing.T) {
	f := newFixture(t, Options{})
	rec := f.w.Recorder("c")
	p := pod("a")
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Ready", "Check", "ready")
	f.drain(t)
	f.sent.patchFn = func() error { return apierrors.NewForbidden(eventsv1.Resource("events"), "x", nil) }
	rec.Eventf(p, nil, corev1.EventTypeNormal, "Ready", "Check", "ready")
	f.drain(t)
	if f.sent.creates != 1 {
		t.Errorf("creates %d: an error other than NotFound must not create a duplicate", f.sent.creates)
	}
}

func TestNoteCappedToValidUTF8(t *testing.T) {
	f := newFixture(t, Options{})
	long := strings.Repeat("é", 700) // 1,400 bytes, two per rune
	f.w.Recorder("c").Eventf(pod("a"), nil, corev1.EventTypeWarning, "Bad", "Check", "%s", long+"\xff")
	f.drain(t)
	note := f.events(t)[0].Note
	if len(note) > NoteLimit || len(note) < NoteLimit-3 || !utf8.ValidString(note) {
		t.Errorf("note: %d bytes, valid UTF-8 %v", len(note), utf8.ValidString(note))
	}
	if got := capNote("ok\xffok"); got != "ok\uFFFDok" {
		t.Errorf("invalid UTF-8: got %q", got)
	}
}

func TestInvalidInputsAreNotRecorded(t *testing.T) {
	f := newFixture(t, Options{})
	rec := f.w.Recorder("c")
	rec.Eventf(nil, nil, corev1.EventTypeNormal, "R", "A", "n")
	rec.Eventf(pod("a"), nil, "Bogus", "R", "A", "n")
	if q := f.w.Queued(); q != 0 {
		t.Errorf("queued %d invalid events", q)
	}
	if n := eventName(strings.Repeat("x", 260), f.clock.now().UnixNano()); len(n) > 253 {
		t.Errorf("event name too long for the API: %d", len(n))
	}
}

// The workers write in parallel: a slow API server must not make a fleet's bring-up overflow
// the queue (one writer at a time dropped a fifth of the events of 1,000 RayClusters).
func TestWorkersWriteInParallel(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	inFlight, most := 0, 0
	all := make(chan struct{})
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			if inFlight == DefaultWorkers {
				close(all)
			}
			mu.Unlock()
			select { // a slow API server: each create waits until all workers are writing
			case <-all:
			case <-time.After(2 * time.Second):
			}
			mu.Lock()
			inFlight--
			mu.Unlock()
			return c.Create(ctx, obj, opts...)
		},
	})
	w := New(c, scheme, Options{Log: testr.New(t)})
	rec := w.Recorder("raycluster-controller")
	for i := range DefaultWorkers {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p" + strconv.Itoa(i)}}
		rec.Eventf(pod, nil, corev1.EventTypeNormal, "Created", "Create", "pod %d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := w.Drain(ctx); n != DefaultWorkers {
		t.Fatalf("drained %d events, want %d", n, DefaultWorkers)
	}
	if most != DefaultWorkers {
		t.Errorf("at most %d events were written at once, want %d", most, DefaultWorkers)
	}
}
