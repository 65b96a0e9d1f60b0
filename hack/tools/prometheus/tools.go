//go:build tools

// Package tools pins Prometheus (the server and promtool) for hack/tools.sh; it is built with
// the remove_all_sd tag, so none of the cloud service-discovery SDKs the tests never use.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
