package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/kwokcluster"
	"github.com/raygate/raygate/internal/testenv/raysim"
)

// leaseWatch reads an operator's leader election Lease with the benchmark's client (not
// audited).
type leaseWatch struct {
	cl   client.Client
	name string
}

// holder is the Lease's holder identity, "" while nobody holds it (or before it exists).
func (l *leaseWatch) holder(ctx context.Context) (string, error) {
	var lease coordinationv1.Lease
	err := l.cl.Get(ctx, client.ObjectKey{Namespace: restartLeaseNamespace, Name: l.name}, &lease)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return leaseHolder(&lease), nil
}

// leaseHolder is the holder identity of a Lease, "" when it has none.
func leaseHolder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// newLeader reports whether holder is a leader other than old.
func newLeader(holder, old string) bool { return holder != "" && holder != old }

// waitHolder polls the Lease every 50 ms until it names a holder other than old ("" for
// anyone) and returns it.
func (l *leaseWatch) waitHolder(ctx context.Context, c *kwokcluster.Cluster, old string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		h, err := l.holder(ctx)
		if err == nil {
			if newLeader(h, old) {
				return h, nil
			}
			last = h
		}
		if err := c.Healthy(); err != nil {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the Lease %s/%s still names %q after %s (waiting for a holder other than %q)", restartLeaseNamespace, l.name, last, timeout, old)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// auditTail reads the operator's requests appended to the audit log since the last read.
type auditTail struct {
	path string
	off  int64
}

// next returns the requests of the whole lines appended since the last call.
func (t *auditTail) next() ([]request, error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	b = wholeLines(b)
	t.off += int64(len(b))
	return parseAudit(bytes.NewReader(b), operatorUser)
}

// skip moves past everything written so far.
func (t *auditTail) skip() {
	if st, err := os.Stat(t.path); err == nil {
		t.off = st.Size()
	}
}

// wholeLines is b up to and including its last newline: a line still being written is read
// next time.
func wholeLines(b []byte) []byte {
	return b[:bytes.LastIndexByte(b, '\n')+1]
}

// lastObjectWrite is the latest of since and the times of the writes in reqs that are not
// leader election's.
func lastObjectWrite(reqs []request, lease string, since time.Time) time.Time {
	for _, r := range reqs {
		if isWrite(r.Verb) && !isLeaseWrite(r, lease) && r.Time.After(since) {
			since = r.Time
		}
	}
	return since
}

// waitQuiet waits until the operator has written nothing but its Lease for quiet, and
// reports whether that happened within timeout (false: it kept writing; the caller goes on).
func (t *auditTail) waitQuiet(ctx context.Context, lease string, quiet, timeout time.Duration) (bool, error) {
	start := time.Now()
	last := start
	for {
		reqs, err := t.next()
		if err != nil {
			return false, err
		}
		last = lastObjectWrite(reqs, lease, last)
		if time.Since(last) >= quiet {
			return true, nil
		}
		if time.Since(start) > timeout {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// submissionLog records when the simulated dashboards accepted a serve config.
type submissionLog struct {
	mu sync.Mutex
	at []time.Time
}

func (l *submissionLog) add(types.NamespacedName, raysim.Submission) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, now)
}

// since counts the submissions at or after t.
func (l *submissionLog) since(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.at {
		if !at.Before(t) {
			n++
		}
	}
	return n
}

// waitClusterCount waits up to timeout until there are at most want RayClusters and
// returns how many there are beyond want.
func waitClusterCount(ctx context.Context, cl client.Client, want int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		var list rayv1.RayClusterList
		if err := cl.List(ctx, &list); err != nil {
			return 0, err
		}
		extra := len(list.Items) - want
		if extra <= 0 || time.Now().After(deadline) {
			return max(extra, 0), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
