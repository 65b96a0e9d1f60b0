package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// A control plane starts from a snapshot of etcd in which its CRDs are already installed
// and established, instead of creating them: the API server spends about 7 s of CPU
// checking, converting and publishing the megabytes of schema in the ray.io CRDs on every
// create and status update, and 36 packages of `make test` each start at least one
// control plane on two cores. From a snapshot it only loads them (measured: 5.2 s of API
// server CPU from start to serving RayServices, against 11.4 s, and 4.7 s of wall time
// against 9.3 s).
//
// The snapshot holds nothing but what the API server creates for itself and the CRDs: it is
// built once per cache by a control plane of its own, keyed by the binaries, the base
// flags and every CRD file's contents, so a changed CRD or API server makes a new one. Each
// start copies it into a private data directory, so no two control planes share state.

// SnapshotEnv turns the snapshot off when set to "0": every start then installs its CRDs
// on an empty etcd.
const SnapshotEnv = "RAYGATE_CONTROLPLANE_SNAPSHOT"

// keptSnapshots is how many snapshots (about 70 MB each) the cache keeps, most recently
// used first: a branch that edits CRDs makes a new one per edit.
const keptSnapshots = 4

// snapshotSafeArgs are the extra kube-apiserver flags a snapshot may be started under: they
// change what the API server does with requests, not what it stores. Any other extra flag
// (a storage, service-range or feature-gate flag could change the stored state) makes the
// start install its CRDs on an empty etcd, as before.
var snapshotSafeArgs = []string{
	"admission-control-config-file",
	"audit-log-format",
	"audit-log-path",
	"audit-policy-file",
	"egress-selector-config-file",
}

// snapshot is where one control plane configuration's etcd snapshot lives: dir/etcd is
// etcd's data directory, dir/served.json the CRDs' served resources (what a start waits for
// in discovery, so it need not parse megabytes of CRD YAML).
type snapshot struct {
	dir  string // the complete snapshot (present once built)
	lock string // held while building it
}

func (s snapshot) ready() bool { return exists(filepath.Join(s.dir, servedFile)) }

const servedFile = "served.json"

// snapshotFor says where the snapshot of this start's configuration is, and false when the
// start cannot use one (turned off, an unsafe extra flag, no cache directory).
func snapshotFor(assets string, crdFiles []string, o Options) (snapshot, bool) {
	if os.Getenv(SnapshotEnv) == "0" || !snapshotSafe(o.APIServerArgs) {
		return snapshot{}, false
	}
	root, err := snapshotRoot()
	if err != nil {
		return snapshot{}, false
	}
	key, err := snapshotKey(assets, crdFiles)
	if err != nil {
		return snapshot{}, false
	}
	return snapshot{dir: filepath.Join(root, key), lock: filepath.Join(root, key+".lock")}, true
}

// snapshotSafe: every extra flag is one a snapshot may be started under.
func snapshotSafe(args map[string]string) bool {
	for k := range args {
		if !slices.Contains(snapshotSafeArgs, k) {
			return false
		}
	}
	return true
}

// snapshotRoot is the snapshots' directory in the tool cache (tools.CacheRoot).
func snapshotRoot() (string, error) {
	dir := filepath.Join(tools.CacheRoot(), "controlplane-snapshots")
	return dir, os.MkdirAll(dir, 0o700)
}

// snapshotKey names a configuration: the etcd and kube-apiserver binaries (path, size,
// modification time), the base flags, and every CRD file's name and contents.
func snapshotKey(assets string, crdFiles []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "snapshot v1\nservice-cluster-ip-range=%s\n", serviceClusterIPRange)
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		path := filepath.Join(assets, bin)
		st, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		abs, _ := filepath.Abs(path)
		fmt.Fprintf(h, "%s %d %d\n", abs, st.Size(), st.ModTime().UnixNano())
	}
	files := slices.Clone(crdFiles)
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s %x\n", filepath.Base(f), sum)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// dataDir returns a private copy of the snapshot for one control plane's etcd, building the
// snapshot first (once, under a lock other processes wait on) when it is missing.
func (s snapshot) dataDir(build func(dir string) error) (string, error) {
	if !s.ready() {
		if err := s.buildLocked(build); err != nil {
			return "", err
		}
	}
	copyDir, err := os.MkdirTemp("", "raygate-etcd-")
	if err != nil {
		return "", err
	}
	if err := copyTree(filepath.Join(s.dir, "etcd"), copyDir); err != nil {
		_ = os.RemoveAll(copyDir)
		return "", err
	}
	now := time.Now()
	_ = os.Chtimes(s.dir, now, now) // most recently used: kept by prune
	return copyDir, nil
}

