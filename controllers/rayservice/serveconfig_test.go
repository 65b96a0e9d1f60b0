package rayservice

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func TestParseServeConfig(t *testing.T) {
	cfg, err := parseServeConfig(builders.DefaultServeConfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.apps) != 1 || cfg.apps[0] != "fruit" {
		t.Errorf("apps = %v", cfg.apps)
	}
	// Same content, other YAML layout and a target_capacity: same hash.
	other, _ := parseServeConfig("target_capacity: 30\napplications: [{name: fruit, route_prefix: /fruit, import_path: fruit.deployment_graph, deployments: [{name: MangoStand, num_replicas: 2}]}]")
	if other.hash != cfg.hash {
		t.Error("layout or target_capacity changed the config hash")
	}
	changed, _ := parseServeConfig(strings.Replace(builders.DefaultServeConfig, "num_replicas: 2", "num_replicas: 3", 1))
	if changed.hash == cfg.hash {
		t.Error("a changed config kept its hash")
	}
	var body map[string]any
	if err := json.Unmarshal(cfg.body(ptr.To[int32](40)), &body); err != nil || body["target_capacity"] != float64(40) {
		t.Errorf("body with target capacity: %v %v", body, err)
	}
	_ = json.Unmarshal(cfg.body(nil), &body)
	if strings.Contains(string(cfg.body(nil)), "target_capacity") {
		t.Error("target_capacity sent while unset")
	}
	rec, err := parseSubmittedConfig(cfg.json())
	if err != nil || rec.hash != cfg.hash {
		t.Errorf("recorded config round trip: %v %v", rec, err)
	}
	if _, err := parseServeConfig("applications: [unclosed"); err == nil {
		t.Error("invalid YAML accepted")
	}
	empty, _ := parseServeConfig("")
	if !empty.empty() {
		t.Error("empty config not empty")
	}
	unnamed, _ := parseServeConfig("applications: [{import_path: a.b}]")
	if len(unnamed.apps) != 1 || unnamed.apps[0] != "default" {
		t.Errorf("unnamed application: %v, want Ray's default name", unnamed.apps)
	}
}

func TestDecideSubmit(t *testing.T) {
	cfg, _ := parseServeConfig(builders.DefaultServeConfig)
	changed, _ := parseServeConfig(strings.Replace(builders.DefaultServeConfig, "num_replicas: 2", "num_replicas: 3", 1))
	empty, _ := parseServeConfig("")
	tc := func(v int32) *int32 { return &v }
	cases := []struct {
		name   string
		rec    submitted
		want   *serveConfig
		wantTC *int32
		apps   int
		submit bool
	}{
		{"nothing submitted yet", submitted{}, cfg, nil, 0, true},
		{"up to date", submitted{Hash: cfg.hash}, cfg, nil, 1, false},
		{"config changed", submitted{Hash: cfg.hash}, changed, nil, 1, true},
		{"head restarted: no applications", submitted{Hash: cfg.hash}, cfg, nil, 0, true},
		{"target capacity changed", submitted{Hash: cfg.hash, TargetCapacity: tc(20)}, cfg, tc(40), 1, true},
		{"target capacity first set", submitted{Hash: cfg.hash}, cfg, tc(100), 1, true},
		{"target capacity up to date", submitted{Hash: cfg.hash, TargetCapacity: tc(40)}, cfg, tc(40), 1, false},
		{"empty config", submitted{}, empty, nil, 0, false},
	}
	for _, c := range cases {
		got := decideSubmit(c.rec, c.want, c.wantTC, c.apps)
		if got.Submit != c.submit || got.Reason == "" {
			t.Errorf("%s: %+v, want submit=%v", c.name, got, c.submit)
		}
	}
}

func TestSubmittedOn(t *testing.T) {
	rc := &rayv1.RayCluster{}
	rc.Annotations = map[string]string{rayv1.ServeConfigHashKey: "h", rayv1.ServeConfigTargetCapacityKey: "35", ServeConfigKey: "{}"}
	s := submittedOn(rc)
	if s.Hash != "h" || ptr.Deref(s.TargetCapacity, -1) != 35 || s.Config != "{}" {
		t.Errorf("%+v", s)
	}
	rc.Annotations[rayv1.ServeConfigTargetCapacityKey] = ""
	if submittedOn(rc).TargetCapacity != nil {
		t.Error("empty target capacity annotation read as a value")
	}
}
