package rayspec

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/defaulting"
)

const kubeRayTestdata = "testdata/kuberayhash"

func readRayClusterConfig(t *testing.T, file string) rayv1.RayClusterSpec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kubeRayTestdata, file))
	if err != nil {
		t.Fatal(err)
	}
	var svc rayv1.RayService
	if err := yaml.UnmarshalStrict(b, &svc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return svc.Spec.RayClusterSpec
}

// TestKubeRayHashGolden compares KubeRayHash with the values KubeRay v1.5.1's own function
// gives for the same stored specs (see testdata/kuberayhash/README.md).
func TestKubeRayHashGolden(t *testing.T) {
	f, err := os.Open(filepath.Join(kubeRayTestdata, "golden.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := strings.Fields(sc.Text())
		if len(line) == 0 || strings.HasPrefix(line[0], "#") {
			continue
		}
		n++
		spec := readRayClusterConfig(t, line[0])
		if got, _ := KubeRayHash(spec); got != line[1] {
			t.Errorf("%s: KubeRayHash = %s, KubeRay's = %s", line[0], got, line[1])
		}
		if len(line) > 2 {
			if got, _ := KubeRayHash(FirstWorkerGroups(spec, 1)); got != line[2] {
				t.Errorf("%s, first worker group: KubeRayHash = %s, KubeRay's = %s", line[0], got, line[2])
			}
		}
		if got, _ := KubeRayHashesBeforeDefaults(spec); got[0] != line[1] {
			t.Errorf("%s: KubeRayHashesBeforeDefaults starts with %s, want KubeRayHash %s", line[0], got[0], line[1])
		}
		// raygate's webhook may store its defaults into a RayService KubeRay stamped a
		// cluster for; the stamp must still be recognised. numOfHosts is defaulted by
		// KubeRay's schema already when KubeRay stores the spec.
		stored := *spec.DeepCopy()
		for i := range stored.WorkerGroupSpecs {
			stored.WorkerGroupSpecs[i].NumOfHosts = max(stored.WorkerGroupSpecs[i].NumOfHosts, 1)
		}
		stamped, _ := KubeRayHash(stored)
		defaulting.RayClusterSpec(&stored)
		if got, _ := KubeRayHashesBeforeDefaults(stored); !slices.Contains(got, stamped) {
			t.Errorf("%s: KubeRay's hash %s not recognised after raygate's defaults (%v)", line[0], stamped, got)
		}
	}
	if n < 5 {
		t.Fatalf("only %d golden cases read", n)
	}
}

// notInKubeRay are the RayClusterSpec fields raygate has and KubeRay v1.5.1 has not;
// kubeRayView must clear (or leave out) each of them.
var notInKubeRay = []string{
	"spec.authOptions.enableK8sTokenAuth",
	"spec.authOptions.secretName",
	"spec.autoscalerOptions.args",
	"spec.autoscalerOptions.command",
	"spec.gcsFaultToleranceOptions.backend",
	"spec.gcsFaultToleranceOptions.storage",
	"spec.headGroupSpec.ingressOptions",
	"spec.historyServerOptions",
	"spec.networkPolicy",
	"spec.tlsOptions",
	"spec.upgradeStrategy",
	"spec.workerGroupSpecs.priority",
}

// TestKubeRayFieldList fails when raygate's API gains a field: decide whether KubeRay
// v1.5.1 has it (then nothing to do) or not (then clear it in kubeRayView and list it in
// notInKubeRay), or the KubeRay hash raygate writes stops matching KubeRay's.
func TestKubeRayFieldList(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(kubeRayTestdata, "kuberay-v1.5.1-fields.txt"))
	if err != nil {
		t.Fatal(err)
	}
	kuberay := map[string]string{}
	for l := range strings.Lines(string(b)) {
		path, tag, _ := strings.Cut(strings.TrimSpace(l), " ")
		kuberay[path] = tag
	}
	ours := map[string]string{}
	jsonFields("spec", reflect.TypeFor[rayv1.RayClusterSpec](), ours)
	for path, tag := range ours {
		if under(path, notInKubeRay) {
			continue
		}
		kt, ok := kuberay[path]
		switch {
		case !ok:
			t.Errorf("%s is not a KubeRay v1.5.1 field: clear it in kubeRayView and list it in notInKubeRay", path)
		case kt != tag && path != "spec.gcsFaultToleranceOptions.redisAddress":
			t.Errorf("%s: tag %q, KubeRay's %q: kubeRayView must write it as KubeRay does", path, tag, kt)
		}
	}
	for path := range kuberay {
		if _, ok := ours[path]; !ok {
			t.Errorf("KubeRay's %s is missing from raygate's API", path)
		}
	}
}

