package plan

import (
	"testing"
	"time"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/test/builders"
)

func TestHeadServeLabel(t *testing.T) {
	healthy, failed := &ProxyHealth{Healthy: true}, &ProxyHealth{Err: "HTTP 503"}
	for _, tc := range []struct {
		name    string
		cur     string
		exclude bool
		appsRun bool
		proxy   *ProxyHealth
		want    string
	}{
		{"excluded, whatever the proxy", "true", true, true, healthy, "false"},
		{"excluded, proxy not checked", "", true, false, nil, "false"},
		{"proxy failed: out, though the applications run", "true", false, true, failed, "false"},
		{"proxy failed before the applications run", "false", false, false, failed, "false"},
		{"proxy healthy, applications run: in", "false", false, true, healthy, "true"},
		{"proxy healthy again: back in", "false", false, true, healthy, "true"},
		{"proxy healthy, applications deploying: unchanged", "false", false, false, healthy, "false"},
		{"proxy not checked, applications run: in", "false", false, true, nil, "true"},
		{"applications stopped running: unchanged", "true", false, false, healthy, "true"},
		{"nothing known: unchanged", "", false, false, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := headServeLabel(tc.cur, tc.exclude, tc.appsRun, tc.proxy)
			if got != tc.want || (got != tc.cur && why == "") {
				t.Errorf("got %q (%q), want %q", got, why, tc.want)
			}
		})
	}
}

// The head leaves the serve endpoints when its Serve proxy fails and rejoins when it
// recovers; the pass comes back to check it without any other event.
func TestPlanFollowsTheHeadsServeProxy(t *testing.T) {
	w := newWorld(builders.RayService("svc", "ns").Obj())
	w.proxyChecks = true
	p := stepUntil(t, w, "serving", func(p *reconciled) bool { return p.out.Status.NumServeEndpoints == 2 })
	if d := p.out.Wake.After(p.now, time.Second, time.Minute); d > ProxyRecheck {
		t.Errorf("a head whose proxy is checked is looked at again after %v, want within %v", d, ProxyRecheck)
	}
	active := w.clusters[p.out.Status.ActiveServiceStatus.RayClusterName]

	active.proxyDown = true
	start := w.now
	p = stepUntil(t, w, "the head out", func(p *reconciled) bool { return active.headLabel == "false" })
	if took := w.now.Sub(start); took > ProxyRecheck+2*time.Second {
		t.Errorf("the head left the serve endpoints %v after its proxy failed", took)
	}
	labelled := actionsOf[LabelPod](p.out)
	if len(labelled) != 1 || labelled[0].Done == nil || labelled[0].Done.Reason != EventUpdatedHeadPodServeLabel ||
		labelled[0].Done.Note != "set ray.io/serve=false on head pod "+active.rc.Name+"-head of RayCluster "+active.rc.Name+
			": its Serve proxy health check failed: GET http://head:8000/-/healthz: HTTP 503: This node is being drained." {
		t.Fatalf("label actions %+v", labelled)
	}
	if p.out.Status.NumServeEndpoints != 1 || condition(p.out.Status, rayv1.RayServiceReady) != "True/NonZeroServeEndpoints" {
		t.Errorf("endpoints %d, Ready %s: the worker still serves", p.out.Status.NumServeEndpoints, condition(p.out.Status, rayv1.RayServiceReady))
	}
	if !p.out.Wake.Poll {
		t.Error("an unhealthy proxy is not polled")
	}

	active.proxyDown = false
	start = w.now
	p = stepUntil(t, w, "the head back", func(p *reconciled) bool { return active.headLabel == "true" })
	if took := w.now.Sub(start); took > 3*time.Second {
		t.Errorf("the head rejoined %v after its proxy recovered, want about the deploying poll", took)
	}
	if p.out.Status.NumServeEndpoints != 2 {
		t.Errorf("endpoints %d after the proxy recovered", p.out.Status.NumServeEndpoints)
	}
}
