package raycluster

// Event reasons, for `kubectl describe raycluster` and `kubectl get events`. An event is
// emitted after the API call it reports succeeded (Normal) or failed (Warning).
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
	EventClearedWorkersToDelete  = "ClearedWorkersToDelete"
	EventFailedClearWorkersToDel = "FailedToClearWorkersToDelete"
)

// Event actions (the events.k8s.io "action" field: what raygate did).
const (
	actionCreate   = "Create"
	actionDelete   = "Delete"
	actionUpdate   = "Update"
	actionValidate = "Validate"
	actionSkip     = "Skip"
)
