package kwokcluster

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

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
// dir/stages.yaml and returns its path; the pod-complete stage leaves held pods alone.
func writeStages(dir, stagesDir string, set StageSet, held HeldPods) (string, error) {
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
		if b, err = holdJobPods(b, held); err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		docs = append(docs, b)
	}
	path := filepath.Join(dir, "stages.yaml")
	return path, os.WriteFile(path, concatYAML(docs), 0o600)
}

// HeldPods marks the pods of batch Jobs that kwok must not complete. kwok's pod-complete
// stage makes every Running, Ready pod owned by a Job Succeeded a few seconds later, as if
// its containers exited 0; a pod with one of Labels (key and value) or a container named
// one of ContainerNames is left Running for the harness to finish as its command would
// (framework.Submitters runs RayJob submitter pods so).
type HeldPods struct {
	Labels         map[string]string
	ContainerNames []string
}

func (h HeldPods) empty() bool { return len(h.Labels) == 0 && len(h.ContainerNames) == 0 }

// holdJobPods adds to the pod-complete stage in doc the selector terms that exclude held
// pods; any other stage comes back unchanged.
func holdJobPods(doc []byte, held HeldPods) ([]byte, error) {
	if held.empty() {
		return doc, nil
	}
	var stage map[string]any
	if err := yaml.Unmarshal(doc, &stage); err != nil {
		return nil, err
	}
	meta, _ := stage["metadata"].(map[string]any)
	if stage["kind"] != "Stage" || meta["name"] != "pod-complete" {
		return doc, nil
	}
	spec, _ := stage["spec"].(map[string]any)
	selector, _ := spec["selector"].(map[string]any)
	if selector == nil {
		return nil, fmt.Errorf("the pod-complete stage has no spec.selector")
	}
	exprs, _ := selector["matchExpressions"].([]any)
	for _, k := range slices.Sorted(maps.Keys(held.Labels)) {
		exprs = append(exprs, map[string]any{"key": `.metadata.labels["` + k + `"]`, "operator": "NotIn", "values": []any{held.Labels[k]}})
	}
	if len(held.ContainerNames) > 0 {
		names := make([]any, 0, len(held.ContainerNames))
		for _, n := range held.ContainerNames {
			names = append(names, n)
		}
		exprs = append(exprs, map[string]any{"key": ".spec.containers.[].name", "operator": "NotIn", "values": names})
	}
	selector["matchExpressions"] = exprs
	return yaml.Marshal(stage)
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
