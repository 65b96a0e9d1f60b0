package framework

import (
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Writes counts write requests by "verb kind" (e.g. "create Pod", "update RayCluster/status")
// or, when counted at the HTTP level, "verb resource" (e.g. "create pods",
// "update rayclusters/status", "create events"), overall and per namespace. Safe for
// concurrent use.
type Writes struct {
	mu     sync.Mutex
	counts map[string]int
	byNS   map[string]map[string]int
	// tracing keeps every write counted at the HTTP level, in order, in trace.
	tracing bool
	trace   []Write
}

// Write is one write request as the trace keeps it: enough to tell which object it changed
// and how, when a count must be explained.
type Write struct {
	At time.Time
	// Key is "verb resource", as counted; Path the request's URL path (the object's name
	// included); Body the start of the request body (patches and updates).
	Key, Path, Body string
}

// traceBodyLimit bounds the body kept per traced write: the start of a patch says what it
// changes.
const traceBodyLimit = 8 << 10

// Trace turns the ordered trace of writes on (it starts empty) or off.
func (w *Writes) Trace(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tracing, w.trace = on, nil
}

// Traced returns the writes traced so far, in order, in the given namespaces (all when
// none is given).
func (w *Writes) Traced(namespaces ...string) []Write {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Write
	for _, t := range w.trace {
		if len(namespaces) == 0 || slices.Contains(namespaces, namespaceOfPath(t.Path)) {
			out = append(out, t)
		}
	}
	return out
}

func (w *Writes) tracingOn() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tracing
}

func (w *Writes) record(t Write) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tracing {
		w.trace = append(w.trace, t)
	}
}

func (w *Writes) add(namespace, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts == nil {
		w.counts, w.byNS = map[string]int{}, map[string]map[string]int{}
	}
	w.counts[key]++
	if w.byNS[namespace] == nil {
		w.byNS[namespace] = map[string]int{}
	}
	w.byNS[namespace][key]++
}

// Snapshot returns a copy of the counts.
func (w *Writes) Snapshot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.counts)
}

// SnapshotIn returns the counts of writes to objects in the given namespaces only, so a
// spec's "zero writes" is not broken by another spec's objects (say, a cluster that keeps
// failing to create pods on purpose).
func (w *Writes) SnapshotIn(namespaces ...string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for _, ns := range namespaces {
		for k, n := range w.byNS[ns] {
			out[k] += n
		}
	}
	return out
}

// Namespaces lists the namespaces written to, sorted ("" stands for cluster-scoped
// objects).
func (w *Writes) Namespaces() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.byNS))
}

// Total is the number of writes counted.
func (w *Writes) Total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.counts {
		n += c
	}
	return n
}

// Reset sets every count to zero.
func (w *Writes) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counts, w.byNS = nil, nil
}

// CountingClient wraps a client.Client and counts its writes by verb and kind.
type CountingClient struct {
	client.Client
	Writes *Writes
}

// NewCountingClient wraps c.
func NewCountingClient(c client.Client) *CountingClient {
	return &CountingClient{Client: c, Writes: &Writes{}}
}

func (c *CountingClient) kind(obj runtime.Object) string {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return "Unknown"
	}
	return gvk.Kind
}

func (c *CountingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.Writes.add(obj.GetNamespace(), "create "+c.kind(obj))
	return c.Client.Create(ctx, obj, opts...)
}

func (c *CountingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.Writes.add(obj.GetNamespace(), "update "+c.kind(obj))
	return c.Client.Update(ctx, obj, opts...)
}

func (c *CountingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.Writes.add(obj.GetNamespace(), "patch "+c.kind(obj))
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *CountingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	c.Writes.add(applyNamespace(obj), "apply")
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *CountingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.Writes.add(obj.GetNamespace(), "delete "+c.kind(obj))
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *CountingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	c.Writes.add(obj.GetNamespace(), "deletecollection "+c.kind(obj))
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *CountingClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *CountingClient) SubResource(sub string) client.SubResourceClient {
	return &countingSubResource{SubResourceClient: c.Client.SubResource(sub), c: c, sub: sub}
}

type countingSubResource struct {
	client.SubResourceClient
	c   *CountingClient
	sub string
}

func (s *countingSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	s.c.Writes.add(obj.GetNamespace(), "create "+s.c.kind(obj)+"/"+s.sub)
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (s *countingSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.c.Writes.add(obj.GetNamespace(), "update "+s.c.kind(obj)+"/"+s.sub)
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *countingSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.c.Writes.add(obj.GetNamespace(), "patch "+s.c.kind(obj)+"/"+s.sub)
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (s *countingSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	s.c.Writes.add(applyNamespace(obj), "apply /"+s.sub)
	return s.SubResourceClient.Apply(ctx, obj, opts...)
}

// countingTransport counts every write request that goes through it, whoever sends it
// (controllers, event recorders, caches): the strictest "zero writes" measure.
type countingTransport struct {
	next   http.RoundTripper
	writes *Writes
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if verb := writeVerb(req); verb != "" && !dryRun(req) {
		key := verb + " " + resourceOf(req.URL.Path)
		t.writes.add(namespaceOfPath(req.URL.Path), key)
		if t.writes.tracingOn() {
			t.writes.record(Write{At: time.Now(), Key: key, Path: req.URL.Path, Body: bodyStart(req)})
		}
	}
	return t.next.RoundTrip(req)
}

// bodyStart is the start of a request's body, read from a copy (GetBody) so the request
// is sent unchanged; "" when the body cannot be copied.
func bodyStart(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	b, _ := io.ReadAll(io.LimitReader(body, traceBodyLimit))
	return string(b)
}

// dryRun reports whether a request is a dry run, which writes nothing (the validating
// webhooks' dry-run of the pods an object would get).
func dryRun(req *http.Request) bool {
	return req.URL.Query().Has("dryRun")
}

func writeVerb(req *http.Request) string {
	switch req.Method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// applyNamespace reads the namespace of a server-side apply configuration, when it has one.
func applyNamespace(obj runtime.ApplyConfiguration) string {
	if o, ok := obj.(interface{ GetNamespace() *string }); ok && o.GetNamespace() != nil {
		return *o.GetNamespace()
	}
	return ""
}

// namespaceOfPath extracts the namespace from an API path such as
// /api/v1/namespaces/ns/pods/name; "" for cluster-scoped paths (a namespace object itself
// counts as cluster-scoped).
func namespaceOfPath(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			return parts[i+1]
		}
	}
	return ""
}

// resourceOf extracts "resource" or "resource/subresource" from an API path such as
// /api/v1/namespaces/ns/pods/name/status or /apis/ray.io/v1/namespaces/ns/rayclusters.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) > 0 && parts[0] == "api":
		parts = parts[min(2, len(parts)):]
	case len(parts) > 0 && parts[0] == "apis":
		parts = parts[min(3, len(parts)):]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return path
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}
