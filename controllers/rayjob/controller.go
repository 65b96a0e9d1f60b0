package rayjob

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/controllers/rayjob/plan"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/fairqueue"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/headaccess"
	"github.com/raygate/raygate/internal/owned"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/statuspatch"
	"github.com/raygate/raygate/internal/validation"
)

// The RayJob itself: its finalizer is added and removed with a patch, and DeleteSelf
// deletes it (with a UID precondition).
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayjobs/finalizers,verbs=update
// Its RayCluster: created, its worker groups suspended (DeleteWorkers), deleted.
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch;create;update;delete
// The submitter Job (K8sJobMode): created and deleted, never updated.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// `<job>-head-svc`: created, pointed at the current cluster's head, or replaced.
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Config is what the RayJob controller needs besides the manager, given once to New, which
// fills in the defaults of zero values.
type Config struct {
	// Settings are the plan's: KubeRay's environment variables (plan.ParseSettings), the
	// cluster domain and the timings. Settings.Gates is set from Gates.
	Settings plan.Settings
	// Gates is the feature gate state (features.Default() in production).
	Gates features.Gates
	// Limits are the admin's pod bounds, checked again on stored RayJobs.
	Limits validation.Limits
	// Resolver turns a cluster's head pod into its dashboard's URL (nil: the pod's IP).
	Resolver dashboard.Resolver
	// Dashboards configures the Jobs API pool (zero values: the pool's defaults).
	Dashboards dashboard.JobsPoolOptions
	// TokenAuthentication is the operator's --token-authentication; off, raygate may not read
	// Secrets, so Jobs API calls carry no token.
	TokenAuthentication bool
	// Recorder writes the controller's Events (nil: the manager's GetEventRecorder).
	Recorder events.EventRecorder
	// Concurrency is how many RayJobs are reconciled at once (at least 1).
	Concurrency int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Reconciler reconciles RayJobs.
type Reconciler struct {
	Config
	// Metrics are KubeRay's RayJob gauges; register them to serve them.
	Metrics   *Metrics
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	validator validation.Validator
	// jobs carries out Jobs API requests off the reconcile workers; queue is where its word
	// that a request ended goes.
	jobs  *dashboard.JobsPool
	queue headaccess.Queue
	// taken remembers names a create found taken by an object the cache lacks.
	taken owned.TakenNames
	// statuses writes the status and makes every pass read the status last written
	// (statuspatch: read your writes), so no pass acts on a status it already replaced.
	statuses statuspatch.Writer[*rayv1.RayJob, rayv1.RayJobStatus, struct{}, jobStatus]
	// tokens are the clusters' Ray auth tokens, briefly.
	tokens headaccess.Tokens
	// clusters is the informer's store of RayClusters, read without a copy to map pod and
	// Service events to RayJobs (nil: read through the client).
	clusters toolscache.Store
	// fresh draws a new submission id and cluster name (tests make it deterministic).
	fresh func(job string) plan.Fresh
}

// jobStatus reaches a RayJob's status for the status writer.
type jobStatus struct{}

func (jobStatus) Status(j *rayv1.RayJob) *rayv1.RayJobStatus     { return &j.Status }
func (jobStatus) Copy(s *rayv1.RayJobStatus) *rayv1.RayJobStatus { return s.DeepCopy() }

// RecorderName is the reportingController of the controller's Events.
const RecorderName = "raygate-rayjob"

// New builds the reconciler for a manager.
func New(mgr ctrl.Manager, cfg Config) *Reconciler {
	r := newReconciler(cfg, mgr.GetClient(), mgr.GetAPIReader())
	if r.recorder == nil {
		r.recorder = mgr.GetEventRecorder(RecorderName)
		r.Recorder = r.recorder
	}
	return r
}

// newReconciler is New without a manager (tests give the clients).
func newReconciler(cfg Config, c client.Client, api client.Reader) *Reconciler {
	if cfg.Gates == nil {
		cfg.Gates = features.Default()
	}
	if cfg.Resolver == nil {
		cfg.Resolver = dashboard.PodResolver{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Dashboards.Now == nil {
		// The plan compares when an answer came with the time of the pass: one clock.
		cfg.Dashboards.Now = cfg.Now
	}
	cfg.Settings.Gates = cfg.Gates
	cfg.Concurrency = max(cfg.Concurrency, 1)
	r := &Reconciler{
		Config:    cfg,
		Metrics:   NewMetrics(),
		client:    c,
		apiReader: api,
		recorder:  cfg.Recorder,
		validator: validation.Validator{Gates: cfg.Gates, Limits: cfg.Limits},
		fresh: func(job string) plan.Fresh {
			return plan.Fresh{JobID: rayjob.NewJobID(job), ClusterName: rayjob.NewClusterName(job)}
		},
	}
	o := cfg.Dashboards
	o.OnDone = r.jobsDone
	r.jobs = dashboard.NewJobsPool(o)
	return r
}

// SetupWithManager registers the controller, its watches (the kinds CacheNeeds declares) and
// the Jobs API pool.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	clusters, err := headaccess.Setup(mgr, r.jobs)
	if err != nil {
		return err
	}
	r.clusters = clusters
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &rayv1.RayJob{}, selectedClusterIndex, selectedCluster); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("rayjob").
		For(&rayv1.RayJob{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionStarted))).
		Watches(&rayv1.RayCluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToJobs)).
		Owns(&batchv1.Job{}).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.toJob)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.toJob), builder.WithPredicates(headPodChange)).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Concurrency, NewQueue: fairqueue.New}).
		Complete(r)
}

