//go:build tools

// Package tools pins the tools the chart and install tests need, in a module of their
// own: helm's k8s.io dependencies need not match the versions pinned in hack/tools/go.mod.
// Helm 3 and Helm 4 share one module so that one build cache holds the packages they share
// (most of their dependencies): a fresh machine compiles them once.
//
//   - helm.sh/helm/v4/cmd/helm: the helm CLI (hack/tools.sh helm).
//   - helm.sh/helm/v3/cmd/helm: Helm 3 (hack/tools.sh helm3), so the install tests can check
//     that the chart lints and renders the same under Helm 3: many platform teams still run it.
//   - github.com/cert-manager/cert-manager: its module carries the cert-manager CRDs
//     (deploy/crds) that the install tests load into the test API server. Importing its
//     dependency-free group-name package keeps the version pinned here and in go.sum.
package tools

import (
	_ "github.com/cert-manager/cert-manager/pkg/apis/certmanager"
	_ "helm.sh/helm/v3/cmd/helm"
	_ "helm.sh/helm/v4/cmd/helm"
)
