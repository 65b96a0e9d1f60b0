package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/raygate/raygate/internal/testenv/kwokcluster"
)

// The "loaded" scenario is the scale run again, at loadedClusters with kwok's general stages,
// for raygate and then KubeRay, each while a CPU hog spins on one core: issue 21 wants writes
// per RayCluster within target on a busy machine too, where pods, caches and status writes
// interleave differently. Both systems get the same hog, started right before the run's
// cluster and killed right after it stops.

const (
	loadedClusters = 100
	// hogWorkerFlag re-executes the bench binary as the hog. It is read before flag parsing
	// (main), so it is not in -help: it is not for users.
	hogWorkerFlag = "-hog-worker"
	// hogDescription states what the hog is, for the report and the analysis.
	hogDescription = "a child process spinning one busy goroutine on one core, at nice 0 with GOMAXPROCS=1"
)

// hogUsage is what the kernel accounted to one hog process.
type hogUsage struct {
	WallSeconds float64 `json:"wallSeconds"`
	CPUSeconds  float64 `json:"cpuSeconds"` // utime + stime: ≈ wall time when it got its core
	Nice        int     `json:"nice"`
}

// loadedResult is the "loaded" scenario.
type loadedResult struct {
	Scenario            string               `json:"scenario"`
	Clusters            int                  `json:"clusters"`
	Pods                int                  `json:"pods"`
	Nodes               int                  `json:"nodes"`
	Stages              string               `json:"stages"`
	Hog                 string               `json:"hog"`
	MinWritesPerCluster int                  `json:"minWritesPerCluster"`
	Raygate             scaleRun             `json:"raygate"`
	KubeRay             *scaleRun            `json:"kuberay,omitempty"`
	HogUsage            map[string]*hogUsage `json:"hogUsage,omitempty"` // by system
	// WritesRatio is raygate's writes per RayCluster over the minimum.
	WritesRatio float64 `json:"writesRatio,omitempty"`
}

func runLoaded(ctx context.Context, b *bench, concurrency int, kuberay bool) loadedResult {
	n := loadedClusters
	res := loadedResult{
		Scenario: "loaded", Clusters: n, Pods: n * podsPerCluster, Nodes: nodesFor(scale(n), n*podsPerCluster),
		Stages: string(kwokcluster.GeneralStages), Hog: hogDescription, MinWritesPerCluster: minWritesPerCluster(),
		HogUsage: map[string]*hogUsage{},
	}
	// The hog's own bound: far past any run, so even a hog whose parent vanished ends.
	bound := waitTimeout(n) + 10*time.Minute
	loadedRun := func(system string, o operatorOptions) scaleRun {
		h, err := startHog(bound)
		if err != nil {
			return scaleRun{System: system, Concurrency: o.Concurrency, Error: "starting the CPU hog: " + err.Error()}
		}
		run := func() scaleRun {
			defer func() {
				u, err := h.stop()
				if err != nil {
					b.logf("CPU hog: %v", err)
				}
				if u != nil {
					res.HogUsage[system] = u
				}
			}()
			return b.scaleRaygate(ctx, kwokcluster.GeneralStages, res.Nodes, n, o, 0, false)
		}()
		run.Timeline = nil
		return run
	}
	b.logf("loaded %d (general stages, CPU hog): raygate (reconcile concurrency %d)", n, concurrency)
	res.Raygate = loadedRun("raygate", operatorOptions{Concurrency: concurrency})
	if kuberay {
		b.logf("loaded %d (general stages, CPU hog): KubeRay", n)
		k := loadedRun("kuberay", operatorOptions{KubeRay: true, ExtraArgs: kubeRayRayJobFlags(concurrency)})
		res.KubeRay = &k
	} else {
		res.KubeRay = &scaleRun{System: "kuberay", Error: "not run (-kuberay=false)"}
	}
	if res.Raygate.Error == "" && res.Raygate.WritesPerObj > 0 {
		res.WritesRatio = res.Raygate.WritesPerObj / float64(res.MinWritesPerCluster)
	}
	return res
}

// hog is a running CPU hog process.
type hog struct {
	cmd     *exec.Cmd
	started time.Time
}

// startHog re-executes this binary as a hog that spins for at most bound. The kernel kills it
// if the bench dies first (Pdeathsig); stop kills it otherwise.
func startHog(bound time.Duration) (*hog, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, hogWorkerFlag, bound.String())
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1") // the last value of a key wins
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &hog{cmd: cmd, started: time.Now()}, nil
}

// stop reads the hog's CPU time, kills it and reaps it.
func (h *hog) stop() (*hogUsage, error) {
	u := &hogUsage{WallSeconds: time.Since(h.started).Seconds()}
	stat, readErr := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h.cmd.Process.Pid))
	if readErr == nil {
		u.CPUSeconds, u.Nice, readErr = parseHogStat(string(stat))
	}
	killErr := h.cmd.Process.Kill()
	_ = h.cmd.Wait() // "signal: killed" is the expected outcome
	if killErr != nil && !errors.Is(killErr, os.ErrProcessDone) {
		return u, killErr
	}
	if readErr != nil {
		return nil, fmt.Errorf("reading the hog's CPU time: %w", readErr)
	}
	return u, nil
}

