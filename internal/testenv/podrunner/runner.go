// Package podrunner plays the scheduler and the kubelet for the pods of one Deployment: it
// binds each pod to a Node, starts the pod's container as a real process (the binary the
// test built stands for the image), projects its Secret volumes, gives it a token of the
// pod's ServiceAccount, marks the pod Ready from its readiness probe and, when the pod is
// deleted, runs the preStop sleep, sends SIGTERM, honours the grace period and removes
// the pod. With kube-controller-manager's Deployment, ReplicaSet and EndpointSlice
// controllers, a rollout is then real: the pods come and go as they would on a cluster.
//
// Every pod shares this machine's network, so each gets its own loopback address
// (addresses given as ":port" in its args are bound there). The API server refuses loopback
// addresses in EndpointSlices, so the IP the pod reports is a private-range address that
// nothing ever dials: Loopback maps it back to the address the process listens on.
package podrunner

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure a Runner.
type Options struct {
	Client    client.Client // admin client: binds pods, writes their status, requests tokens
	Config    *rest.Config  // the API server the processes are given (host and CA only)
	Namespace string
	Selector  labels.Selector
	Binary    string // run for every pod in place of its image
	Dir       string // per-pod directories: kubeconfigs, projected volumes
	LogDir    string // <pod>.log, each process's output (default: Dir)
	Node      string // the Node pods are bound to; created if missing
	// LoopbackIPs holds the addresses processes listen on; APIIPs the addresses pods report
	// (never dialled). Both are handed out in order.
	LoopbackIPs netip.Prefix
	APIIPs      netip.Prefix
	// SecretPeriod is how often Secret volumes are re-read (the kubelet's sync period).
	SecretPeriod time.Duration
}

// Event is one thing that happened to a pod, for timelines.
type Event struct {
	At   time.Time
	Pod  string
	What string
}

// Runner runs the selected pods until Stop.
type Runner struct {
	o      Options
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	next   uint32
	pods   map[types.UID]*podProc
	loop   map[string]string // API IP → loopback IP
	events []Event
	wg     sync.WaitGroup
}

// Start creates the Node if needed and runs pods until Stop.
func Start(ctx context.Context, o Options) (*Runner, error) {
	if o.SecretPeriod == 0 {
		o.SecretPeriod = 5 * time.Second
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: o.Node}}
	if err := o.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		if err := o.Client.Create(ctx, node); err != nil {
			return nil, fmt.Errorf("creating node %s: %w", o.Node, err)
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "PodRunner", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if err := o.Client.Status().Update(ctx, node); err != nil {
			return nil, fmt.Errorf("marking node %s ready: %w", o.Node, err)
		}
	}
	if o.LogDir == "" {
		o.LogDir = o.Dir
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Runner{o: o, cancel: cancel, done: make(chan struct{}), pods: map[types.UID]*podProc{}, loop: map[string]string{}}
	go r.run(ctx)
	return r, nil
}

// Stop kills every process (as a node that dies would) and waits for the runner to exit.
func (r *Runner) Stop() {
	r.cancel()
	<-r.done
	r.wg.Wait()
}

// Loopback is the loopback address of the pod whose API IP is ip.
func (r *Runner) Loopback(ip string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.loop[ip]
	return l, ok
}

// Events lists what happened to pods so far, oldest first.
func (r *Runner) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Logs are the log files of every pod's process so far (pod name → path).
func (r *Runner) Logs() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for _, p := range r.pods {
		out[p.name] = p.logPath
	}
	return out
}

func (r *Runner) event(pod, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{At: time.Now(), Pod: pod, What: fmt.Sprintf(format, args...)})
}

// addresses hands out the next pair of addresses.
func (r *Runner) addresses() (api, loop string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	a, err := nth(r.o.APIIPs, r.next)
	if err != nil {
		return "", "", err
	}
	l, err := nth(r.o.LoopbackIPs, r.next)
	if err != nil {
		return "", "", err
	}
	r.loop[a] = l
	return a, l, nil
}

// nth is the n-th address of p (n from 1), skipping none: the pools are far larger than
// the pods a suite runs.
func nth(p netip.Prefix, n uint32) (string, error) {
	b := p.Masked().Addr().As4()
	v := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) + n
	a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	if !p.Contains(a) {
		return "", fmt.Errorf("pod runner: %s exhausted", p)
	}
	return a.String(), nil
}

// run lists the selected pods and starts a podProc for each new one.
func (r *Runner) run(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		var pods corev1.PodList
		if err := r.o.Client.List(ctx, &pods, client.InNamespace(r.o.Namespace), client.MatchingLabelsSelector{Selector: r.o.Selector}); err == nil {
			for i := range pods.Items {
				pod := &pods.Items[i]
				r.mu.Lock()
				_, known := r.pods[pod.UID]
				if !known && pod.DeletionTimestamp == nil {
					p := &podProc{r: r, name: pod.Name, uid: pod.UID, dir: filepath.Join(r.o.Dir, pod.Name)}
					r.pods[pod.UID] = p
					r.wg.Add(1)
					go func() { defer r.wg.Done(); p.run(ctx) }()
				}
				r.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
