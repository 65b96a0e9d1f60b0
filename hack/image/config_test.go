package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// The user the image runs as is the one the chart's restricted security context names.
func TestUserIsTheChartsRunAsUser(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "raygate", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		PodSecurityContext struct {
			RunAsUser  int64 `json:"runAsUser"`
			RunAsGroup int64 `json:"runAsGroup"`
		} `json:"podSecurityContext"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d:%d", values.PodSecurityContext.RunAsUser, values.PodSecurityContext.RunAsGroup)
	if User != want {
		t.Errorf("image user %q, chart runs as %q", User, want)
	}
	if !strings.Contains(strings.Join(KoArgs("v1", "out", "amd64"), " "), "--image-user="+want) {
		t.Errorf("ko is not asked for user %s: %q", want, KoArgs("v1", "out", "amd64"))
	}
}

func TestCheckConfig(t *testing.T) {
	good := func() *v1.ConfigFile {
		labels := map[string]string{"org.opencontainers.image.version": "v1.2.3"}
		for k, v := range Labels {
			labels[k] = v
		}
		return &v1.ConfigFile{OS: "linux", Architecture: "amd64", Config: v1.Config{
			User: User, Entrypoint: []string{Entrypoint}, Labels: labels,
			Env: []string{"PATH=/ko-app", "KO_DATA_PATH=/var/run/ko"},
		}}
	}
	tests := []struct {
		name   string
		mutate func(*v1.ConfigFile)
		want   []string
	}{
		{name: "what ko builds", mutate: func(*v1.ConfigFile) {}},
		{name: "root", mutate: func(c *v1.ConfigFile) { c.Config.User = "" },
			want: []string{`user "", want "65532:65532" (the chart's runAsUser and runAsGroup)`}},
		{name: "a shell entrypoint", mutate: func(c *v1.ConfigFile) { c.Config.Entrypoint = []string{"/bin/sh", "-c"} },
			want: []string{`entrypoint ["/bin/sh" "-c"], want [/ko-app/raygate] (the chart sets no command)`}},
		{name: "a default command", mutate: func(c *v1.ConfigFile) { c.Config.Cmd = []string{"--leader-elect"} },
			want: []string{`cmd ["--leader-elect"], want none (the chart's args are the manager's flags)`}},
		{name: "another version", mutate: func(c *v1.ConfigFile) { c.Config.Labels["org.opencontainers.image.version"] = "dev" },
			want: []string{`label org.opencontainers.image.version="dev", want "v1.2.3"`}},
		{name: "windows", mutate: func(c *v1.ConfigFile) { c.OS = "windows" }, want: []string{`os "windows", want linux`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.mutate(c)
			if diff := cmp.Diff(tt.want, CheckConfig(c, "v1.2.3")); diff != "" {
				t.Errorf("CheckConfig (-want +got):\n%s", diff)
			}
		})
	}
}

// ko reads the base from the loopback registry by digest: the same image comes back, with the
// platform ko builds for.
func TestBaseServedOnLoopback(t *testing.T) {
	base, err := BaseImage("arm64")
	if err != nil {
		t.Fatal(err)
	}
	ref, stop, err := serve(base)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.HasPrefix(ref, "127.0.0.1:") || !strings.Contains(ref, "@sha256:") {
		t.Fatalf("base reference %q: want a loopback registry and a digest", ref)
	}
	if !strings.Contains(KoConfig(ref), "defaultBaseImage: "+ref+"\n") {
		t.Errorf(".ko.yaml does not name the base:\n%s", KoConfig(ref))
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" {
		t.Errorf("base platform %s/%s, want linux/arm64", cfg.OS, cfg.Architecture)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("base media type %s, want %s", mt, types.OCIManifestSchema1)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 0 {
		t.Errorf("base layers %d (%v), want none", len(layers), err)
	}

	// ReadLayout reads what ko writes: one image in an OCI layout.
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	got, desc, err := ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if desc.Digest != want || desc.MediaType != types.OCIManifestSchema1 || got.Architecture != "arm64" {
		t.Errorf("ReadLayout: %s %s %s/%s, want %s %s linux/arm64", desc.Digest, desc.MediaType, got.OS, got.Architecture, want, types.OCIManifestSchema1)
	}
}
