package kwokcluster

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

func TestConcatYAML(t *testing.T) {
	tests := []struct {
		name string
		docs []string
		want string
	}{
		{"one", []string{"a: 1\n"}, "a: 1\n"},
		{"separators between, none at the ends", []string{"a: 1", "b: 2\n"}, "a: 1\n---\nb: 2\n"},
		{"a leading --- in a file is not doubled", []string{"---\na: 1\n", "\n---\nb: 2\n\n"}, "a: 1\n---\nb: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var docs [][]byte
			for _, d := range tt.docs {
				docs = append(docs, []byte(d))
			}
			if got := string(concatYAML(docs)); got != tt.want {
				t.Errorf("concatYAML = %q, want %q", got, tt.want)
			}
		})
	}
}

// fakeKwokStages lays out the stage files the way the kwok module ships them in
// kustomize/stage (the directory `make tools` copies).
func fakeKwokStages(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{
		"node/fast/node-initialize.yaml",
		"node/fast/kustomization.yaml",
		"node/heartbeat/node-heartbeat.yaml",
		"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
		"pod/general/pod-ready.yaml",
		"pod/general/pod-create.yaml",
		"pod/general/kustomization.yaml",
		"pod/fast/pod-ready.yaml",
		"pod/fast/pod-delete.yaml",
	} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if err := os.WriteFile(p, []byte("kind: Stage\nmetadata:\n  name: "+name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestWriteStages(t *testing.T) {
	mod := fakeKwokStages(t)
	tests := []struct {
		set     StageSet
		want    []string
		wantErr bool
	}{
		{GeneralStages, []string{"node-initialize", "node-heartbeat", "pod-create", "pod-ready"}, false},
		{"", []string{"node-initialize", "node-heartbeat", "pod-create", "pod-ready"}, false},
		{FastStages, []string{"node-initialize", "node-heartbeat", "pod-delete", "pod-ready"}, false},
		{"slow", nil, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.set), func(t *testing.T) {
			path, err := writeStages(t.TempDir(), mod, tt.set, HeldPods{})
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error for an unknown stage set")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, doc := range strings.Split(string(b), "---\n") {
				var s struct {
					Kind     string
					Metadata struct{ Name string }
				}
				if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
					t.Fatalf("document %q: %v", doc, err)
				}
				if s.Kind != "Stage" {
					t.Errorf("document %q is not a Stage (no kustomization files)", doc)
				}
				got = append(got, s.Metadata.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("stages = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWriteStagesMissingFiles(t *testing.T) {
	if _, err := writeStages(t.TempDir(), t.TempDir(), GeneralStages, HeldPods{}); err == nil || !strings.Contains(err.Error(), "node-initialize.yaml") {
		t.Errorf("want an error naming the missing stage file, got %v", err)
	}
}

func TestNodeObject(t *testing.T) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourcePods: resource.MustParse("500")}
	seen := map[string]bool{}
	for i := range MaxNodes {
		n, err := nodeObject(i, capacity)
		if err != nil {
			t.Fatal(err)
		}
		if n.Name != NodeName(i) || n.Labels[corev1.LabelHostname] != n.Name {
			t.Fatalf("node %d: name %q, hostname label %q", i, n.Name, n.Labels[corev1.LabelHostname])
		}
		if len(n.Spec.Taints) != 0 {
			t.Errorf("node %d has taints %v; ordinary pods would not schedule", i, n.Spec.Taints)
		}
		cidr := netip.MustParsePrefix(n.Spec.PodCIDR)
		if cidr.Bits() != 18 || seen[cidr.String()] || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR {
			t.Errorf("node %d: pod CIDR %s must be its own /18", i, cidr)
		}
		seen[cidr.String()] = true
		if netip.MustParsePrefix("10.96.0.0/16").Overlaps(cidr) {
			t.Errorf("node %d: pod CIDR %s overlaps the Service range", i, cidr)
		}
		if !cidr.Addr().IsLoopback() || !PodIPs.Contains(cidr.Addr()) || cidr.Overlaps(netip.MustParsePrefix("127.0.0.0/16")) {
			t.Errorf("node %d: pod CIDR %s must be loopback, inside %s, clear of 127.0.0.0/16", i, cidr, PodIPs)
		}
		if !n.Status.Allocatable.Cpu().Equal(resource.MustParse("64")) || !n.Status.Capacity.Pods().Equal(resource.MustParse("500")) {
			t.Errorf("node %d: capacity %v, allocatable %v", i, n.Status.Capacity, n.Status.Allocatable)
		}
	}
	// The node must not share the caller's map: kwok and the scheduler read status, and
	// a later mutation by the caller must not leak into created nodes.
	n, err := nodeObject(0, capacity)
	if err != nil {
		t.Fatal(err)
	}
	capacity[corev1.ResourceCPU] = resource.MustParse("1")
	if n.Status.Capacity.Cpu().Equal(resource.MustParse("1")) {
		t.Error("nodeObject aliases the capacity map")
	}
}

func TestNodeBlockOf(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		i      int
		want   string
	}{
		{"10.244.0.0/16", 0, "10.244.0.0/18"},
		{"10.244.0.0/16", 1, "10.244.64.0/18"},
		{"10.244.0.0/16", 3, "10.244.192.0/18"},
		{"10.244.7.0/24", 2, "10.244.7.0/24"}, // smaller than a /18: shared
		{"127.64.0.0/10", 1, "127.64.64.0/18"},
	} {
		if got := nodeBlockOf(netip.MustParsePrefix(tc.prefix), tc.i).String(); got != tc.want {
			t.Errorf("nodeBlockOf(%s, %d) = %s, want %s", tc.prefix, tc.i, got, tc.want)
		}
	}
}

func TestNodeReady(t *testing.T) {
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s}
	}
	tests := []struct {
		name  string
		conds []corev1.NodeCondition
		want  bool
	}{
		{"not initialised", nil, false},
		{"ready", []corev1.NodeCondition{cond(corev1.NodeMemoryPressure, corev1.ConditionFalse), cond(corev1.NodeReady, corev1.ConditionTrue)}, true},
		{"not ready", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse)}, false},
		{"unknown", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &corev1.Node{Status: corev1.NodeStatus{Conditions: tt.conds}}
			if got := nodeReady(n); got != tt.want {
				t.Errorf("nodeReady = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSchedulerConfig(t *testing.T) {
	type cfg struct {
		APIVersion       string                      `json:"apiVersion"`
		Kind             string                      `json:"kind"`
		LeaderElection   struct{ LeaderElect *bool } `json:"leaderElection"`
		ClientConnection struct {
			Kubeconfig string   `json:"kubeconfig"`
			QPS        *float64 `json:"qps"`
			Burst      *int     `json:"burst"`
		} `json:"clientConnection"`
	}
	var raised cfg
	if err := yaml.UnmarshalStrict(schedulerConfig("/tmp/a b/kubeconfig", 1000, 2000), &raised); err != nil {
		t.Fatal(err)
	}
	if raised.APIVersion != "kubescheduler.config.k8s.io/v1" || raised.Kind != "KubeSchedulerConfiguration" {
		t.Errorf("type %s/%s", raised.APIVersion, raised.Kind)
	}
	if raised.LeaderElection.LeaderElect == nil || *raised.LeaderElection.LeaderElect {
		t.Error("leader election must be off")
	}
	if raised.ClientConnection.Kubeconfig != "/tmp/a b/kubeconfig" {
		t.Errorf("kubeconfig %q", raised.ClientConnection.Kubeconfig)
	}
	if q, b := raised.ClientConnection.QPS, raised.ClientConnection.Burst; q == nil || *q != 1000 || b == nil || *b != 2000 {
		t.Errorf("qps/burst = %v/%v, want 1000/2000", q, b)
	}

	var dflt cfg
	if err := yaml.UnmarshalStrict(schedulerConfig("k", 0, 0), &dflt); err != nil {
		t.Fatal(err)
	}
	if dflt.ClientConnection.QPS != nil || dflt.ClientConnection.Burst != nil {
		t.Error("without a QPS the scheduler's own defaults apply")
	}
}

func TestControllerManagerArgs(t *testing.T) {
	o := withDefaults(Options{ControllerManagerQPS: 500, ControllerManagerArgs: []string{"--concurrent-replicaset-syncs=10"}})
	args := controllerManagerArgs("/k", 1234, "/certs", o)
	for _, want := range []string{
		"--kubeconfig=/k", "--authentication-kubeconfig=/k", "--authorization-kubeconfig=/k",
		"--leader-elect=false", "--secure-port=1234", "--controllers=*,-serviceaccount-token",
		"--kube-api-qps=500", "--kube-api-burst=1000", "--concurrent-replicaset-syncs=10",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("missing %s in %v", want, args)
		}
	}
	for _, a := range controllerManagerArgs("/k", 1, "/c", withDefaults(Options{})) {
		if strings.HasPrefix(a, "--kube-api-") {
			t.Errorf("%s set without ControllerManagerQPS", a)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	o := withDefaults(Options{SchedulerQPS: 1000})
	if o.Nodes != 1 || o.SchedulerBurst != 2000 || o.NodeCapacity == nil || o.StartTimeout == 0 {
		t.Errorf("defaults: %+v", o)
	}
	if o := withDefaults(Options{Nodes: 3, SchedulerQPS: 10, SchedulerBurst: 15}); o.Nodes != 3 || o.SchedulerBurst != 15 {
		t.Errorf("explicit values must win: %+v", o)
	}
}

// podCompleteStage is the shape of kwok's pod-complete stage: a selector on Job pods and a
// status template that must survive the rewrite unchanged.
const podCompleteStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values:
      - 'Job'
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Succeeded
`

func TestHoldJobPods(t *testing.T) {
	held := HeldPods{Labels: map[string]string{"ray.io/originated-from-crd": "RayJob"}, ContainerNames: []string{"ray-job-submitter"}}
	out, err := holdJobPods([]byte(podCompleteStage), held)
	if err != nil {
		t.Fatal(err)
	}
	var stage struct {
		Spec struct {
			Selector struct {
				MatchExpressions []struct {
					Key      string
					Operator string
					Values   []string
				} `json:"matchExpressions"`
			}
			Next struct {
				StatusTemplate string `json:"statusTemplate"`
			}
		}
	}
	if err := yaml.Unmarshal(out, &stage); err != nil {
		t.Fatal(err)
	}
	exprs := stage.Spec.Selector.MatchExpressions
	if len(exprs) != 3 || exprs[0].Key != ".metadata.ownerReferences.[].kind" ||
		exprs[1].Key != `.metadata.labels["ray.io/originated-from-crd"]` || exprs[1].Operator != "NotIn" || !slices.Equal(exprs[1].Values, []string{"RayJob"}) ||
		exprs[2].Key != ".spec.containers.[].name" || exprs[2].Operator != "NotIn" || !slices.Equal(exprs[2].Values, []string{"ray-job-submitter"}) {
		t.Errorf("match expressions = %+v", exprs)
	}
	if stage.Spec.Next.StatusTemplate != "{{ $now := Now }}\nphase: Succeeded\n" {
		t.Errorf("status template = %q", stage.Spec.Next.StatusTemplate)
	}
	// Other stages, and every stage when nothing is held, are left byte for byte.
	for _, tc := range []struct {
		doc  string
		held HeldPods
	}{{podCompleteStage, HeldPods{}}, {"kind: Stage\nmetadata:\n  name: pod-ready\n", held}} {
		if got, err := holdJobPods([]byte(tc.doc), tc.held); err != nil || string(got) != tc.doc {
			t.Errorf("holdJobPods changed %q: %q, %v", tc.doc, got, err)
		}
	}
	if _, err := holdJobPods([]byte("kind: Stage\nmetadata:\n  name: pod-complete\nspec: {}\n"), held); err == nil {
		t.Error("a pod-complete stage without a selector must be an error")
	}
}
