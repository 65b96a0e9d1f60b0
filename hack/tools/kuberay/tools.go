//go:build tools

// Package tools pins KubeRay's operator in its own module: the migration suite runs it against
// the envtest API server to check that raygate takes over from KubeRay, and back, and KubeRay's
// k8s.io dependencies differ from the other tools' pins.
package tools

import _ "github.com/ray-project/kuberay/ray-operator"
