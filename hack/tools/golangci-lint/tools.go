//go:build tools

// Package tools pins golangci-lint. It has its own module because its dependencies' versions
// differ from the Kubernetes ones of the main tools module.
package tools

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
