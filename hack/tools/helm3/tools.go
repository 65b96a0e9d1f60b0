//go:build tools

// Package tools pins Helm 3 in a module of its own, so the install tests can check that the
// chart lints and renders the same under Helm 3 as under Helm 4 (hack/tools/helm): many
// platform teams still run Helm 3. Its k8s.io dependencies need not match Helm 4's.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
