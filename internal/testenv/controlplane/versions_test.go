package controlplane

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMinor(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{in: "Kubernetes v1.30.14\n", want: 30},
		{in: "Kubernetes v1.36.3", want: 36},
		{in: "Kubernetes v0.0.0-master+$Format:%H$", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := parseMinor(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseMinor(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestGatewayAPICRDFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{
		"gateway.networking.k8s.io_httproutes.yaml",
		"gateway.networking.k8s.io_gateways.yaml",
		"gateway.networking.k8s.io_tlsroutes.yaml",
		"README.md",
	} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{
		filepath.Join(dir, "gateway.networking.k8s.io_gateways.yaml"),
		filepath.Join(dir, "gateway.networking.k8s.io_httproutes.yaml"),
	}
	for _, tc := range []struct {
		minor       int
		wantInstall []string
		wantSkipped []string
	}{
		// TLSRoute's CEL (isIP) is refused before 1.31.
		{minor: 30, wantInstall: all, wantSkipped: []string{"gateway.networking.k8s.io_tlsroutes.yaml"}},
		{minor: 31, wantInstall: append(all, filepath.Join(dir, "gateway.networking.k8s.io_tlsroutes.yaml"))},
		{minor: 36, wantInstall: append(all, filepath.Join(dir, "gateway.networking.k8s.io_tlsroutes.yaml"))},
	} {
		install, skipped, err := gatewayAPICRDFiles(dir, tc.minor)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tc.wantInstall, install); d != "" {
			t.Errorf("1.%d install (-want +got):\n%s", tc.minor, d)
		}
		if d := cmp.Diff(tc.wantSkipped, skipped); d != "" {
			t.Errorf("1.%d skipped (-want +got):\n%s", tc.minor, d)
		}
	}
}

func TestWordingByMinor(t *testing.T) {
	old, current := &Env{Minor: 30}, &Env{Minor: 36}
	for _, tc := range []struct{ got, want string }{
		{old.KubectlDeleted("rayservice.ray.io", "a", "ns"), "rayservice.ray.io \"a\" deleted\n"},
		{current.KubectlDeleted("rayservice.ray.io", "a", "ns"), "rayservice.ray.io \"a\" deleted from ns namespace\n"},
		{old.SchemaTooLong(8), "Too long: may not be longer than 8"},
		{current.SchemaTooLong(8), "Too long: may not be more than 8 bytes"},
		{old.NullValue(), `"null"`},
		{current.NullValue(), "null"},
		{current.EnvVarNameRefusal(), "a valid environment variable name must consist only of printable ASCII characters other than '='"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, e := range []*Env{old, current} {
		if got := e.JobSucceededConditions(); got[len(got)-1] != "Complete" {
			t.Errorf("1.%d: the Job controller's last condition is %q, want Complete", e.Minor, got[len(got)-1])
		}
	}
}
