package raycluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/batchscheduler"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/expectations"
	"github.com/raygate/raygate/internal/fairqueue"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/raypod"
	"github.com/raygate/raygate/internal/rayspec"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/internal/version"
)

// Least privilege: no rights on Secrets are generated; with --token-authentication (and the
// RBAC the chart adds with it) raygate only creates and gets by name the token Secrets of
// clusters with authOptions (authsecret.go). It creates the autoscaler's Role only with
// permissions it holds itself (so it needs neither "escalate" nor "bind").
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ray.io,resources=rayclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// PodClusterIndex indexes cached pods by their ray.io/cluster label, so a reconcile lists
// only its own cluster's pods.
const PodClusterIndex = "raygate.ray.io/cluster"

// requeueSoon is when a pass runs again after a suspend step; by then the cache has
// normally caught up with the write.
const requeueSoon = 100 * time.Millisecond

// conflictRecheck is how often a cluster with an OwnershipConflict looks again: the foreign
// object is not watched (the cache holds only raygate's objects), so its removal is noticed
// by polling.
const conflictRecheck = 30 * time.Second

// KubeRayManagerName is spec.managedBy meaning "this operator"; any other value hands the
// cluster to another controller.
const KubeRayManagerName = "ray.io/kuberay-operator"

// RecorderName is the reportingController of the controller's Events.
const RecorderName = "raycluster-controller"

