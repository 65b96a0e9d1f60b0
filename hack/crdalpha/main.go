// Command crdalpha adds to each ray.io CRD the version v1alpha1, served but deprecated, with
// v1's schema, subresources and columns, so manifests written for KubeRay's old
// ray.io/v1alpha1 still apply (kubectl prints the deprecation warning). v1 stays the only
// storage version; the schemas are the same, so the API server converts by rewriting
// apiVersion (conversion strategy None). The webhooks see v1 objects: their rules name v1
// with matchPolicy Equivalent, so the API server sends v1alpha1 requests converted.
//
// Usage: go run ./hack/crdalpha config/crd/bases/*.yaml (after crdtrim)
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const (
	from = "v1"
	to   = "v1alpha1"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := addAlpha(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdalpha: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func addAlpha(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return err
	}
	var v1 *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		switch crd.Spec.Versions[i].Name {
		case from:
			v1 = &crd.Spec.Versions[i]
		case to:
			return fmt.Errorf("already has %s: run on controller-gen's output", to)
		}
	}
	if v1 == nil || !v1.Storage {
		return fmt.Errorf("no storage version %s", from)
	}
	alpha := *v1.DeepCopy()
	alpha.Name, alpha.Storage, alpha.Served, alpha.Deprecated = to, false, true, true
	msg := fmt.Sprintf("%s/%s %s is deprecated; use %s/%s (same schema)", crd.Spec.Group, to, crd.Spec.Names.Kind, crd.Spec.Group, from)
	alpha.DeprecationWarning = &msg
	crd.Spec.Versions = append(crd.Spec.Versions, alpha)
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), stripStatus(out)...), 0o644)
}

// stripStatus drops the empty status the marshalled CRD carries; controller-gen writes none.
func stripStatus(out []byte) []byte {
	for i := 0; i+9 <= len(out); i++ {
		if string(out[i:i+9]) == "\nstatus:\n" {
			return out[:i+1]
		}
	}
	return out
}
