// Package api checks the CRDs as users meet them: the real kubectl applying KubeRay-style
// manifests with strict field validation, kubectl explain, and the printer columns.
package api

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/raygate/raygate/internal/testenv/controlplane"
	"github.com/raygate/raygate/internal/testenv/framework/suite"
)

var (
	harness *suite.Suite
	env     *controlplane.Env
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ray.io/v1 CRDs")
}

var _ = BeforeSuite(func() {
	harness = suite.Start(suite.Options{})
	env = harness.Env
})