// Config is what the RayCluster controller needs besides the manager: every setting, given
// once to New. New fills in the defaults of zero values.
type Config struct {
	// Gates is the feature gate state (nil: features.Default()).
	Gates features.Gates
	// Limits are the admin's pod bounds (--max-pods-per-group, --max-pods-per-cluster); the
	// zero value means the defaults.
	Limits validation.Limits
	// Capabilities are the optional APIs the API server served when raygate started: without
	// cert-manager a cluster with spec.tlsOptions gets no pods; the batch scheduler's PodGroups
	// are made only when their kind is served.
	Capabilities capabilities.Capabilities
	// IngressOnOpenShift is the operator's USE_INGRESS_ON_OPENSHIFT=true (KubeRay's switch):
	// where Routes are served, dashboards are still exposed by Ingresses (route.go).
	IngressOnOpenShift bool
	// Scheduler is the --batch-scheduler integration (nil: the default scheduler); New builds
	// BatchScheduler from it.
	Scheduler batchscheduler.Scheduler
	// Pods are the operator's settings every pod is built with (raypod.Settings): the cluster's
	// DNS domain, in which workers find the head's GCS (CLUSTER_DOMAIN; "": cluster.local),
	// the admin's pod defaults (--config) and KubeRay's environment switches.
	Pods raypod.Settings
	// RandomPodDelete is the operator's ENABLE_RANDOM_POD_DELETE=true: scale-down may remove
	// any workers even with the Ray autoscaler on (by default the autoscaler picks them).
	RandomPodDelete bool
	// DisableGCSFTRedisCleanup is the operator's ENABLE_GCS_FT_REDIS_CLEANUP=false (KubeRay's
	// switch): deleted fault-tolerant clusters get no Redis cleanup; no finalizer is added,
	// and one already there is released.
	DisableGCSFTRedisCleanup bool
	// OperatorNamespace is where raygate's pods run; the head's NetworkPolicy admits them
	// to the dashboard ("": unknown, no such rule).
	OperatorNamespace string
	// TokenAuthentication is the operator's --token-authentication: without it raygate holds
	// no rights on Secrets, so a cluster with authOptions.mode token is not acted on.
	TokenAuthentication bool
	// Ingress is the admin's policy for dashboard Ingresses (--allowed-ingress-*): which
	// annotations are copied, and no Ingress it refuses is created or kept (ingress.go).
	Ingress raypod.IngressPolicy
	// Recorder writes the controller's Events (nil: the manager's GetEventRecorder).
	Recorder events.EventRecorder
	// StatusCoalesce is how long a change of pod counts alone may wait before its status
	// write (DefaultStatusCoalesce when zero; negative: written at once).
	StatusCoalesce time.Duration
	// BringUpCoalesce is how long pod progress may wait after the pods last moved while a
	// cluster comes up for the first time without trouble (DefaultBringUpCoalesce when
	// zero; negative: no wait).
	BringUpCoalesce time.Duration
	// BringUpMaxWait bounds that wait while the pods keep moving (DefaultBringUpMaxWait when
	// zero; negative: no wait).
	BringUpMaxWait time.Duration
	// Concurrency is how many clusters are reconciled at once (at least 1).
	Concurrency int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Reconciler reconciles RayClusters. Its settings are its Config; the rest is built by New
// from the manager.
type Reconciler struct {
	Config
	// Client reads from the manager's cache and writes to the API server.
	client.Client
	// APIReader reads from the API server, bypassing the cache (nil: the Client): for objects
	// the cache does not hold, such as a foreign object with a name raygate wants.
	APIReader client.Reader
	// CertReader reads cert-manager objects (the manager's cache; nil: the Client).
	CertReader client.Reader
	// BatchScheduler, when --batch-scheduler is set, creates the clusters' PodGroups and
	// marks their pods for the batch scheduler; nil: the default scheduler.
	BatchScheduler *batchscheduler.Syncer
	Expectations   *expectations.Scale
	Metrics        *Metrics

	// statuses writes the status, makes the passes read their own status writes and keeps
	// the changes left waiting (statuswrite.go).
	statuses statusWriter
	// headServices skips comparing a head Service already found as wanted (servicememo.go).
	headServices serviceMemo
	// taken remembers names a create found taken by objects the cache lacks (owned.go).
	taken takenNames
	// strays remembers the foreign pods last reported per cluster (strays.go).
	strays strayPods
}

// New builds the reconciler for a manager.
func New(mgr ctrl.Manager, cfg Config) *Reconciler {
	if cfg.Gates == nil {
		cfg.Gates = features.Default()
	}
	if cfg.Recorder == nil {
		cfg.Recorder = mgr.GetEventRecorder(RecorderName)
	}
	cfg.StatusCoalesce = durationOrDefault(cfg.StatusCoalesce, DefaultStatusCoalesce)
	cfg.BringUpCoalesce = durationOrDefault(cfg.BringUpCoalesce, DefaultBringUpCoalesce)
	cfg.BringUpMaxWait = durationOrDefault(cfg.BringUpMaxWait, DefaultBringUpMaxWait)
	cfg.Concurrency = max(cfg.Concurrency, 1)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Reconciler{
		Config:       cfg,
		Client:       mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		CertReader:   mgr.GetCache(),
		Expectations: expectations.New(expectations.DefaultTimeout),
		Metrics:      processMetrics,
	}
	if cfg.Scheduler != nil {
		r.BatchScheduler = &batchscheduler.Syncer{
			Scheduler: cfg.Scheduler,
			Client:    mgr.GetClient(),
			Reader:    mgr.GetCache(),
			APIReader: mgr.GetAPIReader(),
			Installed: podGroupServed(cfg),
		}
	}
	return r
}

// durationOrDefault: zero means the default, negative means none.
func durationOrDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// ClusterOfPod is a pod's PodClusterIndex key: its ray.io/cluster label.
func ClusterOfPod(o client.Object) []string {
	if c := o.GetLabels()[rayv1.ClusterLabelKey]; c != "" {
		return []string{c}
	}
	return nil
}

// SetupWithManager registers the controller: RayClusters (spec, label and annotation
// changes; its own status writes do not trigger it) and the objects it owns, the kinds
// CacheNeeds declares.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, PodClusterIndex, ClusterOfPod); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.BatchScheduler != nil && r.BatchScheduler.Owned() != nil {
		b = b.Owns(r.BatchScheduler.Owned())
	}
	if r.exposure().routesServed {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(raypod.RouteGVK)
		b = b.Owns(u)
	}
	if r.Capabilities.CertManager {
		for _, gvk := range []schema.GroupVersionKind{raypod.CertificateGVK, raypod.IssuerGVK} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			b = b.Owns(u)
		}
	}
	return b.
		Named("raycluster").
		For(&rayv1.RayCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Pods are matched by their ray.io/cluster label, then by their owner: only pods the
		// cluster controls count, and one carrying the label that it does not control is
		// reported (strays.go), so every pod with the label triggers its cluster, unless an
		// update changed nothing the cache keeps of it.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCluster), builder.WithPredicates(podUpdateChanged)).
		Owns(&corev1.Service{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&networkingv1.Ingress{}).
		Owns(&networkingv1.NetworkPolicy{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Concurrency, NewQueue: fairqueue.New}).
		Complete(r)
}

func podToCluster(_ context.Context, o client.Object) []reconcile.Request {
	c := o.GetLabels()[rayv1.ClusterLabelKey]
	if c == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: c}}}
}

