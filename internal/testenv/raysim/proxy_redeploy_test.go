package raysim

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// As real Serve does, the old replicas of an application keep answering while a changed
// config redeploys it (the None strategy's in-place update); a new application answers
// only once it runs, and a redeploy of an application that was not running does not.
func TestProxyServesWithTheOldReplicasDuringARedeploy(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s, c := start(t, Options{DeployDelay: time.Second, Now: clock.Now})
	proxy := newTestServer(t, &http.Server{Handler: s.ProxyHandler(), ReadHeaderTimeout: time.Second})
	get := func(path string) int {
		t.Helper()
		resp, err := http.Get(proxy + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.ReadAll(resp.Body)
		return resp.StatusCode
	}
	deploy := func(cfg string) {
		t.Helper()
		if err := c.DeployApplications(context.Background(), []byte(cfg)); err != nil {
			t.Fatal(err)
		}
	}
	deploy(twoApps)
	clock.Add(2 * time.Second)
	if code := get("/fruit"); code != http.StatusOK {
		t.Fatalf("RUNNING: %d", code)
	}

	changed := strings.Replace(twoApps, `"num_replicas":2`, `"num_replicas":3`, 1)
	withNew := strings.TrimSuffix(changed, "]}") + `,{"name":"veg","route_prefix":"/veg","import_path":"veg.app"}]}`
	deploy(withNew)
	if got := s.ApplicationStatuses()["fruit"]; got != "DEPLOYING" {
		t.Fatalf("the dashboard reports fruit %s, want DEPLOYING", got)
	}
	if code := get("/fruit"); code != http.StatusOK {
		t.Errorf("fruit redeploying: %d, want 200 from its old replicas", code)
	}
	if code := get("/veg"); code != http.StatusServiceUnavailable {
		t.Errorf("a new application while DEPLOYING: %d, want 503", code)
	}

	// Changed again before the first redeploy finished: the replicas that ran still answer.
	clock.Add(500 * time.Millisecond)
	deploy(strings.Replace(withNew, `"num_replicas":3`, `"num_replicas":4`, 1))
	if code := get("/fruit"); code != http.StatusOK {
		t.Errorf("fruit redeployed twice: %d, want 200", code)
	}
	clock.Add(2 * time.Second)
	if code := get("/fruit"); code != http.StatusOK {
		t.Errorf("after the redeploy: %d", code)
	}
	if code := get("/veg"); code != http.StatusOK {
		t.Errorf("veg after deploying: %d", code)
	}

	// The old replicas answer only if they were running.
	if err := s.SetApplicationStatus("fruit", "UNHEALTHY", "crashed"); err != nil {
		t.Fatal(err)
	}
	deploy(twoApps)
	if code := get("/fruit"); code != http.StatusServiceUnavailable {
		t.Errorf("redeploy of an UNHEALTHY application: %d, want 503", code)
	}
}
