package kwokcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/raygate/raygate/internal/testenv/tools"
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

// stageFiles lists the stage files for a StageSet: the node stages (initialise, heartbeat)
// and the pod stages. stagesDir is kwok's kustomize/stage directory, which `make tools`
// copies out of the kwok module.
func stageFiles(stagesDir string, set StageSet) ([]string, error) {
	patterns := []string{
		"node/fast/node-initialize.yaml",
		"node/heartbeat/*.yaml",
	}
	switch set {
	case GeneralStages, "":
		patterns = append(patterns, "pod/general/pod-*.yaml")
	case FastStages:
		patterns = append(patterns, "pod/fast/pod-*.yaml")
	default:
		return nil, fmt.Errorf("unknown kwok stage set %q (want %q or %q)", set, GeneralStages, FastStages)
	}
	var files []string
	for _, p := range patterns {
		m, err := filepath.Glob(filepath.Join(stagesDir, p))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("no kwok stage file matches %s in %s", p, stagesDir)
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
func writeStages(dir, stagesDir string, set StageSet) (string, error) {
	files, err := stageFiles(stagesDir, set)
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
	// KwokStagesDir holds kwok's stage files (its module's kustomize/stage directory).
	KwokStagesDir string
}

// FindBinaries locates kube-controller-manager, kube-scheduler, kwok and kwok's stage files,
// all built or copied by `make tools`. It never builds them.
func FindBinaries() (Binaries, error) {
	var b Binaries
	dir, err := tools.ControlPlaneDir(true)
	if err != nil {
		return b, err
	}
	b.KubeControllerManager = filepath.Join(dir, "kube-controller-manager")
	b.KubeScheduler = filepath.Join(dir, "kube-scheduler")
	if b.Kwok, err = tools.Path("kwok"); err != nil {
		return b, err
	}
	b.KwokStagesDir, err = tools.Path("kwok-stages")
	return b, err
}
