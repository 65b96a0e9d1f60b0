package dashboard

import (
	"maps"
	"slices"

	"github.com/raygate/raygate/internal/untrusted"
)

// A dashboard runs in the tenant's head pod, so everything it answers is untrusted: these
// bounds keep one answer from growing raygate's memory or the RayService's status, and keep
// remote text from being copied verbatim into a condition or an event.
const (
	// MaxApplications is how many Serve applications of one answer raygate keeps (by
	// name order); a RayService's serveConfigV2 has far fewer.
	MaxApplications = 256
	// MaxDeployments is how many deployments of one application raygate keeps.
	MaxDeployments = 256
	// maxMessage is the longest application or deployment message kept.
	maxMessage = 256
	// maxName is the longest application or deployment name kept (a Kubernetes name is 253).
	maxName = 253
	// maxErrorExcerpt is the longest excerpt of an error answer kept in an Error.
	maxErrorExcerpt = 160
)

// Sanitize makes remote text safe to show: valid UTF-8, control characters and runs of
// white space turned into single spaces, cut to at most max runes with "…" marking the cut.
func Sanitize(s string, limit int) string { return untrusted.Text(s, limit) }

// bound applies the limits above to a decoded answer in place.
func (d *ServeDetails) bound() {
	d.Applications = keepFirst(d.Applications, MaxApplications)
	for name, app := range d.Applications {
		app.Name = Sanitize(app.Name, maxName)
		app.Status = Sanitize(app.Status, 32)
		app.Message = Sanitize(app.Message, maxMessage)
		app.DeployedAppConfig = nil // never read; may be large
		app.Deployments = keepFirst(app.Deployments, MaxDeployments)
		for dn, dep := range app.Deployments {
			dep.Name = Sanitize(dep.Name, maxName)
			dep.Status = Sanitize(dep.Status, 32)
			dep.StatusTrigger = Sanitize(dep.StatusTrigger, 64)
			dep.Message = Sanitize(dep.Message, maxMessage)
			app.Deployments[dn] = dep
		}
		d.Applications[name] = app
	}
	d.DeployMode = Sanitize(d.DeployMode, 32)
	d.ProxyLocation = Sanitize(d.ProxyLocation, 32)
	d.HTTPOptions = nil
}

// keepFirst returns m with at most limit entries, those whose keys sort first, and with
// over-long or unprintable keys dropped; never nil.
func keepFirst[V any](m map[string]V, limit int) map[string]V {
	out := make(map[string]V, min(len(m), limit))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(out) == limit {
			break
		}
		if len(k) > maxName || Sanitize(k, maxName) != k {
			continue
		}
		out[k] = m[k]
	}
	return out
}
