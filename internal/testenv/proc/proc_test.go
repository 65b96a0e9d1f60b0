package proc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestStopBySIGTERMIsNoError(t *testing.T) {
	p, err := Start("sleeper", exec.Command("sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

func TestWaitReadyReportsAnEarlyExit(t *testing.T) {
	p, err := Start("quitter", exec.Command("false"))
	if err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitReady(context.Background(), fmt.Sprintf("http://127.0.0.1:%d/readyz", port), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "quitter exited before it was ready") {
		t.Fatalf("got %v", err)
	}
}

func TestWaitReadyReturnsOnceReady(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()
	p, err := Start("sleeper", exec.Command("sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(5 * time.Second) }()
	if err := p.WaitReady(context.Background(), "http://"+l.Addr().String()+"/readyz", 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A reserved port is never the kernel's answer to a bind to port 0, here or in another
// process, yet a listener naming it binds it. Without the reservation, 40,000 binds to
// port 0 on this range (~14,000 ports the kernel picks from for them) land on a given port
// about six times, so the test fails without it.
func TestFreePortStaysReserved(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for range 40000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if got == port {
			t.Fatalf("a bind to port 0 was given the reserved port %d", port)
		}
	}
	for range 2 { // a program restarted on its port binds it again
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("listening on the reserved port: %v", err)
		}
		_ = l.Close()
	}
}