// observation is what a pass reads before it decides anything, and nothing changes
// afterwards, except that object is what the pass writes back: an update of its
// workersToDelete and the status write give it their resourceVersion and status.
type observation struct {
	object  *rayv1.RayCluster // as read from the cache (a shallow copy)
	cluster *rayv1.RayCluster // defaulted copy everything is computed from
	// invalid lists why the spec is refused; nothing is created or deleted for it.
	invalid field.ErrorList
	// capped says which worker groups were lowered to the admin's pod bounds.
	capped []string
	hash   string
	// pods are the pods the cluster controls; foreign names those with its label that it
	// does not control: they are neither counted nor touched (strayPods reports them).
	pods    []corev1.Pod
	foreign []string
	// listed says pods is the cluster's pods as read (not read for an invalid spec).
	listed bool
	// pending and anyPending are what the expectations say: see podsInput.
	pending    map[string]bool
	anyPending bool
}

// pass is one reconcile: what it observed, and the report its act phases write for the
// status write and the events after it.
type pass struct {
	observation
	report
	log logr.Logger
}

// report is what a pass's act phases tell the status write and the events that follow it.
type report struct {
	// headSvc is the head Service as found or written (nil: none).
	headSvc *corev1.Service
	// conflicts are objects with names raygate wants that the cluster does not control.
	conflicts []conflict
	// events are sent once the pass is over, after its status write.
	events []event
	// recheck is when the pass should run again although nothing changes (0: no need).
	recheck time.Duration
}

// recheckAfter asks for another pass within d (d <= 0: no need).
func (rep *report) recheckAfter(d time.Duration) {
	if d > 0 && (rep.recheck == 0 || d < rep.recheck) {
		rep.recheck = d
	}
}

// Reconcile observes the cluster and its pods, plans the pods (pure), acts (each phase
// observes, plans and acts on its own objects, the pods last), writes the status once (only
// when it changed) and then sends the pass's events. An invalid spec is not acted on, only
// reported.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if res, done, err := r.reconcileGCSFaultTolerance(ctx, req); done || err != nil {
		return res, err
	}
	p := &pass{log: ctrl.LoggerFrom(ctx)}
	if found, err := r.observe(ctx, req, &p.observation); !found || err != nil {
		return ctrl.Result{}, err
	}
	defer r.emit(p) // last: after the status write
	r.reportStrays(p)
	var (
		podsWritten bool
		actErr      error
	)
	if len(p.invalid) == 0 {
		pods := planPods(r.podsInput(&p.observation)) // pure
		podsWritten, actErr = r.act(ctx, p, pods)
	}
	return r.writeStatus(ctx, p, podsWritten, actErr)
}

// observe reads the cluster and what the pass decides from into p. found is false when there
// is nothing to do: the cluster is gone, being deleted, or managed by another controller.
func (r *Reconciler) observe(ctx context.Context, req ctrl.Request, p *observation) (found bool, err error) {
	log := ctrl.LoggerFrom(ctx)
	// Read without a deep copy: a pass deep-copies the cluster once for everything it computes
	// (p.cluster below), and a second copy per pass was the largest allocation of a bring-up.
	// rc is a shallow copy of the cached object: the pass only replaces its top-level fields
	// (the status, the resourceVersion, the whole object after an update) and never changes
	// anything they point to (sharedpods_test.go checks it).
	// The status is written without a resourceVersion, so the pass must start from the
	// last one written even when the cache has not caught up with it: GetCached puts it in
	// place of the cached one (the writer forgets a cluster that is gone).
	cached := &rayv1.RayCluster{}
	if err := r.statuses.GetCached(ctx, r.Client, req.NamespacedName, cached, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.Expectations.Forget(req.Namespace, req.Name)
			r.headServices.forget(req.NamespacedName)
			r.taken.Forget(req.NamespacedName)
			r.strays.forget(req.NamespacedName)
			return false, nil
		}
		return false, err
	}
	rc := ptr.To(*cached)
	if !rc.DeletionTimestamp.IsZero() {
		return false, nil // the garbage collector removes what the cluster owns
	}
	if managedByOther(rc) {
		log.V(1).Info("skipping a cluster managed by another controller", "managedBy", ptr.Deref(rc.Spec.ManagedBy, ""))
		return false, nil
	}

	p.object, p.cluster = rc, rc.DeepCopy()
	defaulting.RayCluster(p.cluster)
	// Admission normally rejects an invalid spec; this covers objects stored while the
	// webhook was off or bypassed, and rules added since. Only the rules whose violation
	// would make this controller misbehave count here: a stored object is never frozen for
	// breaking a create-only rule.
	p.invalid = validation.Validator{Gates: r.Gates, Limits: r.Limits}.StoredRayCluster(p.cluster)
	if len(p.invalid) == 0 {
		p.invalid = buildable(&p.cluster.Spec)
	}
	if len(p.invalid) == 0 {
		p.invalid = tokenAuthRefused(&p.cluster.Spec, r.TokenAuthentication)
	}
	if len(p.invalid) > 0 {
		return true, nil
	}
	// A cluster stored above the pod bounds is served at the bounds.
	p.capped = validation.CapPods(&p.cluster.Spec, r.Limits)
	if p.hash, err = rayspec.HashWithoutReplicas(p.cluster.Spec); err != nil {
		return false, err
	}
	if !r.Gates.Enabled(features.RayClusterHistoryServer) {
		// As KubeRay: with the gate off the pods get no collector (the hash above still
		// covers the options, so turning the gate off restarts nothing).
		p.cluster.Spec.HistoryServerOptions = nil
	}
	if p.pods, p.foreign, err = r.listControlledPods(ctx, rc); err != nil {
		return false, err
	}
	p.listed = true
	if err := r.readExpectations(ctx, p); err != nil {
		return false, err
	}
	return true, nil
}

