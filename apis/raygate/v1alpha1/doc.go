// Package v1alpha1 is raygate's own API group, raygate.ray.io: additions beyond KubeRay's
// ray.io/v1 that need more structure than an annotation. Keeping them here means KubeRay
// manifests apply unchanged and nothing collides with fields KubeRay may add to ray.io/v1.
//
// +kubebuilder:object:generate=true
// +groupName=raygate.ray.io
package v1alpha1
