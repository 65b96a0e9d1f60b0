package certmanager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Projection is one write of a Secret's keys into the directory.
type Projection struct {
	At      time.Time
	TLSCert []byte
}

// SecretSync plays the kubelet for a Secret volume: it reads the Secret every Period and,
// when its data changed, projects tls.crt, tls.key and ca.crt into Dir the way the kubelet
// does (a new timestamped directory, then an atomic swap of the ..data symlink the files
// point through), so a reader never sees a certificate with the other one's key.
type SecretSync struct {
	Client client.Client
	Secret types.NamespacedName
	Dir    string
	Period time.Duration

	mu      sync.Mutex
	history []Projection
}

// Run syncs until ctx ends.
func (s *SecretSync) Run(ctx context.Context) {
	tick := time.NewTicker(s.Period)
	defer tick.Stop()
	var last []byte
	for {
		var sec corev1.Secret
		err := s.Client.Get(ctx, s.Secret, &sec)
		if err == nil && len(sec.Data[corev1.TLSCertKey]) > 0 {
			cur := bytes.Join([][]byte{sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey], sec.Data["ca.crt"]}, []byte{0})
			if !bytes.Equal(cur, last) {
				if err := project(s.Dir, sec.Data); err == nil {
					last = cur
					s.mu.Lock()
					s.history = append(s.history, Projection{At: time.Now(), TLSCert: sec.Data[corev1.TLSCertKey]})
					s.mu.Unlock()
				}
			}
		} else if err != nil && !apierrors.IsNotFound(err) && ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// History lists the projections so far, oldest first.
func (s *SecretSync) History() []Projection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Projection(nil), s.history...)
}

// project writes data's TLS keys into dir through a ..data symlink swapped atomically.
func project(dir string, data map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ts, err := os.MkdirTemp(dir, "..data-")
	if err != nil {
		return err
	}
	keys := []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, "ca.crt"}
	for _, k := range keys {
		if err := os.WriteFile(filepath.Join(ts, k), data[k], 0o600); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for _, k := range keys {
		link := filepath.Join(dir, k)
		if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", k), link); err != nil {
				return fmt.Errorf("linking %s: %w", k, err)
			}
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}
