package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// etcdRequestLimit is etcd's default --max-request-bytes: an object stored in one request.
const etcdRequestLimit = 1536 << 10

// TestGeneratedCRDsFitEtcd reads the generated CRDs (config/crd/bases): each ray.io kind has
// one, trimmed, with the deprecated v1alpha1 copy, and stored as the API server stores it
// (JSON) it fits etcd's request limit with room to spare.
func TestGeneratedCRDsFitEtcd(t *testing.T) {
	seen := map[string]bool{}
	paths, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "ray.io_*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no generated CRDs: %v", err)
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		seen[crd.Spec.Names.Kind] = true
		stored, err := json.Marshal(&crd)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(stored); n > etcdRequestLimit*2/3 {
			t.Errorf("%s is %d bytes as JSON; keep it well under etcd's %d", crd.Name, n, etcdRequestLimit)
		}
		var versions []string
		for _, v := range crd.Spec.Versions {
			versions = append(versions, v.Name)
		}
		want := "v1,v1alpha1"
		if crd.Spec.Names.Kind == rayv1.RayCronJobKind {
			want = "v1" // KubeRay never served it as v1alpha1
		}
		if got := strings.Join(versions, ","); got != want {
			t.Errorf("%s serves %s, want %s", crd.Name, got, want)
		}
	}
	for kind := range kinds {
		if !seen[kind] {
			t.Errorf("no generated CRD for %s", kind)
		}
	}
}
