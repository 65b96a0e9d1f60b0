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

// RepoRoot is the checkout's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
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
