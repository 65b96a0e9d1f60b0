package app

import (
	"context"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raygate/raygate/internal/eventrecorder"
)

// eventsManager is the manager with raygate's own event recorder (internal/eventrecorder) in
// place of controller-runtime's broadcaster, which keeps a copy of every Event for minutes and
// does not flush on stop. controller-runtime creates its broadcaster only when a recorder of
// its own is asked for (the deprecated core/v1 one for leader election's "became leader"
// Event aside, and its Stop builds and at once shuts down an empty one), so serving
// GetEventRecorder from ours keeps it from ever carrying a controller's Events.
type eventsManager struct {
	ctrl.Manager
	events *eventrecorder.Writer
}

// newEventsManager adds the event writer to mgr as a runnable that does not need leader
// election, so it runs before and regardless of the controllers.
func newEventsManager(mgr ctrl.Manager) (*eventsManager, error) {
	w := eventrecorder.New(mgr.GetClient(), mgr.GetScheme(), eventrecorder.Options{})
	if err := mgr.Add(w); err != nil {
		return nil, err
	}
	return &eventsManager{Manager: mgr, events: w}, nil
}

// GetEventRecorder returns raygate's recorder for the reporting controller name.
func (m *eventsManager) GetEventRecorder(name string) events.EventRecorder {
	return m.events.Recorder(name)
}

// Start runs the manager, then writes the Events still queued.
//
// Why after Start returns: controller-runtime v0.24 stops its runnable groups in the order
// warmup/others (non-leader-election runnables, the event writer among them) first, then the
// leader-election runnables (the controllers, each waiting for its in-flight reconciles),
// then caches, webhooks and HTTP servers, and only then does Start return. The writer's own
// Start therefore ends before the controllers' last pass, whose Events stay queued; Start
// returning is the first moment no controller can add more. The drain is bounded, so a
// stuck API server cannot hold the process past DefaultDrainTimeout.
func (m *eventsManager) Start(ctx context.Context) error {
	err := m.Manager.Start(ctx)
	dctx, cancel := context.WithTimeout(context.Background(), eventrecorder.DefaultDrainTimeout)
	defer cancel()
	if n := m.events.Drain(dctx); n > 0 {
		ctrl.Log.WithName("events").Info("wrote the events queued at stop", "events", n, "left", m.events.Queued())
	}
	return err
}
