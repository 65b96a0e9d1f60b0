package certmanager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raygate/raygate/internal/testenv/tools"
)

// loadResult counts what the continuous admission client saw.
type loadResult struct {
	Requests int      // admission requests sent (creates, dry-runs, updates)
	X509     int      // failed because the API server did not trust the served certificate
	Refused  int      // any other failure to get the webhook's answer (connection, timeout)
	Wrong    int      // answered, but not as expected (an invalid object admitted, a valid one denied)
	Samples  []string // first few failure messages
}

func (r loadResult) String() string {
	return fmt.Sprintf("%d admission requests, %d x509 failures, %d refused, %d wrong answers", r.Requests, r.X509, r.Refused, r.Wrong)
}

// load sends admission requests one after another until stop is closed, at most max
// requests: a server-side dry-run create of a valid RayCluster, an update of a stored one
// (mutating and validating webhooks), and a dry-run create of the invalid RayService
// sample, which the webhook must deny.
type load struct {
	c       client.Client
	ns      string
	valid   *unstructured.Unstructured
	invalid *unstructured.Unstructured
	// storedName is the RayCluster the updates patch (created first; one per run).
	storedName string

	mu  sync.Mutex
	res loadResult
}

func readSample(name string) *unstructured.Unstructured {
	b, err := os.ReadFile(filepath.Join(tools.RepoRoot(), "config", "samples", name))
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096).Decode(&u.Object); err != nil {
		panic(err)
	}
	return u
}

func newLoad(c client.Client, ns string) *load {
	l := &load{c: c, ns: ns, valid: readSample("ray_v1_raycluster.yaml"), invalid: readSample("rayservice_invalid.yaml"), storedName: "load-stored"}
	l.valid.SetNamespace(ns)
	l.invalid.SetNamespace(ns)
	return l
}

func (l *load) record(err error, wantDenied bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.res.Requests++
	if err == nil {
		if wantDenied {
			l.res.Wrong++
		}
		return
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "x509") || strings.Contains(msg, "certificate"):
		l.res.X509++
	case strings.Contains(msg, "failed calling webhook") || strings.Contains(msg, "context deadline") || strings.Contains(msg, "connection"):
		l.res.Refused++
	case wantDenied && apierrors.IsInvalid(err) && strings.Contains(msg, "stepSizePercent"):
		return
	default:
		l.res.Wrong++
	}
	if len(l.res.Samples) < 5 {
		l.res.Samples = append(l.res.Samples, time.Now().UTC().Format("15:04:05.000")+" "+msg)
	}
}

// run sends requests until stop closes or max requests were sent; it returns the counts.
func (l *load) run(ctx context.Context, stop <-chan struct{}, maxRequests int) loadResult {
	stored := l.valid.DeepCopy()
	stored.SetName(l.storedName)
	l.record(l.c.Create(ctx, stored), false)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return l.result()
		case <-ctx.Done():
			return l.result()
		default:
		}
		if l.result().Requests >= maxRequests {
			return l.result()
		}
		switch i % 3 {
		case 0:
			obj := l.valid.DeepCopy()
			obj.SetName(fmt.Sprintf("load-dry-%d", i))
			l.record(l.c.Create(ctx, obj, client.DryRunAll), false)
		case 1:
			patch := client.MergeFrom(stored.DeepCopy())
			stored.SetLabels(map[string]string{"load": fmt.Sprint(i)})
			l.record(l.c.Patch(ctx, stored, patch), false)
		default:
			obj := l.invalid.DeepCopy()
			obj.SetName(fmt.Sprintf("load-invalid-%d", i))
			l.record(l.c.Create(ctx, obj, client.DryRunAll), true)
		}
	}
}

func (l *load) result() loadResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.res
	r.Samples = append([]string(nil), l.res.Samples...)
	return r
}
