// Package expectations remembers the pods a controller has just created or deleted until its
// informer cache shows the change. A reconcile that runs before the cache caught up would
// otherwise count the old pods and create or delete the same pods a second time.
//
// Expectations are kept per RayCluster group (a worker group, or HeadGroup): a group whose
// expectations are not satisfied is skipped until they are; other groups go on.
package expectations

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HeadGroup is the group key of a cluster's head pod. It is not a valid worker group name
// (DNS-1123 labels have no '~'), so it never collides with one.
const HeadGroup = "~head"

// DefaultTimeout is how long an expectation waits for the cache before it is dropped. It only
// matters when a watch event is lost (e.g. a pod created and deleted by someone else before
// the cache saw it); the next reconcile then trusts the cache again.
const DefaultTimeout = 2 * time.Minute

// Action is what the controller did to a pod.
type Action int

const (
	// Create: satisfied once the cache has the pod.
	Create Action = iota
	// Delete: satisfied once the cache no longer has the pod or shows it terminating.
	Delete
)

func (a Action) String() string {
	if a == Create {
		return "create"
	}
	return "delete"
}

type groupKey struct{ namespace, cluster, group string }

type item struct {
	action Action
	at     time.Time
}

// Scale holds scale expectations. The zero value is not usable; call New.
type Scale struct {
	mu      sync.Mutex
	groups  map[groupKey]map[string]item // pod name → expectation
	timeout time.Duration
	now     func() time.Time
}

// New returns an empty set of expectations that expire after timeout.
func New(timeout time.Duration) *Scale {
	return &Scale{groups: map[groupKey]map[string]item{}, timeout: timeout, now: time.Now}
}

// NewWithClock is New with an injected clock, for tests.
func NewWithClock(timeout time.Duration, now func() time.Time) *Scale {
	s := New(timeout)
	s.now = now
	return s
}

// Expect records that pod (in namespace) of the cluster's group was just created or deleted.
func (s *Scale) Expect(namespace, cluster, group, pod string, a Action) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := groupKey{namespace, cluster, group}
	if s.groups[k] == nil {
		s.groups[k] = map[string]item{}
	}
	s.groups[k][pod] = item{action: a, at: s.now()}
}

// IsSatisfied reports whether every expectation of the group is visible in cache (a reader
// backed by the informer cache). Satisfied and expired expectations are removed. An error
// reading the cache counts as not satisfied.
func (s *Scale) IsSatisfied(ctx context.Context, cache client.Reader, namespace, cluster, group string) (bool, error) {
	k := groupKey{namespace, cluster, group}
	s.mu.Lock()
	pending := make(map[string]item, len(s.groups[k]))
	for name, it := range s.groups[k] {
		pending[name] = it
	}
	s.mu.Unlock()

	satisfied := true
	var done []string
	for name, it := range pending {
		ok, err := observed(ctx, cache, namespace, name, it.action)
		if err != nil {
			return false, err
		}
		if ok || s.now().Sub(it.at) > s.timeout {
			done = append(done, name)
			continue
		}
		satisfied = false
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range done {
		// Only drop the entry we checked: a newer expectation for the same name stays.
		if cur, ok := s.groups[k][name]; ok && cur == pending[name] {
			delete(s.groups[k], name)
		}
	}
	if len(s.groups[k]) == 0 {
		delete(s.groups, k)
	}
	return satisfied, nil
}

func observed(ctx context.Context, cache client.Reader, namespace, name string, a Action) (bool, error) {
	pod := &corev1.Pod{}
	// Only existence and the deletion timestamp are read: no deep copy of the cached pod.
	err := cache.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pod, client.UnsafeDisableDeepCopy)
	switch {
	case apierrors.IsNotFound(err):
		return a == Delete, nil
	case err != nil:
		return false, err
	case a == Create:
		return true, nil
	default:
		return !pod.DeletionTimestamp.IsZero(), nil
	}
}

// Pending is the number of unresolved expectations of a group (for logs and tests).
func (s *Scale) Pending(namespace, cluster, group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.groups[groupKey{namespace, cluster, group}])
}

// IsClusterSatisfied is IsSatisfied for every group of the cluster at once; it guards
// actions on all pods of a cluster (suspend, Recreate).
func (s *Scale) IsClusterSatisfied(ctx context.Context, cache client.Reader, namespace, cluster string) (bool, error) {
	s.mu.Lock()
	var groups []string
	for k := range s.groups {
		if k.namespace == namespace && k.cluster == cluster {
			groups = append(groups, k.group)
		}
	}
	s.mu.Unlock()
	all := true
	for _, g := range groups {
		ok, err := s.IsSatisfied(ctx, cache, namespace, cluster, g)
		if err != nil {
			return false, err
		}
		all = all && ok
	}
	return all, nil
}

// Forget drops every expectation of a cluster once the cluster is gone.
func (s *Scale) Forget(namespace, cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.groups {
		if k.namespace == namespace && k.cluster == cluster {
			delete(s.groups, k)
		}
	}
}
