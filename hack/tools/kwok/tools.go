//go:build tools

// Package tools pins kwok in its own module: kwok's k8s.io dependencies differ from the
// main tools module's k8s.io/kubernetes pins, so sharing one go.mod would downgrade one or
// the other.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
