package admissionjson

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/test/builders"
)

// The benchmarks time each piece on the production-sized RayService of the handler benchmarks
// (webhooks/bench_test.go), against the plain way it replaces, so whether a piece still pays
// for itself can be measured:
//
//	go test -run '^$' -bench . -benchmem -count 6 ./internal/admissionjson/ | benchstat -
//
// Decode is what the plain way costs to decode one object; SharingDecoder (warm, cold) and
// DecodeWithoutTemplates compare with it; DefaultingPatch with DefaultingPatchFromRaw (the
// marshal-and-diff it avoids, on the whole objects); Unchanged with decoding the two objects.

func productionJSON(b *testing.B) []byte {
	b.Helper()
	svc := builders.ProductionRayService()
	defaulting.RayService(svc)
	return mustJSON(b, svc)
}

func BenchmarkDecode(b *testing.B) {
	raw := productionJSON(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if err := Decode(raw, &rayv1.RayService{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSharingDecoderWarm: every template was decoded before, as for the old and new
// object of an update, or a re-apply.
func BenchmarkSharingDecoderWarm(b *testing.B) {
	raw := productionJSON(b)
	d := NewSharingDecoder()
	if err := d.Decode("ns", raw, &rayv1.RayService{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if err := d.Decode("ns", raw, &rayv1.RayService{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSharingDecoderCold: no template was seen before: the table's cost on top of Decode.
func BenchmarkSharingDecoderCold(b *testing.B) {
	svc := builders.ProductionRayService()
	defaulting.RayService(svc)
	d := NewSharingDecoder()
	const distinct = 1024 // bodies built before timing, each with templates never seen
	bodies := make([][]byte, distinct)
	for i := range bodies {
		s := svc.DeepCopy()
		for _, t := range templatesOf(&s.Spec.RayClusterSpec) {
			c := &t.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "REQUEST", Value: fmt.Sprint(i)})
		}
		bodies[i] = mustJSON(b, s)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(bodies[0])))
	i := 0
	for b.Loop() {
		if i == distinct {
			// Start over with a fresh table, so every template stays unseen.
			b.StopTimer()
			d, i = NewSharingDecoder(), 0
			b.StartTimer()
		}
		if err := d.Decode("ns", bodies[i], &rayv1.RayService{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func templatesOf(spec *rayv1.RayClusterSpec) []*corev1.PodTemplateSpec {
	out := []*corev1.PodTemplateSpec{&spec.HeadGroupSpec.Template}
	for i := range spec.WorkerGroupSpecs {
		out = append(out, &spec.WorkerGroupSpecs[i].Template)
	}
	return out
}

func BenchmarkDecodeWithoutTemplates(b *testing.B) {
	raw := productionJSON(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := DecodeWithoutTemplates(raw, &rayv1.RayService{}); err != nil {
			b.Fatal(err)
		}
	}
}

// mutateCase is the mutating webhook's work for a create that needs defaults (worker groups
// without rayStartParams, no maxSurgePercent), set up as the webhook does it.
type mutateCase struct {
	raw, skeleton       []byte
	original, defaulted *rayv1.RayService
}

func newMutateCase(b *testing.B) mutateCase {
	b.Helper()
	svc := builders.ProductionRayService()
	svc.Spec.UpgradeStrategy.ClusterUpgradeOptions.MaxSurgePercent = nil
	for i := range svc.Spec.RayClusterSpec.WorkerGroupSpecs {
		svc.Spec.RayClusterSpec.WorkerGroupSpecs[i].RayStartParams = nil
	}
	raw := mustJSON(b, svc)
	original := &rayv1.RayService{}
	skeleton, err := DecodeWithoutTemplates(raw, original)
	if err != nil {
		b.Fatal(err)
	}
	defaulted := original.DeepCopy()
	defaulting.RayService(defaulted)
	return mutateCase{raw: raw, skeleton: skeleton, original: original, defaulted: defaulted}
}

// full decodes the whole objects, as the mutating webhook does for the slower way.
func (c mutateCase) full() (any, any, error) {
	obj := &rayv1.RayService{}
	if err := Decode(c.raw, obj); err != nil {
		return nil, nil, err
	}
	return obj, WithTemplatesOf(c.defaulted, obj), nil
}

func BenchmarkDefaultingPatch(b *testing.B) {
	c := newMutateCase(b)
	b.ReportAllocs()
	for b.Loop() {
		patches, err := DefaultingPatch(c.raw, c.skeleton, c.original, c.defaulted, c.full)
		if err != nil || len(patches) == 0 {
			b.Fatalf("%d operations, %v", len(patches), err)
		}
	}
}

// BenchmarkDefaultingPatchFromRaw is the patch written the way that assumes nothing: the whole
// objects decoded, marshalled and diffed against the raw request.
func BenchmarkDefaultingPatchFromRaw(b *testing.B) {
	c := newMutateCase(b)
	b.ReportAllocs()
	for b.Loop() {
		patches, err := diffFromRaw(c.raw, c.full)
		if err != nil || len(patches) == 0 {
			b.Fatalf("%d operations, %v", len(patches), err)
		}
	}
}

func BenchmarkUnchanged(b *testing.B) {
	raw := productionJSON(b)
	old := append([]byte(nil), raw...)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if !Unchanged(raw, old) {
			b.Fatal("not unchanged")
		}
	}
}

// BenchmarkUnchangedDigest: the mutating webhook's look-up key for its CleanSet.
func BenchmarkUnchangedDigest(b *testing.B) {
	raw := productionJSON(b)
	old := append([]byte(nil), raw...)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, ok := UnchangedDigest(raw, old); !ok {
			b.Fatal("not unchanged")
		}
	}
}
