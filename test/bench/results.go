package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// results is everything one `make bench` measured; saved as docs/benchmarks/results.json so
// the report can be re-rendered (-report-only) without re-running.
type results struct {
	Machine         machine            `json:"machine"`
	Started         time.Time          `json:"started"`
	DurationSeconds float64            `json:"durationSeconds"`
	Command         string             `json:"command"`
	Scale           []scaleResult      `json:"scale,omitempty"`
	Scale10k        *scaleResult       `json:"scale10k,omitempty"`
	Upgrade         *upgradeResult     `json:"upgrade,omitempty"`
	UpgradeLoad     *upgradeLoadResult `json:"upgradeLoad,omitempty"`
	UpgradeFleet    *fleetResult       `json:"upgradeFleet,omitempty"`
	RayJob          *rayJobResult      `json:"rayJob,omitempty"`
	Restart         *restartResult     `json:"restart,omitempty"`
	Admission       *admissionResult   `json:"admission,omitempty"`
	Latency         *latencyResult     `json:"latency,omitempty"`
	Noise           *noiseResult       `json:"noise,omitempty"`
	Memory          *memoryResult      `json:"memory,omitempty"`
	Loaded          *loadedResult      `json:"loaded,omitempty"`
	// Partial lists the runs that re-measured only some scenarios on top of the full run
	// above (-scenarios with a subset): their figures replaced that run's for those scenarios.
	Partial []partialRun `json:"partial,omitempty"`
}

// partialRun is a run of some scenarios only, merged into the saved results.
type partialRun struct {
	Scenarios       []string  `json:"scenarios"`
	Machine         machine   `json:"machine"`
	Started         time.Time `json:"started"`
	DurationSeconds float64   `json:"durationSeconds"`
	Command         string    `json:"command"`
	// LoadAverageAtEnd is the 1-minute load when the run ended: on a shared machine the load
	// at the start alone can hide that others were busy during the run.
	LoadAverageAtEnd float64 `json:"loadAverageAtEnd"`
}

// overlay puts what a partial run measured on top of the saved results: the scenarios it
// ran replace the saved ones, the others keep their figures, and the run is recorded so the
// report says which figures come from which commit.
func overlay(saved, run *results, scenarios []string) *results {
	out := *saved
	for _, s := range scenarios {
		switch s {
		case "scale":
			out.Scale = run.Scale
		case "scale-10k":
			out.Scale10k = run.Scale10k
		case "loaded":
			out.Loaded = run.Loaded
		case "upgrade":
			out.Upgrade = run.Upgrade
		case "upgrade-load":
			out.UpgradeLoad = run.UpgradeLoad
		case "upgrade-fleet":
			out.UpgradeFleet = run.UpgradeFleet
		case "rayjob":
			out.RayJob = run.RayJob
		case "restart":
			out.Restart = run.Restart
		case "admission":
			out.Admission = run.Admission
		case "latency":
			out.Latency = run.Latency
		case "noise":
			out.Noise = run.Noise
		case "memory":
			out.Memory = run.Memory
		}
	}
	out.Partial = append(append([]partialRun(nil), saved.Partial...), partialRun{
		Scenarios: scenarios, Machine: run.Machine, Started: run.Started,
		DurationSeconds: run.DurationSeconds, Command: run.Command, LoadAverageAtEnd: describeMachine().LoadAverage,
	})
	return &out
}

// machine is where the figures were taken.
type machine struct {
	Cores    int     `json:"cores"`
	MemoryGB float64 `json:"memoryGB"`
	CPU      string  `json:"cpu"`
	Kernel   string  `json:"kernel"`
	Go       string  `json:"go"`
	Commit   string  `json:"commit"`
	// LoadAverage is the 1-minute load when the run started: the machine is shared, so a
	// high value explains noisy figures.
	LoadAverage float64 `json:"loadAverage"`
}

func describeMachine() machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					kb, _ := strconv.ParseFloat(f[0], 64)
					m.MemoryGB = kb / 1024 / 1024
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.LoadAverage, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	cmd := exec.Command("git", "rev-parse", "--short", "HEAD")
	cmd.Dir = tools.RepoRoot()
	if out, err := cmd.Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}

func saveResults(path string, r *results) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func loadResults(path string) (*results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	backfill(&r)
	return &r, nil
}

// backfill derives what results saved before a field existed still hold in other fields
// (status writes per RayCluster from the writes by resource); nothing is estimated.
func backfill(r *results) {
	for i := range r.Scale {
		s := &r.Scale[i]
		runs := []*scaleRun{&s.Raygate}
		if s.KubeRay != nil {
			runs = append(runs, s.KubeRay)
		}
		for _, run := range runs {
			if run.StatusWritesPerObj == 0 && run.Requests != nil && s.Clusters > 0 {
				run.StatusWritesPerObj = float64(statusWrites(*run.Requests)) / float64(s.Clusters)
			}
		}
	}
}

// line is the scenario's JSON line: the result without the per-object timelines.
func (r scaleResult) line() scaleResult {
	r.Raygate.Timeline, r.Reference.Timeline = nil, nil
	if r.KubeRay != nil {
		k := *r.KubeRay
		k.Timeline = nil
		r.KubeRay = &k
	}
	return r
}

// line is the scenario's JSON line: the result without the per-job timelines.
func (r rayJobResult) line() rayJobResult {
	r.Raygate.Timeline = nil
	if r.KubeRay != nil {
		k := *r.KubeRay
		k.Timeline = nil
		r.KubeRay = &k
	}
	return r
}
