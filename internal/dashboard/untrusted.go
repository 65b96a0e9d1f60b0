package dashboard

import (
	"fmt"
	"unicode/utf8"

	"github.com/raygate/raygate/internal/untrusted"
)

// A dashboard runs in the tenant's head pod, so everything it answers is untrusted: these
// bounds keep one answer from growing raygate's memory or the RayService's status, and keep
// remote text from being copied verbatim into a condition or an event.
const (
	// MaxApplications is the most Serve applications one answer may list: as many as a
	// serveConfigV2 may declare (validation.MaxServeApplications). An answer with more is
	// refused, read no further than the first one over.
	MaxApplications = 256
	// MaxDeployments is the most deployments all applications of one answer may list
	// together: as many as a serveConfigV2 may declare (validation.MaxServeDeployments). An
	// answer with more is refused, read no further than the first one over.
	MaxDeployments = 2048
	// MaxStatusBytes bounds what one answer takes in a RayService status (the
	// applicationStatuses of one cluster, JSON-encoded as the API server stores it). A status
	// holds two clusters (active and pending), so the applications of a RayService's status
	// never take more than 2 × MaxStatusBytes: far from etcd's 1.5 MiB object limit, with room
	// for the spec. An answer over it loses what no decision rests on (fitStatus); one whose
	// applications' names and states alone are over it is refused.
	MaxStatusBytes = 256 << 10
	// maxMessage is the longest application or deployment message kept.
	maxMessage = 256
	// maxName is the longest application or deployment name kept (a Kubernetes name is 253).
	maxName = 253
	// maxState is the longest application or deployment status kept.
	maxState = 32
	// maxErrorExcerpt is the longest excerpt of an error answer kept in an Error.
	maxErrorExcerpt = 160
)

// Sanitize makes remote text safe to show: valid UTF-8, control characters and runs of
// white space turned into single spaces, cut to at most max runes with "…" marking the cut.
func Sanitize(s string, limit int) string { return untrusted.Text(s, limit) }

// DenseError is an answer refused for listing more than raygate keeps.
type DenseError struct{ What string }

func (e *DenseError) Error() string { return "the answer " + e.What }

// tooManyApplications, tooManyDeployments and tooLongNames are the refusals of a dense answer.
func tooManyApplications() *DenseError {
	return &DenseError{What: fmt.Sprintf("lists more than %d Serve applications, the most raygate reads (as many as a serveConfigV2 may declare)", MaxApplications)}
}

func tooManyDeployments() *DenseError {
	return &DenseError{What: fmt.Sprintf("lists more than %d Serve deployments, the most raygate reads (as many as a serveConfigV2 may declare)", MaxDeployments)}
}

func tooLongNames(cost int) *DenseError {
	return &DenseError{What: fmt.Sprintf("has application names and states that alone would take %d bytes of the RayService's status, more than the %d raygate keeps per cluster", cost, MaxStatusBytes)}
}

// fitStatus makes the answer fit MaxStatusBytes once in a status. As long as it is over,
// it leaves out, in this order, what the controller decides nothing on: the deployments'
// messages, the deployments, the applications' messages. An answer still over (its
// applications' names and states alone) is refused.
func (d *ServeDetails) fitStatus() error {
	for _, leaveOut := range []func(*Application){
		func(a *Application) {
			for dn, dep := range a.Deployments {
				dep.Message = ""
				a.Deployments[dn] = dep
			}
		},
		func(a *Application) { a.Deployments = nil },
		func(a *Application) { a.Message = "" },
	} {
		if statusCost(d.Applications) <= MaxStatusBytes {
			return nil
		}
		for name, app := range d.Applications {
			leaveOut(&app)
			d.Applications[name] = app
		}
	}
	if cost := statusCost(d.Applications); cost > MaxStatusBytes {
		return tooLongNames(cost)
	}
	return nil
}

// Per entry, what a status adds to the JSON-encoded text of an application or deployment
// besides its name, status and message: the quotes around the key, the field names and
// punctuation (rayv1.AppStatus and rayv1.ServeDeploymentStatus), and a separating comma.
const (
	appStatusOverhead        = len(`"":{"serveDeploymentStatuses":{},"status":"","message":""},`)
	deploymentStatusOverhead = len(`"":{"status":"","message":""},`)
)

// statusCost is an upper bound on the JSON-encoded size of apps as a RayService status
// holds them (applicationStatuses of one cluster).
func statusCost(apps map[string]Application) int {
	n := len(`{}`)
	for name, app := range apps {
		n += appStatusOverhead + jsonLen(name) + jsonLen(app.Status) + jsonLen(app.Message)
		for dn, dep := range app.Deployments {
			n += deploymentStatusOverhead + jsonLen(dn) + jsonLen(dep.Status) + jsonLen(dep.Message)
		}
	}
	return n
}

// jsonLen is at least the length of s as encoding/json writes it inside a string (the API
// server's encoder escapes <, > and & as \u003c and the like).
func jsonLen(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			n += 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
			n += 6
		default:
			n += utf8.RuneLen(r)
		}
	}
	return n
}

// keptName is an application or deployment name as raygate keeps it: a name that is too
// long or not printable as it is is not kept (it could not be matched to a config anyway).
func keptName(k string) (string, bool) {
	if len(k) > maxName || Sanitize(k, maxName) != k {
		return "", false
	}
	return k, true
}
