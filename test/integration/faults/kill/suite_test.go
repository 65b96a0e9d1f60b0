// Package kill runs the fault specs (package faults) that SIGKILL the one operator process:
// at each phase of an incremental upgrade and of a rollback, and between a RayJob's
// submission and its status write.
package kill

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/raygate/raygate/test/integration/faults"
)

func TestFaultsKill(t *testing.T) {
	faults.Run(t, "The operator killed during upgrades and RayJob submissions")
}

var _ = BeforeSuite(faults.Start)

var (
	_ = faults.RayJobSpecs()
	_ = faults.KillSpecs()
)
