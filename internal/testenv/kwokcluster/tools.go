package kwokcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/raygate/raygate/internal/testenv/controlplane"
)

// StageSet chooses the kwok stages that drive pods.
type StageSet string

const (
	// GeneralStages are kwok's "general" pod stages: a pod gets its IP after 1–6 s and is
	// Running and Ready 1–6 s later, like a real kubelet pulling a cached image.
	GeneralStages StageSet = "general"
	// FastStages are kwok's "fast" pod stages: a pod is Running and Ready with an IP as soon
	// as kwok sees it scheduled. Benchmarks use them so the figures measure the controllers,
	// not kwok's random delays.
	FastStages StageSet = "fast"
)

// stageFiles lists, relative to the kwok module root, the stage files for a StageSet: the
// node stages (initialise, heartbeat) and the pod stages.
func stageFiles(kwokDir string, set StageSet) ([]string, error) {
	patterns := []string{
		"kustomize/stage/node/fast/node-initialize.yaml",
		"kustomize/stage/node/heartbeat/*.yaml",
	}
	switch set {
	case GeneralStages, "":
		patterns = append(patterns, "kustomize/stage/pod/general/pod-*.yaml")
	case FastStages:
		patterns = append(patterns, "kustomize/stage/pod/fast/pod-*.yaml")
	default:
		return nil, fmt.Errorf("unknown kwok stage set %q (want %q or %q)", set, GeneralStages, FastStages)
	}
	var files []string
	for _, p := range patterns {
		m, err := filepath.Glob(filepath.Join(kwokDir, p))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("no kwok stage file matches %s in %s", p, kwokDir)
		}
		sort.Strings(m)
		files = append(files, m...)
	}
	return files, nil
}

// concatYAML joins YAML documents with "---" separators.
func concatYAML(docs [][]byte) []byte {
	var b strings.Builder
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(d)), "---")))
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// writeStages writes kwok's configuration (every stage file of the set, concatenated) to
// dir/stages.yaml and returns its path.
func writeStages(dir, kwokDir string, set StageSet) (string, error) {
	files, err := stageFiles(kwokDir, set)
	if err != nil {
		return "", err
	}
	docs := make([][]byte, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		docs = append(docs, b)
	}
	path := filepath.Join(dir, "stages.yaml")
	return path, os.WriteFile(path, concatYAML(docs), 0o600)
}

// Binaries are the programs a local cluster runs besides etcd and kube-apiserver.
type Binaries struct {
	KubeControllerManager string
	KubeScheduler         string
	Kwok                  string
	// KwokModuleDir is the kwok module's source in the module cache, where its stage
	// files are.
	KwokModuleDir string
}

// FindBinaries locates (building on first use, through hack/tools.sh) kube-controller-manager,
// kube-scheduler and kwok, and the kwok module whose stage files configure kwok.
func FindBinaries() (Binaries, error) {
	var b Binaries
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" || !isExecutable(filepath.Join(dir, "kube-scheduler")) || !isExecutable(filepath.Join(dir, "kube-controller-manager")) {
		out, err := tool("cluster")
		if err != nil {
			return b, err
		}
		dir = out
	}
	b.KubeControllerManager = filepath.Join(dir, "kube-controller-manager")
	b.KubeScheduler = filepath.Join(dir, "kube-scheduler")
	kwok, err := tool("kwok")
	if err != nil {
		return b, err
	}
	b.Kwok = kwok
	b.KwokModuleDir, err = kwokModuleDir()
	return b, err
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func tool(name string) (string, error) {
	cmd := exec.Command(filepath.Join(controlplane.RepoRoot(), "hack", "tools.sh"), name)
	cmd.Stderr = os.Stderr // first builds take minutes; show progress
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/tools.sh %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// kwokModuleDir is the kwok module pinned by hack/tools/kwok, downloaded if needed.
func kwokModuleDir() (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/kwok")
	cmd.Dir = filepath.Join(controlplane.RepoRoot(), "hack", "tools", "kwok")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating the kwok module (go mod download in hack/tools/kwok): %w", err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("parsing go mod download output: %w", err)
	}
	if m.Dir == "" {
		return "", fmt.Errorf("kwok module not available: %s", m.Error)
	}
	return m.Dir, nil
}
