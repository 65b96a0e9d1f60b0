package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestSnapshotSafe(t *testing.T) {
	for _, tc := range []struct {
		args map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"egress-selector-config-file": "/tmp/x"}, true},
		{map[string]string{"audit-policy-file": "p", "audit-log-path": "l", "audit-log-format": "json"}, true},
		{map[string]string{"service-cluster-ip-range": "10.0.0.0/24"}, false},
		{map[string]string{"audit-log-path": "l", "feature-gates": "X=true"}, false},
		{map[string]string{"etcd-prefix": "/other"}, false},
	} {
		if got := snapshotSafe(tc.args); got != tc.want {
			t.Errorf("snapshotSafe(%v) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// The key changes with any CRD's contents, a CRD added, and the API server binary; not with
// the order the files are listed in.
func TestSnapshotKey(t *testing.T) {
	assets, crds := t.TempDir(), t.TempDir()
	for _, b := range []string{"etcd", "kube-apiserver"} {
		write(t, filepath.Join(assets, b), "binary "+b)
	}
	a, b := filepath.Join(crds, "a.yaml"), filepath.Join(crds, "b.yaml")
	write(t, a, "kind: CustomResourceDefinition # a")
	write(t, b, "kind: CustomResourceDefinition # b")
	key := func(files ...string) string {
		t.Helper()
		k, err := snapshotKey(assets, files)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key(a, b)
	if got := key(b, a); got != base {
		t.Errorf("the order of the files changed the key: %s, %s", got, base)
	}
	if got := key(a); got == base {
		t.Error("a CRD left out kept the key")
	}
	write(t, b, "kind: CustomResourceDefinition # b, a field added")
	changed := key(a, b)
	if changed == base {
		t.Error("a changed CRD kept the key")
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(assets, "kube-apiserver"), later, later); err != nil {
		t.Fatal(err)
	}
	if got := key(a, b); got == changed {
		t.Error("a rebuilt kube-apiserver kept the key")
	}
}

func TestPruneSnapshotsKeepsTheMostRecentlyUsed(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	names := []string{"aaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbb", "cccccccccccccccccccccccc"}
	for i, n := range names {
		dir := filepath.Join(root, n)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, dir+".lock", "")
		at := now.Add(time.Duration(i) * time.Minute) // c is the most recently used
		if err := os.Chtimes(dir, at, at); err != nil {
			t.Fatal(err)
		}
	}
	building := filepath.Join(root, names[0]+".building-1")
	if err := os.Mkdir(building, 0o700); err != nil {
		t.Fatal(err)
	}
	pruneSnapshots(root, 2)
	for n, want := range map[string]bool{names[0]: false, names[0] + ".lock": false, names[1]: true, names[2]: true, filepath.Base(building): true} {
		if got := exists(filepath.Join(root, n)); got != want {
			t.Errorf("%s exists: %v, want %v", n, got, want)
		}
	}
}

// On a real API server: the first start builds the snapshot, the second starts from it and
// serves the CRDs at once, and neither sees the other's objects. Skipped when the
// control-plane binaries are not built.
func TestStartFromSnapshot(t *testing.T) {
	assets, err := AssetsDir()
	if err != nil {
		t.Skipf("no control plane: %v", err)
	}
	// The snapshots go to a new cache; the binaries stay where they were found.
	t.Setenv("KUBEBUILDER_ASSETS", assets)
	t.Setenv("RAYGATE_CACHE", t.TempDir())
	t.Setenv(SnapshotEnv, "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	first, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	root, err := snapshotRoot()
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := filepath.Glob(filepath.Join(root, "????????????????????????"))
	if !first.FromSnapshot || len(entries) != 1 {
		t.Fatalf("first start: from a snapshot %v, snapshots %v; want true and one", first.FromSnapshot, entries)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-the-first"}}
	if err := first.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// The real kubectl caches discovery beside the kubeconfig, and Stop removes it.
	if _, stderr, err := first.Kubectl(ctx, "", "get", "rayclusters", "-A"); err != nil {
		t.Fatalf("kubectl get rayclusters: %v\n%s", err, stderr)
	}
	kubectlCache := KubectlCacheDir(first.Kubeconfig)
	if !exists(filepath.Join(kubectlCache, "discovery")) {
		t.Errorf("kubectl cached no discovery in %s", kubectlCache)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	if exists(first.etcdDir) {
		t.Errorf("the first control plane's etcd copy %s is left behind", first.etcdDir)
	}
	if exists(kubectlCache) {
		t.Errorf("kubectl's cache %s is left behind", kubectlCache)
	}

	began := time.Now()
	second, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Stop() }()
	t.Logf("second start, from the snapshot: %s", time.Since(began).Round(time.Millisecond))
	if !second.FromSnapshot {
		t.Fatal("second start: not from the snapshot")
	}
	var clusters rayv1.RayClusterList
	if err := second.Client.List(ctx, &clusters); err != nil {
		t.Fatalf("RayClusters not served after a start from the snapshot: %v", err)
	}
	if err := second.Client.Get(ctx, client.ObjectKey{Name: ns.Name}, &corev1.Namespace{}); err == nil {
		t.Error("the second control plane sees the first one's namespace: the snapshot is shared, not copied")
	}

}

func TestSnapshotTurnedOff(t *testing.T) {
	t.Setenv("RAYGATE_CACHE", t.TempDir())
	assets := t.TempDir()
	for _, b := range []string{"etcd", "kube-apiserver"} {
		write(t, filepath.Join(assets, b), "binary "+b)
	}
	crd := filepath.Join(t.TempDir(), "a.yaml")
	write(t, crd, "kind: CustomResourceDefinition")
	t.Setenv(SnapshotEnv, "")
	if _, ok := snapshotFor(assets, []string{crd}, Options{}); !ok {
		t.Fatal("no snapshot by default")
	}
	if _, ok := snapshotFor(assets, []string{crd}, Options{APIServerArgs: map[string]string{"feature-gates": "X=true"}}); ok {
		t.Error("a snapshot under a flag that may change what is stored")
	}
	t.Setenv(SnapshotEnv, "0")
	if _, ok := snapshotFor(assets, []string{crd}, Options{}); ok {
		t.Errorf("%s=0: a snapshot", SnapshotEnv)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
