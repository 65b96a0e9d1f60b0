// Package plan decides one pass of the RayJob controller. Decide is a pure function of the
// RayJob (metadata, defaulted spec, stored status), whether it is valid, what the pass
// observed (its RayCluster, the cluster's head Service and head pod, the submitter Job,
// `<job>-head-svc`, and what the dashboard pool last heard from the cluster's Jobs API), the
// operator's settings and the time, to what the pass must do and what it concludes. The
// package does no I/O: no Kubernetes client, no dashboard, no clock, no environment (a
// depguard rule and a forbidigo rule in .golangci.yml keep them out). The controller
// observes, calls Decide, carries out the effects and records the outcome.
//
// Decide follows KubeRay v1.7's RayJob state machine (see docs/rayjob.md, "Lifecycle"):
// managedBy another controller → nothing; being deleted → stop the Ray job, remove the
// finalizer (deleting.go); invalid → ValidationFailed (deleting.go); otherwise one step
// from the stored jobDeploymentStatus: New, Initializing, Waiting, Suspending, Retrying and
// Suspended in lifecycle.go, Running in running.go, Complete and Failed (the clean-up) in
// finished.go, then the end of an attempt — counts, retry, end time, metrics — in
// status.go (settle).
//
// On top of KubeRay's behaviour the plan keeps these promises, each checked by FuzzPlan:
//
//   - a job is submitted at most once per attempt: the submission id (status.jobId) is in
//     the stored status before any effect that submits (the submitter Job, an HTTP
//     submission, a SidecarMode cluster); an HTTP submission is planned only after the
//     Jobs API answered, for this cluster and id, that it has no such job, and after any
//     earlier submission's answer; "already exists" counts as submitted;
//   - nothing is created or deleted for an invalid job or one another controller manages,
//     and a RayCluster the job does not control is never deleted or changed;
//   - remote text (Ray's job message, an unknown status word, a refusal) reaches the
//     status and events only sanitized and bounded (internal/untrusted);
//   - the status is the stored one, unchanged, when nothing changed, so the controller
//     writes nothing;
//   - deadlines and TTLs fire at the time they are due: the wake-up says when; the only
//     polling is the read of a running job's status, which cannot be watched.
//
// Words the code uses:
//
//   - pass: one reconcile of one RayJob: observe, plan, carry out, record.
//   - attempt: one run of the job on one RayCluster, from New to Complete, Failed or
//     Retrying (a failed attempt within backoffLimit is retried: a new cluster and, unless
//     spec.jobId pins it, a new submission id).
//   - Observed: what the pass read; the plan never changes it.
//   - JobsView: what the dashboard pool last heard from the attempt's cluster about the
//     attempt's id: the last read of the job (found, not found, failed), the last
//     submission's answer, the last stop's answer. Answers about another cluster or id are
//     ignored.
//   - Fresh: a submission id and a cluster name drawn by the controller for the pass; used
//     only when the status records none.
//   - Plan: Decide's answer, the Effects and the Outcome of a pass.
//   - Effects: Actions (writes to the API server, in order; a failed one stops the pass
//     before the outcome is recorded) and Requests (work for the dashboard pool: read,
//     submit, stop; the answers come back in a later pass's JobsView).
//   - Outcome: the status to store, the events that announce it, the decisions for the log,
//     the wake-up and the metric facts, recorded once the effects are carried out.
//   - settle: the end of an attempt: counts, retry or final status, end time, events.
//   - release: deleting an attempt's cluster and submitter (Suspending, Retrying) before
//     forgetting it.
//   - clean-up: what a finished job's deletion settings ask (finished.go).
//   - wake-up: when the pass wants to run again: soon (a recorded decision is carried on)
//     or at a time (a deadline, a TTL, the next read of a running job).
//   - world (tests): the simulated API server, RayClusters, submitters, Jobs APIs and
//     dashboard pool the tests drive the plan through, pass after pass, as the controller
//     would (world_test.go).
package plan
