// Package plan decides one pass of the RayService controller. Decide is a pure function from
// what the pass observed, the desired spec, the stored status and the time to what the pass
// must do and what it concludes. The package does no I/O: no Kubernetes client, no
// dashboard or Prometheus client, no clock, no files (a depguard rule in .golangci.yml keeps
// such imports out). The controller (package rayservice) observes, calls Decide, carries
// out the effects and records the outcome.
//
// Decide takes its steps in order. Suspension and the initializing timeout may decide a pass
// alone (suspend.go, timeout.go); otherwise it assigns the roles and makes the new-cluster
// decision (clusters.go, upgrade.go), takes up the upgrade actions (control.go), decides the
// serve configs (serve.go), the Gateway and routes (traffic.go, routes.go), the Services
// (services.go), one step of the upgrade (advance.go, split.go) and the cleanup of retired
// clusters (cleanup.go), and builds the status (status.go). Each step function takes only
// what it writes: act *Effects, out *Outcome, both or neither.
//
// Words the code uses:
//
//   - pass: one reconcile of one RayService: observe, plan, carry out, record.
//   - Observed: what the pass read before deciding anything (clusters, their pods and what
//     their dashboards last said, Services, Gateway, routes); the plan never changes it.
//   - Desired: the spec as the plan reads it, defaulted and validated; its goal is the
//     cluster spec it asks for, with its hashes.
//   - Plan: Decide's answer, the Effects and the Outcome of a pass.
//   - Effects: what the pass must do: Actions (writes to the API server; ClusterActions go
//     first), Submits (serve configs for a dashboard), Refresh (dashboards to read again
//     now) and GateAsk (gate results to fetch, then plan again).
//   - Outcome: what the pass concludes: the status to store, the events that announce it,
//     the conflicts, the decisions for the log, the wake-up and the metric facts. The
//     controller records it only once every effect was carried out.
//   - role, slot: the active cluster (serving) and the pending cluster (being prepared or
//     upgraded to); a slot is one role: its cluster (nil: none) and its part of the status.
//   - stamp, match: what a cluster's annotations say about the spec it was built from, and
//     how that compares with the goal.
//   - split, step: the capacities and traffic of an incremental upgrade, and one move of
//     them (nextStep).
//   - control: what the upgrade-action annotations (pause, resume, abort, promote) ask.
//   - conflict: an object raygate must manage that belongs to someone else; it is left
//     alone and nothing moves until it is gone.
//   - wake-up: when the pass wants to run again (soon, polling, or at a time).
//   - world (tests): the simulated API server, dashboards, dashboard pool and Gateway the
//     tests drive the plan through, pass after pass, as the controller would (world_test.go).
package plan
