// Package rayservice reconciles RayService objects: clusters, serve config, services,
// Gateway API objects and zero-downtime upgrades.
//
// A reconcile (a pass) is observe → plan → carry out → record:
//
//   - admit (plan.Admit) defaults the spec and validates it with the rules for stored
//     objects;
//   - observe (observe.go) reads, changing nothing in the API, the RayService's clusters,
//     their pods, what the dashboard pool last heard from their heads (dashboards.go; it asks
//     the pool to read again when that is old), and the Services, Gateway and HTTPRoute
//     raygate manages for it, into a plan.Observed. No reconcile waits on a dashboard;
//   - plan (package plan) is one pure function of what was observed, the desired spec, the
//     stored status and the time. It returns the Effects (actions, serve config submissions,
//     dashboards to read again, gates to evaluate) and the Outcome (the new status, the
//     events, when to look again, what the metrics count). It imports no client;
//   - carryOut and apply (apply.go) carry the effects out: the new-cluster decision, then
//     the serve config submissions, handed to the pool after the config is kept in the
//     cluster's record (records.go), then the rest; a failed action stops the pass before
//     the status is written. The pool's answers come back on a later pass. A pass that
//     reaches a gated step is planned again with the gates' results (gates_eval.go);
//   - record (reconcile.go) writes the status once, only when it changed, and only then
//     emits the events that announce what it records and counts the metric facts.
//
// State that must survive an operator restart is in the API, never in memory: the status,
// on each RayCluster the hash of the serve config its dashboard accepted and, once it is
// retired, when it may be deleted, and in a ConfigMap the cluster owns the configs it was
// given. What is in memory (the pool's last answers, names found taken) is a cache of API
// and dashboard facts that a restart only has to read again.
//
// Words the code uses besides the plan's (see package plan): the pool is the dashboard
// pool (internal/dashboard), which reads and submits off the reconcile workers; a target is
// one head's dashboard; a record is a cluster's serve config ConfigMap; a taken name is a name
// a create found taken by an object the cache does not hold (ownership.go, package owned).
package rayservice
