// Package raypod builds what raygate runs for a RayCluster: the head and worker pods (the
// `ray start` command, ports, environment, probes, shared memory, the autoscaler sidecar) and
// the objects those pods rely on (the head Service, the autoscaler's ServiceAccount, Role and
// RoleBinding).
//
// Every function is pure: it takes the defaulted cluster and returns new objects, and never
// modifies the cluster. The controller creates exactly these objects, and admission can build
// the same ones (e.g. to evaluate the pods against Pod Security) without importing a
// controller.
package raypod