// readExpectations notes the groups whose last pod creates and deletes the cache does not
// show yet.
func (r *Reconciler) readExpectations(ctx context.Context, p *observation) error {
	ns, name := p.cluster.Namespace, p.cluster.Name
	groups := []string{expectations.HeadGroup}
	for _, g := range p.cluster.Spec.WorkerGroupSpecs {
		groups = append(groups, g.GroupName)
	}
	p.pending = map[string]bool{}
	for _, g := range groups {
		ok, err := r.Expectations.IsSatisfied(ctx, r.Client, ns, name, g)
		if err != nil {
			return err
		}
		p.pending[g] = !ok
	}
	ok, err := r.Expectations.IsClusterSatisfied(ctx, r.Client, ns, name)
	p.anyPending = !ok
	return err
}

func (r *Reconciler) podsInput(p *observation) podsInput {
	return podsInput{
		Cluster: p.cluster, Hash: p.hash, Pods: p.pods,
		Pending: p.pending, AnyPending: p.anyPending,
		Conditions:      r.Gates.Enabled(features.RayClusterStatusConditions),
		Indexing:        r.Gates.Enabled(features.RayMultiHostIndexing),
		RandomPodDelete: r.RandomPodDelete,
		OperatorVersion: version.Version,
	}
}

// act brings the owned objects and the pods to what the spec and the pod plan say, phase
// by phase; each phase observes its own objects, decides with a pure function and acts
// (the pods' plan was made before). It stops at the first failure. podsWritten says the
// pass reached the pods and may have created, deleted or changed some.
func (r *Reconciler) act(ctx context.Context, p *pass, pods podPlan) (podsWritten bool, err error) {
	for _, phase := range []func(context.Context, *pass) error{
		r.reconcileAutoscalerRBAC,
		r.reconcileAuthSecret,
		r.reconcileGCSStorage,
		r.reconcileMTLS,
		r.reconcileNetworkPolicies,
		r.reconcileServices,
		r.reconcileDashboardAccess,
		r.syncBatchScheduling,
		func(ctx context.Context, p *pass) error {
			podsWritten = pods.changesPods()
			return r.applyPodPlan(ctx, p, pods)
		},
		func(ctx context.Context, p *pass) error {
			return r.clearHandledWorkersToDelete(ctx, p, pods.handledWorkersToDelete())
		},
	} {
		if err := phase(ctx, p); err != nil {
			if errors.Is(err, errStopPass) {
				return podsWritten, nil // reported in the status; looked at again after conflictRecheck
			}
			return podsWritten, err
		}
	}
	return podsWritten, nil
}

// listPods lists the pods carrying the cluster's label from the cache. The pods share their
// labels, annotations and lists with the informer cache (no deep copy:
// at 1,000 clusters the copies were an eighth of everything the operator allocated, and
// allocation during a slow GC mark is what set the peak memory). They are read only: a pass
// that changes a pod patches a DeepCopy of it (restampHead) and deletes by UID.
func (r *Reconciler) listPods(ctx context.Context, rc *rayv1.RayCluster) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(rc.Namespace), client.MatchingFields{PodClusterIndex: rc.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	return list.Items, nil
}

