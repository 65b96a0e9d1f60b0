// Package install tests how platform admins install raygate: the Helm chart (lint,
// template in each mode, the objects it renders), the kustomize config, and both applied to
// a real API server with the cert-manager, Gateway API and batch schedulers' CRDs installed (server-side
// dry-run, RBAC as the operator's ServiceAccount sees it, Pod Security admission).
package install

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/test/integration/install/internal/installenv"
)

var (
	harness *suite.Suite
	env     *controlplane.Env
	// helm is Helm 4, the CLI the docs use; helm3 checks the chart for Helm 3's users.
	helm, helm3 string
)

func TestInstall(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "install: Helm chart and kustomize config")
}

var _ = BeforeSuite(func(ctx context.Context) {
	helm, helm3 = installenv.Helms()
	// The managers this suite runs are not the release's. The batch schedulers' PodGroup CRDs
	// are installed too: the RBAC specs ask the API server about every generated rule, and it
	// only answers for resources it serves; and OpenShift's Route CRD (the dashboard Route of
	// enableIngress). The operator's namespace enforces the restricted Pod Security Standard,
	// as docs/install.md recommends; the tenants' namespaces are plain.
	harness = installenv.Start(ctx, controlplane.Options{GatewayAPI: true},
		[]string{"cert-manager-crds", "volcano-crds", "scheduler-plugins-crds", "openshift-route-crd"}, `
apiVersion: v1
kind: Namespace
metadata:
  name: raygate-system
  labels:
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/enforce-version: latest
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: Namespace
metadata: {name: tenant-ops}
`)
	env = harness.Env
}, NodeTimeout(20*time.Minute)) // a first run builds Helm 4 and Helm 3 from source (about 3 minutes each)
