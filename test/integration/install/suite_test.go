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
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
	"github.com/raygate/raygate/internal/testenv/tools"
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
	var err error
	helm, err = tools.Path("helm")
	Expect(err).NotTo(HaveOccurred())
	helm3, err = tools.Path("helm3")
	Expect(err).NotTo(HaveOccurred())

	// The managers this suite runs are not the release's: the RBAC specs check what the
	// release's ServiceAccount may do, so the harness's grants go to another one.
	harness = suite.Start(suite.Options{
		ControlPlane:   controlplane.Options{GatewayAPI: true},
		ServiceAccount: framework.ServiceAccount{Namespace: "raygate-system", Name: "raygate-harness"},
	})
	env = harness.Env

	// The batch schedulers' PodGroup CRDs too: the RBAC specs ask the API server about every
	// generated rule, and it only answers for resources it serves.
	// OpenShift's Route CRD too (the dashboard Route of enableIngress).
	for _, tool := range []string{"cert-manager-crds", "volcano-crds", "scheduler-plugins-crds", "openshift-route-crd"} {
		dir, err := tools.Path(tool)
		Expect(err).NotTo(HaveOccurred())
		crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(crds).NotTo(BeEmpty(), tool)
	}
	// The operator's namespace enforces the restricted Pod Security Standard, as
	// docs/install.md recommends; the tenants' namespaces are plain.
	_, stderr, err := env.Kubectl(ctx, `
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
`, "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred(), stderr)
}, NodeTimeout(20*time.Minute)) // a first run builds Helm 4 and Helm 3 from source (about 3 minutes each)
