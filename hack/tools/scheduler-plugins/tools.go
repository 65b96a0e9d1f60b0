//go:build tools

// Package tools pins the scheduler-plugins module in a module of its own: its k8s.io
// dependencies need not match the versions pinned in the main go.mod.
//
//   - sigs.k8s.io/scheduler-plugins: its module carries the coscheduling PodGroup CRD
//     (config/crd/bases) that the batchscheduler integration suite installs
//     (scheduler-plugins-crds). Importing its dependency-free group-name package keeps the
//     version pinned here and in go.sum.
package tools

import (
	_ "sigs.k8s.io/scheduler-plugins/apis/scheduling"
)
