//go:build tools

// Package tools pins OpenShift's API module for its Route CRD
// (route/v1/zz_generated.crd-manifests/routes.crd.yaml): the route suite serves the real
// CRD, as an OpenShift cluster does, rather than one of our own.
package tools

import _ "github.com/openshift/api/route/v1"
