//go:build tools

// Package tools pins Volcano's API module in a module of its own: its k8s.io dependencies
// need not match the versions pinned in the main go.mod.
//
//   - volcano.sh/apis: its scheduling/v1beta1 types carry the kubebuilder markers Volcano
//     generates its PodGroup and Queue CRDs from; hack/tools.sh runs controller-gen over
//     them (volcano-crds), and the batchscheduler integration suite installs the result.
package tools

import (
	_ "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)
