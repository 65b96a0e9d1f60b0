package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rayv1 "github.com/raygate/raygate/apis/ray/v1"
	"github.com/raygate/raygate/internal/testenv/cmdbuild"
	"github.com/raygate/raygate/internal/testenv/proc"
)

// buildOperator builds cmd/raygate into dir, as a user would run it.
func buildOperator(dir string) (string, error) {
	bin := filepath.Join(dir, "raygate")
	return bin, cmdbuild.Build(context.Background(), "raygate", bin, ginkgo.GinkgoWriter)
}

// operator is one raygate process.
type operator struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	log     string
	probe   string
	webhook string // host:port of its webhook server
	args    []string
	started time.Time
}

// leaderElection are the flags of replicas that elect a leader: a short lease so the
// takeover is quick, with a renew deadline well above the retry period (a leader on a
// loaded machine must not lose its Lease to one slow request).
var leaderElection = []string{
	"--leader-elect=true",
	"--leader-election-namespace=default",
	"--leader-elect-lease-duration=8s",
	"--leader-elect-renew-deadline=6s",
	"--leader-elect-retry-period=1s",
}

// startOperator starts cmd/raygate as name with the suite's flags plus extra, registers its
// webhook server with the balancer and waits for /readyz. With no --leader-elect in extra it
// runs without leader election, so a restart resumes at once.
func startOperator(ctx context.Context, name string, extra ...string) *operator {
	op := &operator{name: name}
	_, _, certDir := env.WebhookServing()
	port, err := proc.FreePort()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	probe, err := proc.FreePort()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	op.webhook = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	op.probe = net.JoinHostPort("127.0.0.1", strconv.Itoa(probe))
	op.args = []string{
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + op.probe,
		"--enable-webhooks=true",
		"--webhook-host=127.0.0.1",
		"--webhook-port=" + strconv.Itoa(port),
		"--webhook-cert-dir=" + certDir,
		"--operator-namespace=default",
		"--feature-gates=RayServiceIncrementalUpgrade=true",
		"--dashboard-url-template=" + front.URL() + "/{namespace}/{name}",
		"--log-format=json",
		// The suite's stop takes the replica off the balancer first and no spec sends
		// admission requests while one stops, so the drain would only add 2 s to every stop
		// (the kills, which the specs are about, never drain).
		"--webhook-shutdown-drain=0",
	}
	if !hasPrefix(extra, "--leader-elect") {
		op.args = append(op.args, "--leader-elect=false")
	}
	op.args = append(op.args, extra...)
	op.start(ctx)
	webhooks.Add(op.webhook)
	return op
}

func hasPrefix(args []string, prefix string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// start runs the binary (again) and waits until it is ready.
func (op *operator) start(ctx context.Context) {
	op.log = filepath.Join(logDir, fmt.Sprintf("%s-%d.log", op.name, time.Now().UnixNano()))
	f, err := os.Create(op.log)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	op.cmd = exec.Command(operatorBin, op.args...)
	op.cmd.Env = append(os.Environ(), "KUBECONFIG="+operatorKubeconfig)
	op.cmd.Stdout, op.cmd.Stderr = f, f
	op.started = time.Now()
	gomega.Expect(op.cmd.Start()).To(gomega.Succeed())
	op.done = make(chan struct{})
	go func() { _ = op.cmd.Wait(); _ = f.Close(); close(op.done) }()
	gomega.Eventually(func() error {
		select {
		case <-op.done:
			return gomega.StopTrying(fmt.Sprintf("%s exited before it was ready:\n%s", op.name, op.tail()))
		default:
		}
		resp, err := http.Get("http://" + op.probe + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	}, 60*time.Second, 50*time.Millisecond).Should(gomega.Succeed(), "%s ready", op.name)
}

// kill sends SIGKILL and waits for the exit: no cleanup, no Lease release.
func (op *operator) kill() {
	gomega.Expect(op.cmd.Process.Signal(syscall.SIGKILL)).To(gomega.Succeed())
	<-op.done
}

// restart kills the process and starts it again; it returns how long the new process took
// to be ready.
func (op *operator) restart(ctx context.Context) time.Duration {
	op.kill()
	op.start(ctx)
	return time.Since(op.started)
}

// stop ends the process with SIGTERM (SIGKILL after 20 s) and unregisters its webhook.
func (op *operator) stop() {
	webhooks.Remove(op.webhook)
	select {
	case <-op.done:
		return
	default:
	}
	_ = op.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-op.done:
	case <-time.After(20 * time.Second):
		_ = op.cmd.Process.Kill()
		<-op.done
	}
}

// tail is the end of the process's log.
func (op *operator) tail() string {
	b, _ := os.ReadFile(op.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// balancer stands in for the webhook Service: it accepts TCP connections on the address the
// API server calls and forwards each, bytes only (TLS ends at the replica), to the next
// replica that accepts a connection, as a Service whose endpoints are the Ready replicas.
type balancer struct {
	l net.Listener

	mu       sync.Mutex
	backends []string
	next     int
	// open counts, per replica, the connections forwarded to it that are not closed yet.
	open map[string]int
	// Refused counts connections no replica accepted.
	Refused atomic.Int64
	// Broken counts connections whose replica went away while the API server held them.
	Broken atomic.Int64
	wg     sync.WaitGroup
}

func startBalancer(host string, port int) (*balancer, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	b := &balancer{l: l, open: map[string]int{}}
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

func (b *balancer) Add(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.backends {
		if a == addr {
			return
		}
	}
	b.backends = append(b.backends, addr)
}

func (b *balancer) Remove(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, a := range b.backends {
		if a == addr {
			b.backends = append(b.backends[:i], b.backends[i+1:]...)
			return
		}
	}
}

// OpenTo is how many connections forwarded to the replica at addr are still open.
func (b *balancer) OpenTo(addr string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open[addr]
}

func (b *balancer) Stop() {
	_ = b.l.Close()
	b.wg.Wait()
}

func (b *balancer) serve() {
	defer b.wg.Done()
	for {
		c, err := b.l.Accept()
		if err != nil {
			return
		}
		go b.forward(c)
	}
}

// candidates are the backends in round-robin order from the next one.
func (b *balancer) candidates() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.backends)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, b.backends[(b.next+i)%n])
	}
	if n > 0 {
		b.next = (b.next + 1) % n
	}
	return out
}

