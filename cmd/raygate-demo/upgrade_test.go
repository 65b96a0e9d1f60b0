package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
)

func TestUpgradePatch(t *testing.T) {
	svc := &rayv1.RayService{}
	svc.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers = []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}}
	svc.Spec.RayClusterSpec.WorkerGroupSpecs = []rayv1.WorkerGroupSpec{{GroupName: "cpu"}}
	image := []map[string]any{
		{"op": "replace", "path": "/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/image", "value": "img:2"},
		{"op": "replace", "path": "/spec/rayClusterConfig/workerGroupSpecs/0/template/spec/containers/0/image", "value": "img:2"},
	}
	tests := []struct {
		name string
		opts options
		want []map[string]any
	}{
		{"image only: the sample's pacing is kept", options{deletionDelay: -1}, image},
		{"pacing and deletion delay set with add", options{interval: 1, step: 25, maxSurge: 50, deletionDelay: 0}, append(append([]map[string]any{}, image...),
			map[string]any{"op": "add", "path": "/spec/upgradeStrategy/clusterUpgradeOptions/maxSurgePercent", "value": float64(50)},
			map[string]any{"op": "add", "path": "/spec/upgradeStrategy/clusterUpgradeOptions/stepSizePercent", "value": float64(25)},
			map[string]any{"op": "add", "path": "/spec/upgradeStrategy/clusterUpgradeOptions/intervalSeconds", "value": float64(1)},
			map[string]any{"op": "add", "path": "/spec/rayClusterDeletionDelaySeconds", "value": float64(0)},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []map[string]any
			if err := json.Unmarshal([]byte(upgradePatch(svc, "img:2", tt.opts)), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShellJoin(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "rayservice", "-o", "wide"}, "get rayservice -o wide"},
		{[]string{"patch", "rs", "-p", `[{"op":"add"}]`}, `patch rs -p '[{"op":"add"}]'`},
		{[]string{"it's"}, `'it'\''s'`},
		{[]string{""}, "''"},
	} {
		if got := shellJoin(tt.args); got != tt.want {
			t.Errorf("shellJoin(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}

func TestIndentText(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"\n", ""},
		{"one\n", "  one\n"},
		{"one\ntwo", "  one\n  two\n"},
	} {
		if got := indentText(tt.in); got != tt.want {
			t.Errorf("indentText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPercents(t *testing.T) {
	if got := percents([]int32{20, 40, 100}); got != "20% → 40% → 100%" {
		t.Errorf("percents = %q", got)
	}
	if got := percents(nil); got != "" {
		t.Errorf("percents(nil) = %q", got)
	}
}
