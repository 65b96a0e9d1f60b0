package raycluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Event reasons, for `kubectl describe raycluster` and `kubectl get events`. An event reports
// an API call that succeeded (Normal) or failed (Warning).
const (
	EventCreatedHeadPod          = "CreatedHeadPod"
	EventFailedCreateHeadPod     = "FailedToCreateHeadPod"
	EventDeletedHeadPod          = "DeletedHeadPod"
	EventFailedDeleteHeadPod     = "FailedToDeleteHeadPod"
	EventCreatedWorkerPod        = "CreatedWorkerPod"
	EventFailedCreateWorkerPod   = "FailedToCreateWorkerPod"
	EventDeletedWorkerPod        = "DeletedWorkerPod"
	EventFailedDeleteWorkerPod   = "FailedToDeleteWorkerPod"
	EventDeletedAllPods          = "DeletedAllPods"
	EventFailedDeleteAllPods     = "FailedToDeleteAllPods"
	EventMultipleHeadPods        = "MultipleHeadPods"
	EventCreatedService          = "CreatedService"
	EventUpdatedService          = "UpdatedService"
	EventDeletedService          = "DeletedService"
	EventFailedService           = "FailedToReconcileService"
	EventCreatedAutoscalerRBAC   = "CreatedAutoscalerRBAC"
	EventUpdatedAutoscalerRBAC   = "UpdatedAutoscalerRBAC"
	EventFailedAutoscalerRBAC    = "FailedToReconcileAutoscalerRBAC"
	EventValidationFailed        = "ValidationFailed"
	EventSkippedHeadPodRestart   = "SkippedHeadPodRestart"
	EventFailedClearWorkersToDel = "FailedToClearWorkersToDelete"
	// EventOwnershipConflict: an object raygate would create or update under a name derived
	// from the cluster's exists and belongs to someone else; it is left untouched.
	EventOwnershipConflict = "OwnershipConflict"
	// EventCappedAtPodLimits: the cluster asks for more pods than the admin's bounds allow
	// (it was stored before a bound was lowered, or while the webhook was off); raygate
	// creates pods up to the bounds.
	EventCappedAtPodLimits = "CappedAtPodLimits"
)

// Event actions (the events.k8s.io "action" field: what raygate did).
const (
	actionCreate   = "Create"
	actionDelete   = "Delete"
	actionUpdate   = "Update"
	actionValidate = "Validate"
	actionSkip     = "Skip"
)

// event is one event of a pass. A pass collects its events and sends them after its status
// write, so `kubectl describe` never shows an event before the status that goes with it.
type event struct {
	kind, reason, action, note string
	// related is the object the event is about besides the cluster, or nil. Events with the
	// same reason and action about the same objects are merged into one series (keeping the
	// first note), so two Services created in one pass need it to be told apart.
	related runtime.Object
}

// maxEventNote is the API server's limit on an event's note, in bytes: a longer event is
// refused, and lost.
const maxEventNote = 1024

func (rep *report) normal(reason, action, format string, args ...any) {
	rep.events = append(rep.events, event{kind: corev1.EventTypeNormal, reason: reason, action: action, note: cutBytes(fmt.Sprintf(format, args...), maxEventNote)})
}

func (rep *report) warn(reason, action, format string, args ...any) {
	rep.events = append(rep.events, event{kind: corev1.EventTypeWarning, reason: reason, action: action, note: cutBytes(fmt.Sprintf(format, args...), maxEventNote)})
}

// normalAbout is normal for an event about one of the cluster's objects.
func (rep *report) normalAbout(related runtime.Object, reason, action, format string, args ...any) {
	rep.normal(reason, action, format, args...)
	rep.events[len(rep.events)-1].related = related
}

// warnAbout is warn for an event about one of the cluster's objects.
func (rep *report) warnAbout(related runtime.Object, reason, action, format string, args ...any) {
	rep.warn(reason, action, format, args...)
	rep.events[len(rep.events)-1].related = related
}

// emit sends the pass's events.
func (r *Reconciler) emit(p *pass) {
	for _, e := range p.events {
		r.Recorder.Eventf(p.object, e.related, e.kind, e.reason, e.action, "%s", e.note)
	}
}
