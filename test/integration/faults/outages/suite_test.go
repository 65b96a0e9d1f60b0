// Package outages runs the fault specs (package faults) that take something away during an
// upgrade under load: the leader of two replicas, the pending cluster's dashboard, the
// serving cluster's head pod.
package outages

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/raygate/raygate/test/integration/faults"
)

func TestFaultsOutages(t *testing.T) {
	faults.Run(t, "Leader, dashboard and pod faults during upgrades under load")
}

var _ = BeforeSuite(faults.Start)

var _ = faults.OutageSpecs()
