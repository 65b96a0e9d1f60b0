// Package promgate evaluates the metric gates of an UpgradePolicy against Prometheus' HTTP
// query API, with the official client. The Prometheus address is the admin's
// (--prometheus-url), never a tenant's; answers are bounded in size and time, redirects are
// not followed, and every failure is reported as missing data (the caller waits), never as
// a passing or failing value.
package promgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	raygatev1alpha1 "github.com/raygate/raygate/apis/raygate/v1alpha1"
)

const (
	// DefaultMaxBytes caps one answer's body.
	DefaultMaxBytes = 1 << 20
	// DefaultBudget bounds all queries of one evaluation together, so a slow Prometheus
	// holds a reconcile worker at most this long.
	DefaultBudget = 10 * time.Second
	// MaxSamples is the most series one answer may hold; a query that matches more is
	// reported as an error (it is almost certainly missing a filter).
	MaxSamples = 100
	// maxErrLen cuts an error text quoted in a condition.
	maxErrLen = 200
)

// Options configure a Client; zero values take the defaults.
type Options struct {
	MaxBytes int64
	Budget   time.Duration
	// Transport is the base transport (nil: a clone of http.DefaultTransport).
	Transport http.RoundTripper
}

// Client queries one Prometheus.
type Client struct {
	api    promv1.API
	budget time.Duration
	now    func() time.Time
}

// New builds a Client for the Prometheus at rawURL (http or https, no credentials in it).
func New(rawURL string, o Options) (*Client, error) {
	if err := ValidateURL(rawURL); err != nil {
		return nil, err
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	base := o.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	hc := &http.Client{
		Transport: capped{base: base, max: o.MaxBytes},
		// A redirect could send the query (and the operator's identity) elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c, err := promapi.NewClient(promapi.Config{Address: rawURL, Client: hc})
	if err != nil {
		return nil, err
	}
	return &Client{api: promv1.NewAPI(c), budget: o.Budget, now: time.Now}, nil
}

// ValidateURL checks the admin's --prometheus-url.
func ValidateURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	switch {
	case err != nil:
		return fmt.Errorf("--prometheus-url: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("--prometheus-url %q: the scheme must be http or https", rawURL)
	case u.Host == "":
		return fmt.Errorf("--prometheus-url %q: no host", rawURL)
	case u.User != nil:
		return fmt.Errorf("--prometheus-url: credentials in the URL are not accepted")
	}
	return nil
}

// capped limits response bodies: reading past max fails the request.
type capped struct {
	base http.RoundTripper
	max  int64
}

func (c capped) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: c.max}
	return resp, nil
}

// errTooLarge is returned once an answer exceeds the cap.
var errTooLarge = errors.New("the answer exceeds the size limit")

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte tells a body that ends exactly at the cap from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, errTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// Vars are the values of the placeholders.
type Vars struct {
	Namespace, RayService, Pending, Active string
}

// placeholderRE finds {{...}} in a query.
var placeholderRE = regexp.MustCompile(`\{\{[^{}]*\}\}`)

// UnknownPlaceholders lists the {{...}} in a query that are not one of the four allowed.
func UnknownPlaceholders(query string) []string {
	var out []string
	for _, m := range placeholderRE.FindAllString(query, -1) {
		known := false
		for _, p := range raygatev1alpha1.Placeholders {
			known = known || m == p
		}
		if !known {
			out = append(out, m)
		}
	}
	return out
}

// escape makes a value safe inside a double-quoted PromQL string.
func escape(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`).Replace(v)
}

// Render replaces the placeholders with escaped values; a query with any other placeholder
// is refused (admission refuses it too, so only an object stored without the webhook can
// have one).
func Render(query string, v Vars) (string, error) {
	if u := UnknownPlaceholders(query); len(u) > 0 {
		return "", fmt.Errorf("unknown placeholders %v (allowed: %v)", u, raygatev1alpha1.Placeholders)
	}
	return strings.NewReplacer(
		raygatev1alpha1.PlaceholderNamespace, escape(v.Namespace),
		raygatev1alpha1.PlaceholderRayService, escape(v.RayService),
		raygatev1alpha1.PlaceholderPending, escape(v.Pending),
		raygatev1alpha1.PlaceholderActive, escape(v.Active),
	).Replace(query), nil
}

// Result is one gate's answer.
type Result struct {
	Gate string
	// Query is the query as sent (placeholders replaced).
	Query string
	// Values are the samples' values, NaN left out; empty: no data.
	Values []float64
	// Err is why there is no answer (Prometheus unreachable, timed out, refused the query,
	// or the answer was too large or of the wrong type); quoted sanitized and cut.
	Err string
}

// Evaluate runs every gate's query at the current time, one after the other, each bounded
// by timeout and all by the client's budget. A gate whose query could not run before the
// budget ran out gets an Err.
func (c *Client) Evaluate(ctx context.Context, gates []raygatev1alpha1.Gate, timeout time.Duration, v Vars) []Result {
	ctx, cancel := context.WithTimeout(ctx, c.budget)
	defer cancel()
	out := make([]Result, 0, len(gates))
	for _, g := range gates {
		r := Result{Gate: g.Name}
		q, err := Render(g.Query, v)
		if err != nil {
			r.Err = err.Error()
			out = append(out, r)
			continue
		}
		r.Query = q
		r.Values, err = c.query(ctx, q, timeout)
		if err != nil {
			r.Err = Sanitize(err.Error())
		}
		out = append(out, r)
	}
	return out
}

func (c *Client) query(ctx context.Context, q string, timeout time.Duration) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	val, _, err := c.api.Query(ctx, q, c.now(), promv1.WithTimeout(timeout))
	if err != nil {
		return nil, err
	}
	return Values(val)
}

// Values are the non-NaN values of an instant query's answer: a scalar, or a vector of at
// most MaxSamples series.
func Values(v model.Value) ([]float64, error) {
	var out []float64
	keep := func(f model.SampleValue) {
		if x := float64(f); !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	switch t := v.(type) {
	case *model.Scalar:
		keep(t.Value)
	case model.Vector:
		if len(t) > MaxSamples {
			return nil, fmt.Errorf("the query returned %d series, more than %d", len(t), MaxSamples)
		}
		for _, s := range t {
			keep(s.Value)
		}
	case nil:
	default:
		return nil, fmt.Errorf("the query returned a %s, not a scalar or an instant vector", v.Type())
	}
	return out, nil
}

// Sanitize keeps printable ASCII of a remote text and cuts it, for conditions and events.
func Sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxErrLen {
			b.WriteString("…")
			break
		}
		if r >= 0x20 && r < 0x7f {
			b.WriteRune(r)
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}
