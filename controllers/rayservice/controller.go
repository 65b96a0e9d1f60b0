package rayservice

import (
	"context"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
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
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/fairqueue"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/headaccess"
	"github.com/raygate/raygate/internal/promgate"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/validation"
)

// +kubebuilder:rbac:groups=ray.io,resources=rayservices,verbs=get;list;watch
// +kubebuilder:rbac:groups=ray.io,resources=rayservices/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayservices/finalizers,verbs=update
// Garbage collection deletes what a RayService owns when it goes: raygate deletes only retired
// clusters and their per-cluster serve Services, each with a UID precondition. ConfigMaps
// (the clusters' serve config records) are read from the API server, never listed or watched.
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways;httproutes;grpcroutes,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Config is what the RayService controller needs besides the manager: every setting, given
// once to New. New fills in the defaults of zero values.
type Config struct {
	// Capabilities are the optional APIs the API server served when raygate started: without
	// the Gateway API the NewClusterWithIncrementalUpgrade strategy cannot upgrade.
	Capabilities capabilities.Capabilities
	// Resolver turns a cluster's head pod into its dashboard's URL (nil: the pod's IP).
	Resolver dashboard.Resolver
	// Gates is the feature gate state (features.Default() in production).
	Gates features.Gates
	// Limits are the admin's pod bounds; clusters are created within them (zero: defaults).
	Limits validation.Limits
	// Version is this raygate's version, stamped on the clusters it creates.
	Version string
	// Dashboards configures the dashboard pool: workers, requests per namespace, the
	// timeout of each request, backoff (zero values: the pool's defaults).
	Dashboards dashboard.PoolOptions
	// MessageCoalesce is how long a status change that only rewords progress messages may
	// wait to be written (DefaultMessageCoalesce when zero; negative: written at once).
	MessageCoalesce time.Duration
	// DeployingPoll is how soon applications that are DEPLOYING are looked at again: the
	// dashboard cannot be watched, so this is the one place raygate polls (default 1 s).
	DeployingPoll time.Duration
	// AppStatusResync re-reads application statuses of a converged RayService so its status
	// notices an application turning unhealthy (default 60 s; negative: never). It reads the
	// dashboard only; an unchanged status makes no API write.
	AppStatusResync time.Duration
	// DisableZeroDowntime is the operator's ENABLE_ZERO_DOWNTIME=false: a RayService whose
	// spec sets no upgrade strategy type upgrades with None (its cluster is kept).
	DisableZeroDowntime bool
	// SharedGateways are the admin's --allowed-shared-gateways: a RayService attached to
	// another Gateway (stored while the webhook was off, or before the admin removed it from
	// the list) is rejected, so raygate never attaches a route where the admin forbids it.
	SharedGateways []string
	// TokenAuthentication is the operator's --token-authentication; off, raygate may not read
	// Secrets, so dashboard calls carry no token.
	TokenAuthentication bool
	// Recorder writes the controller's Events (nil: the manager's GetEventRecorder).
	Recorder events.EventRecorder
	// Prometheus evaluates the metric gates of UpgradePolicies (nil: no --prometheus-url;
	// gated upgrades wait, saying so).
	Prometheus *promgate.Client
	// GatePool configures the pool that runs those evaluations off the reconcile workers
	// (zero values: the pool's defaults; gates_pool.go).
	GatePool promgate.PoolOptions
	// Concurrency is how many RayServices are reconciled at once (at least 1).
	Concurrency int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Reconciler reconciles RayServices.
type Reconciler struct {
	Config
	// Metrics are the per-RayService gauges; register them to serve them.
	Metrics   *Metrics
	client    client.Client
	apiReader client.Reader
	recorder  events.EventRecorder
	// dashboards carries out dashboard requests off the reconcile workers; queue is where
	// its word that a request ended goes.
	dashboards *dashboard.Pool
	queue      headaccess.Queue
	// gatePool evaluates metric gates off the reconcile workers (nil without Prometheus).
	gatePool *promgate.Pool
	// taken remembers names a create found taken by an object the cache lacks (ownership.go).
	taken takenNames
	// annotated remembers the last annotation patch of each cluster (apply.go).
	annotated annotationMemo
	// updated remembers the version each object update was decided on (apply.go).
	updated updateMemo
	// gatewayAPI and grpcRouteAPI are Capabilities.GatewayAPI and .GRPCRoute.
	gatewayAPI   bool
	grpcRouteAPI bool
	// statuses writes the status; a reconcile that finds in the cache an object older than
	// raygate's last status write reads it from the API instead of acting on a status it
	// already replaced, and status changes that only reword progress messages wait there
	// (statuscoalesce.go). A cache of the API, not state: losing it on restart costs nothing.
	statuses serviceStatusWriter
	// newName generates cluster names (tests make it deterministic).
	newName func(service string) string
	// tokens are the clusters' Ray auth tokens, briefly (authtoken.go).
	tokens headaccess.Tokens
	// clusters is the informer's store of RayClusters, read without a copy to map pod
	// events to RayServices (nil: read through the client).
	clusters toolscache.Store
}

// RecorderName is the reportingController of the controller's Events.
const RecorderName = "raygate-rayservice"

// New builds the reconciler for a manager.
func New(mgr ctrl.Manager, cfg Config) *Reconciler {
	if cfg.Gates == nil {
		cfg.Gates = features.Default()
	}
	if cfg.Resolver == nil {
		cfg.Resolver = dashboard.PodResolver{}
	}
	if cfg.MessageCoalesce == 0 {
		cfg.MessageCoalesce = DefaultMessageCoalesce
	}
	if cfg.DeployingPoll <= 0 {
		cfg.DeployingPoll = time.Second
	}
	if cfg.AppStatusResync == 0 {
		cfg.AppStatusResync = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Dashboards.Now == nil {
		// A traffic step compares when a head was read with when the step came due: one
		// clock for both.
		cfg.Dashboards.Now = cfg.Now
	}
	if cfg.Recorder == nil {
		cfg.Recorder = mgr.GetEventRecorder(RecorderName)
	}
	cfg.Concurrency = max(cfg.Concurrency, 1)
	r := &Reconciler{
		Config:       cfg,
		Metrics:      processMetrics,
		client:       mgr.GetClient(),
		apiReader:    mgr.GetAPIReader(),
		recorder:     cfg.Recorder,
		gatewayAPI:   cfg.Capabilities.GatewayAPI,
		grpcRouteAPI: cfg.Capabilities.GatewayAPI && cfg.Capabilities.GRPCRoute,
		newName:      func(s string) string { return s + "-" + utilrand.String(5) },
	}
	r.dashboards = r.newPool(cfg.Dashboards)
	r.gatePool = r.newGatePool(cfg.GatePool)
	return r
}

// SetupWithManager registers the controller, its watches (the kinds CacheNeeds declares),
// the dashboard pool and the gate pool.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	// Every Ray pod event asks which RayService owns the pod's cluster. A Get from the cache
	// deep-copies the whole RayCluster (its pod templates) only to read two labels, a large
	// share of what the operator allocated at scale (docs/benchmarks.md). The informer's store
	// gives the cached object itself, which podToService only reads.
	clusters, err := headaccess.Setup(mgr, r.dashboards)
	if err != nil {
		return err
	}
	if err := addIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r.clusters = clusters
	if err := r.addGatePool(mgr); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("rayservice").
		For(&rayv1.RayService{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Owns(&rayv1.RayCluster{}).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(byOriginLabel)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.podToService), builder.WithPredicates(podChange)).
		WatchesRawSource(r.queue.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Concurrency, NewQueue: fairqueue.New})
	if r.gatewayAPI {
		b = b.Owns(&gwv1.Gateway{}).Owns(&gwv1.HTTPRoute{})
		if r.grpcRouteAPI {
			b = b.Owns(&gwv1.GRPCRoute{})
		}
	} else {
		mgr.GetLogger().Info("Gateway API CRDs not installed: the NewClusterWithIncrementalUpgrade strategy cannot upgrade until they are and raygate restarts")
	}
	return b.Complete(r)
}

