package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func TestParseServeConfig(t *testing.T) {
	cfg, err := ParseServeConfig(builders.DefaultServeConfig)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.apps) != 1 || cfg.apps[0] != "fruit" {
		t.Errorf("apps = %v", cfg.apps)
	}
	// Same content, other YAML layout: same hash.
	flow := "applications: [{name: fruit, route_prefix: /fruit, import_path: fruit.deployment_graph, deployments: [{name: MangoStand, num_replicas: 2}]}]"
	other, _ := ParseServeConfig(flow)
	if other.hash != cfg.hash {
		t.Error("the YAML layout changed the config hash")
	}
	// A target_capacity the user wrote is part of the config: a change of it alone resubmits
	// it (as in KubeRay), and it reaches the dashboard unless raygate sets its own.
	withTC, _ := ParseServeConfig("target_capacity: 30\n" + flow)
	if withTC.hash == cfg.hash {
		t.Error("the user's target_capacity is not part of the config hash")
	}
	var userBody map[string]any
	if err := json.Unmarshal(withTC.Body(nil), &userBody); err != nil || userBody["target_capacity"] != float64(30) {
		t.Errorf("the user's target_capacity did not reach the body: %v %v", userBody, err)
	}
	if err := json.Unmarshal(withTC.Body(ptr.To[int32](70)), &userBody); err != nil || userBody["target_capacity"] != float64(70) {
		t.Errorf("raygate's target capacity does not override the user's: %v %v", userBody, err)
	}
	changed, _ := ParseServeConfig(strings.Replace(builders.DefaultServeConfig, "num_replicas: 2", "num_replicas: 3", 1))
	if changed.hash == cfg.hash {
		t.Error("a changed config kept its hash")
	}
	var body map[string]any
	if err := json.Unmarshal(cfg.Body(ptr.To[int32](40)), &body); err != nil || body["target_capacity"] != float64(40) {
		t.Errorf("body with target capacity: %v %v", body, err)
	}
	_ = json.Unmarshal(cfg.Body(nil), &body)
	if strings.Contains(string(cfg.Body(nil)), "target_capacity") {
		t.Error("target_capacity sent while unset")
	}
	legacy, _ := json.Marshal(cfg.doc)
	rec, err := parseLegacyConfig(string(legacy))
	if err != nil || rec.hash != cfg.hash {
		t.Errorf("legacy recorded config: %v %v", rec, err)
	}
	if again, _ := ParseServeConfig(cfg.source); again.hash != cfg.hash {
		t.Error("the recorded source does not give the same hash")
	}
	if _, err := ParseServeConfig("applications: [unclosed"); err == nil {
		t.Error("invalid YAML accepted")
	}
	empty, _ := ParseServeConfig("")
	if !empty.empty() {
		t.Error("empty config not empty")
	}
	unnamed, _ := ParseServeConfig("applications: [{import_path: a.b}]")
	if len(unnamed.apps) != 1 || unnamed.apps[0] != "default" {
		t.Errorf("unnamed application: %v, want Ray's default name", unnamed.apps)
	}
}