// parseHogStat reads utime+stime (fields 14, 15) and nice (field 19) from /proc/<pid>/stat.
func parseHogStat(stat string) (cpuSeconds float64, nice int, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc/<pid>/stat")
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3
	if len(f) < 17 {
		return 0, 0, errors.New("short /proc/<pid>/stat")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	nice, err3 := strconv.Atoi(f[16])
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, 0, err
	}
	return (utime + stime) / clockTicks, nice, nil
}

// hogMain is the hog process: one goroutine spinning at nice 0 until it is killed or bound
// passes.
func hogMain(args []string) {
	bound := 30 * time.Minute
	if len(args) > 0 {
		if d, err := time.ParseDuration(args[0]); err == nil && d > 0 {
			bound = d
		}
	}
	runtime.GOMAXPROCS(1)
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, 0, 0) // nice 0 (a no-op unless inherited otherwise)
	deadline := time.Now().Add(bound)
	var x uint64
	for time.Now().Before(deadline) {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1
		}
	}
	if x == 42 { // keep the loop from being optimised away
		fmt.Println(x)
	}
	os.Exit(0)
}

// loadedVerdict is the targets table's row for the loaded run.
func loadedVerdict(l *loadedResult) verdict {
	what := fmt.Sprintf("Writes per RayCluster on a loaded machine (CPU hog on both), %d RayClusters, general stages", l.Clusters)
	target := fmt.Sprintf("≤ %s× the minimum (%d)", ratioText(targetWritesRatio), l.MinWritesPerCluster)
	if l.Raygate.Error != "" || l.Raygate.WritesPerObj == 0 {
		return verdict{what, target, "not measured: " + firstLine(l.Raygate.Error), "not run"}
	}
	ratio := l.Raygate.WritesPerObj / float64(l.MinWritesPerCluster)
	m := fmt.Sprintf("%.2f× (%.1f)", ratio, l.Raygate.WritesPerObj)
	if k := l.KubeRay; k != nil && k.Error == "" && k.WritesPerObj > 0 {
		m += fmt.Sprintf("; KubeRay %.2f× (%.1f)", k.WritesPerObj/float64(l.MinWritesPerCluster), k.WritesPerObj)
	}
	return verdict{what, target, m, status(ratio <= targetWritesRatio)}
}

// renderLoaded is the loaded run's section.
func renderLoaded(m *md, l *loadedResult) {
	if l == nil {
		return
	}
	m.WriteString("## 1b. Scale on a loaded machine: the same CPU hog for raygate and KubeRay\n\n")
	m.p("%d RayClusters (%d pods, %d kwok nodes, %s pod stages) as in section 1, raygate and then\n"+
		"KubeRay, each on a fresh cluster while a CPU hog runs: %s, started right before the run's\n"+
		"cluster and killed when it has stopped. No quiet window.", l.Clusters, l.Pods, l.Nodes, stagesLabel(l.Stages), l.Hog)
	cols := []scaleRun{l.Raygate}
	head := []string{"", "raygate"}
	if l.KubeRay != nil {
		cols = append(cols, *l.KubeRay)
		head = append(head, "KubeRay")
	}
	row := func(name string, f func(r scaleRun) string) []string {
		out := []string{name}
		for _, r := range cols {
			if r.Error != "" {
				out = append(out, "not measured: "+firstLine(r.Error))
				continue
			}
			out = append(out, f(r))
		}
		return out
	}
	rows := [][]string{
		row("seconds until every RayCluster is ready", func(r scaleRun) string { return f1(r.Seconds) }),
		row(fmt.Sprintf("operator writes per RayCluster (minimum %d)", l.MinWritesPerCluster), func(r scaleRun) string {
			return fmt.Sprintf("%s (%s×)", f1(r.WritesPerObj), f2(r.WritesPerObj/float64(l.MinWritesPerCluster)))
		}),
		row("status writes per RayCluster", func(r scaleRun) string { return f2(r.StatusWritesPerObj) }),
		row("writes refused with 409 Conflict", func(r scaleRun) string {
			if r.Requests == nil {
				return ""
			}
			return fmt.Sprint(r.Requests.Conflicts)
		}),
		row("operator CPU (user + system)", func(r scaleRun) string {
			if r.Usage == nil {
				return ""
			}
			return f1(r.Usage.CPUSeconds) + " s"
		}),
		row("CPU hog: CPU s over wall s (nice)", func(r scaleRun) string {
			u := l.HogUsage[r.System]
			if u == nil {
				return "not measured"
			}
			return fmt.Sprintf("%s s / %s s (%d)", f1(u.CPUSeconds), f1(u.WallSeconds), u.Nice)
		}),
	}
	m.table(head, rows)
}
