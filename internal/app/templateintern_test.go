package app

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/capabilities"
	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/sharedtable"
	"github.com/raygate/raygate/test/builders"
)

// decodedCluster is a RayCluster as the cache gets it: decoded from the API server's JSON, so
// every cluster has its own copy of everything.
func decodedCluster(t testing.TB, name string, mutate func(*rayv1.RayCluster)) *rayv1.RayCluster {
	t.Helper()
	rc := builders.RayCluster(name, "tenant").Obj()
	defaulting.RayCluster(rc)
	rc.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	if mutate != nil {
		mutate(rc)
	}
	b, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	out := &rayv1.RayCluster{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sharesTemplate(a, b *corev1.PodTemplateSpec) bool {
	return len(a.Spec.Containers) > 0 && len(b.Spec.Containers) > 0 && &a.Spec.Containers[0] == &b.Spec.Containers[0]
}

func TestTemplateInternerSharesOnlyIdenticalTemplates(t *testing.T) {
	withEnv := func(rc *rayv1.RayCluster) {
		c := &rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "MODE", Value: "b"})
	}
	in := newTemplateInterner()
	tr := func(rc *rayv1.RayCluster) *rayv1.RayCluster {
		out, err := in.transform(rc)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*rayv1.RayCluster)
	}
	a := tr(decodedCluster(t, "a", nil))
	b := tr(decodedCluster(t, "b", nil))
	c := tr(decodedCluster(t, "c", withEnv))
	// An explicit empty list in the API server's JSON decodes to an empty (not nil) slice.
	d := decodedCluster(t, "d", nil)
	d.Spec.HeadGroupSpec.Template.Spec.Volumes = []corev1.Volume{}
	d = tr(d)

	if !sharesTemplate(&a.Spec.HeadGroupSpec.Template, &b.Spec.HeadGroupSpec.Template) ||
		!sharesTemplate(&a.Spec.WorkerGroupSpecs[0].Template, &b.Spec.WorkerGroupSpecs[0].Template) {
		t.Error("two clusters with the same templates do not share them")
	}
	if !sharesTemplate(&a.Spec.HeadGroupSpec.Template, &c.Spec.HeadGroupSpec.Template) {
		t.Error("clusters with the same head template do not share it")
	}
	if sharesTemplate(&a.Spec.WorkerGroupSpecs[0].Template, &c.Spec.WorkerGroupSpecs[0].Template) {
		t.Error("different worker templates are shared")
	}
	if got := c.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Env; len(got) == 0 || got[len(got)-1].Value != "b" {
		t.Errorf("c's own worker template was lost: env %v", got)
	}
	// nil and empty marshal alike; sharing must not turn one into the other.
	if d.Spec.HeadGroupSpec.Template.Spec.Volumes == nil {
		t.Error("an empty volume list was replaced by a shared template's nil")
	}
	if sharesTemplate(&a.Spec.HeadGroupSpec.Template, &d.Spec.HeadGroupSpec.Template) {
		t.Error("a template with an empty volume list is shared with one without")
	}
	for _, rc := range []*rayv1.RayCluster{a, b, c, d} {
		if rc.ManagedFields != nil {
			t.Errorf("%s: managedFields kept", rc.Name)
		}
	}

	svc := &rayv1.RayService{Spec: rayv1.RayServiceSpec{RayClusterSpec: *decodedCluster(t, "s", nil).Spec.DeepCopy()}}
	if _, err := in.transform(svc); err != nil {
		t.Fatal(err)
	}
	if !sharesTemplate(&a.Spec.HeadGroupSpec.Template, &svc.Spec.RayClusterSpec.HeadGroupSpec.Template) {
		t.Error("a RayService's cluster template is not shared with an identical RayCluster's")
	}
	if out, err := in.transform(&corev1.Pod{}); err != nil || out == nil {
		t.Errorf("other kinds must pass through: %v %v", out, err)
	}
}

// Tenants choose templates: the table stays within its bounds whatever they write.
func TestTemplateInternerIsBounded(t *testing.T) {
	limits := sharedtable.Limits{Entries: 16, Bytes: 8 << 10, EntryBytes: maxInternedTemplateBytes}
	in := newTemplateInternerWithin(limits)
	for i := range 200 {
		rc := decodedCluster(t, fmt.Sprintf("c%d", i), func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Labels = map[string]string{"i": fmt.Sprint(i)}
		})
		in.rayClusterSpec(&rc.Spec)
		if in.table.Len() > limits.Entries || in.table.Bytes() > limits.Bytes {
			t.Fatalf("after %d templates: %d entries, %d bytes", i+1, in.table.Len(), in.table.Bytes())
		}
	}
	big := decodedCluster(t, "big", func(rc *rayv1.RayCluster) {
		rc.Spec.HeadGroupSpec.Template.Annotations = map[string]string{"big": strings.Repeat("x", maxInternedTemplateBytes)}
	})
	in = newTemplateInterner()
	in.rayClusterSpec(&big.Spec)
	if in.table.Len() != 1 { // only the worker template
		t.Errorf("a template over %d bytes was kept: %d entries", maxInternedTemplateBytes, in.table.Len())
	}
}

// The cache is wired to intern: without it the table above is never used.
func TestCacheInternsRayTemplates(t *testing.T) {
	opts := cacheOptions(DefaultOptions(), testNeeds(t, capabilities.Capabilities{}, nil))
	for _, k := range []client.Object{&rayv1.RayCluster{}, &rayv1.RayService{}} {
		found := false
		for o, b := range opts.ByObject {
			if sameType(o, k) && b.Transform != nil {
				found = true
			}
		}
		if !found {
			t.Errorf("%T has no interning transform", k)
		}
	}
}

// Memory of 1,000 cached RayClusters made from one template, as in make bench: logged for the
// record, checked only against a generous bound.
func TestTemplateInternerMemory(t *testing.T) {
	retained := func(intern bool) uint64 {
		in := newTemplateInterner()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		kept := make([]*rayv1.RayCluster, 1000)
		for i := range kept {
			rc := decodedCluster(t, fmt.Sprintf("c%04d", i), nil)
			if intern {
				_, _ = in.transform(rc)
			}
			kept[i] = rc
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(kept)
		return after.HeapAlloc - before.HeapAlloc
	}
	plain, shared := retained(false), retained(true)
	t.Logf("1,000 decoded RayClusters: %.1f KB each without sharing, %.1f KB with", float64(plain)/1000/1024, float64(shared)/1000/1024)
	if shared*2 > plain {
		t.Errorf("sharing templates saves less than half: %d vs %d bytes", shared, plain)
	}
}
