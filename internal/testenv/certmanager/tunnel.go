package certmanager

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Tunnel is the API server's way to the webhook Service: an HTTP CONNECT proxy on a Unix
// socket, configured as the API server's egress for the "cluster" network. The API server
// resolves a webhook Service to its ClusterIP and asks the tunnel for it; the tunnel, like
// kube-proxy, sends the connection to one of the ready backends, round-robin. Backends are
// 127.0.0.1 ports set by the test; with none, or for any other port than Port, the
// CONNECT is refused, so nothing ever leaves loopback.
type Tunnel struct {
	// Port is the only Service port the tunnel forwards (the webhook Service's 443).
	Port     string
	socket   string
	listener net.Listener

	mu       sync.Mutex
	backends []string
	next     int
	refused  atomic.Int64
	served   atomic.Int64
}

// StartTunnel listens on a Unix socket in dir.
func StartTunnel(dir, port string) (*Tunnel, error) {
	socket := filepath.Join(dir, "egress.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	t := &Tunnel{Port: port, socket: socket, listener: l}
	go t.serve()
	return t, nil
}

// EgressConfig writes the API server's EgressSelectorConfiguration into dir and returns
// its path, for --egress-selector-config-file.
func (t *Tunnel) EgressConfig(dir string) (string, error) {
	path := filepath.Join(dir, "egress-selector.yaml")
	cfg := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, t.socket)
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}

// SetBackends replaces the ready backends ("127.0.0.1:port"); new connections use them.
func (t *Tunnel) SetBackends(addrs ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.backends = append([]string(nil), addrs...)
}

// Counts reports how many CONNECTs were forwarded and how many were refused.
func (t *Tunnel) Counts() (served, refused int64) { return t.served.Load(), t.refused.Load() }

// Close stops accepting connections.
func (t *Tunnel) Close() error { return t.listener.Close() }

func (t *Tunnel) pick(hostport string) (string, bool) {
	_, port, err := net.SplitHostPort(hostport)
	if err != nil || port != t.Port {
		return "", false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.backends) == 0 {
		return "", false
	}
	b := t.backends[t.next%len(t.backends)]
	t.next++
	host, _, err := net.SplitHostPort(b)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		return "", false
	}
	return b, true
}

func (t *Tunnel) serve() {
	for {
		c, err := t.listener.Accept()
		if err != nil {
			return
		}
		go t.handle(c)
	}
}

func (t *Tunnel) handle(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		_ = c.Close()
		return
	}
	backend, ok := t.pick(req.Host)
	var up net.Conn
	if ok {
		up, err = net.Dial("tcp", backend)
		ok = err == nil
	}
	if !ok {
		t.refused.Add(1)
		_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\n\r\n")
		_ = c.Close()
		return
	}
	t.served.Add(1)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = c.Close()
		_ = up.Close()
		return
	}
	go func() {
		_, _ = io.Copy(up, br)
		_ = up.Close()
	}()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}
