package admissionjson

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

// fixtureTemplates are the raw pod templates of the decode fixtures (the repository's
// samples and test objects) and of the production RayService the handler benchmarks review.
func fixtureTemplates(t testing.TB) map[string][]byte {
	t.Helper()
	bodies := decodeFixtures(t)
	bodies["production"] = mustJSON(t, builders.ProductionRayService())
	out := map[string][]byte{}
	for name, body := range bodies {
		for _, obj := range []runtime.Object{&rayv1.RayCluster{}, &rayv1.RayService{}} {
			elided, ok := findElided(body, obj, false)
			if !ok {
				continue
			}
			for i, e := range elided {
				out[fmt.Sprintf("%s/%T/%d", name, obj, i)] = body[e.start:e.end]
			}
		}
	}
	return out
}

// Every template of the samples is read by the arena decoder itself (not handed to the
// plain one) and decodes to exactly what the plain decoder returns.
func TestDecodeTemplateMatchesThePlainDecoder(t *testing.T) {
	templates := fixtureTemplates(t)
	if len(templates) < 8 {
		t.Fatalf("only %d templates in the fixtures", len(templates))
	}
	for name, raw := range templates {
		var want, got corev1.PodTemplateSpec
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !decodeArena(raw, nil, reflect.ValueOf(&got).Elem(), nil) {
			t.Errorf("%s: left to the plain decoder", name)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded differently\narena %+v\nplain %+v", name, got, want)
		}
	}
}

// What the arena decoder does not read with certainty goes to the plain decoder, which
// gives the same object or error as always.
func TestDecodeTemplateLeavesTheUncertainToThePlainDecoder(t *testing.T) {
	for _, raw := range []string{
		`{"spec":{"hostname":"a","hostname":"b"}}`,                       // a key twice
		`{"spec":{"host\u006eame":"a"}}`,                                 // an escaped key
		`{"spec":{"containers":"x"}}`,                                    // the wrong type
		`{"spec":{"priority":1.5}}`,                                      // a fraction for an integer
		`{"spec":{"priority":99999999999}}`,                              // overflow
		`{"spec":{"containers":[{"name":"a"}]}`,                          // cut short
		`{"metadata":{"labels":{"a":1}}}`,                                // a number for a string
		`{"spec":{"containers":[{"resources":{"limits":{"cpu":"x"}}}]}}`, // a quantity that does not parse
	} {
		var arena corev1.PodTemplateSpec
		if decodeArena([]byte(raw), nil, reflect.ValueOf(&arena).Elem(), nil) && isValidJSON(raw) {
			t.Errorf("%s: read by the arena decoder", raw)
		}
		var got, want corev1.PodTemplateSpec
		err := decodeTemplate([]byte(raw), &got, nil)
		wantErr := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(raw), &want)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", raw, got, err, want, wantErr)
		}
	}
}

// FuzzDecodeTemplate: for any bytes, decodeTemplate fails exactly when the plain decoder
// fails, with the same message, and otherwise returns the same template.
func FuzzDecodeTemplate(f *testing.F) {
	for _, raw := range fixtureTemplates(f) {
		f.Add(raw)
	}
	for _, s := range []string{
		`{"spec":{"containers":[{"name":"a\u0062","env":[{"name":"x","value":""}],"ports":[]}]}}`,
		`{"spec":{"hostname":"a","hostname":"b","nodeSelector":{"a":"b","a":"c"}}}`,
		`{"metadata":{"creationTimestamp":null,"labels":null},"spec":{"priority":null,"activeDeadlineSeconds":12}}`,
		`{"spec":{"containers":[{"livenessProbe":{"httpGet":{"port":"http"},"periodSeconds":-1}}],"overhead":{"cpu":"0.5"}}}`,
		`{"spec":{"securityContext":{"runAsUser":1e3,"sysctls":[{"name":"a","value":"b"}]},"hostNetwork":true}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got, want corev1.PodTemplateSpec
		err := decodeTemplate(raw, &got, nil)
		wantErr := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &want)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("error %v, plain decoder %v", err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded differently:\narena %+v\nplain %+v", got, want)
		}
	})
}

func isValidJSON(s string) bool {
	var v any
	return sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(s), &v) == nil
}

// Escapes and invalid UTF-8 are the plain decoder's business, string by string.
func TestDecodeTemplateUnescapesAsThePlainDecoder(t *testing.T) {
	for _, raw := range []string{
		`{"spec":{"containers":[{"name":"a\u0062","args":["-c","echo \"hi\"\n\t\\ \/ \ud83d\ude00 \ud800"]}]}}`,
		"{\"spec\":{\"hostname\":\"\xff\",\"nodeSelector\":{\"k\\u0065y\":\"v\xc3\"}}}",
	} {
		var arena, want corev1.PodTemplateSpec
		if !decodeArena([]byte(raw), nil, reflect.ValueOf(&arena).Elem(), nil) {
			t.Errorf("%s: left to the plain decoder", raw)
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(arena, want) {
			t.Errorf("%s:\narena %+v\nplain %+v", raw, arena, want)
		}
	}
}

// The samples' whole objects (the SharingDecoder gives decodeObject them without templates)
// are read by the arena decoder itself and decode to what Decode returns.
func TestDecodeObjectMatchesThePlainDecoder(t *testing.T) {
	bodies := decodeFixtures(t)
	bodies["production RayService"] = mustJSON(t, builders.ProductionRayService())
	for name, body := range bodies {
		want, got := newObjectFor(name, body), newObjectFor(name, body)
		plainDecode(t, body, want)
		if !decodeArena(body, nil, reflect.ValueOf(got).Elem(), nil) {
			t.Errorf("%s: left to the plain decoder", name)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded differently\narena %+v\nplain %+v", name, got, want)
		}
	}
}
