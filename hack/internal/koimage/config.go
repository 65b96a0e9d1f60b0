// Package koimage builds the operator image with ko, without a container engine: `make image`
// (one platform, an OCI layout and a tarball) and `make release` (every platform, SPDX SBOMs,
// optionally pushed) share it.
package koimage

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// What the chart expects of the image (charts/raygate: the Deployment sets no command and
// runs as podSecurityContext.runAsUser), and how it is labelled.
const (
	DefaultRepository = "ghcr.io/raygate/raygate"
	// User is the chart's runAsUser and runAsGroup (distroless's nonroot user).
	User       = "65532:65532"
	Entrypoint = "/ko-app/raygate"
	mainPkg    = "./cmd/raygate"
	versionVar = "github.com/raygate/raygate/internal/version.Version"
)

// Labels are the image's OCI annotations as config labels; the version label is added per
// build.
var Labels = map[string]string{
	"org.opencontainers.image.source":      "https://github.com/raygate/raygate",
	"org.opencontainers.image.description": "raygate: admission webhooks and controllers for Ray on Kubernetes",
	"org.opencontainers.image.licenses":    "Apache-2.0",
}

// Options describe one ko build.
type Options struct {
	Ko      string // path of the ko binary
	Repo    string // repository the image is named for, and pushed to with Push
	Version string // stamped into the binary and tagged
	// Archs are the GOARCHes built (linux only); several make an image index.
	Archs []string
	// Layout is the OCI layout directory written (replaced); Tarball, if set, a tarball of
	// the image (one arch only: a tarball holds no index).
	Layout, Tarball string
	// SBOMDir, if set, makes ko generate SPDX SBOMs and write them there; pushed, each is
	// attached as ko attaches them (tag sha256-<digest>.sbom beside the image).
	SBOMDir string
	Push    bool
}

// KoConfig is the .ko.yaml of the build: the local base by digest, a static binary with the
// version stamped from $VERSION.
func KoConfig(baseRef string) string {
	return fmt.Sprintf(`defaultBaseImage: %s
builds:
- id: raygate
  main: %s
  env: [CGO_ENABLED=0]
  flags: [-trimpath]
  ldflags: ["-s", "-w", "-X %s={{.Env.VERSION}}"]
`, baseRef, mainPkg, versionVar)
}

// KoArgs are the arguments of `ko build`: named repo:version (--bare), with the user and
// labels the chart expects, the SBOM and the outputs the options ask for.
func KoArgs(o Options) []string {
	platforms := make([]string, len(o.Archs))
	for i, a := range o.Archs {
		platforms[i] = "linux/" + a
	}
	args := []string{"build", mainPkg, "--bare", fmt.Sprintf("--push=%t", o.Push),
		"--platform=" + strings.Join(platforms, ","), "--tags=" + o.Version,
		"--oci-layout-path=" + o.Layout, "--image-user=" + User}
	if o.Tarball != "" {
		args = append(args, "--tarball="+o.Tarball)
	}
	if o.SBOMDir == "" {
		args = append(args, "--sbom=none")
	} else {
		args = append(args, "--sbom=spdx", "--sbom-dir="+o.SBOMDir)
	}
	for _, k := range slices.Sorted(maps.Keys(Labels)) {
		args = append(args, "--image-label="+k+"="+Labels[k])
	}
	return append(args, "--image-label=org.opencontainers.image.version="+o.Version)
}

// CheckConfig lists how an image's config differs from what the chart expects.
func CheckConfig(cfg *v1.ConfigFile, version string) []string {
	var problems []string
	if cfg.OS != "linux" {
		problems = append(problems, fmt.Sprintf("os %q, want linux", cfg.OS))
	}
	if cfg.Config.User != User {
		problems = append(problems, fmt.Sprintf("user %q, want %q (the chart's runAsUser and runAsGroup)", cfg.Config.User, User))
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{Entrypoint}) {
		problems = append(problems, fmt.Sprintf("entrypoint %q, want [%s] (the chart sets no command)", cfg.Config.Entrypoint, Entrypoint))
	}
	if len(cfg.Config.Cmd) > 0 {
		problems = append(problems, fmt.Sprintf("cmd %q, want none (the chart's args are the manager's flags)", cfg.Config.Cmd))
	}
	want := maps.Clone(Labels)
	want["org.opencontainers.image.version"] = version
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got := cfg.Config.Labels[k]; got != want[k] {
			problems = append(problems, fmt.Sprintf("label %s=%q, want %q", k, got, want[k]))
		}
	}
	for _, e := range cfg.Config.Env {
		if strings.HasPrefix(e, "GODEBUG=") {
			problems = append(problems, "GODEBUG set in the image: "+e)
		}
	}
	return problems
}
