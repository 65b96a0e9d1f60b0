package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// deadline. The dashboard answers in milliseconds when healthy; a hung head must not hold a
// reconcile worker for long.
const DefaultTimeout = 10 * time.Second

// maxErrorBody is how much of an error response is kept in the error text.
const maxErrorBody = 512

// maxResponseBody caps what is read from the dashboard; a Serve status is far smaller.
const maxResponseBody = 16 << 20

// HTTPClient is the Client over HTTP.
type HTTPClient struct {
	// BaseURL is the dashboard's address, e.g. http://c-head-svc.ns.svc.cluster.local:8265.
	BaseURL string
	// HTTP is the underlying client (nil: a shared client without its own timeout).
	HTTP *http.Client
	// Timeout bounds every request (0: DefaultTimeout).
	Timeout time.Duration
}

var defaultHTTP = &http.Client{Transport: http.DefaultTransport}

// New returns a client for the dashboard at baseURL.
func New(baseURL string, httpClient *http.Client) *HTTPClient {
	return &HTTPClient{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: httpClient}
}

// Error is a non-2xx answer from the dashboard.
type Error struct {
	Op         string // "GET" or "PUT"
	URL        string
	StatusCode int
	Body       string // at most maxErrorBody bytes of the response
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
	var d ServeDetails
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("GET %s%s: decoding Serve details: %w (body: %s)", c.BaseURL, ApplicationsPath, err, excerpt(body))
	}
	if d.Applications == nil {
		d.Applications = map[string]Application{}
	}
	return &d, nil
}

// DeployApplications implements Client.
func (c *HTTPClient) DeployApplications(ctx context.Context, config []byte) error {
	_, err := c.do(ctx, http.MethodPut, ApplicationsPath, config)
	return err
}

func (c *HTTPClient) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := strings.TrimRight(c.BaseURL, "/") + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		// The url.Error already names the method and URL.
		return nil, fmt.Errorf("the Ray dashboard is unreachable: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading response: %w", method, url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &Error{Op: method, URL: url, StatusCode: resp.StatusCode, Body: excerpt(data)}
	}
	return data, nil
}

func excerpt(b []byte) string {
	if len(b) <= maxErrorBody {
		return string(b)
	}
	return string(b[:maxErrorBody]) + "…"
}
