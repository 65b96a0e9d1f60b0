package main

import "fmt"

func renderScale10k(m *md, r *results) {
	s := r.Scale10k
	if s == nil {
		return // not in the default run
	}
	fmt.Fprintf(m, "## 1c. Ten times the fleet: %s RayClusters\n\n", thousands(int64(s.Clusters)))
	m.p("The scale scenario at %s RayClusters (%s pods, %d kwok nodes, %s pod stages), raygate and\n"+
		"KubeRay each on its own fresh cluster (`go run ./test/bench -scenarios=scale-10k -partial`; not in\n"+
		"the default run). Only the operator's requests are audited at this size (an audit of every\n"+
		"component would cost the API server the CPU the operators need); no ReplicaSet reference.",
		thousands(int64(s.Clusters)), thousands(int64(s.Pods)), s.Nodes, stagesLabel(stagesOr(s.Stages)))
	if s.Raygate.Error != "" {
		m.p("raygate: **not measured** — %s", s.Raygate.Error)
		return
	}
	renderScaleTable(m, *s)
	if small, large, ok := scale10kSlopes(r); ok {
		rows := [][]string{
			{fmt.Sprintf("%s → %s", thousands(int64(small.FromPods)), thousands(int64(small.ToPods))), f1(small.FromMB) + " → " + f1(small.ToMB), f1(small.MBPer1k)},
			{fmt.Sprintf("%s → %s", thousands(int64(large.FromPods)), thousands(int64(large.ToPods))), f1(large.FromMB) + " → " + f1(large.ToMB), f1(large.MBPer1k)},
		}
		m.p("raygate's peak RSS per 1,000 pods between the scale runs (a cost flat per object gives the same slope at both ranges):")
		m.table([]string{"pods", "peak RSS MB", "MB per 1,000 pods"}, rows)
	}
	if lo, ok := scaleLike(r, s.Clusters/10, *s); ok {
		if k, ok := slopeOf(lo, *s, kuberayRun); ok {
			m.p("KubeRay's peak RSS per 1,000 pods from %s to %s pods: %.1f MB (%.1f → %.1f MB).",
				thousands(int64(k.FromPods)), thousands(int64(k.ToPods)), k.MBPer1k, k.FromMB, k.ToMB)
		}
	}
}
