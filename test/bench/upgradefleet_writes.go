package main

import (
	"fmt"
	"slices"
)

// fleetWrite is one row of the writes per upgrade: the writes it counts (the same object
// changed by a patch here and an update there is one row), the fewest one incremental upgrade
// of the fleet's RayService needs from the spec change to the promotion, and what for.
type fleetWrite struct {
	label   string
	keys    []string
	minimum int
	why     string
}

// fleetMinimum is what a correct, restart-safe operator writes for one upgrade of the fleet's
// RayService (test/builders: one worker group at minReplicas 0, the autoscaler on; five
// steps of 20% with maxSurge 20%) up to the promotion; the old cluster's deletion comes
// after the window. test/integration/rayservice/writes counts the same upgrade in envtest,
// every write listed, and holds raygate to it.
var fleetMinimum = []fleetWrite{
	{"RayService status", []string{"patch rayservices/status", "update rayservices/status"}, 18,
		"the pending cluster; its applications deploying; grow, shift and shrink of each of the 5 steps; the promotion"},
	{"create events", []string{"create events"}, 12,
		"upgrade started, serve config submitted, head pod labelled, 5 traffic shifts, promotion; the new cluster's head pod, head Service and autoscaler RBAC"},
	{"update httproutes", []string{"update httproutes", "patch httproutes"}, 6, "5 weight steps; the route on the new cluster alone"},
	{"patch rayclusters", []string{"patch rayclusters", "update rayclusters"}, 2,
		"the hash of the config the new cluster accepted; the old cluster's deletion time (what an operator restart must find)"},
	{"RayCluster status", []string{"patch rayclusters/status", "update rayclusters/status"}, 2, "the new cluster when first seen and when ready"},
	{"create services", []string{"create services"}, 2, "the new cluster's head Service and serve Service (the route's backend)"},
	{"update services", []string{"update services", "patch services"}, 2, "the RayService's head and serve Services select the new cluster"},
	{"create rayclusters", []string{"create rayclusters"}, 1, "the new cluster"},
	{"create pods", []string{"create pods"}, 1, "its head (workers start at minReplicas 0)"},
	{"head pod label", []string{"patch pods", "update pods"}, 1, "the head joins the serve endpoints"},
	{"create configmaps", []string{"create configmaps"}, 1, "the serve config record (KubeRay keeps none)"},
	{"create serviceaccounts", []string{"create serviceaccounts"}, 1, "the autoscaler's RBAC"},
	{"create roles", []string{"create roles"}, 1, "the autoscaler's RBAC"},
	{"create rolebindings", []string{"create rolebindings"}, 1, "the autoscaler's RBAC"},
}

// renderFleetWritesPerUpgrade is the writes per upgrade of both operators next to the
// minimum, each kind the operators wrote beyond the minimum's in a row of its own.
func renderFleetWritesPerUpgrade(m *md, u *fleetResult) {
	if u == nil || u.Services == 0 || len(u.Raygate.WritesByKind) == 0 {
		return
	}
	runs := []*fleetRun{&u.Raygate}
	header := []string{"write", "minimum", "raygate"}
	if u.KubeRay != nil && len(u.KubeRay.WritesByKind) > 0 {
		runs = append(runs, u.KubeRay)
		header = append(header, "KubeRay")
	}
	header = append(header, "what the minimum is for")
	rows := slices.Clone(fleetMinimum)
	listed := map[string]bool{}
	for _, w := range rows {
		for _, k := range w.keys {
			listed[k] = true
		}
	}
	for _, r := range runs {
		for _, c := range sortedCounts(r.WritesByKind) {
			if !listed[c.Key] {
				listed[c.Key] = true
				rows = append(rows, fleetWrite{label: c.Key, keys: []string{c.Key}, why: "–"})
			}
		}
	}
	per := func(r *fleetRun, keys []string) float64 {
		n := 0
		for _, k := range keys {
			n += r.WritesByKind[k]
		}
		return float64(n) / float64(u.Services)
	}
	var table [][]string
	totals := make([]float64, len(runs))
	minTotal := 0
	for _, w := range rows {
		row := []string{w.label, fmt.Sprint(w.minimum)}
		for i, r := range runs {
			v := per(r, w.keys)
			totals[i] += v
			row = append(row, f1(v))
		}
		minTotal += w.minimum
		table = append(table, append(row, w.why))
	}
	total := []string{"**total**", fmt.Sprintf("**%d**", minTotal)}
	for _, t := range totals {
		total = append(total, fmt.Sprintf("**%.1f**", t))
	}
	table = append(table, append(total, ""))
	m.p("Writes per upgrade (the window's writes ÷ %d services) next to the fewest one upgrade needs\n"+
		"(`fleetMinimum` in test/bench/upgradefleet_writes.go): one write per decision the upgrade records\n"+
		"(KubeRay's loop: each step's grow, shift and shrink in its own reconcile) and one event per thing\n"+
		"a user learns, with the records that make raygate restart-safe (the serve config's ConfigMap and\n"+
		"hash), which KubeRay does not keep. `test/integration/rayservice/writes` counts raygate's writes of\n"+
		"the same upgrade in envtest, every write listed, and fails above its budget.", u.Services)
	m.table(header, table)
}
