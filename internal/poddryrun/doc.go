// Package poddryrun asks the API server whether it would admit the pods raygate would create
// for an object, before the object is admitted: each distinct pod (a RayCluster's head and one
// per worker group, the cluster of a RayService or RayJob, a RayJob's submitter) is created
// with dryRun=All in the object's namespace, and each refusal becomes a field error at the
// field of the object it comes from (podsecurity.Origin), each warning an admission warning.
//
// The cluster's real rules answer: the API server's pod validation, LimitRanges, Pod Security
// as its admission configuration sets it (defaults, exemptions), ValidatingAdmissionPolicies
// and other engines' webhooks on pods. A dry-run stores nothing and has no side effects: the
// API server calls other webhooks with dryRun=true and refuses the dry-run instead of calling
// one that declares side effects, which is reported as a check that did not run.
//
// Cost is bounded: the pods are built with a placeholder name, so a template is sent once per
// namespace whatever the object's name (a table of admitted pods, per namespace, for a few
// minutes); on update only the pods that changed are sent; at most a few dry-runs run at once
// per request and per process; everything runs within the caller's deadline, past which the
// pods not checked are named in a warning and the object is admitted.
package poddryrun
