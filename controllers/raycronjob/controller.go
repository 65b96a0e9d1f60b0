package raycronjob

import (
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/cacheneeds"
	"github.com/raygate/raygate/internal/fairqueue"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/statuspatch"
	"github.com/raygate/raygate/internal/validation"
)

// Config is what the RayCronJob controller needs besides the manager; New fills in the
// defaults of zero values.
type Config struct {
	// Gates is the feature gate state (features.Default() in production), for the checks of
	// the template.
	Gates features.Gates
	// Limits are the admin's pod bounds, checked again on the template.
	Limits validation.Limits
	// Recorder writes the controller's Events (nil: the manager's GetEventRecorder).
	Recorder events.EventRecorder
	// Concurrency is how many RayCronJobs are reconciled at once (at least 1).
	Concurrency int
	// Now is the clock (nil: time.Now); tests give a fake one.
	Now func() time.Time
	// Location is the time zone of schedules without spec.timeZone (nil: the operator's
	// local time zone, as KubeRay).
	Location *time.Location
}

// RecorderName is the reportingController of the controller's Events.
const RecorderName = "raygate-raycronjob"

// Reconciler reconciles RayCronJobs.
type Reconciler struct {
	Config
	client    client.Client
	apiReader client.Reader
	validator validation.Validator
	// statuses writes the status and makes every pass read the status last written.
	statuses statuspatch.Writer[*rayv1.RayCronJob, rayv1.RayCronJobStatus, struct{}, cronStatus]
}

// cronStatus reaches a RayCronJob's status for the status writer.
type cronStatus struct{}

func (cronStatus) Status(c *rayv1.RayCronJob) *rayv1.RayCronJobStatus { return &c.Status }
func (cronStatus) Copy(s *rayv1.RayCronJobStatus) *rayv1.RayCronJobStatus {
	return s.DeepCopy()
}

// New builds the reconciler for a manager.
func New(mgr ctrl.Manager, cfg Config) *Reconciler {
	if cfg.Recorder == nil {
		cfg.Recorder = mgr.GetEventRecorder(RecorderName)
	}
	return newReconciler(cfg, mgr.GetClient(), mgr.GetAPIReader())
}

// newReconciler is New without a manager (tests give the clients).
func newReconciler(cfg Config, c client.Client, api client.Reader) *Reconciler {
	if cfg.Gates == nil {
		cfg.Gates = features.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	cfg.Concurrency = max(cfg.Concurrency, 1)
	return &Reconciler{Config: cfg, client: c, apiReader: api, validator: validation.Validator{Gates: cfg.Gates, Limits: cfg.Limits}}
}

// SetupWithManager registers the controller. Only spec and metadata changes start a pass:
// status writes are the controller's own, and the next due time is a requeue.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("raycronjob").
		For(&rayv1.RayCronJob{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Concurrency, NewQueue: fairqueue.New}).
		Complete(r)
}

// CacheNeeds is what the controller watches and reads from the manager's cache: its
// RayCronJobs. The RayJobs it creates are looked up by name from the API server, only when
// their name is found taken.
func CacheNeeds(Config) cacheneeds.Needs {
	return cacheneeds.Needs{Kinds: []cacheneeds.Kind{{Object: &rayv1.RayCronJob{}, Scope: cacheneeds.Everything}}}
}
