//go:build tools

// Package tools pins the tools the chart and install tests need, in a module of their
// own: helm's k8s.io dependencies need not match the versions pinned in hack/tools/go.mod.
//
//   - helm.sh/helm/v4/cmd/helm: the helm CLI (hack/tools.sh helm).
//   - github.com/cert-manager/cert-manager: its module carries the cert-manager CRDs
//     (deploy/crds) that the install tests load into the test API server. Importing its
//     dependency-free group-name package keeps the version pinned here and in go.sum.
package tools

import (
	_ "github.com/cert-manager/cert-manager/pkg/apis/certmanager"
	_ "helm.sh/helm/v4/cmd/helm"
)
