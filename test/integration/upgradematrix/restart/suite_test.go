// Package restart runs the upgrade matrix (package upgradematrix) with the operator
// restarted between recording the actions and carrying them out.
package restart

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/raygate/raygate/test/integration/upgradematrix"
)

func TestUpgradeMatrixRestart(t *testing.T) {
	upgradematrix.Run(t, "Upgrade actions at every phase, with an operator restart")
}

var _ = BeforeSuite(upgradematrix.Start)

var _ = upgradematrix.Specs(true)
