package raysim

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/raygate/raygate/internal/dashboard"
)

// denseNameBytes is the length of every name of a dense answer: long enough to cost, short
// enough that 2,048 deployments with their messages fit in dashboard.MaxResponseBytes.
const denseNameBytes = 64

// DenseAnswer is a Serve status as dense as raygate reads one: dashboard.MaxApplications
// applications with deployments deployments among them (spread evenly), every name and
// message made of the characters a JSON encoder escapes most (<, > and &, six bytes each in
// a stored status) and as long as dashboard.MaxResponseBytes leaves room for, messages at
// most as long as raygate keeps. With deployments up to dashboard.MaxDeployments it is the
// densest answer raygate must accept; with more, one it must refuse.
func DenseAnswer(deployments int) []byte {
	apps := dashboard.MaxApplications
	entries := apps + deployments
	// Per entry: the name twice (key and "name"), the message, and about 110 bytes of JSON.
	msg := min(256, (dashboard.MaxResponseBytes-4096)/entries-2*denseNameBytes-110)
	var b strings.Builder
	b.Grow(dashboard.MaxResponseBytes)
	b.WriteString(`{"deploy_mode":"MULTI_APP","applications":{`)
	for a := range apps {
		if a > 0 {
			b.WriteByte(',')
		}
		name := denseName("app", a)
		fmt.Fprintf(&b, `%q:{"name":%q,"status":"RUNNING","message":%q,"deployments":{`, name, name, denseText(msg))
		// Application a gets the deployments numbered a, a+apps, a+2·apps...
		for i, d := 0, a; d < deployments; i, d = i+1, d+apps {
			if i > 0 {
				b.WriteByte(',')
			}
			dn := denseName("dep", d)
			fmt.Fprintf(&b, `%q:{"name":%q,"status":"HEALTHY","message":%q}`, dn, dn, denseText(msg))
		}
		b.WriteString(`}}`)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// denseName is a unique name of denseNameBytes bytes.
func denseName(kind string, i int) string {
	p := fmt.Sprintf("%s%05d", kind, i)
	return p + denseText(denseNameBytes-len(p))
}

func denseText(n int) string { return strings.Repeat("<&>", n/3+1)[:max(n, 0)] }

// serveDense answers a read of the Serve status with DenseAnswer and accepts everything
// else (a config, a proxy health check), so the operator keeps reading.
func serveDense(w http.ResponseWriter, r *http.Request, deployments int) {
	if r.Method == http.MethodGet && strings.TrimRight(r.URL.Path, "/") == strings.TrimRight(dashboard.ApplicationsPath, "/") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(DenseAnswer(deployments))
		return
	}
	_, _ = w.Write([]byte("success"))
}
