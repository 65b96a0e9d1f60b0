// Package rayservice reconciles RayService objects: clusters, serve config, services,
// Gateway API objects and zero-downtime upgrades.
//
// A reconcile is observe → plan → carry out → record:
//
//   - admit (desired.go) defaults and validates the spec as the admission webhook would;
//   - observe (observe.go) reads, changing nothing, the RayService's clusters, their pods
//     and Serve applications (from the dashboards), and the Services, Gateway and HTTPRoute
//     raygate manages for it;
//   - plan (plan*.go) is one pure function of what was observed, the desired spec, the stored
//     status and the time. It returns the new status, the actions that bring the world in
//     line with it (actions.go), the events and when to look again. It calls no client,
//     dashboard or clock;
//   - carryOut and apply (apply.go) carry the actions out: the new-cluster decision, then
//     the serve config submissions (a refusal makes the plan run again knowing it), then
//     the rest; a failed action stops the pass before the status is written;
//   - record (reconcile.go) writes the status once, only when it changed, and only then
//     emits the events that announce what it records.
//
// State that must survive an operator restart is in the API, never in memory: the status,
// and on each RayCluster the serve config its dashboard accepted and, once it is retired,
// when it may be deleted.
package rayservice