// listControlledPods is listPods split into the pods the cluster controls and the names of
// the others (foreign), which a pass neither counts nor touches.
func (r *Reconciler) listControlledPods(ctx context.Context, rc *rayv1.RayCluster) (pods []corev1.Pod, foreign []string, err error) {
	all, err := r.listPods(ctx, rc)
	if err != nil {
		return nil, nil, err
	}
	pods, foreign = splitControlled(all, rc)
	return pods, foreign, nil
}

// writeStatus computes the status from the pods after the pass (listed again only when the
// pass wrote pods) and writes it when it changed: at once, or for a change of pod counts
// alone up to StatusCoalesce later; during a trouble-free first bring-up, once the pods have
// stood still for at least BringUpCoalesce, at most BringUpMaxWait later
// (decideStatusWrite). The write replaces the status without a resourceVersion, so it
// cannot conflict (internal/statuspatch). The pass's error is returned so
// controller-runtime retries with backoff.
func (r *Reconciler) writeStatus(ctx context.Context, p *pass, podsWritten bool, applyErr error) (ctrl.Result, error) {
	// The pods read at the start stand unless the pass wrote some (a pod event meanwhile
	// brings another pass); listing again cost a copy of each pod per pass.
	pods := p.pods
	if !p.listed || podsWritten {
		var err error
		if pods, _, err = r.listControlledPods(ctx, p.object); err != nil {
			return ctrl.Result{}, err
		}
	}
	now := r.Now()
	st := computeStatus(statusInput{
		Cluster: p.cluster, Invalid: p.invalid, Pods: pods, HeadService: p.headSvc, ReconcileErr: applyErr,
		Conflict:   conflictMessage(p.conflicts),
		Capped:     cappedMessage(p.capped),
		Conditions: r.Gates.Enabled(features.RayClusterStatusConditions), Now: now,
	})
	old := p.object.Status
	result := ctrl.Result{}
	written, err := r.statuses.Write(ctx, r.Client, p.object, st, now, statusPolicy(p.object.CreationTimestamp.Time,
		coalesceWindows{Steady: r.StatusCoalesce, BringUp: r.BringUpCoalesce, BringUpMax: r.BringUpMaxWait}))
	if err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // deleted meanwhile (the writer forgot it)
		}
		return ctrl.Result{}, fmt.Errorf("writing status: %w", err)
	}
	if written.Written {
		if c := conflictMessage(p.conflicts); c != "" && c != recordedConflict(old) {
			p.warn(EventOwnershipConflict, actionSkip, "%s", c)
		}
		if c := cappedMessage(p.capped); c != "" && c != old.Reason && c == st.Reason {
			p.warn(EventCappedAtPodLimits, actionSkip, "%s", c)
		}
		if len(p.invalid) > 0 {
			p.warn(EventValidationFailed, actionValidate, "The spec is invalid; no pods are created or deleted until it is fixed: %s", p.invalid.ToAggregate().Error())
		}
		// Status writes do not trigger this controller; the next suspend step needs a pass.
		if suspendStatus(old.Conditions) != suspendStatus(st.Conditions) {
			result.RequeueAfter = requeueSoon
		}
	} else {
		// Nothing written: a waiting count change comes back when its wait is over.
		result.RequeueAfter = written.Wait
	}
	if len(p.conflicts) > 0 {
		p.recheckAfter(conflictRecheck)
	}
	if p.recheck > 0 && (result.RequeueAfter == 0 || result.RequeueAfter > p.recheck) {
		result.RequeueAfter = p.recheck
	}
	return result, applyErr
}

// buildable checks what pod building relies on, so a gap in validation can never make the
// controller panic.
func buildable(spec *rayv1.RayClusterSpec) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	if len(spec.HeadGroupSpec.Template.Spec.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("headGroupSpec", "template", "spec", "containers"), "the Ray container is required"))
	}
	for i := range spec.WorkerGroupSpecs {
		if len(spec.WorkerGroupSpecs[i].Template.Spec.Containers) == 0 {
			errs = append(errs, field.Required(p.Child("workerGroupSpecs").Index(i).Child("template", "spec", "containers"), "the Ray container is required"))
		}
	}
	return errs
}

func key(o client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}
