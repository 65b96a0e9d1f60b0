package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Client talks to the Serve REST API of one Ray cluster.
type Client interface {
	// GetServeDetails returns the Serve applications and their statuses.
	GetServeDetails(ctx context.Context) (*ServeDetails, error)
	// DeployApplications submits a Serve config (ServeDeploySchema as JSON) declaratively:
	// applications missing from it are deleted, changed ones redeployed.
	DeployApplications(ctx context.Context, config []byte) error
}

// DefaultTimeout bounds each dashboard request when the caller's context has no earlier
// deadline. The dashboard answers in milliseconds when healthy; a hung head must not hold
// anything of the operator's for long.
const DefaultTimeout = 5 * time.Second

// MaxResponseBytes caps what is read from a dashboard. A Serve status of hundreds of
// applications is far smaller; a larger answer is refused rather than decoded, because the
// head pod runs the tenant's code and its answers are untrusted.
const MaxResponseBytes = 1 << 20

// HTTPClient is the Client over HTTP.
type HTTPClient struct {
	// BaseURL is the dashboard's address, e.g. http://c-head-svc.ns.svc.cluster.local:8265.
	BaseURL string
	// HTTP is the underlying client (nil: a shared client without its own timeout).
	HTTP *http.Client
	// Timeout bounds every request (0: DefaultTimeout).
	Timeout time.Duration
	// Token is sent as a bearer token when the cluster requires one ("": none).
	Token BearerToken
}

var defaultHTTP = NewHTTP()

// NewHTTP returns the HTTP client raygate uses for dashboards: it follows no redirects (a
// head pod could otherwise send raygate's Serve config to another tenant's dashboard), uses
// no proxy from the environment, and bounds connection setup and response headers.
func NewHTTP() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:            (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:    2 * time.Second,
			ResponseHeaderTimeout:  DefaultTimeout,
			MaxResponseHeaderBytes: 64 << 10,
			MaxIdleConnsPerHost:    2,
			IdleConnTimeout:        90 * time.Second,
		},
		CheckRedirect: refuseRedirect,
	}
}

// refuseRedirect makes the client return a 3xx answer as it is, so do reports it as an
// error instead of following it.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// New returns a client for the dashboard at baseURL.
func New(baseURL string, httpClient *http.Client) *HTTPClient {
	return &HTTPClient{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: httpClient}
}

// Error is a non-2xx answer from the dashboard (redirects included: they are never followed).
type Error struct {
	Op         string // "GET" or "PUT"
	URL        string
	StatusCode int
	// Body is a short, sanitized excerpt of the response (see Sanitize): it may end up in a
	// condition or an event, and the response comes from a pod the tenant controls.
	Body string
}

func (e *Error) Error() string {
	body := strings.TrimSpace(e.Body)
	if body == "" {
		return fmt.Sprintf("%s %s: HTTP %d", e.Op, e.URL, e.StatusCode)
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Op, e.URL, e.StatusCode, body)
}

// IsBadRequest reports whether err is the dashboard rejecting the submitted config (HTTP
// 400): resubmitting the same config will fail again.
func IsBadRequest(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusBadRequest
}

// GetServeDetails implements Client.
func (c *HTTPClient) GetServeDetails(ctx context.Context) (*ServeDetails, error) {
	// api_type=declarative: only applications deployed through this API, as KubeRay asks.
	body, err := c.do(ctx, http.MethodGet, ApplicationsPath+"?api_type=declarative", nil)
	if err != nil {
		return nil, err
	}
	d, err := ParseServeDetails(body)
	if err != nil {
		return nil, fmt.Errorf("GET %s%s: %w", c.BaseURL, ApplicationsPath, err)
	}
	return d, nil
}

// DeployApplications implements Client.
func (c *HTTPClient) DeployApplications(ctx context.Context, config []byte) error {
	_, err := c.do(ctx, http.MethodPut, ApplicationsPath, config)
	return err
}

func (c *HTTPClient) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	status, data, err := c.exchange(ctx, method, path, body, MaxResponseBytes)
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		return nil, &Error{Op: method, URL: c.url(path), StatusCode: status, Body: Sanitize(string(data), maxErrorExcerpt)}
	}
	return data, nil
}

func (c *HTTPClient) url(path string) string { return strings.TrimRight(c.BaseURL, "/") + path }

// exchange sends one request and returns the answer's status and body, read within the
// timeout and refused beyond limit bytes. Redirects come back as they are (never followed).
func (c *HTTPClient) exchange(ctx context.Context, method, path string, body []byte, limit int64) (int, []byte, error) {
	resp, done, err := c.send(ctx, method, path, body)
	if err != nil {
		return 0, nil, err
	}
	defer done()
	url := c.url(path)
	if resp.ContentLength > limit {
		return 0, nil, fmt.Errorf("%s %s: the answer is %d bytes, more than the %d raygate reads", method, url, resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: reading the answer failed: %w", method, url, err)
	}
	if int64(len(data)) > limit {
		return 0, nil, fmt.Errorf("%s %s: the answer is longer than the %d bytes raygate reads", method, url, limit)
	}
	return resp.StatusCode, data, nil
}

// send sends one request under the client's timeout, which keeps running while the caller
// reads the answer; done closes the answer and ends the timeout.
func (c *HTTPClient) send(ctx context.Context, method, path string, body []byte) (resp *http.Response, done func(), err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	url := c.url(path)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	req.Header.Set("Accept", "application/json")
	c.Token.authorize(req)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := defaultHTTP
	if c.HTTP != nil {
		// Whatever client the caller gave, a redirect is never followed.
		own := *c.HTTP
		own.CheckRedirect = refuseRedirect
		hc = &own
	}
	resp, err = hc.Do(req)
	if err != nil {
		cancel()
		// The url.Error already names the method and URL.
		return nil, nil, fmt.Errorf("the Ray dashboard is unreachable: %w", err)
	}
	return resp, func() { _ = resp.Body.Close(); cancel() }, nil
}