func (b *balancer) forward(c net.Conn) {
	defer c.Close()
	var up net.Conn
	var to string
	for _, addr := range b.candidates() {
		var err error
		if up, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			to = addr
			break
		}
	}
	if up == nil {
		b.Refused.Add(1)
		return
	}
	defer up.Close()
	b.mu.Lock()
	b.open[to]++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.open[to]--
		b.mu.Unlock()
	}()
	fromUp := make(chan error, 1)
	go func() {
		_, err := io.Copy(c, up)
		fromUp <- err
		_ = c.Close()
	}()
	_, _ = io.Copy(up, c)
	_ = up.Close()
	if err := <-fromUp; err != nil && !errors.Is(err, net.ErrClosed) {
		b.Broken.Add(1)
	}
}

// dashboardFront is the operator process's way to the simulated dashboards
// (--dashboard-url-template pointing at /<namespace>/<cluster>/...): it forwards each request
// to the dashboard port of the cluster's head pod, where the simulator listens while the pod
// runs, as a port-forwarding proxy would. A request finds the dashboard unreachable (its
// connection is dropped) while the cluster is "down" or has no running head pod. The binary's
// own resolver refuses loopback pod IPs, which only simulated pods have.
type dashboardFront struct {
	srv *http.Server
	l   net.Listener
	rt  http.RoundTripper

	mu   sync.Mutex
	down map[types.NamespacedName]bool
	// Dropped counts requests dropped because their dashboard was unreachable.
	Dropped atomic.Int64
	// held, while set, receives each Jobs API submission the simulator answered; the answer
	// is then kept from the operator until its connection closes (rayjob_test.go).
	held atomic.Pointer[chan types.NamespacedName]
}

// dashboardPort is the simulated head's dashboard port (Ray's default).
const dashboardPort = "8265"

func startFront() (*dashboardFront, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &dashboardFront{l: l, down: map[types.NamespacedName]bool{}, rt: &http.Transport{}}
	f.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(f.serve)}
	go func() { _ = f.srv.Serve(l) }()
	return f, nil
}

func (f *dashboardFront) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	if len(parts) < 3 {
		http.NotFound(w, r)
		return
	}
	c := types.NamespacedName{Namespace: parts[0], Name: parts[1]}
	ip := ""
	if !f.isDown(c) {
		ip = headIP(r.Context(), c)
	}
	if ip == "" {
		f.Dropped.Add(1)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		http.Error(w, "dashboard unreachable", http.StatusBadGateway)
		return
	}
	target := net.JoinHostPort(ip, dashboardPort)
	rp := &httputil.ReverseProxy{
		Transport: f.rt,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.URL.Path, pr.Out.URL.RawPath = "http", target, "/"+parts[2], ""
			pr.Out.Host = target
		},
	}
	if held := f.held.Load(); held != nil && isJobSubmission(r.Method, parts[2]) {
		rp.ModifyResponse = func(*http.Response) error {
			*held <- c
			<-r.Context().Done()
			return r.Context().Err()
		}
	}
	rp.ServeHTTP(w, r)
}

// headIP is the loopback IP of the cluster's running head pod ("" when there is none).
func headIP(ctx context.Context, c types.NamespacedName) string {
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels{rayv1.ClusterLabelKey: c.Name, rayv1.NodeTypeLabelKey: string(rayv1.HeadNode)}); err != nil {
		return ""
	}
	for _, p := range pods.Items {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err == nil && ip.IsLoopback() && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return ip.String()
		}
	}
	return ""
}

// isJobSubmission reports whether a request to a dashboard path (without its leading "/")
// submits a Ray job.
func isJobSubmission(method, path string) bool {
	return method == http.MethodPost && strings.TrimSuffix(path, "/") == "api/jobs"
}

// HoldJobSubmissions keeps every Jobs API submission's answer from the operator, announcing
// each on the channel returned, until ReleaseJobSubmissions.
func (f *dashboardFront) HoldJobSubmissions() <-chan types.NamespacedName {
	ch := make(chan types.NamespacedName, 16)
	f.held.Store(&ch)
	return ch
}

func (f *dashboardFront) ReleaseJobSubmissions() { f.held.Store(nil) }

func (f *dashboardFront) URL() string { return "http://" + f.l.Addr().String() }

func (f *dashboardFront) SetDown(c types.NamespacedName, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if down {
		f.down[c] = true
	} else {
		delete(f.down, c)
	}
}

func (f *dashboardFront) isDown(c types.NamespacedName) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down[c]
}

func (f *dashboardFront) Stop() { _ = f.srv.Close() }
