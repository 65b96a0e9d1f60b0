package main

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The version added next to v1: served but deprecated, with v1's schema, subresources and
// columns, so manifests written for KubeRay's old ray.io/v1alpha1 still apply (kubectl
// prints the deprecation warning). v1 stays the only storage version; the schemas are the
// same, so the API server converts by rewriting apiVersion (conversion strategy None). The
// webhooks see v1 objects: their rules name v1 with matchPolicy Equivalent, so the API
// server sends v1alpha1 requests converted.
const (
	storedVersion     = "v1"
	deprecatedVersion = "v1alpha1"
)

// addDeprecatedVersion appends v1alpha1 as a copy of the (already trimmed) v1.
func addDeprecatedVersion(crd *apiextensionsv1.CustomResourceDefinition) error {
	var v1 *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		switch crd.Spec.Versions[i].Name {
		case storedVersion:
			v1 = &crd.Spec.Versions[i]
		case deprecatedVersion:
			return fmt.Errorf("already has %s: run on controller-gen's output", deprecatedVersion)
		}
	}
	if v1 == nil || !v1.Storage {
		return fmt.Errorf("no storage version %s", storedVersion)
	}
	alpha := *v1.DeepCopy()
	alpha.Name, alpha.Storage, alpha.Served, alpha.Deprecated = deprecatedVersion, false, true, true
	msg := fmt.Sprintf("%s/%s %s is deprecated; use %s/%s (same schema)", crd.Spec.Group, deprecatedVersion, crd.Spec.Names.Kind, crd.Spec.Group, storedVersion)
	alpha.DeprecationWarning = &msg
	crd.Spec.Versions = append(crd.Spec.Versions, alpha)
	return nil
}
