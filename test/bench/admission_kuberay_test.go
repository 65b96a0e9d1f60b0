package main

import (
	"strings"
	"testing"
)

func added(p50 float64) admissionLatency {
	return admissionLatency{On: latency{Requests: 10}, Off: latency{Requests: 10}, AddedP50Ms: p50}
}

func cases(kinds []string, p50 float64) []admissionCase {
	var out []admissionCase
	for _, k := range kinds {
		for _, op := range []string{"create", "update"} {
			out = append(out, admissionCase{Kind: k, Operation: op, Sequential: added(p50), Concurrent: added(p50)})
		}
	}
	return out
}

func TestOperatorAdmissionVerdicts(t *testing.T) {
	both := []string{"RayCluster", "RayService"}
	tests := []struct {
		name    string
		ops     *operatorsAdmission
		status  map[string]int // status → rows with it
		measure string         // in every RayCluster row
	}{
		{name: "within the target",
			ops:    &operatorsAdmission{Raygate: operatorAdmission{Cases: cases(both, 1.2)}, KubeRay: operatorAdmission{Cases: cases([]string{"RayCluster"}, 1)}},
			status: map[string]int{"met": 4, "no comparison": 4}, measure: "1.20×"},
		{name: "over the target",
			ops:    &operatorsAdmission{Raygate: operatorAdmission{Cases: cases(both, 1.3)}, KubeRay: operatorAdmission{Cases: cases([]string{"RayCluster"}, 1)}},
			status: map[string]int{"**missed**": 4, "no comparison": 4}, measure: "1.30×"},
		{name: "KubeRay's figure within the noise",
			ops:    &operatorsAdmission{Raygate: operatorAdmission{Cases: cases(both, 1)}, KubeRay: operatorAdmission{Cases: cases([]string{"RayCluster"}, -0.5)}},
			status: map[string]int{"**not shown**": 4, "no comparison": 4}, measure: "noise"},
		{name: "KubeRay did not run",
			ops:    &operatorsAdmission{Raygate: operatorAdmission{Cases: cases(both, 1)}, KubeRay: operatorAdmission{Error: "port taken"}},
			status: map[string]int{"not run": 8}, measure: "port taken"},
		{name: "raygate did not run",
			ops:    &operatorsAdmission{Raygate: operatorAdmission{Error: "exited"}, KubeRay: operatorAdmission{Cases: cases([]string{"RayCluster"}, 1)}},
			status: map[string]int{"not run": 8}, measure: "exited"},
		{name: "results from before the comparison", status: map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := operatorAdmissionVerdicts(&admissionResult{Operators: tt.ops})
			got := map[string]int{}
			for _, r := range v {
				got[r.Status]++
				if tt.measure != "" && strings.Contains(r.What, "RayCluster") && !strings.Contains(r.Measured, tt.measure) {
					t.Errorf("%q: measured %q, want it to mention %q", r.What, r.Measured, tt.measure)
				}
			}
			for s, n := range tt.status {
				if got[s] != n {
					t.Errorf("%d rows %q, want %d (all: %v)", got[s], s, n, got)
				}
			}
			if len(v) != sumCounts(tt.status) {
				t.Errorf("%d rows, want %d", len(v), sumCounts(tt.status))
			}
		})
	}
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
