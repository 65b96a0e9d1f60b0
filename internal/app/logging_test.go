package app

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// bufferLogger is NewLogger's core writing JSON to a buffer, deferred or not.
func bufferLogger(buf *bytes.Buffer, deferred bool) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	core := zapcore.NewCore(enc, zapcore.AddSync(buf), zapcore.InfoLevel)
	if deferred {
		core = deferredFields{Core: core, base: core}
	}
	return zap.New(core)
}

// Fields given in a chain of WithValues are all written, in order, with the entry that
// finally comes; a sibling logger keeps only its own.
func TestDeferredFieldsAreWrittenWithTheEntry(t *testing.T) {
	var buf bytes.Buffer
	log := zapr.NewLogger(bufferLogger(&buf, true))
	parent := log.WithValues("controller", "raycluster")
	child := parent.WithValues("RayCluster", "ns/a", "reconcileID", "1").WithValues("phase", "apply")
	sibling := parent.WithValues("RayCluster", "ns/b")
	child.V(1).Info("not written: below the level")
	child.Info("applied", "pods", 3)
	sibling.Info("read")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("wrote %d lines, want 2:\n%s", len(lines), buf.String())
	}
	for i, want := range []map[string]any{
		{"msg": "applied", "controller": "raycluster", "RayCluster": "ns/a", "reconcileID": "1", "phase": "apply", "pods": float64(3)},
		{"msg": "read", "controller": "raycluster", "RayCluster": "ns/b"},
	} {
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%s)", i, k, got[k], v, lines[i])
			}
		}
		if i == 1 && (got["reconcileID"] != nil || got["phase"] != nil) {
			t.Errorf("the sibling carries its cousin's fields: %s", lines[i])
		}
	}
	if !strings.Contains(lines[0], `"controller":"raycluster","RayCluster":"ns/a","reconcileID":"1","phase":"apply"`) {
		t.Errorf("fields out of order: %s", lines[0])
	}
}

// A logger that never writes costs far less than one whose fields are encoded at once.
func TestDeferredFieldsCostLessWhenNothingIsWritten(t *testing.T) {
	allocated := func(deferred bool) uint64 {
		var buf bytes.Buffer
		log := zapr.NewLogger(bufferLogger(&buf, deferred)).WithValues("controller", "raycluster")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 1000 {
			l := log.WithValues("RayCluster", "ns/a", "reconcileID", "5f2c4a7e-1b9d-4c3e-8f6a-2d7b9e0c1a34")
			l.V(1).Info("skipped")
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	eager, lazy := allocated(false), allocated(true)
	if lazy*3 > eager*2 {
		t.Errorf("1,000 unwritten loggers allocated %d bytes deferred, %d eager: want under two thirds", lazy, eager)
	}
}
