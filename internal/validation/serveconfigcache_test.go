package validation

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/sharedtable"
)

// cacheTestConfigs are serve configs with every kind of verdict: valid, not YAML, wrong
// shapes, duplicate names and routes, missing fields, over the bounds.
var cacheTestConfigs = []string{
	"",
	"proxy_location: EveryNode\n",
	"applications:\n  - name: a\n    import_path: m:app\n    route_prefix: /a\n  - name: b\n    import_path: m:b\n    route_prefix: /b\n",
	"applications:\n  - name: a\n   import_path: [\n",
	"- name: a\n",
	"applications: fruit\n",
	"applications:\n  - fruit\n",
	"applications:\n  - route_prefix: /a\n  - name: ''\n    import_path: ' '\n    route_prefix: /b\n  - {name: null, import_path: m:c, route_prefix: /c}\n",
	"applications:\n  - {import_path: m:a, route_prefix: /a}\n  - {import_path: m:b, route_prefix: /b}\n",
	"applications:\n  - {name: a, import_path: m:a, route_prefix: x}\n  - {name: a, import_path: 3, route_prefix: x}\n",
	"applications:\n  - {name: a, import_path: m:a}\n  - {name: b, import_path: m:b}\n",
	"applications: [" + strings.Repeat("0,", MaxServeApplications) + "0]\n",
	"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
	strings.Repeat("x", MaxServeConfigBytes+1),
}

func derefErrors(errs field.ErrorList) []field.Error {
	out := make([]field.Error, 0, len(errs))
	for _, e := range errs {
		out = append(out, *e)
	}
	return out
}

// A verdict from the cache is the one a fresh parse gives, error for error, and a caller
// changing what it got does not change what the next caller gets.
func TestServeConfigCacheSameVerdict(t *testing.T) {
	for i, config := range cacheTestConfigs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			fresh := derefErrors(validateServeConfig(config, field.NewPath("spec", "serveConfigV2")))
			first := serveConfigErrors("team-a", config) // fills the cache (or was filled by another test)
			second := serveConfigErrors("team-a", config)
			if !reflect.DeepEqual(fresh, derefErrors(first)) || !reflect.DeepEqual(fresh, derefErrors(second)) {
				t.Fatalf("verdicts differ:\nfresh  %v\nfirst  %v\nsecond %v", fresh, derefErrors(first), derefErrors(second))
			}
			for _, e := range second {
				e.Detail, e.Field = "changed", "changed"
			}
			if third := serveConfigErrors("team-a", config); !reflect.DeepEqual(fresh, derefErrors(third)) {
				t.Fatalf("a caller's change leaked into the cache: %v", derefErrors(third))
			}
		})
	}
}

// Validating the same RayService twice (the second time from the cache) gives the same
// errors and warnings, paths and texts included.
func TestServeConfigCacheSameObjectVerdict(t *testing.T) {
	for i, config := range cacheTestConfigs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			svc := service(func(s *rayv1.RayService) { s.Spec.ServeConfigV2 = config })
			// A config no other test used, so the first call parses for sure.
			svcFresh := svc.DeepCopy()
			svcFresh.Spec.ServeConfigV2 += fmt.Sprintf("\n# %s %d\n", t.Name(), i)
			if len(config) > MaxServeConfigBytes {
				svcFresh.Spec.ServeConfigV2 = config
			}
			for _, s := range []*rayv1.RayService{svc, svcFresh} {
				errs1, warn1 := Validator{}.RayService(s)
				errs2, warn2 := Validator{}.RayService(s)
				if !reflect.DeepEqual(derefErrors(errs1), derefErrors(errs2)) || !reflect.DeepEqual(warn1, warn2) {
					t.Fatalf("second validation differs:\n%v %q\n%v %q", derefErrors(errs1), warn1, derefErrors(errs2), warn2)
				}
			}
		})
	}
}

// However many distinct configs are validated, the cache holds at most its bound, and
// recently read verdicts survive.
func TestServeConfigCacheBounded(t *testing.T) {
	c := newServeConfigCache(8)
	hot := "applications:\n  - {name: hot, import_path: m:a}\n"
	hotKey := digestOf(hot)
	c.put(hotKey, validateServeConfig(hot, serveConfigPath))
	for i := range 200 {
		config := fmt.Sprintf("applications:\n  - {name: a%d, import_path: ''}\n", i)
		c.put(digestOf(config), validateServeConfig(config, serveConfigPath))
		if _, ok := c.get(hotKey); !ok {
			t.Fatalf("the verdict read before every insert was evicted after %d inserts", i+1)
		}
		if n := c.len(); n > 8 {
			t.Fatalf("cache holds %d verdicts, bound 8", n)
		}
	}

	// The process-wide cache, through the validator's entry point.
	for i := range 3 * serveConfigCacheEntries {
		serveConfigErrors("team-a", fmt.Sprintf("applications:\n  - {name: b%d, import_path: m:a}\n", i))
	}
	if n := serveConfigVerdicts.len(); n > serveConfigCacheEntries {
		t.Fatalf("cache holds %d verdicts, bound %d", n, serveConfigCacheEntries)
	}
}

// A verdict larger than the per-entry bound is not kept (bounded bytes).
func TestServeConfigCacheEntryBytes(t *testing.T) {
	c := newServeConfigCache(4)
	var apps strings.Builder
	apps.WriteString("applications:\n")
	for i := range MaxServeApplications {
		fmt.Fprintf(&apps, "  - {name: x, import_path: '', route_prefix: %s%d}\n", strings.Repeat("r", 64), i)
	}
	errs := validateServeConfig(apps.String(), serveConfigPath)
	if errorsSize(errs) <= serveConfigCacheEntryBytes {
		t.Fatalf("test config's verdict is only %d bytes", errorsSize(errs))
	}
	c.put(digestOf(apps.String()), errs)
	if c.len() != 0 {
		t.Fatal("an oversized verdict was kept")
	}
}

func TestServeConfigCacheConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				config := cacheTestConfigs[(g+i)%len(cacheTestConfigs)]
				want := derefErrors(validateServeConfig(config, serveConfigPath))
				if got := derefErrors(serveConfigErrors("team-a", config)); !reflect.DeepEqual(want, got) {
					t.Errorf("config %d: %v, want %v", (g+i)%len(cacheTestConfigs), got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func digestOf(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }

// Verdicts are kept per namespace: a config validated in one namespace is parsed again in
// another, so how fast a review is cannot tell a tenant what another namespace wrote.
func TestServeConfigCacheIsPerNamespace(t *testing.T) {
	config := "applications:\n  - {name: per-namespace, import_path: m:a}\n"
	serveConfigErrors("team-a", config)
	if _, ok := serveConfigVerdicts.get(sharedtable.KeyIn("team-a", []byte(config))); !ok {
		t.Fatal("the verdict was not kept for its namespace")
	}
	if _, ok := serveConfigVerdicts.get(sharedtable.KeyIn("team-b", []byte(config))); ok {
		t.Error("a verdict kept for one namespace is found for another")
	}
}
