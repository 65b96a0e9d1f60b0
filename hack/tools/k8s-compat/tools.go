//go:build tools

// Package tools pins the oldest Kubernetes minor the docs claim (install.md, the chart's
// kubeVersion) in its own module: `make test-compat` runs the admission, RayCluster and
// RayService suites against this kube-apiserver. Opt-in: `make tools` does not build it.
// etcd comes from hack/tools, the same binary as the default control plane.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