func under(path string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return path == p || strings.HasPrefix(path, p+".") })
}

func jsonFields(prefix string, t reflect.Type, out map[string]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[rayv1.RayClusterSpec]().PkgPath() {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		p := prefix + "." + strings.Split(f.Tag.Get("json"), ",")[0]
		out[p] = f.Tag.Get("json")
		jsonFields(p, f.Type, out)
	}
}

func TestKubeRayHashLeavesOutRaygateFields(t *testing.T) {
	base := readRayClusterConfig(t, "rich.yaml")
	h, _ := KubeRayHash(base)
	s := *base.DeepCopy()
	s.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{}
	s.HeadGroupSpec.IngressOptions = &rayv1.IngressOptions{}
	s.AutoscalerOptions.Command = []string{"x"}
	if got, _ := KubeRayHash(s); got != h {
		t.Errorf("fields KubeRay v1.5.1 does not know changed its hash")
	}
}

func TestSpecHash(t *testing.T) {
	base := readRayClusterConfig(t, "rich.yaml")
	defaulting.RayClusterSpec(&base)
	h, err := SpecHash(base)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		mutate func(*rayv1.RayClusterSpec)
		same   bool
	}{
		"head tolerations": {func(s *rayv1.RayClusterSpec) {
			s.HeadGroupSpec.Template.Spec.Tolerations = append(s.HeadGroupSpec.Template.Spec.Tolerations, corev1.Toleration{Key: "kueue", Operator: corev1.TolerationOpExists})
		}, true},
		"worker tolerations removed": {func(s *rayv1.RayClusterSpec) { s.WorkerGroupSpecs[0].Template.Spec.Tolerations = nil }, true},
		"scheduling gates": {func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs[1].Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
			s.HeadGroupSpec.Template.Spec.SchedulingGates = nil
		}, true},
		"replicas": {func(s *rayv1.RayClusterSpec) { *s.WorkerGroupSpecs[0].Replicas = 9 }, true},
		"image": {func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
		}, false},
		"node selector": {func(s *rayv1.RayClusterSpec) {
			s.WorkerGroupSpecs[0].Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
		}, false},
	}
	for name, tc := range cases {
		s := *base.DeepCopy()
		tc.mutate(&s)
		got, _ := SpecHash(s)
		if (got == h) != tc.same {
			t.Errorf("%s: same hash = %v, want %v", name, got == h, tc.same)
		}
	}
	if old, _ := HashWithoutReplicas(base); old == h {
		t.Errorf("SpecHash equals the older HashWithoutReplicas on a spec with tolerations")
	}
}

func TestIsKubeRayHash(t *testing.T) {
	spec := readRayClusterConfig(t, "sample.yaml")
	k, _ := KubeRayHash(spec)
	legacy, _ := HashWithoutReplicas(spec)
	mine, _ := SpecHash(spec)
	for h, want := range map[string]bool{k: true, legacy: false, mine: false, "": false, "0123": false} {
		if got := IsKubeRayHash(h); got != want {
			t.Errorf("IsKubeRayHash(%q) = %v, want %v", h, got, want)
		}
	}
}
