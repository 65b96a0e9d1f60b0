package main

import (
	"strings"
	"testing"
)

func scaleAt(clusters int, raygateMB, raygateCPU, kuberayMB, kuberayCPU float64) scaleResult {
	return scaleResult{
		Clusters: clusters, Pods: clusters * podsPerCluster, Stages: "general", MinWritesPerCluster: 9,
		Raygate: scaleRun{System: "raygate", Seconds: 10, WritesPerObj: 10, Usage: &processUsage{PeakRSSMB: raygateMB, CPUSeconds: raygateCPU}},
		KubeRay: &scaleRun{System: "kuberay", Seconds: 12, WritesPerObj: 14, Usage: &processUsage{PeakRSSMB: kuberayMB, CPUSeconds: kuberayCPU}},
	}
}

func verdictByPrefix(t *testing.T, v []verdict, prefix string) verdict {
	t.Helper()
	for _, x := range v {
		if strings.HasPrefix(x.What, prefix) {
			return x
		}
	}
	t.Fatalf("no verdict %q in %v", prefix, v)
	return verdict{}
}

func TestScale10kVerdicts(t *testing.T) {
	// 400 → 4,000 pods: 10 MB per 1,000 pods.
	small := []scaleResult{scaleAt(100, 50, 2, 60, 3), scaleAt(1000, 86, 16, 230, 26)}
	cases := []struct {
		name                     string
		big                      scaleResult
		rss, rssRel, cpuRel, slo string
	}{
		{"flat and lean", scaleAt(10000, 446, 150, 2000, 250), "met", "met", "met", "met"},                                 // 10 MB per 1,000 pods again
		{"a term growing faster than the objects", scaleAt(10000, 590, 150, 2000, 250), "met", "met", "met", "**missed**"}, // 14 MB per 1,000
		{"heavy against KubeRay", scaleAt(10000, 446, 200, 1000, 250), "met", "**missed**", "**missed**", "met"},
		{"above the absolute bound", scaleAt(10000, 650, 150, 2000, 250), "**missed**", "met", "met", "**missed**"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &results{Scale: small, Scale10k: &c.big}
			v := scale10kVerdicts(r)
			for prefix, want := range map[string]string{
				"Operator peak RSS, ":            c.rss,
				"Operator peak RSS vs KubeRay":   c.rssRel,
				"Operator CPU vs KubeRay":        c.cpuRel,
				"Memory slope per 1,000 pods":    c.slo,
				"Writes per RayCluster, 10,000 ": "met",
			} {
				if got := verdictByPrefix(t, v, prefix).Status; got != want {
					t.Errorf("%s: %s, want %s (%+v)", prefix, got, want, v)
				}
			}
		})
	}
}

func TestScale10kVerdictsNeverPassWhatWasNotMeasured(t *testing.T) {
	big := scaleAt(10000, 400, 150, 2000, 250)
	noKubeRay := big
	noKubeRay.KubeRay = nil
	failed := big
	failed.Raygate = scaleRun{System: "raygate", Error: "timed out"}
	for name, r := range map[string]*results{
		"no smaller scale runs for the slope": {Scale10k: &big},
		"KubeRay not run":                     {Scale: []scaleResult{scaleAt(100, 50, 2, 60, 3), scaleAt(1000, 86, 16, 230, 26)}, Scale10k: &noKubeRay},
		"raygate failed":                      {Scale10k: &failed},
	} {
		v := scale10kVerdicts(r)
		if len(v) != 5 {
			t.Errorf("%s: %d verdicts, want 5: %+v", name, len(v), v)
		}
		notRun := 0
		for _, x := range v {
			if x.Status == "not run" {
				notRun++
			}
		}
		if notRun == 0 {
			t.Errorf("%s: every verdict measured: %+v", name, v)
		}
	}
	if v := scale10kVerdicts(&results{}); v != nil {
		t.Errorf("without the scenario: %+v, want no rows (it is not in the default run)", v)
	}
}

func TestRenderScale10k(t *testing.T) {
	big := scaleAt(10000, 446, 150, 2000, 250)
	big.KubeRay.Flags = kubeRayRayJobFlags(4)
	r := &results{Scale: []scaleResult{scaleAt(100, 50, 2, 60, 3), scaleAt(1000, 86, 16, 230, 26)}, Scale10k: &big}
	var m md
	renderScale10k(&m, r)
	out := m.String()
	for _, want := range []string{
		"## 1c. Ten times the fleet: 10,000 RayClusters",
		"`--reconcile-concurrency=4 --qps=1000 --burst=2000`",
		"| 4,000 → 40,000 | 86.0 → 446.0 | 10.0 |",
		"KubeRay's peak RSS per 1,000 pods from 4,000 to 40,000 pods: 49.2 MB",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	var none md
	renderScale10k(&none, &results{})
	if none.Len() != 0 {
		t.Errorf("rendered a section for a scenario that did not run: %q", none.String())
	}
}
