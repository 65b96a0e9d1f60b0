package framework

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLogRefusals(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "op-1.log")
	write := func(s string) {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	l := &LogRefusals{Dir: dir, ServiceAccount: ChartServiceAccount()}
	refused := `{"msg":"Reconciler error","error":"gateways.gateway.networking.k8s.io \"g\" is forbidden: User \"system:serviceaccount:raygate-system:raygate\" cannot delete resource"}`
	write(`{"msg":"Starting"}` + "\n" + refused + "\n" + `{"msg":"another user","error":"is forbidden: User \"system:serviceaccount:other:raygate\""}` + "\n" + `{"msg":"partial`)
	got, err := l.New()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"op-1.log: " + refused}, got); d != "" {
		t.Errorf("first read (-want +got):\n%s", d)
	}
	write(` line, forbidden for system:serviceaccount:raygate-system:raygate"}` + "\n")
	got, err = l.New()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Errorf("second read: got %q, want the completed line only", got)
	}
	if got, _ := l.New(); len(got) != 0 {
		t.Errorf("third read: got %q, want nothing new", got)
	}
}
