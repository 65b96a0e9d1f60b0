//go:build tools

// Package tools pins ko, which `make image` runs to build the operator image without a
// container engine.
package tools

import _ "github.com/google/ko"
