// Package statuspatch writes the status of the objects raygate reconciles: Replace writes a
// whole status without a resourceVersion precondition, and Writer, built on it, is the one
// status writer of the controllers (RayCluster, RayService, RayJob).
//
// # Replace: no resourceVersion precondition
//
// An update of the status subresource carries the resourceVersion the controller read, so
// it is refused with 409 Conflict whenever the informer cache has not yet seen the previous
// write; the retry costs a request and a backoff. raygate owns the whole status of the
// objects it reconciles, so it can replace it unconditionally: a JSON patch whose one
// operation adds /status (an add on an existing member replaces it) sets exactly the status
// computed, whatever the server holds, and never conflicts. A JSON merge patch could not do
// this (it merges nested maps and cannot clear an omitted field), and a server-side apply
// would leave fields set by earlier updates owned by them. The caller must compute the
// status from what it last wrote, not from a cache that may be behind it: Writer sees to it.
//
// The patch asks for the object's metadata only in return (a PartialObjectMetadata): the
// caller already holds the status it wrote, and a whole RayCluster or RayService (its pod
// templates, the serve config) would cost the API server an encode and raygate a decode per
// write, at a few status writes per cluster during a bring-up.
//
// # Writer: the contract
//
// A controller holds one Writer for its kind; the zero value is ready. It remembers, per
// object (namespace and name, and the UID: a recreated object starts afresh), the status it
// last wrote and the change its policy left waiting. Reconciles of different objects may run
// at once; one object is reconciled by one worker at a time (controller-runtime's queue).
//
// Read your writes. A pass reads its object with Get or GetCached, never with the bare cache,
// so it never computes from a status it already replaced. Write remembers the
// resourceVersion the write made; while the cache shows another one, the cache is behind,
// and
//   - Get reads the object from the API server instead (each pass, until the cache shows the
//     version read): the whole object is fresh, at the price of a request;
//   - GetCached puts the status last written in place of the cached one and asks nothing:
//     the rest of the object is the cache's, which is enough for a controller whose passes
//     only need their own status to be current (the RayCluster controller, at a thousand
//     clusters, could not afford a read of each whole cluster after every write).
//
// A cached object of the same name but another UID than the one written (recreated since,
// or the one before it) makes both forget what they remembered; Get reads the API server
// once more to tell which.
//
// Nobody else writes these statuses; an edit by hand is replaced by the next write.
//
// Write. Write(ctx, c, obj, status, now, policy) compares status with obj's (as Get gave it,
// semantically): equal, nothing is written and a waiting change is dropped. Different, the
// policy decides: write now, or wait (Decision.After) with what it must see again next time
// (Decision.Pending). A written status replaces the stored one whole, without a
// resourceVersion precondition (Replace), and is set in obj with the write's resourceVersion;
// Result.Written says so. A waiting change is not written; Result.Wait says how soon to look
// again, and the controller must requeue then: status writes do not trigger a pass, so
// nothing else would bring the change out. A failed write remembers nothing new (a change
// left waiting stays) and returns the error.
//
// Coalescing. The policy is a pure function of the stored status, the computed one, the
// change left waiting (the zero value of P: none) and the time of the pass. It carries the
// controller's rules: which changes are only progress (counts, messages) and how long each
// kind may wait, per reason (RayCluster: a steady window, a longer one for a trouble-free
// bring-up bounded by a maximum; RayService: a window for progress messages). A nil policy
// writes every change at once. What a status records (events, metrics) is announced once
// Write says Written, or the status was already stored; never while it waits.
//
// Forgetting. Forget drops everything about an object: call it when the object is deleted.
// Get, GetCached and Write forget an object they find gone (NotFound). A written status is
// forgotten once the cache shows it, and in any case a minute after it was written (a sweep
// during Write): after an object's last write there may be no pass for hours, and a copy per
// object would grow with the fleet. A change left waiting is kept until it is written or the
// status no longer differs.
//
// # Example
//
// A RayJob controller whose status message alone may wait two seconds:
//
//	// jobStatus reaches a RayJob's status for the Writer.
//	type jobStatus struct{}
//
//	func (jobStatus) Status(j *rayv1.RayJob) *rayv1.RayJobStatus     { return &j.Status }
//	func (jobStatus) Copy(s *rayv1.RayJobStatus) *rayv1.RayJobStatus { return s.DeepCopy() }
//
//	type Reconciler struct {
//		client    client.Client // the manager's: reads the cache, writes the API server
//		apiReader client.Reader // the manager's API reader
//		// statuses: P is since when a change waits.
//		statuses statuspatch.Writer[*rayv1.RayJob, rayv1.RayJobStatus, time.Time, jobStatus]
//	}
//
//	func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
//		job := &rayv1.RayJob{}
//		if err := r.statuses.Get(ctx, r.client, r.apiReader, req.NamespacedName, job); err != nil {
//			return ctrl.Result{}, client.IgnoreNotFound(err) // a deleted job is forgotten
//		}
//		now := time.Now()
//		status := computeStatus(job, now) // pure, from job.Status
//		res, err := r.statuses.Write(ctx, r.client, job, status, now, messageWaits(2*time.Second))
//		if err != nil {
//			return ctrl.Result{}, err
//		}
//		return ctrl.Result{RequeueAfter: res.Wait}, nil
//	}
//
//	// messageWaits lets a change of the message alone wait up to window.
//	func messageWaits(window time.Duration) statuspatch.Policy[rayv1.RayJobStatus, time.Time] {
//		return func(stored, computed rayv1.RayJobStatus, since, now time.Time) statuspatch.Decision[time.Time] {
//			if since.IsZero() {
//				since = now
//			}
//			stored.Message = computed.Message
//			if waited := now.Sub(since); waited < window && equality.Semantic.DeepEqual(stored, computed) {
//				return statuspatch.Decision[time.Time]{After: window - waited, Pending: since}
//			}
//			return statuspatch.Decision[time.Time]{Write: true}
//		}
//	}
package statuspatch
