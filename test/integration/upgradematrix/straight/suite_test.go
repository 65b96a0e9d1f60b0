// Package straight runs the upgrade matrix (package upgradematrix) with the operator
// carrying out every action it recorded without a restart.
package straight

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/raygate/raygate/test/integration/upgradematrix"
)

func TestUpgradeMatrixStraight(t *testing.T) {
	upgradematrix.Run(t, "Upgrade actions at every phase, straight")
}

var _ = BeforeSuite(upgradematrix.Start)

var _ = upgradematrix.Specs(false)
