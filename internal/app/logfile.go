package app

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// The log file keeps KubeRay's bounds: at most 500 MiB per file and 10 old files, so a
// chatty operator cannot fill the volume it writes to.
const (
	maxLogFileBytes   = 500 << 20
	maxLogFileBackups = 10
)

// rotatingFile is a log file that moves itself aside when the next write would take it past
// maxBytes: <path> becomes <path>.1, <path>.1 becomes <path>.2 and so on; the oldest beyond
// backups is removed.
type rotatingFile struct {
	mu       sync.Mutex
	path     string
	maxBytes int64
	backups  int
	f        *os.File
	size     int64
}

// openRotatingFile opens (appends to) path, creating its directory.
func openRotatingFile(path string, maxBytes int64, backups int) (*rotatingFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	r := &rotatingFile{path: path, maxBytes: maxBytes, backups: backups}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	r.f, r.size = f, st.Size()
	return nil
}

// Write implements io.Writer; an entry is never split between two files.
func (r *rotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	if r.size > 0 && r.size+int64(len(p)) > r.maxBytes {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *rotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return err
	}
	r.f = nil
	_ = os.Remove(r.backup(r.backups))
	for i := r.backups - 1; i >= 1; i-- {
		if err := os.Rename(r.backup(i), r.backup(i+1)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if r.backups > 0 {
		if err := os.Rename(r.path, r.backup(1)); err != nil {
			return err
		}
	} else if err := os.Remove(r.path); err != nil {
		return err
	}
	return r.open()
}

func (r *rotatingFile) backup(i int) string { return fmt.Sprintf("%s.%d", r.path, i) }

// Sync implements zapcore.WriteSyncer.
func (r *rotatingFile) Sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	return r.f.Sync()
}

// Close closes the file; later writes fail.
func (r *rotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
