package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/rayjob"
	"github.com/raygate/raygate/internal/validation"
)

// world simulates what the RayJob controller talks to, to drive the plan the way the
// controller will: the API server (the RayJob with its stored status, RayClusters, the
// submitter Job, Services), Ray clusters with their Jobs APIs and submitters, and the
// dashboard pool. It answers observe like the controller's reads, carries out effects like
// the API server and the pool, stores statuses through JSON (second precision, as etcd),
// and can be given faults.
type world struct {
	now      time.Time
	job      *rayv1.RayJob // nil once deleted
	settings Settings
	clusters map[string]*simCluster
	// submitter is the submitter Job (K8sJobMode) and its pod's behaviour.
	submitter  *simSubmitter
	jobService *corev1.Service
	pool       simPool
	draws      int
	// app is how the Ray job behaves when it runs.
	app appBehaviour
	// events are the events emitted (after their status was stored).
	events []Event
	passes int
	// kicked: the RayJob changed since the last pass (a watch event brings a pass).
	kicked bool

	// Faults.
	failAction     int  // the action with this index of the next pass fails (-1: none)
	conflictStatus bool // the next status write conflicts
	// nextSubmission: the next HTTP submission reaches the cluster, and then the operator
	// restarts before its answer comes ("restart"), or the answer is a timeout ("timeout").
	nextSubmission string
	// clusterNeverReady: clusters created from now on never become ready.
	clusterNeverReady bool
	// poolLag is how long a request waits in the pool before it is sent (a saturated pool).
	poolLag time.Duration
	// submissions counts the submissions each cluster's Jobs API accepted, by id.
	submissions map[string]map[string]int
	// duplicates counts submissions that found their id taken (refused as already existing).
	duplicates int
	// executions are the metric facts recorded.
	executions []Execution
}

// appBehaviour is how the Ray jobs run.
type appBehaviour struct {
	pending, run time.Duration
	outcome      rayv1.JobStatus // SUCCEEDED or FAILED
	message      string
	// unknownWord, when set, is the status the Jobs API reports while the job runs.
	unknownWord string
	// submitFails: the submitter (K8sJobMode, SidecarMode) fails before it submits.
	submitFails bool
	// refuse: the Jobs API refuses submissions (HTTPMode) with this message.
	refuse string
}

const (
	clusterStart  = 5 * time.Second
	deleteDelay   = time.Second
	submitDelay   = 2 * time.Second
	followDelay   = time.Second
	poolDelay     = 100 * time.Millisecond
	headRestart   = 3 * time.Second
	submitterWait = 2 * time.Second // between the submitter Job's retries
)

var (
	t0     = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	jobUID = types.UID("rayjob-uid")
	allOn  = features.Static{features.RayJobDeletionPolicy: true}
)

func newWorld(job *rayv1.RayJob) *world {
	job = job.DeepCopy()
	defaulting.RayJob(job)
	job.UID, job.Generation, job.CreationTimestamp = jobUID, 1, metav1.NewTime(t0)
	w := &world{
		now: t0, job: job, clusters: map[string]*simCluster{}, failAction: -1,
		settings:    Settings{Gates: allOn},
		app:         appBehaviour{pending: time.Second, run: 20 * time.Second, outcome: rayv1.JobStatusSucceeded, message: "Job finished successfully."},
		submissions: map[string]map[string]int{},
	}
	w.pool.reset()
	return w
}

// inputs is what the controller would read at the start of a pass.
func (w *world) inputs() Inputs {
	job := w.job.DeepCopy()
	defaulting.RayJob(job)
	in := Inputs{
		Job:      job,
		Invalid:  validation.Validator{Gates: w.settings.Gates}.StoredRayJob(job),
		Settings: w.settings,
		Now:      w.now,
		Fresh:    Fresh{JobID: fmt.Sprintf("%s-id%d", job.Name, w.draws), ClusterName: fmt.Sprintf("%s-c%d", job.Name, w.draws)},
	}
	w.draws++
	o := &in.Observed
	if c := w.clusters[job.Status.RayClusterName]; c != nil && job.Status.RayClusterName != "" {
		o.Cluster = c.rc.DeepCopy()
		o.Cluster.Status = c.status(w.now)
		if !c.deletingAt.IsZero() {
			t := metav1.NewTime(c.deletingAt)
			o.Cluster.DeletionTimestamp = &t
		}
		o.HeadService = c.headService()
		o.HeadPod = c.headPod(w.now)
	}
	if w.jobService != nil {
		o.JobService = w.jobService.DeepCopy()
	}
	if w.submitter != nil {
		o.Submitter = w.submitter.object(w.now)
	}
	o.Jobs = w.pool.view(job.Status.RayClusterName, job.Status.JobId)
	return in
}

// reconciled is one pass: its inputs and plan, and whether its outcome was recorded.
type reconciled struct {
	in       Inputs
	p        Plan
	recorded bool
	failed   string // why the pass stopped early
}

