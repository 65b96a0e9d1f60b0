package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary be the CPU hog too, as the bench binary is (startHog
// re-executes os.Executable()).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == hogWorkerFlag {
		hogMain(os.Args[2:])
		return
	}
	os.Exit(m.Run())
}

func TestParseHogStat(t *testing.T) {
	// Fields 14, 15 (utime, stime) are 250 and 50 ticks; field 19 (nice) is 0. The command
	// name holds a space and a parenthesis.
	stat := "4242 (bench (hog)) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 1 0 12345 0 0"
	cpu, nice, err := parseHogStat(stat)
	if err != nil || cpu != 3 || nice != 0 {
		t.Errorf("parseHogStat = %v, %v, %v; want 3, 0, nil", cpu, nice, err)
	}
	if _, _, err := parseHogStat("4242 (bench) R 1 2"); err == nil {
		t.Error("a short stat parsed")
	}
	if _, _, err := parseHogStat("no parenthesis"); err == nil {
		t.Error("a malformed stat parsed")
	}
}

// TestHogSpinsAndIsKilled starts the real hog: it burns CPU on one core and is gone after
// stop, and its own bound ends it even if nobody stops it.
func TestHogSpinsAndIsKilled(t *testing.T) {
	h, err := startHog(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pid := h.cmd.Process.Pid
	time.Sleep(1500 * time.Millisecond)
	u, err := h.stop()
	if err != nil {
		t.Fatal(err)
	}
	// Generous: the machine is shared, but a spinning process gets some of a core.
	if u.CPUSeconds < 0.2 || u.CPUSeconds > u.WallSeconds*1.2+0.1 || u.Nice != 0 {
		t.Errorf("hog usage = %+v; want CPU between 0.2 s and about its wall time (one core), nice 0", u)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("hog %d still exists after stop", pid)
	}

	h, err = startHog(300 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("bounded hog: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		t.Error("the hog outlived its bound")
	}
}

func TestRenderLoaded(t *testing.T) {
	l := &loadedResult{Clusters: 100, Pods: 400, Nodes: 3, Stages: "general", Hog: hogDescription, MinWritesPerCluster: 11,
		Raygate:  scaleRun{System: "raygate", Seconds: 80.25, WritesPerObj: 12.1, StatusWritesPerObj: 2.5, Requests: &requestCounts{Conflicts: 0}, Usage: &processUsage{CPUSeconds: 9}},
		KubeRay:  &scaleRun{System: "kuberay", Error: "kuberay not built"},
		HogUsage: map[string]*hogUsage{"raygate": {WallSeconds: 95, CPUSeconds: 60, Nice: 0}},
	}
	var m md
	renderLoaded(&m, l)
	out := m.String()
	for _, want := range []string{
		"## 1b. Scale on a loaded machine",
		"GOMAXPROCS=1",
		"| seconds until every RayCluster is ready | 80.2 | not measured: kuberay not built |",
		"| operator writes per RayCluster (minimum 11) | 12.1 (1.10×) |",
		"| status writes per RayCluster | 2.50 |",
		"| writes refused with 409 Conflict | 0 |",
		"| CPU hog: CPU s over wall s (nice) | 60.0 s / 95.0 s (0) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("loaded section lacks %q:\n%s", want, out)
		}
	}
	var none md
	renderLoaded(&none, nil)
	if none.String() != "" {
		t.Errorf("a run without the scenario renders %q", none.String())
	}
	r := renderReport(&results{Loaded: l}, "", "benchmarks")
	if !strings.Contains(r, fmt.Sprintf("| Writes per RayCluster on a loaded machine (CPU hog on both), %d RayClusters, general stages | ≤ 1.15× the minimum (11) | 1.10× (12.1) | met |", 100)) {
		t.Errorf("targets table lacks the loaded row:\n%s", r)
	}
}
