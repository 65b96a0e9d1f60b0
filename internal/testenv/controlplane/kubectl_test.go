package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubectl gets a cache directory beside the kubeconfig, whatever KUBECACHEDIR the test process
// has, so no run writes to the user's ~/.kube/cache.
func TestRunKubectlCachesBesideTheKubeconfig(t *testing.T) {
	dir := t.TempDir()
	kubectl := filepath.Join(dir, "kubectl")
	if err := os.WriteFile(kubectl, []byte("#!/bin/sh\necho \"$KUBECACHEDIR\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "env", "kubeconfig")
	for _, inherited := range []string{"", filepath.Join(dir, "users-cache")} {
		t.Setenv(KubectlCacheDirEnv, inherited)
		out, _, err := RunKubectl(context.Background(), kubectl, kubeconfig, "", "version")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(out), filepath.Join(dir, "env", "kubectl-cache"); got != want {
			t.Errorf("with %s=%q inherited: kubectl's cache is %q, want %q", KubectlCacheDirEnv, inherited, got, want)
		}
	}
}