// reconcile runs one pass as the controller will: observe, plan, carry out the actions in
// order (a failed one stops the pass), hand the requests to the pool, write the status if it
// changed, then emit the events and count the metrics.
func (w *world) reconcile() *reconciled {
	w.passes++
	w.kicked = false
	if w.job == nil {
		return nil
	}
	r := &reconciled{in: w.inputs()}
	r.p = Decide(r.in)
	var done []Event
	for i, a := range r.p.Actions {
		if i == w.failAction {
			w.failAction = -1
			r.failed = "action " + a.String() + " failed"
			return r
		}
		w.apply(a)
		if e := Done(a); !e.IsZero() {
			done = append(done, e)
		}
	}
	w.failAction = -1
	w.events = append(w.events, done...)
	for _, q := range r.p.Requests {
		w.pool.ask(w, q)
	}
	if w.job == nil || w.job.DeletionTimestamp != nil && len(w.job.Finalizers) == 0 {
		w.removeJob()
		return r
	}
	if !statusEqual(&r.p.Status, &w.job.Status) {
		if w.conflictStatus {
			w.conflictStatus = false
			r.failed = "status write conflict"
			return r
		}
		w.job.Status = roundTrip(r.p.Status)
	}
	r.recorded = true
	w.events = append(w.events, r.p.Events...)
	if e := r.p.Metrics.Execution; e != nil {
		w.executions = append(w.executions, *e)
	}
	return r
}

// roundTrip stores a status as the API server does: through JSON.
func roundTrip(st rayv1.RayJobStatus) rayv1.RayJobStatus {
	b, err := json.Marshal(st)
	if err != nil {
		panic(err)
	}
	var out rayv1.RayJobStatus
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// apply carries out an action as the API server would; the controller watches what it
// writes, so a pass follows (not the batch scheduler's PodGroups).
func (w *world) apply(a Action) {
	if _, hook := a.(BatchSchedulerHook); !hook {
		w.kicked = true
	}
	switch a := a.(type) {
	case AddFinalizer:
		if !slices.Contains(w.job.Finalizers, StopJobFinalizer) {
			w.job.Finalizers = append(w.job.Finalizers, StopJobFinalizer)
		}
	case RemoveFinalizer:
		w.job.Finalizers = slices.DeleteFunc(w.job.Finalizers, func(f string) bool { return f == StopJobFinalizer })
	case CreateCluster:
		if w.clusters[a.Cluster.Name] != nil {
			panic("create: RayCluster " + a.Cluster.Name + " exists")
		}
		w.clusters[a.Cluster.Name] = w.newCluster(a.Cluster)
	case DeleteCluster:
		if c := w.clusters[a.Cluster.Name]; c != nil && c.rc.UID == a.Cluster.UID && c.deletingAt.IsZero() {
			c.deletingAt = w.now
		}
	case SuspendWorkers:
		if c := w.clusters[a.Cluster.Name]; c != nil {
			for i := range c.rc.Spec.WorkerGroupSpecs {
				c.rc.Spec.WorkerGroupSpecs[i].Suspend = ptr.To(true)
			}
		}
	case CreateSubmitter:
		if w.submitter != nil {
			panic("create: submitter Job exists")
		}
		w.submitter = newSubmitter(a.Job, w.now)
	case DeleteSubmitter:
		if w.submitter != nil && w.submitter.deletingAt.IsZero() {
			w.submitter.deletingAt = w.now
		}
	case PointJobService:
		svc := a.Cluster.DeepCopy()
		w.jobService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{
			Name: rayjob.HeadServiceName(w.job.Name), Namespace: w.job.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(w.job, rayv1.GroupVersion.WithKind(rayv1.RayJobKind))},
		}, Spec: corev1.ServiceSpec{Selector: map[string]string{rayv1.ClusterLabelKey: svc.Name}}}
	case DeleteRayJob:
		w.deleteJob()
	case BatchSchedulerHook:
	default:
		panic(fmt.Sprintf("unknown action %T", a))
	}
}

// deleteJob deletes the RayJob as the API server does: it is held while it has finalizers.
func (w *world) deleteJob() {
	if w.job.DeletionTimestamp == nil {
		t := metav1.NewTime(w.now)
		w.job.DeletionTimestamp = &t
		w.kicked = true
	}
}

// removeJob removes the RayJob; the garbage collector deletes what it controlled.
func (w *world) removeJob() {
	w.job = nil
	for _, c := range w.clusters {
		if c.ownedByJob && c.deletingAt.IsZero() {
			c.deletingAt = w.now
		}
	}
	if w.submitter != nil && w.submitter.deletingAt.IsZero() {
		w.submitter.deletingAt = w.now
	}
	w.jobService = nil
}

// updateSpec changes the spec as a user would (a new generation).
func (w *world) updateSpec(edit func(*rayv1.RayJobSpec)) {
	if w.job == nil {
		return
	}
	edit(&w.job.Spec)
	w.job.Generation++
	w.kicked = true
}

// statusEqual: the controller writes the status only when it differs from the stored one.
func statusEqual(a, b *rayv1.RayJobStatus) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// clusterOfAddress is the cluster a head Service address names.
func clusterOfAddress(addr string) string {
	name, _, _ := strings.Cut(addr, ".")
	return strings.TrimSuffix(name, "-head-svc")
}

// ids are the Ray job ids each cluster ran, for failure messages.
func (w *world) ids() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(w.clusters)) {
		parts = append(parts, fmt.Sprintf("%s:%v", n, slices.Sorted(maps.Keys(w.clusters[n].jobs))))
	}
	return strings.Join(parts, " ")
}

// submitterEnv is an environment variable of the submitter Job's container.
func submitterEnv(j *batchv1.Job, name string) string {
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
