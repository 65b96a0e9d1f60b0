package admissionjson

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

// sample is a RayCluster or RayService of the repository's samples and test objects, as JSON.
type sample struct {
	name, kind string
	body       []byte
}

// sampleObjects are the RayClusters and RayServices of config/samples and test/testdata.
func sampleObjects(t testing.TB) []sample {
	t.Helper()
	files, _ := filepath.Glob("../../config/samples/*.yaml")
	more, _ := filepath.Glob("../../test/testdata/*.yaml")
	var out []sample
	for _, file := range append(files, more...) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---") {
			var tm metav1.TypeMeta
			if yaml.Unmarshal([]byte(doc), &tm) != nil || (tm.Kind != rayv1.RayClusterKind && tm.Kind != rayv1.RayServiceKind) {
				continue
			}
			body, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				continue
			}
			out = append(out, sample{name: filepath.Base(file) + "/" + tm.Kind, kind: tm.Kind, body: body})
		}
	}
	if len(out) < 4 {
		t.Fatalf("found %d sample objects; the globs found too few", len(out))
	}
	return out
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