// byOriginLabel maps an object raygate created for a RayService (label
// ray.io/originated-from-cr-name) to that RayService.
func byOriginLabel(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[rayv1.OriginatedFromCRDLabelKey] != rayServiceKind || l[rayv1.OriginatedFromCRNameLabelKey] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[rayv1.OriginatedFromCRNameLabelKey]}}}
}

// podToService maps a Ray pod to the RayService owning its cluster.
func (r *Reconciler) podToService(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[rayv1.ClusterLabelKey]
	if name == "" {
		return nil
	}
	if r.clusters != nil {
		// The cached object is shared with the informer: read, never modified.
		obj, ok, err := r.clusters.GetByKey(o.GetNamespace() + "/" + name)
		if rc, isCluster := obj.(*rayv1.RayCluster); err == nil && ok && isCluster {
			return byOriginLabel(ctx, rc)
		}
		return nil
	}
	var rc rayv1.RayCluster
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: o.GetNamespace(), Name: name}, &rc); err != nil {
		return nil
	}
	return byOriginLabel(ctx, &rc)
}

// podChange passes pod events that can change what raygate sees: creation, deletion,
// readiness, labels.
var podChange = predicate.Funcs{
	UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		return rayspec.Serving(o) != rayspec.Serving(n) || !maps.Equal(o.Labels, n.Labels) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
	},
}
