package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Refusal is one request the API server's authorizer refused (HTTP 403), described as RBAC
// sees it.
type Refusal struct {
	At        time.Time
	Verb      string // get, list, watch, create, update, patch, delete, deletecollection
	Group     string // "" for the core group
	Resource  string // "pods", "rayclusters/status"
	Namespace string // "" for cluster-scoped requests
	Name      string
	Path      string // a non-resource request's URL path (Resource is then "")
	Message   string // the API server's
}

// Marker is the kubebuilder RBAC marker that would grant the refused request, or "" for a
// non-resource URL (no marker grants those).
func (r Refusal) Marker() string {
	if r.Resource == "" {
		return ""
	}
	return fmt.Sprintf("+kubebuilder:rbac:groups=%s,resources=%s,verbs=%s", markerGroup(r.Group), r.Resource, r.Verb)
}

func markerGroup(g string) string {
	if g == "" {
		return `""`
	}
	return g
}

func (r Refusal) String() string {
	return r.At.Format("15:04:05.000") + " " + r.what()
}

// what is the refused request and the API server's message.
func (r Refusal) what() string {
	what := r.Verb + " " + r.Path
	if r.Resource != "" {
		what = r.Verb + " " + groupResource(r.Group, r.Resource)
		if r.Name != "" {
			what += " " + r.Name
		}
		if r.Namespace != "" {
			what += " in namespace " + r.Namespace
		}
	}
	return what + ": " + r.Message
}

func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return group + "/" + resource
}

// RefusalReport explains refusals to whoever reads a failed spec: each refused request and
// the marker to add next to the code that sent it. "" without refusals.
func RefusalReport(who string, refusals []Refusal) string {
	if len(refusals) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the API server refused %d request(s) of %s: its RBAC misses a rule the code needs.\n", len(refusals), who)
	b.WriteString("Add the marker next to the code that sends the request, run `make manifests` and commit the generated roles.\n")
	// A refused request is retried with backoff: each is listed once, with how often.
	var order []string
	first, times := map[string]Refusal{}, map[string]int{}
	markers := sets.New[string]()
	for _, r := range refusals {
		k := r.what()
		if times[k] == 0 {
			order = append(order, k)
			first[k] = r
		}
		times[k]++
		if m := r.Marker(); m != "" {
			markers.Insert(m)
		}
	}
	for _, k := range order {
		if n := times[k]; n > 1 {
			fmt.Fprintf(&b, "  %s (%d times)\n", first[k], n)
		} else {
			fmt.Fprintf(&b, "  %s\n", first[k])
		}
	}
	for _, m := range sets.List(markers) {
		fmt.Fprintf(&b, "  missing: // %s\n", m)
	}
	return b.String()
}

// Refusals records the requests the API server refused with 403 Forbidden. Safe for
// concurrent use.
type Refusals struct {
	mu   sync.Mutex
	list []Refusal
}

func (r *Refusals) add(x Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, x)
}

// Snapshot returns the refusals recorded so far.
func (r *Refusals) Snapshot() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.list...)
}

// Drain returns the refusals recorded so far and forgets them.
func (r *Refusals) Drain() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.list
	r.list = nil
	return out
}

// maxStatusBody bounds what is read of a 403 answer to find its message.
const maxStatusBody = 64 << 10

// refusalTransport records every 403 answer that goes through it, whoever sent the request
// (controllers, caches, event recorders, webhooks, leader election).
type refusalTransport struct {
	next     http.RoundTripper
	refusals *Refusals
}

var requestInfos = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

func (t *refusalTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if r := refusalOf(req, body, time.Now()); byAuthorizer(r.Message) {
		t.refusals.add(r)
	}
	return resp, nil
}

// byAuthorizer tells the authorizer's 403 (`... is forbidden: User "u" cannot create
// resource ...`) from admission's (Pod Security, quotas, LimitRanges and policy webhooks
// answer 403 Forbidden too, which tests provoke on purpose).
func byAuthorizer(message string) bool {
	return strings.Contains(message, `forbidden: User "`) && strings.Contains(message, `" cannot `)
}

// statusDecoder reads the Status of an answer in JSON or protobuf (the manager asks for
// protobuf where the API server has it).
var statusDecoder = serializer.NewCodecFactory(clientgoscheme.Scheme).UniversalDeserializer()

// statusMessage is the message of the Status in body, or the body as text.
func statusMessage(body []byte) string {
	if obj, _, err := statusDecoder.Decode(body, nil, nil); err == nil {
		if st, ok := obj.(*metav1.Status); ok && st.Message != "" {
			return st.Message
		}
	}
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Message
	}
	return strings.ToValidUTF8(strings.TrimSpace(string(body)), "?")
}

// refusalOf describes a refused request the way the API server's authorizer saw it.
func refusalOf(req *http.Request, body []byte, at time.Time) Refusal {
	r := Refusal{At: at, Path: req.URL.Path, Verb: strings.ToLower(req.Method)}
	if info, err := requestInfos.NewRequestInfo(req); err == nil {
		r.Verb = info.Verb
		if info.IsResourceRequest {
			r.Group, r.Resource, r.Namespace, r.Name = info.APIGroup, info.Resource, info.Namespace, info.Name
			if info.Subresource != "" {
				r.Resource += "/" + info.Subresource
			}
		}
	}
	r.Message = statusMessage(body)
	return r
}
