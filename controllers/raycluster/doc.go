// Package raycluster reconciles RayCluster objects: pods, services, autoscaler RBAC and status.
//
// A reconcile (a pass) is observe → plan → act → record:
//
//   - observe (reconciler.go) reads the cluster from the cache, defaults a copy and
//     validates it with the rules for stored objects, digests the spec (its hash, the pod
//     bounds it is capped at) and lists the cluster's pods and what the expectations say of
//     the pod creates and deletes the cache does not show yet: the observation, which
//     nothing changes afterwards;
//   - plan: planPods (podplan.go) decides, as one pure function of the observation, what the
//     pass does to the pods;
//   - act runs the phases in order: the autoscaler's RBAC, the token Secret, the GCS storage
//     claim, the cert-manager objects, the NetworkPolicies, the Services, the Ingress, the
//     batch scheduler's PodGroup, the pod plan, then clearing the handled workersToDelete.
//     Each phase reads its own objects (from the cache, or, for Secrets and claims, which are
//     not cached, from the API server, and only when the pass gets there), decides with a
//     pure function (decideService, decideIngress, planNetworkPolicies, decideTLSObject, ...)
//     and carries the change out (applyChange, change.go). The first failure stops the pass;
//   - record (writeStatus) computes the status from the observation and the report of the
//     act phases, writes it once when it changed (statuswrite.go decides when) and then
//     sends the pass's events.
//
// Words the code uses:
//
//   - pass: one reconcile of one cluster; pass is also the value a reconcile carries: its
//     observation and its report.
//   - observation: what the pass read before deciding anything (the cluster as stored and
//     its defaulted copy, the spec's hash, the pods, the expectations). Only the object is
//     written back: an update of its workersToDelete and the status write.
//   - report: what the act phases tell the status write and the events after it: the head
//     Service, the conflicts, the events, when to look again.
//   - plan: a pure decision of what to do (podPlan for the pods, a change for one owned
//     object); the act functions carry it out.
//   - change: what a pass does to one owned object: keep, create, update, recreate, delete,
//     or report a conflict.
//   - conflict: an object with a name raygate wants that the cluster does not control; it is
//     left alone and shown in the OwnershipConflict condition.
//   - expectations: the pod creates and deletes a pass made that the cache does not show
//     yet, so no pass acts on them twice (internal/expectations).
//   - group: the head (expectations.HeadGroup) or one worker group; a unit is one pod, or
//     one replica of a multi-host group.
package raycluster
