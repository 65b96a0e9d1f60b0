//go:build tools

// Package tools pins Traefik in its own module: the tests and the local mode run it as the
// Gateway API implementation (its Kubernetes Gateway provider) in front of the simulated
// Serve proxies, and Traefik's dependencies differ from the other tools' pins.
package tools

import _ "github.com/traefik/traefik/v3/cmd/traefik"