// deletionStarted passes the update that sets a RayJob's deletion timestamp.
var deletionStarted = predicate.Funcs{
	UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	},
}

// selectedClusterIndex indexes RayJobs by the existing RayCluster their clusterSelector
// names: that cluster is not theirs, so its events reach them through the index.
const selectedClusterIndex = "raygate.ray.io/rayjob-selected-cluster"

func selectedCluster(o client.Object) []string {
	if j, ok := o.(*rayv1.RayJob); ok {
		if name := j.Spec.ClusterSelector[rayv1.RayJobClusterSelectorKey]; name != "" {
			return []string{name}
		}
	}
	return nil
}

// clusterToJobs maps a RayCluster to the RayJob that controls it and to the RayJobs whose
// clusterSelector names it.
func (r *Reconciler) clusterToJobs(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == rayv1.RayJobKind && ref.APIVersion == rayv1.GroupVersion.String() {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}})
	}
	return append(out, r.selecting(ctx, o.GetNamespace(), o.GetName())...)
}

// selecting are the RayJobs whose clusterSelector names a cluster.
func (r *Reconciler) selecting(ctx context.Context, namespace, cluster string) []reconcile.Request {
	var jobs rayv1.RayJobList
	// Only names are read: the cached objects are not copied.
	if err := r.client.List(ctx, &jobs, client.InNamespace(namespace), client.MatchingFields{selectedClusterIndex: cluster}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(jobs.Items))
	for i := range jobs.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: jobs.Items[i].Name}})
	}
	return out
}

// toJob maps an object raygate made for a RayJob (`<job>-head-svc`, labelled with the job)
// or for a RayCluster (the head Service and pods, labelled ray.io/cluster) to the RayJob
// that made the cluster, or whose clusterSelector names it.
func (r *Reconciler) toJob(ctx context.Context, o client.Object) []reconcile.Request {
	if req := byOriginLabel(o.GetNamespace(), o.GetLabels()); req != nil {
		return req
	}
	name := o.GetLabels()[rayv1.ClusterLabelKey]
	if name == "" {
		return nil
	}
	out := r.selecting(ctx, o.GetNamespace(), name)
	if r.clusters != nil {
		// The cached object is shared with the informer: read, never modified.
		obj, ok, err := r.clusters.GetByKey(o.GetNamespace() + "/" + name)
		if rc, isCluster := obj.(*rayv1.RayCluster); err == nil && ok && isCluster {
			return append(out, byOriginLabel(rc.Namespace, rc.Labels)...)
		}
		return out
	}
	var rc rayv1.RayCluster
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: o.GetNamespace(), Name: name}, &rc); err != nil {
		return out
	}
	return append(out, byOriginLabel(rc.Namespace, rc.Labels)...)
}

// byOriginLabel names the RayJob that labels (ray.io/originated-from-*) say made an object.
func byOriginLabel(namespace string, l map[string]string) []reconcile.Request {
	if l[rayv1.OriginatedFromCRDLabelKey] != rayv1.RayJobKind || l[rayv1.OriginatedFromCRNameLabelKey] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: namespace, Name: l[rayv1.OriginatedFromCRNameLabelKey]}}}
}

// headPodChange passes events of head pods that can change what a RayJob sees: creation,
// deletion, the pod's IP and phase, its containers' states and restarts (SidecarMode's
// submitter; a restarted Ray forgets its jobs).
var headPodChange = predicate.Funcs{
	CreateFunc:  func(e ctrlevent.CreateEvent) bool { return isHead(e.Object) },
	DeleteFunc:  func(e ctrlevent.DeleteEvent) bool { return isHead(e.Object) },
	GenericFunc: func(e ctrlevent.GenericEvent) bool { return isHead(e.Object) },
	UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		if !isHead(n) {
			return false
		}
		return o.Status.PodIP != n.Status.PodIP || o.Status.Phase != n.Status.Phase || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
			containersChanged(o.Status.ContainerStatuses, n.Status.ContainerStatuses)
	},
}

func isHead(o client.Object) bool {
	return o.GetLabels()[rayv1.NodeTypeLabelKey] == string(rayv1.HeadNode)
}

func containersChanged(a, b []corev1.ContainerStatus) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Name != y.Name || x.RestartCount != y.RestartCount || (x.State.Terminated == nil) != (y.State.Terminated == nil) ||
			(x.State.Running == nil) != (y.State.Running == nil) || (x.LastTerminationState.Terminated == nil) != (y.LastTerminationState.Terminated == nil) {
			return true
		}
	}
	return false
}
