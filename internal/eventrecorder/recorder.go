// Package eventrecorder writes events.k8s.io/v1 Events for raygate's controllers with bounded
// memory and a flush on stop.
//
// client-go's events broadcaster keeps a deep copy of every Event it wrote for up to 12
// minutes to detect series (memory in proportion to a fleet's events: docs/benchmarks.md),
// writes from goroutines nobody waits for, and controller-runtime stops it without flushing.
// Here Eventf formats the Event and puts it on a bounded queue (dropping and counting when
// full, never blocking a reconcile); one worker writes the queue, turning repeats into a
// series on the first Event while remembering only a small fixed-size record per repeat key;
// Drain writes what is left once the controllers stopped.
package eventrecorder

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

const (
	// DefaultQueueSize bounds the Events waiting to be written (each a few hundred bytes).
	DefaultQueueSize = 1000
	// DefaultWorkers is how many Events are written at once. One writer at a time was too
	// slow for a fleet's bring-up (RayClusters created together queue several Events each
	// while the API server is busiest, and a single writer dropped many: docs/benchmarks.md).
	DefaultWorkers = 8
	// DefaultSeriesEntries bounds the repeat keys remembered for series.
	DefaultSeriesEntries = 4096
	// DefaultSeriesWindow is how long after its last occurrence a repeat still joins a series
	// (client-go's events library uses the same 6 minutes).
	DefaultSeriesWindow = 6 * time.Minute
	// DefaultDrainTimeout bounds the flush on stop.
	DefaultDrainTimeout = 5 * time.Second
	// NoteLimit is the API's limit on an Event's note, in bytes.
	NoteLimit = 1024
	// writeTimeout bounds one API request, so a hung API server cannot stall the queue forever.
	writeTimeout = 10 * time.Second
	// dropLogEvery spaces the log lines about dropped Events.
	dropLogEvery = time.Minute
)

// droppedTotal counts Events dropped because the queue was full. One counter for the process:
// tests start several managers in one process and the registry takes a name once.
var droppedTotal = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "raygate_events_dropped_total",
	Help: "Kubernetes Events raygate dropped without writing because its event queue was full.",
})

func init() { metrics.Registry.MustRegister(droppedTotal) }

// Options tune a Writer; zero values take the defaults.
type Options struct {
	QueueSize     int
	Workers       int
	SeriesEntries int
	SeriesWindow  time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Hostname makes the reportingInstance "<controller>-<hostname>" like client-go's
	// (empty: os.Hostname).
	Hostname string
	Log      logr.Logger
}

// Writer writes the Events of every Recorder it made, with Workers requests at a time. Run Start (it is a
// controller-runtime Runnable that does not need leader election) and call Drain after the
// controllers stopped.
type Writer struct {
	client   client.Client
	scheme   *runtime.Scheme
	now      func() time.Time
	hostname string
	log      logr.Logger
	queue    chan *eventsv1.Event
	workers  int
	series   *seriesCache
	lastDrop atomic.Int64
	// lastName is the unix nanos of the last Event name, so two Events of one object in the
	// same clock tick still get distinct names.
	lastName atomic.Int64
}

// New builds a Writer that writes with c (its scheme must know events.k8s.io/v1) and resolves
// object kinds with scheme.
func New(c client.Client, scheme *runtime.Scheme, o Options) *Writer {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.SeriesEntries <= 0 {
		o.SeriesEntries = DefaultSeriesEntries
	}
	if o.SeriesWindow <= 0 {
		o.SeriesWindow = DefaultSeriesWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Hostname == "" {
		o.Hostname, _ = os.Hostname()
	}
	if o.Log.GetSink() == nil {
		o.Log = ctrllog.Log.WithName("events")
	}
	return &Writer{
		client:   c,
		scheme:   scheme,
		now:      o.Now,
		hostname: o.Hostname,
		log:      o.Log,
		queue:    make(chan *eventsv1.Event, o.QueueSize),
		workers:  o.Workers,
		series:   newSeriesCache(o.SeriesEntries, o.SeriesWindow),
	}
}

// Recorder returns the EventRecorder for one reporting controller (the name that was passed to
// the manager's GetEventRecorder).
func (w *Writer) Recorder(controller string) events.EventRecorder {
	return &recorder{w: w, controller: controller, instance: controller + "-" + w.hostname}
}

// NeedLeaderElection is false: a replica that is not leading writes no Events, and the worker
// must be running before the controllers start.
func (w *Writer) NeedLeaderElection() bool { return false }

// Start writes queued Events until ctx is done. It leaves what is still queued for Drain:
// controller-runtime stops this runnable before the controllers, whose last pass may still
// be queueing Events.
func (w *Writer) Start(ctx context.Context) error {
	w.inParallel(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-w.queue:
				w.write(ctx, ev)
			}
		}
	})
	return nil
}

// inParallel runs work on each of the writer's workers and waits for all.
func (w *Writer) inParallel(work func()) {
	var wg sync.WaitGroup
	for range w.workers {
		wg.Go(work)
	}
	wg.Wait()
}

// Drain writes the queued Events, with the writer's workers, until the queue is empty or ctx
// is done; it returns how many it wrote (or tried to).
func (w *Writer) Drain(ctx context.Context) int {
	var n atomic.Int64
	w.inParallel(func() {
		for ctx.Err() == nil {
			select {
			case ev := <-w.queue:
				w.write(ctx, ev)
				n.Add(1)
			default:
				return
			}
		}
	})
	return int(n.Load())
}

