// Package v1 holds the ray.io/v1 API types (RayCluster, RayService, RayJob), wire-compatible
// with KubeRay: same field names, JSON tags, enum values and status fields.
// +kubebuilder:object:generate=true
// +groupName=ray.io
package v1
