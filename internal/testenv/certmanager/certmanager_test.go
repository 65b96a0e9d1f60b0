package certmanager

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTunnelPick(t *testing.T) {
	tests := []struct {
		name     string
		backends []string
		dest     string
		want     string
		ok       bool
	}{
		{"no ready backend refuses", nil, "10.96.0.10:443", "", false},
		{"the Service port goes to a backend", []string{"127.0.0.1:9443"}, "10.96.0.10:443", "127.0.0.1:9443", true},
		{"another port is refused", []string{"127.0.0.1:9443"}, "10.96.0.10:8443", "", false},
		{"a backend off loopback is never dialled", []string{"10.0.0.5:9443"}, "10.96.0.10:443", "", false},
		{"a destination without a port is refused", []string{"127.0.0.1:9443"}, "10.96.0.10", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := &Tunnel{Port: "443"}
			tn.SetBackends(tt.backends...)
			got, ok := tn.pick(tt.dest)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("pick(%q) = %q, %v; want %q, %v", tt.dest, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestTunnelRoundRobin(t *testing.T) {
	tn := &Tunnel{Port: "443"}
	tn.SetBackends("127.0.0.1:1", "127.0.0.1:2")
	var got []string
	for range 4 {
		b, _ := tn.pick("10.96.0.10:443")
		got = append(got, b)
	}
	want := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:1", "127.0.0.1:2"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestProjectSwapsAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	for _, v := range []string{"one", "two"} {
		data := map[string][]byte{"tls.crt": []byte("crt-" + v), "tls.key": []byte("key-" + v), "ca.crt": []byte("ca-" + v)}
		if err := project(dir, data); err != nil {
			t.Fatal(err)
		}
		for k, want := range data {
			got, err := os.ReadFile(filepath.Join(dir, k))
			if err != nil || string(got) != string(want) {
				t.Fatalf("%s after projecting %s: %q, %v", k, v, got, err)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// ..data, its one target, and the three links: the previous projection is gone.
	if len(entries) != 5 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("entries %v, want ..data, one ..data-* directory and three links", names)
	}
}
