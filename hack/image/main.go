// Command image builds the operator image with ko, without a container engine or a registry
// on the network (`make image`): it writes an OCI layout and a tarball.
//
// ko needs its base image from a registry. The base here is built locally (an empty image:
// the manager is a static binary and needs no files, not even CA certificates, since it only
// talks to the API server with the service account's CA) and served by an in-memory
// registry on 127.0.0.1 for the length of the build; ko then adds the binary layer, the
// entrypoint, the user and the labels. After the build the image's config is read back from
// the layout and checked against what the chart expects.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

func main() {
	ko := flag.String("ko", "", "path of the ko binary (hack/tools.sh path ko)")
	repo := flag.String("repo", DefaultRepository, "image repository the image is named for")
	version := flag.String("version", "dev", "version stamped into the binary and tagged")
	out := flag.String("out", "bin/image", "directory of the OCI layout; the tarball is <out>.tar")
	arch := flag.String("arch", runtime.GOARCH, "GOARCH of the image")
	flag.Parse()
	if *ko == "" {
		log.Fatal("--ko is required")
	}
	if err := build(context.Background(), *ko, *repo, *version, *out, *arch); err != nil {
		log.Fatal(err)
	}
}

func build(ctx context.Context, ko, repo, version, out, arch string) error {
	base, err := BaseImage(arch)
	if err != nil {
		return err
	}
	ref, stop, err := serve(base)
	if err != nil {
		return err
	}
	defer stop()

	cfgDir, err := os.MkdirTemp("", "raygate-ko-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(cfgDir) }()
	if err := os.WriteFile(filepath.Join(cfgDir, ".ko.yaml"), []byte(KoConfig(ref)), 0o600); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, ko, KoArgs(version, out, arch)...)
	cmd.Env = append(os.Environ(),
		"KO_CONFIG_PATH="+cfgDir,
		"KO_DOCKER_REPO="+repo,
		"VERSION="+version,
		"CGO_ENABLED=0",
		// Reproducible: the image's creation time is the epoch unless the caller sets it.
		"SOURCE_DATE_EPOCH="+envOr("SOURCE_DATE_EPOCH", "0"),
	)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ko build: %w", err)
	}
	cfg, desc, err := ReadLayout(out)
	if err != nil {
		return err
	}
	problems := CheckConfig(cfg, version)
	if desc.MediaType != types.OCIManifestSchema1 {
		problems = append(problems, fmt.Sprintf("manifest media type %s, want %s", desc.MediaType, types.OCIManifestSchema1))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the image's config is not what the chart expects: %s", strings.Join(problems, "; "))
	}
	fmt.Printf("image %s:%s@%s (OCI layout %s, tarball %s.tar) built in %s\n", repo, version, desc.Digest, out, out, time.Since(start).Round(time.Second))
	return nil
}

// serve runs an in-memory registry on a loopback port holding only the base image, and
// returns the base's reference by digest.
func serve(base v1.Image) (string, func(), error) {
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
	tag, err := name.NewTag(ln.Addr().String() + "/raygate/base:" + "local")
	if err != nil {
		stop()
		return "", nil, err
	}
	if err := remote.Write(tag, base); err != nil {
		stop()
		return "", nil, fmt.Errorf("pushing the base image to the local registry: %w", err)
	}
	return tag.Context().Digest(digest.String()).String(), stop, nil
}

// ReadLayout reads the config and descriptor of the one image in an OCI layout.
func ReadLayout(dir string) (*v1.ConfigFile, v1.Descriptor, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	if len(m.Manifests) != 1 {
		return nil, v1.Descriptor{}, fmt.Errorf("%s holds %d manifests, want 1", dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	cfg, err := img.ConfigFile()
	return cfg, m.Manifests[0], err
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

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
