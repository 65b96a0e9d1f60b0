package koimage

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
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "charts", "raygate", "values.yaml"))
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
	if !strings.Contains(strings.Join(KoArgs(Options{Version: "v1", Layout: "out", Archs: []string{"amd64"}}), " "), "--image-user="+want) {
		t.Errorf("ko is not asked for user %s: %q", want, KoArgs(Options{Version: "v1", Layout: "out", Archs: []string{"amd64"}}))
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

func TestKoArgs(t *testing.T) {
	labels := []string{
		"--image-label=org.opencontainers.image.description=" + Labels["org.opencontainers.image.description"],
		"--image-label=org.opencontainers.image.licenses=Apache-2.0",
		"--image-label=org.opencontainers.image.source=https://github.com/raygate/raygate",
		"--image-label=org.opencontainers.image.version=v1.2.3",
	}
	tests := []struct {
		name string
		o    Options
		want []string
	}{
		{name: "make image: one arch, a tarball, no SBOM, no push",
			o: Options{Version: "v1.2.3", Archs: []string{"amd64"}, Layout: "bin/image", Tarball: "bin/image.tar"},
			want: append([]string{"build", "./cmd/raygate", "--bare", "--push=false", "--platform=linux/amd64", "--tags=v1.2.3",
				"--oci-layout-path=bin/image", "--image-user=65532:65532", "--tarball=bin/image.tar", "--sbom=none"}, labels...)},
		{name: "make release: two archs, SPDX SBOMs, pushed",
			o: Options{Version: "v1.2.3", Archs: []string{"amd64", "arm64"}, Layout: "r/image", SBOMDir: "r/sbom", Push: true},
			want: append([]string{"build", "./cmd/raygate", "--bare", "--push=true", "--platform=linux/amd64,linux/arm64", "--tags=v1.2.3",
				"--oci-layout-path=r/image", "--image-user=65532:65532", "--sbom=spdx", "--sbom-dir=r/sbom"}, labels...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, KoArgs(tt.o)); diff != "" {
				t.Errorf("KoArgs (-want +got):\n%s", diff)
			}
		})
	}
}

// ko reads the base from the loopback registry by digest: an index with the platforms ko
// selects from, each an empty OCI image.
func TestBaseServedOnLoopback(t *testing.T) {
	base, err := BaseIndex([]string{"amd64", "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	ref, stop, err := Serve(base)
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
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.OS + "/" + cfg.Architecture; got != d.Platform.String() {
			t.Errorf("base image for %s is %s", d.Platform, got)
		}
		if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
			t.Errorf("base media type %s, want %s", mt, types.OCIManifestSchema1)
		}
		if layers, err := img.Layers(); err != nil || len(layers) != 0 {
			t.Errorf("base layers %d (%v), want none", len(layers), err)
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("base platforms (-want +got):\n%s", diff)
	}

	// ReadLayout reads what ko writes: one image (one platform) or one index (several).
	arm, err := idx.Image(m.Manifests[1].Digest)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		append func(layout.Path) error
		want   v1.Descriptor
		archs  []string
	}{
		{name: "an image", append: func(p layout.Path) error { return p.AppendImage(arm) },
			want: m.Manifests[1], archs: []string{"arm64"}},
		{name: "an index", append: func(p layout.Path) error { return p.AppendIndex(idx) },
			want: v1.Descriptor{MediaType: types.OCIImageIndex, Digest: mustDigest(t, idx)}, archs: []string{"amd64", "arm64"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := layout.Write(dir, empty.Index)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.append(p); err != nil {
				t.Fatal(err)
			}
			res, cfgs, err := ReadLayout(dir)
			if err != nil {
				t.Fatal(err)
			}
			if res.Descriptor.Digest != tt.want.Digest || res.Descriptor.MediaType != tt.want.MediaType {
				t.Errorf("ReadLayout: %s %s, want %s %s", res.Descriptor.Digest, res.Descriptor.MediaType, tt.want.Digest, tt.want.MediaType)
			}
			for _, arch := range tt.archs {
				if cfgs[arch] == nil || cfgs[arch].Architecture != arch {
					t.Errorf("no %s config: %v", arch, cfgs)
				}
			}
			if len(res.Images) != len(tt.archs) || len(cfgs) != len(tt.archs) {
				t.Errorf("images %v, want %v", res.Images, tt.archs)
			}
		})
	}
}

func mustDigest(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
