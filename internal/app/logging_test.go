package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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

// --log-file writes every entry to the file as well, in its own format; standard error keeps
// its format.
func TestLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "operator.log")
	var stderr bytes.Buffer
	log, closer, err := newLogger(logSettings{level: "info", format: "json", file: path, fileFormat: "console"}, zapcore.AddSync(&stderr))
	if err != nil {
		t.Fatal(err)
	}
	log.WithValues("controller", "raycluster").Info("reconciled", "RayCluster", "ns/a")
	log.V(1).Info("not written")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(file), "reconciled") || !strings.Contains(string(file), `{"controller": "raycluster", "RayCluster": "ns/a"}`) || strings.Contains(string(file), "not written") {
		t.Errorf("file (console format):\n%s", file)
	}
	if !strings.Contains(stderr.String(), `"msg":"reconciled"`) || !strings.Contains(stderr.String(), `"controller":"raycluster"`) {
		t.Errorf("standard error (json):\n%s", stderr.String())
	}
}

// The log file moves aside when it would pass its size, keeping a bounded number of old files.
func TestRotatingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "op.log")
	f, err := openRotatingFile(path, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"aaaaaa\n", "bbbbbb\n", "cccccc\n", "dddddd\n"} {
		if _, err := f.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{path: "dddddd\n", path + ".1": "cccccc\n", path + ".2": "bbbbbb\n"} {
		if got, err := os.ReadFile(name); err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", filepath.Base(name), got, err, want)
		}
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("a third old file kept: %v", err)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("wrote to a closed file")
	}
}

// A verbosity (KubeRay's --zap-log-level=3) logs V(3) and below; --log-stacktrace-level adds
// stack traces from that level on.
func TestLogLevelsAndStackTraces(t *testing.T) {
	var buf bytes.Buffer
	log, closer, err := newLogger(logSettings{level: "2", format: "json", stacktrace: "info"}, zapcore.AddSync(&buf))
	if err != nil {
		t.Fatal(err)
	}
	log.V(2).Info("shown")
	log.V(3).Info("hidden")
	log.Info("traced")
	_ = closer.Close()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "shown") || strings.Contains(lines[0], `"stacktrace"`) ||
		!strings.Contains(lines[1], "traced") || !strings.Contains(lines[1], `"stacktrace"`) {
		t.Errorf("log:\n%s", buf.String())
	}
	if _, err := parseLevel("0"); err == nil {
		t.Error("verbosity 0 accepted; it is written info")
	}
}
