package raycluster

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/raygate/raygate/internal/defaulting"
	"github.com/raygate/raygate/internal/features"
	"github.com/raygate/raygate/internal/validation"
	"github.com/raygate/raygate/test/builders"
)

// FuzzPlanPods plans a pass for one worker group of any shape (replicas, bounds and
// numOfHosts anywhere in int32, negative included) with some pods already there, the way
// the controller does: default, check with the stored-object rules, lower to the pod
// bounds, plan. The plan never panics, deletes only pods that exist, creates at most one
// pass's worth and never more than the group wants.
func FuzzPlanPods(f *testing.F) {
	f.Add(int32(3), int32(0), int32(10), int32(1), uint8(0), false, uint16(0))
	f.Add(int32(math.MaxInt32), int32(0), int32(math.MaxInt32), int32(1), uint8(2), false, uint16(0))
	f.Add(int32(math.MaxInt32), int32(0), int32(math.MaxInt32), int32(math.MaxInt32), uint8(0), true, uint16(0))
	f.Add(int32(78), int32(0), int32(78), int32(64), uint8(70), true, uint16(0x0f0f))
	f.Add(int32(-1), int32(-5), int32(-2), int32(-3), uint8(3), true, uint16(1))
	f.Add(int32(0), int32(0), int32(0), int32(0), uint8(40), false, uint16(0xffff))
	f.Add(int32(5), int32(8), int32(2), int32(4), uint8(9), true, uint16(0xaaaa))
	limits := validation.Limits{MaxPodsPerGroup: 5000, MaxPodsPerCluster: 10000}
	f.Fuzz(func(t *testing.T, replicas, minReplicas, maxReplicas, hosts int32, existing uint8, indexing bool, shape uint16) {
		g := builders.WorkerGroup("g", replicas)
		g.MinReplicas, g.MaxReplicas, g.NumOfHosts = ptr.To(minReplicas), ptr.To(maxReplicas), hosts
		rc := builders.RayCluster("c", "ns").WorkerGroups(g).Obj()
		defaulting.RayCluster(rc)
		gates := features.Static{features.RayMultiHostIndexing: indexing}
		if errs := (validation.Validator{Gates: gates, Limits: limits}).StoredRayCluster(rc); len(errs) > 0 {
			return // the controller plans nothing for an invalid cluster
		}
		validation.CapPods(&rc.Spec, limits)
		group := &rc.Spec.WorkerGroupSpecs[0]

		// existing pods: some terminating, some in multi-host replicas (by shape's bits)
		names := map[string]bool{}
		var pods []corev1.Pod
		for i := range int(existing) {
			name := fmt.Sprintf("c-g-worker-%d", i)
			opts := []podOpt{}
			if indexing && group.NumOfHosts > 1 {
				opts = append(opts, inReplica(fmt.Sprintf("r%d", i/2), i/2))
			}
			if shape&(1<<(i%16)) != 0 {
				opts = append(opts, terminating())
			}
			pods = append(pods, worker(name, "g", opts...))
			names[name] = true
		}
		in := groupInput{Spec: group, Pods: active(pods), Indexing: indexing, RandomDelete: shape&1 == 0}
		plan := planWorkerGroup(in)

		for _, d := range plan.Deletes {
			for _, p := range d.Pods {
				if !names[p.Name] {
					t.Fatalf("deletes %s, which does not exist", p.Name)
				}
			}
		}
		if plan.DeleteAll != nil {
			for _, p := range plan.DeleteAll.Pods {
				if !names[p.Name] {
					t.Fatalf("deletes %s, which does not exist", p.Name)
				}
			}
		}
		c := plan.Create
		if c.Replicas < 0 || c.Hosts < 0 {
			t.Fatalf("negative creation %+v", c)
		}
		if c.Pods() > max(maxCreatesPerPass, int(group.NumOfHosts)) {
			t.Fatalf("one pass creates %d pods (cap %d, numOfHosts %d)", c.Pods(), maxCreatesPerPass, group.NumOfHosts)
		}
		// A multi-host group without RayMultiHostIndexing is managed pod by pod: a creation
		// then counts pods, not replicas.
		if want := int(max(ptr.Deref(group.Replicas, 0), ptr.Deref(group.MinReplicas, 0))) * int(max(group.NumOfHosts, 1)); c.Pods() > want {
			t.Fatalf("creates %d pods; the group wants %d", c.Pods(), want)
		}
		if c.Indices != nil && len(c.Indices) != c.Replicas {
			t.Fatalf("%d indices for %d replicas", len(c.Indices), c.Replicas)
		}
	})
}
