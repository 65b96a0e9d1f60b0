//go:build tools

// Package tools pins two tools built from Kubernetes 0.34 libraries, in one module so that a
// fresh machine compiles the packages they share (client-go, apimachinery, the API types,
// their dependencies) once, and their dependencies need not match the other tools' pins:
//
//   - github.com/traefik/traefik/v3/cmd/traefik: the Gateway API implementation the tests and
//     the local mode run (its Kubernetes Gateway provider) in front of the simulated Serve
//     proxies. hack/tools.sh builds it with lego_dns_providers.go.in in place of lego's
//     DNS-provider registry (no ACME DNS-01 providers; see build_traefik).
//   - sigs.k8s.io/kueue/cmd/kueue: Kueue's manager, which the Kueue suites run against the
//     envtest API server.
package tools

import (
	_ "github.com/traefik/traefik/v3/cmd/traefik"
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
