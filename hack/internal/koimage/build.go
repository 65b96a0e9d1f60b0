package koimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Result is what a build wrote: the top-level descriptor of the layout (an image for one
// arch, an index for several) and each arch's image digest.
type Result struct {
	Descriptor v1.Descriptor
	Images     map[string]v1.Hash
}

// Build runs ko. ko needs its base image from a registry: the base here is built locally (an
// empty image per arch: the manager is a static binary and needs no files, not even CA
// certificates, since it only talks to the API server with the service account's CA) and
// served by an in-memory registry on 127.0.0.1 for the length of the build; ko then adds the
// binary layer, the entrypoint, the user and the labels. After the build each image's config
// is read back from the layout and checked against what the chart expects.
func Build(ctx context.Context, o Options) (Result, error) {
	if len(o.Archs) == 0 {
		return Result{}, errors.New("no arch to build")
	}
	if o.Tarball != "" && len(o.Archs) > 1 {
		return Result{}, fmt.Errorf("a tarball holds one image, not %d archs", len(o.Archs))
	}
	base, err := BaseIndex(o.Archs)
	if err != nil {
		return Result{}, err
	}
	ref, stop, err := Serve(base)
	if err != nil {
		return Result{}, err
	}
	defer stop()

	cfgDir, err := os.MkdirTemp("", "raygate-ko-")
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = os.RemoveAll(cfgDir) }()
	if err := os.WriteFile(filepath.Join(cfgDir, ".ko.yaml"), []byte(KoConfig(ref)), 0o600); err != nil {
		return Result{}, err
	}
	for _, dir := range []string{o.Layout, o.SBOMDir} {
		if dir != "" {
			if err := os.RemoveAll(dir); err != nil {
				return Result{}, err
			}
		}
	}
	cmd := exec.CommandContext(ctx, o.Ko, KoArgs(o)...)
	cmd.Env = append(os.Environ(),
		"KO_CONFIG_PATH="+cfgDir,
		"KO_DOCKER_REPO="+o.Repo,
		"VERSION="+o.Version,
		"CGO_ENABLED=0",
		// Reproducible: the image's creation time is the epoch unless the caller sets it.
		"SOURCE_DATE_EPOCH="+envOr("SOURCE_DATE_EPOCH", "0"),
	)
	// ko prints the reference on stdout: the caller prints its own summary.
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("ko build: %w", err)
	}
	res, cfgs, err := ReadLayout(o.Layout)
	if err != nil {
		return Result{}, err
	}
	var problems []string
	for _, arch := range slices.Sorted(maps.Keys(cfgs)) {
		for _, p := range CheckConfig(cfgs[arch], o.Version) {
			problems = append(problems, arch+": "+p)
		}
	}
	if got := slices.Sorted(maps.Keys(res.Images)); !slices.Equal(got, slices.Sorted(slices.Values(o.Archs))) {
		problems = append(problems, fmt.Sprintf("archs %v, want %v", got, o.Archs))
	}
	if len(problems) > 0 {
		return Result{}, fmt.Errorf("the image's config is not what the chart expects: %s", strings.Join(problems, "; "))
	}
	return res, nil
}

// Serve runs an in-memory registry on a loopback port holding only the base, and returns
// the base's reference by digest.
func Serve(base v1.ImageIndex) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Print(err)
		}
	}()
	stop := func() { _ = srv.Close() }
	digest, err := base.Digest()
	if err != nil {
		stop()
		return "", nil, err
	}
	tag, err := name.NewTag(ln.Addr().String() + "/raygate/base:local")
	if err != nil {
		stop()
		return "", nil, err
	}
	if err := remote.WriteIndex(tag, base); err != nil {
		stop()
		return "", nil, fmt.Errorf("pushing the base image to the local registry: %w", err)
	}
	return tag.Context().Digest(digest.String()).String(), stop, nil
}

// ReadLayout reads the one image or index in an OCI layout: its descriptor, each arch's
// image digest and config.
func ReadLayout(dir string) (Result, map[string]*v1.ConfigFile, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return Result{}, nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return Result{}, nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return Result{}, nil, err
	}
	if len(m.Manifests) != 1 {
		return Result{}, nil, fmt.Errorf("%s holds %d manifests, want 1", dir, len(m.Manifests))
	}
	res := Result{Descriptor: m.Manifests[0], Images: map[string]v1.Hash{}}
	cfgs := map[string]*v1.ConfigFile{}
	add := func(img v1.Image) error {
		cfg, err := img.ConfigFile()
		if err != nil {
			return err
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		if _, dup := cfgs[cfg.Architecture]; dup {
			return fmt.Errorf("%s holds two %s images", dir, cfg.Architecture)
		}
		cfgs[cfg.Architecture], res.Images[cfg.Architecture] = cfg, d
		return nil
	}
	switch mt := res.Descriptor.MediaType; mt {
	case types.OCIManifestSchema1:
		img, err := idx.Image(res.Descriptor.Digest)
		if err != nil {
			return Result{}, nil, err
		}
		return res, cfgs, add(img)
	case types.OCIImageIndex:
		inner, err := idx.ImageIndex(res.Descriptor.Digest)
		if err != nil {
			return Result{}, nil, err
		}
		im, err := inner.IndexManifest()
		if err != nil {
			return Result{}, nil, err
		}
		for _, d := range im.Manifests {
			img, err := inner.Image(d.Digest)
			if err != nil {
				return Result{}, nil, err
			}
			if err := add(img); err != nil {
				return Result{}, nil, err
			}
		}
		return res, cfgs, nil
	default:
		return Result{}, nil, fmt.Errorf("%s holds a %s, want %s or %s", dir, mt, types.OCIManifestSchema1, types.OCIImageIndex)
	}
}

// BaseImage is the empty base for one architecture: no layers, only the platform, with OCI
// media types (ko keeps the base's, and empty.Image's are Docker's).
func BaseImage(arch string) (v1.Image, error) {
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	return mutate.ConfigFile(base, &v1.ConfigFile{
		OS:           "linux",
		Architecture: arch,
		RootFS:       v1.RootFS{Type: "layers"},
		Config:       v1.Config{WorkingDir: "/"},
	})
}

// BaseIndex is an OCI index of the empty base for each arch. ko builds one image per
// platform of the base that --platform selects (an index for several, an image for one).
func BaseIndex(archs []string) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range archs {
		img, err := BaseImage(arch)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1,
			Platform:  &v1.Platform{OS: "linux", Architecture: arch},
		}})
	}
	return idx, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
