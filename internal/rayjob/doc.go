// Package rayjob holds the pure functions of a RayJob that both admission and the RayJob
// controller need: the names of what a job creates, its submission id, the RayCluster it
// creates (with the submitter sidecar in SidecarMode), the `ray job submit` command, and the
// submitter Job (K8sJobMode) with its pod, built the way KubeRay v1.7 builds them so that
// RayJob manifests written for KubeRay behave the same.
//
// Every function takes the RayJob (and, where KubeRay reads it, the RayCluster the job runs
// on) and returns new objects; nothing is modified, nothing is read from the API or the
// environment. Feature gates are passed in.
package rayjob
