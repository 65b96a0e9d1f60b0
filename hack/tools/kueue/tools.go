//go:build tools

// Package tools pins Kueue in its own module: the integration tests run its manager against
// the envtest API server, and Kueue's k8s.io dependencies differ from the other tools' pins.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