func (s snapshot) buildLocked(build func(dir string) error) error {
	lf, err := os.OpenFile(s.lock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = lf.Close() }()
	// Four packages start at once in `make test`: one builds, the others wait for it.
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) }()
	if s.ready() {
		return nil
	}
	_ = os.RemoveAll(s.dir) // an incomplete one, from before this layout
	tmp, err := os.MkdirTemp(filepath.Dir(s.dir), filepath.Base(s.dir)+".building-")
	if err != nil {
		return err
	}
	if err := build(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("building the control plane snapshot: %w", err)
	}
	if err := os.Rename(tmp, s.dir); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	pruneSnapshots(filepath.Dir(s.dir), keptSnapshots)
	return nil
}

// remove drops a snapshot that failed to start, so the next start builds it again.
func (s snapshot) remove() { _ = os.RemoveAll(s.dir) }

// pruneSnapshots keeps the keep most recently used snapshots in root.
func pruneSnapshots(root string, keep int) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	type used struct {
		path string
		at   time.Time
	}
	var snaps []used
	for _, e := range entries {
		if !e.IsDir() || filepath.Ext(e.Name()) != "" || len(e.Name()) != 24 {
			continue
		}
		if info, err := e.Info(); err == nil {
			snaps = append(snaps, used{filepath.Join(root, e.Name()), info.ModTime()})
		}
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].at.After(snaps[j].at) })
	for i := keep; i < len(snaps); i++ {
		_ = os.RemoveAll(snaps[i].path)
		_ = os.Remove(snaps[i].path + ".lock")
	}
}

// buildSnapshot starts a control plane on an empty etcd in dir, installs the CRDs, waits
// until the API server has finished with them, and stops it cleanly, leaving dir as the
// snapshot.
func buildSnapshot(assets, dir string, crds func() ([]*apiextensionsv1.CustomResourceDefinition, error)) (err error) {
	list, err := crds()
	if err != nil {
		return err
	}
	if err := writeServed(filepath.Join(dir, servedFile), list); err != nil {
		return err
	}
	data := filepath.Join(dir, "etcd")
	if err := os.Mkdir(data, 0o700); err != nil {
		return err
	}
	te := newEnvironment(assets)
	te.ControlPlane.Etcd = &envtest.Etcd{DataDir: data}
	cfg, err := te.Start()
	if err != nil {
		_ = te.Stop()
		return err
	}
	defer func() {
		if stopErr := te.Stop(); err == nil && stopErr != nil {
			err = fmt.Errorf("stopping: %w", stopErr)
		}
	}()
	if err := installCRDs(cfg, list); err != nil {
		return err
	}
	return waitCRDsSettled(cfg, len(list))
}

// waitCRDsSettled waits until every CRD is Established and none has changed for a second:
// the API server's CRD controllers (names, structural schema, API approval) have written
// their conditions, so a start from the snapshot has nothing left to write.
func waitCRDsSettled(cfg *rest.Config, want int) error {
	sch := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(sch); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: sch})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), CRDInstallTimeout)
	defer cancel()
	last, stableSince := "", time.Now()
	for {
		var l apiextensionsv1.CustomResourceDefinitionList
		if err := c.List(ctx, &l); err != nil {
			return err
		}
		state, established := "", 0
		for _, crd := range l.Items {
			state += crd.Name + "@" + crd.ResourceVersion + " "
			if isEstablished(crd) {
				established++
			}
		}
		if state != last {
			last, stableSince = state, time.Now()
		}
		if len(l.Items) == want && established == want && time.Since(stableSince) >= time.Second {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d CRDs established: %w", established, want, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeServed keeps what waitForCRDs reads of each CRD (name, group, served versions,
// plural) in path.
func writeServed(path string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	out := make([]apiextensionsv1.CustomResourceDefinition, 0, len(crds))
	for _, c := range crds {
		m := apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: c.Name}}
		m.Spec.Group, m.Spec.Names.Plural = c.Spec.Group, c.Spec.Names.Plural
		for _, v := range c.Spec.Versions {
			m.Spec.Versions = append(m.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v.Name, Served: v.Served})
		}
		out = append(out, m)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// served reads the snapshot's CRDs as writeServed kept them.
func (s snapshot) served() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, servedFile))
	if err != nil {
		return nil, err
	}
	var list []apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", servedFile, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s lists no CRD", servedFile)
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(list))
	for i := range list {
		out[i] = &list[i]
	}
	return out, nil
}

func isEstablished(crd apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// copyTree copies the regular files and directories under src into dst (etcd's data
// directory holds nothing else), keeping their permissions.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			return copyFile(path, target, info.Mode().Perm())
		default:
			return fmt.Errorf("unexpected file in an etcd snapshot: %s (%s)", path, info.Mode())
		}
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
