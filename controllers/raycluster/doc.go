// Package raycluster reconciles RayCluster objects: pods, services, autoscaler RBAC and status.
package raycluster
