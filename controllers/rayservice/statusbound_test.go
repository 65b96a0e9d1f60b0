package rayservice

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/dashboard"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// etcdObjectLimit is the most etcd stores in one object (its default --max-request-bytes).
const etcdObjectLimit = 1536 << 10

// The applications a RayService status holds, from any answer the dashboard client keeps,
// take at most dashboard.MaxStatusBytes per cluster once encoded as the API server encodes
// them (encoding/json, which escapes <, > and & in six bytes): two clusters stay far from
// etcd's object limit, whatever the tenant's head pod answers.
func TestAppStatusesStayUnderTheStatusBound(t *testing.T) {
	// named is an answer of apps applications with deps deployments each, names of 253
	// bytes made mostly of <, every message msg.
	named := func(apps, deps int, msg string) []byte {
		name := func(kind string, i int) string {
			p := fmt.Sprintf("%s%d", kind, i)
			return p + strings.Repeat("<", 253-len(p))
		}
		var b strings.Builder
		b.WriteString(`{"applications":{`)
		for a := range apps {
			if a > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `%q:{"status":"DEPLOY_FAILED","message":%q,"deployments":{`, name("app", a), msg)
			for d := range deps {
				if d > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `%q:{"status":"UNHEALTHY","message":%q}`, name("dep", a*deps+d), msg)
			}
			b.WriteString(`}}`)
		}
		b.WriteString(`}}`)
		return []byte(b.String())
	}
	bound := 2*dashboard.MaxStatusBytes + 4<<10 // both clusters' applications, and the rest of an empty status
	for name, answer := range map[string][]byte{
		"the densest answer the client accepts":               raysim.DenseAnswer(dashboard.MaxDeployments),
		"long names and messages, just under the bound":       named(160, 0, strings.Repeat("&", 300)),
		"long names, deployments and messages over it":        named(128, 8, strings.Repeat(">", 300)),
		"as many deployments as admission allows, in one app": named(1, dashboard.MaxDeployments, strings.Repeat("<", 300)),
	} {
		t.Run(name, func(t *testing.T) {
			d, err := dashboard.ParseServeDetails(answer)
			if err != nil {
				t.Fatal(err)
			}
			apps := appStatuses(d)
			one, err := json.Marshal(apps)
			if err != nil {
				t.Fatal(err)
			}
			if len(one) > dashboard.MaxStatusBytes {
				t.Errorf("one cluster's applications take %d bytes of the status, more than %d", len(one), dashboard.MaxStatusBytes)
			}
			status := rayv1.RayServiceStatuses{
				ActiveServiceStatus:  rayv1.RayServiceStatus{Applications: apps},
				PendingServiceStatus: rayv1.RayServiceStatus{Applications: apps},
			}
			all, err := json.Marshal(status)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) > bound || len(all) > etcdObjectLimit/2 {
				t.Errorf("the status takes %d bytes, more than the bound %d (etcd stores at most %d per object)", len(all), bound, etcdObjectLimit)
			}
			t.Logf("status: %d bytes (bound %d)", len(all), bound)
		})
	}
}
