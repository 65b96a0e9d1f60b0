// Package rayservice reconciles RayService objects: clusters, serve config, services,
// Gateway API objects and zero-downtime upgrades.
package rayservice
