package raysim

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestUserErrorsShare(t *testing.T) {
	for _, tt := range []struct {
		ratio float64
		n     int
		fails int
	}{
		{0, 100, 0}, {0.3, 10, 3}, {0.3, 100, 30}, {0.3, 1000, 300}, {0.25, 8, 2}, {1, 7, 7}, {-1, 5, 0}, {2, 5, 5},
	} {
		var u userErrors
		s := &Server{}
		s.SetUserErrorRatio(tt.ratio)
		u.ratio = s.userErrors.ratio
		got := 0
		for range tt.n {
			if fail, _ := u.next(); fail {
				got++
			}
		}
		if got != tt.fails {
			t.Errorf("ratio %v over %d requests: %d failed, want %d", tt.ratio, tt.n, got, tt.fails)
		}
	}
	// Any window of consecutive requests is within one request of the ratio.
	u := userErrors{ratio: 0.3}
	seq := make([]bool, 200)
	for i := range seq {
		seq[i], _ = u.next()
	}
	for from := 0; from < 180; from += 7 {
		n, f := 20, 0
		for _, x := range seq[from : from+n] {
			if x {
				f++
			}
		}
		if f < 5 || f > 7 {
			t.Errorf("requests %d..%d: %d of %d failed, want 6±1", from, from+n, f, n)
		}
	}
}

func TestProxyUserErrors(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s, c := start(t, Options{DeployDelay: time.Second, Now: clock.Now})
	proxy := newTestServer(t, &http.Server{Handler: s.ProxyHandler(), ReadHeaderTimeout: time.Second})
	get := func(path string) (int, string, string) {
		t.Helper()
		resp, err := http.Get(proxy + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get(ClusterHeader), string(body)
	}
	s.SetUserErrorRatio(0.5)
	if err := c.DeployApplications(context.Background(), []byte(twoApps)); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get("/fruit"); code != http.StatusServiceUnavailable {
		t.Errorf("while DEPLOYING: %d, want 503 (not counted)", code)
	}
	clock.Add(2 * time.Second)
	statuses := map[int]int{}
	for range 10 {
		code, who, body := get("/fruit")
		statuses[code]++
		if who != cluster.String() {
			t.Errorf("answer from %q, want the cluster header %s", who, cluster)
		}
		if code == http.StatusInternalServerError && !strings.Contains(body, "simulated application error") {
			t.Errorf("500 body %q", body)
		}
	}
	if statuses[http.StatusOK] != 5 || statuses[http.StatusInternalServerError] != 5 {
		t.Errorf("statuses %v, want 5×200 and 5×500", statuses)
	}
	for range 3 {
		if code, _, _ := get("/-/healthz"); code != http.StatusOK {
			t.Errorf("health check failed: %d", code)
		}
	}
	if routed, failed := s.UserRequests(); routed != 10 || failed != 5 {
		t.Errorf("UserRequests = %d, %d; want 10, 5 (health checks and 503s not counted)", routed, failed)
	}
	s.SetUserErrorRatio(0)
	for range 5 {
		if code, _, _ := get("/fruit"); code != http.StatusOK {
			t.Errorf("after SetUserErrorRatio(0): %d", code)
		}
	}
}
