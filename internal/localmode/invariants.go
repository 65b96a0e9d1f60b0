package localmode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/raygate/raygate/internal/testenv/invariants"
)

// Namespace is where the samples go and where the invariant checker watches.
const Namespace = "default"

const violationsFile = "violations.jsonl"

// ViolationsPath is the file the environment running in dir appends every invariant
// violation to, one JSON object per line, as the checker records it. Another process (make
// demo attached to make run) reads it; the checker itself needs the simulated dashboards,
// which live in the environment's process.
func ViolationsPath(dir string) string { return filepath.Join(dir, violationsFile) }

// recorder copies the checker's violations to the file (and to a callback) as they appear.
type recorder struct {
	checker *invariants.Checker
	path    string
	notify  func(invariants.Violation)
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	written int
}

func startRecorder(ctx context.Context, e *Env, notify func(invariants.Violation)) (*recorder, error) {
	c, err := invariants.Start(ctx, e.Config, invariants.Options{Namespace: Namespace, Dashboards: e.Dashboards})
	if err != nil {
		return nil, fmt.Errorf("starting the invariant checker: %w", err)
	}
	r := &recorder{checker: c, path: ViolationsPath(e.Dir), notify: notify, done: make(chan struct{})}
	if err := os.WriteFile(r.path, nil, 0o600); err != nil {
		c.Stop()
		return nil, err
	}
	var rctx context.Context
	rctx, r.cancel = context.WithCancel(context.Background())
	go func() {
		defer close(r.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				r.flush()
			}
		}
	}()
	return r, nil
}

// flush appends the violations recorded since the last flush.
func (r *recorder) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.checker.Violations()
	if len(all) <= r.written {
		return
	}
	f, err := os.OpenFile(r.path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	for _, v := range all[r.written:] {
		b, _ := json.Marshal(v)
		_, _ = f.Write(append(b, '\n'))
		if r.notify != nil {
			r.notify(v)
		}
	}
	r.written = len(all)
}

func (r *recorder) stop() {
	r.cancel()
	<-r.done
	r.checker.Stop()
	r.flush()
}

// ViolationsOffset is the current end of the violations file, to read only what follows.
func (s *Session) ViolationsOffset() int64 {
	st, err := os.Stat(ViolationsPath(s.Dir))
	if err != nil {
		return 0
	}
	return st.Size()
}

// ViolationsSince reads the violations appended after offset.
func (s *Session) ViolationsSince(offset int64) ([]invariants.Violation, error) {
	f, err := os.Open(ViolationsPath(s.Dir))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	var out []invariants.Violation
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v invariants.Violation
		if err := json.Unmarshal(line, &v); err != nil {
			return out, fmt.Errorf("%s: %w", ViolationsPath(s.Dir), err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}