func TestDecideSubmit(t *testing.T) {
	cfg, _ := ParseServeConfig(builders.DefaultServeConfig)
	changed, _ := ParseServeConfig(strings.Replace(builders.DefaultServeConfig, "num_replicas: 2", "num_replicas: 3", 1))
	empty, _ := ParseServeConfig("")
	tc := func(v int32) *int32 { return &v }
	known := func(c *ServeConfig, tc *int32) wanted { return wanted{Hash: c.hash, Config: c, TC: tc} }
	cases := []struct {
		name         string
		rec          submitted
		want         wanted
		apps         int
		acceptedHere bool
		submit       bool
	}{
		{"nothing submitted yet", submitted{}, known(cfg, nil), 0, false, true},
		{"up to date", submitted{Hash: cfg.hash}, known(cfg, nil), 1, false, false},
		{"config changed", submitted{Hash: cfg.hash}, known(changed, nil), 1, false, true},
		{"head restarted: no applications", submitted{Hash: cfg.hash}, known(cfg, nil), 0, false, true},
		{"only the hash known, head restarted", submitted{Hash: cfg.hash}, wanted{Hash: cfg.hash}, 0, false, true},
		{"this head accepted it and reports no applications", submitted{Hash: cfg.hash}, wanted{Hash: cfg.hash}, 0, true, false},
		{"target capacity changed", submitted{Hash: cfg.hash, TargetCapacity: tc(20)}, known(cfg, tc(40)), 1, false, true},
		{"target capacity first set", submitted{Hash: cfg.hash}, known(cfg, tc(100)), 1, false, true},
		{"target capacity up to date", submitted{Hash: cfg.hash, TargetCapacity: tc(40)}, known(cfg, tc(40)), 1, false, false},
		{"empty config", submitted{}, known(empty, nil), 0, false, false},
		{"empty config known by its hash", submitted{Hash: emptyConfigHash}, wanted{Hash: emptyConfigHash}, 0, false, false},
	}
	for _, c := range cases {
		got := decideSubmit(c.rec, c.want, c.apps, c.acceptedHere)
		if got.Submit != c.submit || got.Reason == "" {
			t.Errorf("%s: %+v, want submit=%v", c.name, got, c.submit)
		}
	}
}

func TestSubmittedOn(t *testing.T) {
	rc := &rayv1.RayCluster{}
	rc.Annotations = map[string]string{rayv1.ServeConfigHashKey: "h", rayv1.ServeConfigTargetCapacityKey: "35", LegacyServeConfigKey: "{}"}
	s := submittedOn(rc)
	if s.Hash != "h" || s.TargetCapacity != nil || !s.TCUnknown || s.Legacy != "{}" {
		t.Errorf("%+v: the hash and legacy config, and no target capacity (older versions' is stale)", s)
	}
	if got := staleRecordAnnotations(rc); !slices.Equal(got, []string{LegacyServeConfigKey, rayv1.ServeConfigTargetCapacityKey}) {
		t.Errorf("stale annotations %v", got)
	}
}

// What a cluster runs: the dashboard's last accepted config when this process heard it,
// else the record's config at the target capacity the dashboard reports, unknown until read.
func TestRunsOn(t *testing.T) {
	rec := submitted{Hash: "h", TCUnknown: true}
	cases := []struct {
		name string
		view ServeView
		want submitted
	}{
		{"not read", ServeView{}, submitted{Hash: "h", TCUnknown: true}},
		{"read", ServeView{Apps: map[string]rayv1.AppStatus{}, TargetCapacity: ptr.To[int32](40)}, submitted{Hash: "h", TargetCapacity: ptr.To[int32](40)}},
		{"read, unset", ServeView{Apps: map[string]rayv1.AppStatus{}}, submitted{Hash: "h"}},
		{"accepted", ServeView{Accepted: &AcceptedConfig{Hash: "g", TargetCapacity: ptr.To[int32](60)}, TargetCapacity: ptr.To[int32](40), Apps: map[string]rayv1.AppStatus{}}, submitted{Hash: "g", TargetCapacity: ptr.To[int32](60)}},
	}
	for _, c := range cases {
		if got := runsOn(rec, c.view); got.Hash != c.want.Hash || !equalPtr(got.TargetCapacity, c.want.TargetCapacity) || got.TCUnknown != c.want.TCUnknown {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if (submitted{Hash: "h", TCUnknown: true}).runsTC(nil) {
		t.Error("an unknown target capacity counts as unset")
	}
}

func TestSubmissionID(t *testing.T) {
	for _, tc := range []*int32{nil, ptr.To[int32](0), ptr.To[int32](100)} {
		h, got, ok := ParseSubmissionID(submissionID("abc", tc))
		if !ok || h != "abc" || !equalPtr(got, tc) {
			t.Errorf("%v: %q %v %v", tc, h, got, ok)
		}
	}
	for _, bad := range []string{"", "abc", "@5", "abc@x"} {
		if _, _, ok := ParseSubmissionID(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}
