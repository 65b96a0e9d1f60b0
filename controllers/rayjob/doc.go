// Package rayjob reconciles RayJob objects: a RayCluster per attempt (or an existing one
// named by clusterSelector), the submission of the Ray job (a submitter Job, the operator's
// own request to the Jobs API, or a container in the head pod), its end, retries,
// suspension and clean-up, with KubeRay v1.7's behaviour.
//
// A pass is observe → plan → carry out → record, as for RayService:
//
//   - admit defaults the RayJob in memory and validates it with validation.StoredRayJob;
//   - observe reads, changing nothing, the job's RayCluster (status.rayClusterName), its
//     head Service and head pod, the submitter Job, `<job>-head-svc`, and what the dashboard
//     pool last heard from the cluster's Jobs API about status.jobId, into a plan.Observed;
//   - plan.Decide, a pure function (package plan), returns the effects (API writes, requests
//     to the pool) and the outcome (the status, events, wake-up, metric facts);
//   - the effects are carried out in order, a failed one ending the pass; the pool's answers
//     come back in a later pass;
//   - record writes the status once, only when it changed, then emits the events and counts
//     the metric facts (Metrics.Record).
//
// What the reconciler owes the plan (its inputs are facts it can read; the plan keeps its
// promises only if they are):
//
//   - Inputs.Job is the RayJob as read (metadata, status), its spec defaulted on a copy;
//     Inputs.Invalid is validation.StoredRayJob's answer for it; Inputs.Fresh is a new
//     rayjob.NewJobID and rayjob.NewClusterName every pass (the plan keeps one only when
//     the status records none).
//   - Observed holds what a read found, nil for "not found"; any other read error ends the
//     pass before planning. Cluster is the one status.rayClusterName names (nil while it
//     names none); HeadService its head Service (raypod.HeadServiceName); HeadPod its head
//     pod (SidecarMode); Submitter the Job named after the RayJob; JobService
//     `<job>-head-svc`. Objects found under those names that the RayJob does not control are
//     passed as they are: the plan leaves them alone.
//   - Observed.Jobs is the pool's memory for (status.rayClusterName, status.jobId): the last
//     read of the job (with the time it came), the last submission's answer (Pending from
//     the moment it is queued), the last stop's answer. The pool forgets a cluster's answers
//     when its head pod changes, and a request it cannot send (no head, no address) is
//     answered as failed, so every request gets an answer within the pool's timeout.
//   - Effects: the Actions in order, each with a UID precondition where it deletes or
//     updates, a failed one ending the pass (announce it with plan.FailureReason); then the
//     Requests to the pool. plan.Done(action) is announced once an action succeeded.
//   - Outcome: the status is written only when it differs from the stored one; the events
//     are emitted and Metrics.Record counts the facts only after that write succeeded (or
//     needed none); Metrics.Observe runs every pass, Metrics.Forget when the RayJob is gone;
//     the requeue is Outcome.Wake.After(now). The pool's answers, and the RayJob's, its
//     RayClusters', its Jobs' and its Services' changes, are watched.
//
// Files: controller.go (Config, New, the watches), reconcile.go (a pass; record),
// observe.go, apply.go (the actions, through internal/owned), dashboards.go (the Jobs API
// pool: targets, requests, the view the plan reads), cacheneeds.go, authtoken.go,
// metrics.go.
package rayjob
