// Package tools finds the pinned tools (control-plane binaries, kwok, helm, ...) that
// `make tools` builds from their Go modules. It never builds one: a test that spent its own
// timeout on a multi-minute build would fail for the wrong reason, so a missing tool is an
// immediate error that names `make tools`.
package tools

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// modulePath is raygate's module, whose go.mod marks the checkout's root.
const modulePath = "github.com/raygate/raygate"

// RepoRoot is the checkout's root directory: where this file was compiled from or, in a
// build with -trimpath (the Makefile's, so that clones anywhere share the build cache), the
// nearest directory declaring raygate's module above the working directory (go test runs a
// test in its package's directory, make runs programs from the root) or above the program
// (bin/raygate-local run from elsewhere).
func RepoRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	if root, ok := moduleRootAbove(starts...); ok {
		return root
	}
	return "."
}

// moduleRootAbove is the nearest directory at or above one of starts (tried in order) whose
// go.mod declares raygate's module.
func moduleRootAbove(starts ...string) (string, bool) {
	for _, start := range starts {
		for dir := filepath.Clean(start); ; dir = filepath.Dir(dir) {
			if declaresModule(filepath.Join(dir, "go.mod")) {
				return dir, true
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", false
}

// declaresModule reports whether the go.mod at path is raygate's (not a tool module's, such
// as hack/tools/*/go.mod).
func declaresModule(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == modulePath
		}
	}
	return false
}

// CacheRoot is the cache hack/tools.sh builds the tools into, which the local mode's state
// and the control-plane snapshots share: $RAYGATE_CACHE, else the user's cache directory
// ($XDG_CACHE_HOME, else ~/.cache) + /raygate. It is outside the checkout, so a clean clone
// on a warm machine finds it.
func CacheRoot() string {
	if d := os.Getenv("RAYGATE_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "raygate")
	}
	return filepath.Join(os.TempDir(), "raygate")
}

// Path returns where a tool is: "envtest" and "cluster" name the directory of the
// control-plane binaries, the other names one program ("kwok", "helm", "helm3", ...) or, for
// "kwok-stages", kwok's stage files; "kuberay" is KubeRay's operator and "kuberay-crds" the
// directory of its RayJob CRD, "kuberay-samples" its sample manifests, "traefik" Traefik,
// "prometheus" and "promtool" Prometheus, "openshift-route-crd" the directory of
// OpenShift's Route CRD (routes.crd.yaml). See
// hack/tools.sh for the list.
func Path(name string) (string, error) {
	cmd := exec.Command(filepath.Join(RepoRoot(), "hack", "tools.sh"), "path", name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return strings.TrimSpace(string(out)), nil
}

// ControlPlaneDir is the directory of etcd, kube-apiserver and kubectl (and, after `make
// tools`, kube-controller-manager and kube-scheduler): $KUBEBUILDER_ASSETS when the Makefile
// set it, else the cache `make tools` fills.
func ControlPlaneDir(withClusterBinaries bool) (string, error) {
	want := []string{"etcd", "kube-apiserver", "kubectl"}
	name := "envtest"
	if withClusterBinaries {
		want = append(want, "kube-controller-manager", "kube-scheduler")
		name = "cluster"
	}
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		for _, w := range want {
			if !isExecutable(filepath.Join(d, w)) {
				return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s has no %s: run `make tools`, or unset KUBEBUILDER_ASSETS", d, w)
			}
		}
		return d, nil
	}
	return Path(name)
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
