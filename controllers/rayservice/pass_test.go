package rayservice

import (
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func cluster(name string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	rc.Name = name
	return rc
}

func testPass(t *testing.T, strategy rayv1.RayServiceUpgradeType, active, pending string) *pass {
	t.Helper()
	svc := builders.RayService("svc", "ns").Obj()
	if strategy == rayv1.NewClusterWithIncrementalUpgrade {
		svc = builders.RayService("svc", "ns").Incremental(20, 5, 10, "gw").Obj()
	}
	svc.Status.ActiveServiceStatus.RayClusterName = active
	svc.Status.PendingServiceStatus.RayClusterName = pending
	p := newPass(svc, t0)
	p.spec, p.strategy, p.pacing = svc.Spec, strategy, pacingOf(&svc.Spec)
	p.serve, _ = parseServeConfig(svc.Spec.ServeConfigV2)
	if active != "" {
		p.active = cluster(active)
	}
	if pending != "" {
		p.pending = cluster(pending)
	}
	return p
}

func TestServingCluster(t *testing.T) {
	nc, inc := rayv1.NewCluster, rayv1.NewClusterWithIncrementalUpgrade
	cases := []struct {
		name            string
		strategy        rayv1.RayServiceUpgradeType
		active, pending string
		ready           []string
		settled         bool
		split           *split
		rollingBack     bool
		want            string
	}{
		{name: "nothing yet", strategy: nc, want: ""},
		{name: "first cluster not ready", strategy: nc, pending: "p", want: ""},
		{name: "first cluster ready", strategy: nc, pending: "p", ready: []string{"p"}, want: "p"},
		{name: "converged", strategy: nc, active: "a", ready: []string{"a"}, want: "a"},
		{name: "blue/green: pending not ready", strategy: nc, active: "a", pending: "p", want: "a"},
		{name: "blue/green: pending ready switches", strategy: nc, active: "a", pending: "p", ready: []string{"p"}, want: "p"},
		{name: "incremental: pending ready keeps the active", strategy: inc, active: "a", pending: "p", ready: []string{"p"}, settled: true,
			split: &split{ActiveCapacity: 60, PendingCapacity: 60, PendingTraffic: 40}, want: "a"},
		{name: "incremental: complete but not settled", strategy: inc, active: "a", pending: "p", ready: []string{"p"},
			split: &split{ActiveCapacity: 0, PendingCapacity: 100, PendingTraffic: 100}, want: "a"},
		{name: "incremental: complete and settled switches", strategy: inc, active: "a", pending: "p", ready: []string{"p"}, settled: true,
			split: &split{ActiveCapacity: 0, PendingCapacity: 100, PendingTraffic: 100}, want: "p"},
		{name: "rolling back keeps the active", strategy: nc, active: "a", pending: "p", ready: []string{"p"}, rollingBack: true, want: "a"},
	}
	for _, tc := range cases {
		p := testPass(t, tc.strategy, tc.active, tc.pending)
		for _, c := range tc.ready {
			p.appsReady[c] = true
		}
		p.routeSettled, p.rollingBack = tc.settled, tc.rollingBack
		if s := tc.split; s != nil {
			st := &p.svc.Status
			st.ActiveServiceStatus.TargetCapacity, st.PendingServiceStatus.TargetCapacity = ptr.To(s.ActiveCapacity), ptr.To(s.PendingCapacity)
			st.PendingServiceStatus.TrafficRoutedPercent = ptr.To(s.PendingTraffic)
		}
		if got := servingCluster(p); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestWantedServeFreezesTheClusterLosingTraffic(t *testing.T) {
	r := &Reconciler{}
	old := strings.Replace(builders.DefaultServeConfig, "num_replicas: 2", "num_replicas: 1", 1)
	oldCfg, _ := parseServeConfig(old)
	record := func(rc *rayv1.RayCluster) {
		rc.Annotations = map[string]string{rayv1.ServeConfigHashKey: oldCfg.hash, ServeConfigKey: oldCfg.json()}
	}

	p := testPass(t, rayv1.NewClusterWithIncrementalUpgrade, "a", "p")
	record(p.active)
	record(p.pending)
	p.svc.Status.ActiveServiceStatus.TargetCapacity = ptr.To[int32](80)
	p.svc.Status.PendingServiceStatus.TargetCapacity = ptr.To[int32](40)

	cfg, tc, err := r.wantedServe(p, p.active)
	if err != nil || cfg.hash != oldCfg.hash || ptr.Deref(tc, -1) != 80 {
		t.Errorf("active during an upgrade: hash %s tc %v err %v; want its recorded config at 80%%", cfg.hash, tc, err)
	}
	cfg, tc, _ = r.wantedServe(p, p.pending)
	if cfg.hash != p.serve.hash || ptr.Deref(tc, -1) != 40 {
		t.Errorf("pending during an upgrade: want the spec's config at 40%%")
	}
	p.rollingBack = true
	if cfg, _, _ = r.wantedServe(p, p.pending); cfg.hash != oldCfg.hash {
		t.Error("pending during a rollback must keep its recorded config")
	}

	converged := testPass(t, rayv1.NewCluster, "a", "")
	record(converged.active)
	cfg, tc, _ = r.wantedServe(converged, converged.active)
	if cfg.hash != converged.serve.hash || tc != nil {
		t.Error("a converged active cluster gets the spec's config, without target_capacity for NewCluster")
	}
}

func TestRequeueAfter(t *testing.T) {
	p := newPass(builders.RayService("s", "ns").Obj(), t0)
	if got := p.requeueAfter(time.Minute); got != time.Minute {
		t.Errorf("nothing due: %v, want the resync", got)
	}
	p.due(t0.Add(7 * time.Second))
	p.due(t0.Add(3 * time.Second))
	if got := p.requeueAfter(time.Minute); got != 3*time.Second {
		t.Errorf("due in 3 s: %v", got)
	}
	p.pollEvery = time.Second
	if got := p.requeueAfter(time.Minute); got != time.Second {
		t.Errorf("deploying: %v", got)
	}
	p.decided = true
	if got := p.requeueAfter(time.Minute); got != stepRequeue {
		t.Errorf("decided: %v", got)
	}
}
