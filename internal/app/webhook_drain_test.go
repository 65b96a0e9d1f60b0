package app

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// writeServingCert writes a self-signed certificate for 127.0.0.1 into dir.
func writeServingCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "drain-test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// startDraining runs a draining webhook server on loopback with one hook at /hook and
// returns its URL, a client that keeps connections alive, the server, its stop function
// and the channel Start's result arrives on.
func startDraining(t *testing.T, drain time.Duration) (string, *http.Client, *drainingServer, context.CancelFunc, <-chan error) {
	t.Helper()
	dir := t.TempDir()
	writeServingCert(t, dir)
	port := freeLoopbackPort(t)
	srv := newDrainingServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}, drain)
	srv.Register("/hook", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(cancel)

	deadline := time.Now().Add(20 * time.Second)
	for srv.StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("webhook server not started: %v", srv.StartedChecker()(nil))
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a test server with a throwaway certificate
	}}
	return "https://127.0.0.1:" + strconv.Itoa(port) + "/hook", c, srv, cancel, done
}

func post(t *testing.T, c *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader("{}")) //nolint:noctx // bounded by the client's timeout
	if err != nil {
		t.Fatalf("POST during drain: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return resp
}

func TestDrainingServerAnswersUnreadyAndClosesConnectionsBeforeShutdown(t *testing.T) {
	const drain = 1500 * time.Millisecond
	url, c, srv, stop, done := startDraining(t, drain)

	if resp := post(t, c, url); resp.Close {
		t.Fatal("before the stop signal, answers must keep the connection alive")
	}
	stopped := time.Now()
	stop()
	// The readiness check turns false at once, so the pod leaves the Service's endpoints.
	deadline := time.Now().Add(time.Second)
	for !errors.Is(srv.StartedChecker()(nil), errDraining) {
		if time.Now().After(deadline) {
			t.Fatalf("readiness during the drain: %v, want %v", srv.StartedChecker()(nil), errDraining)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Still answering, each answer telling the client to drop the connection: the API
	// server then dials again instead of reusing a connection that shutdown would close.
	for range 3 {
		resp := post(t, c, url)
		// Go's client reports the answer's "Connection: close" as resp.Close and drops the
		// connection from its pool, as the API server's client does.
		if !resp.Close {
			t.Fatal("during the drain an answer must close its connection (Connection: close)")
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Start returned %v after %s, before the %s drain", err, time.Since(stopped), drain)
	case <-time.After(drain - time.Since(stopped) - 200*time.Millisecond):
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(drain + 20*time.Second):
		t.Fatal("the server did not shut down after the drain")
	}
	if _, err := c.Post(url, "application/json", strings.NewReader("{}")); err == nil { //nolint:noctx,bodyclose // must fail
		t.Fatal("the server still answers after shutdown")
	}
}

func TestDrainingServerWithoutDrainStopsAtOnce(t *testing.T) {
	url, c, srv, stop, done := startDraining(t, 0)
	post(t, c, url)
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("without a drain the server must stop at once")
	}
	if srv.draining.Load() {
		t.Fatal("no drain configured, yet the server drained")
	}
}

// The API server's webhook client (client-go's transport, with net/http's defaults) drops an
// idle connection after its IdleConnTimeout; the server must keep it open longer, so that it
// never closes a connection the client may be sending an admission request on.
func TestWebhookServerOutlastsTheAPIServersIdleConnections(t *testing.T) {
	client := utilnet.SetTransportDefaults(&http.Transport{})
	if client.IdleConnTimeout <= 0 {
		t.Fatalf("client-go's transport keeps idle connections forever (%v): revisit webhookIdleTimeout", client.IdleConnTimeout)
	}
	if margin := webhookIdleTimeout - client.IdleConnTimeout; margin < 30*time.Second {
		t.Fatalf("the server closes idle connections after %v, the API server's client after %v: the server must wait at least 30 s longer", webhookIdleTimeout, client.IdleConnTimeout)
	}
	if srv := newDrainingServer(webhook.Options{}, 0); srv.idleTimeout != webhookIdleTimeout {
		t.Fatalf("a new server's idle timeout is %v, want %v", srv.idleTimeout, webhookIdleTimeout)
	}
}

// The server applies its idle timeout: a kept-alive connection serves a second request after
// a pause shorter than the timeout, and is closed by the server after a longer one.
func TestWebhookServerIdleTimeout(t *testing.T) {
	dir := t.TempDir()
	writeServingCert(t, dir)
	port := freeLoopbackPort(t)
	srv := newDrainingServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}, 0)
	srv.idleTimeout = 600 * time.Millisecond
	srv.Register("/hook", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Start(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for srv.StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("webhook server not started: %v", srv.StartedChecker()(nil))
		}
		time.Sleep(20 * time.Millisecond)
	}

	conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // a test server with a throwaway certificate
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	r := bufio.NewReader(conn)
	roundTrip := func() error {
		if _, err := io.WriteString(conn, "POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	if err := roundTrip(); err != nil {
		t.Fatalf("first request: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := roundTrip(); err != nil {
		t.Fatalf("a request after 200 ms idle (timeout 600 ms) on the kept-alive connection: %v", err)
	}
	time.Sleep(1500 * time.Millisecond)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); err == nil {
		t.Fatalf("after 1.5 s idle (timeout 600 ms) the server kept the connection open (read %d bytes)", n)
	} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("after 1.5 s idle (timeout 600 ms) the server had not closed the connection")
	}
}
