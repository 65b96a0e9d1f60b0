// Package webhooks holds the admission handlers for RayCluster and RayService: thin
// adapters over internal/defaulting and internal/validation.
package webhooks
