// Command crdtrim shrinks the generated CRDs: it drops the descriptions inside embedded
// Kubernetes types (pod templates, Services, ...) and keeps ours. With every description the
// RayService CRD is 1.6 MB, above etcd's request limit; our own field docs are what
// `kubectl explain` users need, and the upstream ones are one `kubectl explain pod` away.
// It then adds ray.io/v1alpha1 as a deprecated copy of v1 (alpha.go).
//
// Usage: go run ./hack/crdtrim config/crd/bases/*.yaml
package main

import (
	"fmt"
	"os"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

var kinds = map[string]reflect.Type{
	rayv1.RayClusterKind: reflect.TypeFor[rayv1.RayCluster](),
	rayv1.RayServiceKind: reflect.TypeFor[rayv1.RayService](),
	rayv1.RayJobKind:     reflect.TypeFor[rayv1.RayJob](),
	rayv1.RayCronJobKind: reflect.TypeFor[rayv1.RayCronJob](),
}

var ourPkg = reflect.TypeFor[rayv1.RayCluster]().PkgPath()

func main() {
	for _, path := range os.Args[1:] {
		if err := trimFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdtrim: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func trimFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return err
	}
	t, ok := kinds[crd.Spec.Names.Kind]
	if !ok && crd.Spec.Group != rayv1.GroupVersion.Group {
		// raygate's own small CRDs (raygate.ray.io) fit etcd as generated.
		return nil
	}
	if !ok {
		return fmt.Errorf("unknown kind %q", crd.Spec.Names.Kind)
	}
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			walk(s.OpenAPIV3Schema, t)
		}
	}
	// KubeRay never served RayCronJob as v1alpha1.
	if crd.Spec.Names.Kind != rayv1.RayCronJobKind {
		if err := addDeprecatedVersion(&crd); err != nil {
			return err
		}
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	// controller-gen writes a document separator and no status; keep the file shape stable.
	return os.WriteFile(path, append([]byte("---\n"), stripStatus(out)...), 0o644)
}

func stripStatus(out []byte) []byte {
	s := string(out)
	if i := strings.Index(s, "\nstatus:\n"); i >= 0 {
		s = s[:i+1]
	}
	return []byte(s)
}

// walk visits the schema of Go type t; below a field whose type is not ours it clears
// every description but the field's own.
func walk(s *apiextensionsv1.JSONSchemaProps, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if s.Items != nil && s.Items.Schema != nil {
			walk(s.Items.Schema, t.Elem())
		}
		return
	case reflect.Map:
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			walk(s.AdditionalProperties.Schema, t.Elem())
		}
		return
	case reflect.Struct:
	default:
		return
	}
	if t.PkgPath() != ourPkg {
		clearNested(s)
		return
	}
	for name, ft := range jsonFields(t) {
		if p, ok := s.Properties[name]; ok {
			walk(&p, ft)
			s.Properties[name] = p
		}
	}
}

// jsonFields maps JSON names to field types, flattening inline embedded structs.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			ft := f.Type
			if ft.PkgPath() == ourPkg {
				for k, v := range jsonFields(ft) {
					fields[k] = v
				}
			}
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
	}
	return fields
}

func clearNested(s *apiextensionsv1.JSONSchemaProps) {
	for k, p := range s.Properties {
		clearAll(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		clearAll(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		clearAll(s.AdditionalProperties.Schema)
	}
}

func clearAll(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = ""
	clearNested(s)
	for i := range s.AllOf {
		clearAll(&s.AllOf[i])
	}
	for i := range s.AnyOf {
		clearAll(&s.AnyOf[i])
	}
	for i := range s.OneOf {
		clearAll(&s.OneOf[i])
	}
}
