// Package rayjob will reconcile RayJob objects: a RayCluster per attempt (or an existing one
// named by clusterSelector), the submission of the Ray job (a submitter Job, the operator's
// own request to the Jobs API, or a container in the head pod), its end, retries,
// suspension and clean-up, with KubeRay v1.7's behaviour.
//
// A pass will be observe → plan → carry out → record, as for RayService:
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
// This package holds, so far, the doc and the metrics; the reconciler comes with the shared
// status writer (internal/statuspatch) and owned-object helper (internal/owned).
package rayjob