// Queued is how many Events wait to be written.
func (w *Writer) Queued() int { return len(w.queue) }

// enqueue never blocks: a full queue drops the Event, counting it and logging now and then.
func (w *Writer) enqueue(ev *eventsv1.Event) {
	select {
	case w.queue <- ev:
		return
	default:
	}
	droppedTotal.Inc()
	now := w.now().UnixNano()
	last := w.lastDrop.Load()
	if now-last >= int64(dropLogEvery) && w.lastDrop.CompareAndSwap(last, now) {
		w.log.Info("event queue full, dropping events (see raygate_events_dropped_total)",
			"queueSize", cap(w.queue), "reason", ev.Reason, "regarding", ev.Regarding.Kind+" "+ev.Regarding.Namespace+"/"+ev.Regarding.Name)
	}
}

// write creates ev, or patches the series of the Event an identical one created less than the
// series window ago. A request that fails is logged and not retried: Events are best effort
// and a retry would hold up the queue behind it.
func (w *Writer) write(ctx context.Context, ev *eventsv1.Event) {
	// The request finishes even when ctx is cancelled (a stop must not cut the last writes
	// short), bounded by its own timeout.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	key := keyOf(ev)
	at := ev.EventTime.Time
	// The workers write in parallel: two identical Events written at the same moment may both
	// be created; the next repeat joins the later one.
	if series, repeat := w.series.repeat(key, at); repeat {
		err := w.client.Patch(rctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: series.namespace, Name: series.name}},
			client.RawPatch(types.StrategicMergePatchType, seriesPatch(series.count, at)))
		if err == nil {
			return
		}
		w.series.remove(key)
		if !apierrors.IsNotFound(err) {
			w.log.Error(err, "patching event series", "namespace", series.namespace, "name", series.name, "reason", ev.Reason)
			return
		}
		// The Event expired or was deleted: start over with a new one.
	}
	if err := w.client.Create(rctx, ev); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			w.log.Error(err, "creating event", "namespace", ev.Namespace, "name", ev.Name, "reason", ev.Reason)
		}
		return
	}
	w.series.put(key, ev.Namespace, ev.Name, at)
}

// seriesPatch is what client-go sends for a repeat: the series with its count and last time.
func seriesPatch(count int32, at time.Time) []byte {
	return []byte(`{"series":{"count":` + strconv.FormatInt(int64(count), 10) +
		`,"lastObservedTime":"` + metav1.NewMicroTime(at).UTC().Format(metav1.RFC3339Micro) + `"}}`)
}

// keyOf hashes what makes two Events the same occurrence: the reporter, the regarding and
// related objects, type, reason, action and note. A cryptographic hash, because the note comes
// from tenants: a crafted collision would fold one object's Event into another's series.
func keyOf(ev *eventsv1.Event) [16]byte {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	ref := func(r *corev1.ObjectReference) {
		if r == nil {
			field("-")
			return
		}
		field(r.APIVersion)
		field(r.Kind)
		field(r.Namespace)
		field(r.Name)
		field(string(r.UID))
		field(r.FieldPath)
	}
	field(ev.ReportingController)
	field(ev.ReportingInstance)
	ref(&ev.Regarding)
	ref(ev.Related)
	field(ev.Type)
	field(ev.Reason)
	field(ev.Action)
	field(ev.Note)
	var k [16]byte
	copy(k[:], h.Sum(nil))
	return k
}

type recorder struct {
	w          *Writer
	controller string
	instance   string
}

// Eventf builds the Event client-go's recorder would and queues it; it never blocks.
func (r *recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	w := r.w
	if regarding == nil {
		return
	}
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		w.log.Error(nil, "unsupported event type, not recording", "type", eventtype, "reason", reason)
		return
	}
	reg, err := reference.GetReference(w.scheme, regarding)
	if err != nil {
		w.log.Error(err, "no reference for event object, not recording", "reason", reason)
		return
	}
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(w.scheme, related); err != nil {
			rel = nil
		}
	}
	now := w.now()
	ns := reg.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	w.enqueue(&eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ns, Name: eventName(reg.Name, w.nameStamp(now))},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *reg,
		Related:             rel,
		Note:                capNote(fmt.Sprintf(note, args...)),
		Type:                eventtype,
	})
}

// nameStamp is now in unix nanos, or one more than the last stamp if the clock has not moved.
func (w *Writer) nameStamp(now time.Time) int64 {
	for {
		last := w.lastName.Load()
		n := max(now.UnixNano(), last+1)
		if w.lastName.CompareAndSwap(last, n) {
			return n
		}
	}
}

// eventName is "<regarding name>.<unix nanos in hex>" like client-go's; a name the API would
// refuse (too long) becomes "event.<nanos in hex>".
func eventName(object string, nanos int64) string {
	name := object + "." + strconv.FormatInt(nanos, 16)
	if len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	return "event." + strconv.FormatInt(nanos, 16)
}

// capNote cuts a note to the API's limit without splitting a UTF-8 sequence, and replaces
// invalid UTF-8 (notes quote tenant objects and Ray heads).
func capNote(s string) string {
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // each invalid byte becomes U+FFFD
	}
	if len(s) <= NoteLimit {
		return s
	}
	cut := NoteLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
