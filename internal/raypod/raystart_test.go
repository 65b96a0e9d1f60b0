package raypod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func limits(kv ...string) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return corev1.ResourceRequirements{Limits: l}
}

func TestStartParams(t *testing.T) {
	base := map[string]string{"block": "true", "dashboard-agent-listen-port": "52365", "metrics-export-port": "8080"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name        string
		node        rayv1.RayNodeType
		given       map[string]string
		res, labels map[string]string
		container   corev1.ResourceRequirements
		autoscaling bool
		want        map[string]string
	}{
		{name: "head defaults", node: rayv1.HeadNode, want: with("dashboard-host", "0.0.0.0")},
		{name: "head with autoscaler", node: rayv1.HeadNode, autoscaling: true, want: with("dashboard-host", "0.0.0.0", "no-monitor", "true")},
		{name: "worker joins the head", node: rayv1.WorkerNode, want: with("address", "head:6379")},
		{name: "user address wins", node: rayv1.WorkerNode, given: map[string]string{"address": "elsewhere:1"}, want: with("address", "elsewhere:1")},
		{name: "cpu and memory from limits", node: rayv1.WorkerNode, container: limits("cpu", "2500m", "memory", "1Gi"),
			want: with("address", "head:6379", "num-cpus", "3", "memory", "1073741824")},
		{name: "cpu from requests without limit", node: rayv1.WorkerNode,
			container: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("2")}},
			want:      with("address", "head:6379", "num-cpus", "2")},
		{name: "rayStartParams win over limits", node: rayv1.WorkerNode, given: map[string]string{"num-cpus": "0"}, container: limits("cpu", "4"),
			want: with("address", "head:6379", "num-cpus", "0")},
		{name: "gpu and first accelerator", node: rayv1.WorkerNode, container: limits("nvidia.com/gpu", "2", "google.com/tpu", "4", "aws.amazon.com/neuroncore", "2"),
			want: with("address", "head:6379", "num-gpus", "2", "resources", `'{"neuron_cores":2}'`)},
		{name: "MIG slice is a GPU", node: rayv1.WorkerNode, container: limits("nvidia.com/mig-1g.5gb", "1"),
			want: with("address", "head:6379", "num-gpus", "1")},
		{name: "group resources override params", node: rayv1.WorkerNode, given: map[string]string{"num-cpus": "8"},
			res:  map[string]string{"CPU": "2", "Memory": "1Gi", "GPU": "1", "special": "500m"},
			want: with("address", "head:6379", "num-cpus", "2", "memory", "1073741824", "num-gpus", "1", "resources", `'{"special":0.5}'`)},
		{name: "accelerator added to group resources", node: rayv1.WorkerNode, res: map[string]string{"special": "1"}, container: limits("google.com/tpu", "4"),
			want: with("address", "head:6379", "resources", `'{"TPU":4,"special":1}'`)},
		{name: "given TPU resource kept", node: rayv1.WorkerNode, given: map[string]string{"resources": `'{"TPU": 1}'`}, container: limits("google.com/tpu", "4"),
			want: with("address", "head:6379", "resources", `'{"TPU": 1}'`)},
		{name: "unparsable resources left alone", node: rayv1.WorkerNode, given: map[string]string{"resources": "not json"}, container: limits("google.com/tpu", "4"),
			want: with("address", "head:6379", "resources", "not json")},
		{name: "bad quantity skipped", node: rayv1.WorkerNode, res: map[string]string{"CPU": "lots"}, want: with("address", "head:6379")},
		{name: "labels sorted", node: rayv1.HeadNode, labels: map[string]string{"b": "2", "a": "1"}, want: with("dashboard-host", "0.0.0.0", "labels", "a=1,b=2")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			given := map[string]string{}
			for k, v := range tc.given {
				given[k] = v
			}
			got := startParams(tc.node, given, tc.res, tc.labels, corev1.Container{Resources: tc.container}, "head:6379", tc.autoscaling)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
			if d := cmp.Diff(tc.given, given); len(tc.given) > 0 && d != "" {
				t.Errorf("the spec's rayStartParams were modified:\n%s", d)
			}
		})
	}
}

func TestRayStartCommand(t *testing.T) {
	cases := []struct {
		name   string
		node   rayv1.RayNodeType
		params map[string]string
		want   string
	}{
		{"head first, flags sorted", rayv1.HeadNode, map[string]string{"num-cpus": "1", "block": "true", "dashboard-host": "0.0.0.0"},
			"ray start --head --block --dashboard-host=0.0.0.0 --num-cpus=1"},
		{"false switches are dropped", rayv1.WorkerNode, map[string]string{"disable-usage-stats": "false", "block": "TRUE"}, "ray start --block"},
		{"explicit booleans keep their value", rayv1.WorkerNode, map[string]string{"log-color": "false", "include-dashboard": "true"},
			"ray start --include-dashboard=true --log-color=false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rayStartCommand(tc.node, tc.params); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestContainerCommand(t *testing.T) {
	cases := []struct {
		name        string
		cmd, args   []string
		wantArgs    []string
		wantReplace bool
	}{
		{name: "no command", wantArgs: []string{"ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start"}, wantReplace: true},
		{name: "user command runs first", cmd: []string{"pip", "install", "x"}, args: []string{"--quiet"},
			wantArgs: []string{"pip install x --quiet && ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; ray start"}, wantReplace: true},
		{name: "command that starts ray is kept", cmd: []string{"bash", "-c"}, args: []string{"ray start --head --block"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, args, replace := containerCommand(corev1.Container{Command: tc.cmd, Args: tc.args}, "ray start", Settings{}.Shell())
			if replace != tc.wantReplace || !cmp.Equal(args, tc.wantArgs) {
				t.Errorf("got %v %q, want %v %q", replace, args, tc.wantReplace, tc.wantArgs)
			}
		})
	}
}
