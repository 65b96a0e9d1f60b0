// Command release makes the release artefacts of one version (`make release`): the operator
// image for every arch with its SPDX SBOMs (hack/internal/koimage), the chart packaged with
// that version and pinned to the image's digest, the CRDs as one file, the version's
// CHANGELOG.md section (the Unreleased section becomes the version's) and SHA256SUMS; with
// --registry it pushes the image, its SBOMs and the chart (OCI) there.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/raygate/raygate/hack/internal/koimage"
)

type config struct {
	version, out, root, ko, helm, registry, changelog, date string
	archs                                                   []string
}

func main() {
	var c config
	var archs string
	flag.StringVar(&c.version, "version", "", "release version, vMAJOR.MINOR.PATCH[-pre]")
	flag.StringVar(&c.out, "out", "bin/release", "directory the artefacts are written to (replaced)")
	flag.StringVar(&c.root, "root", ".", "the repository's root")
	flag.StringVar(&c.ko, "ko", "", "path of the ko binary (hack/tools.sh path ko)")
	flag.StringVar(&c.helm, "helm", "", "path of the helm binary (hack/tools.sh path helm)")
	flag.StringVar(&c.registry, "registry", "", "push the image to <registry>/raygate and the chart to oci://<registry>/charts (empty: push nothing)")
	flag.StringVar(&archs, "archs", "amd64,arm64", "GOARCHes of the image (linux)")
	flag.StringVar(&c.changelog, "changelog", "CHANGELOG.md", "the changelog whose Unreleased section becomes the version's")
	flag.StringVar(&c.date, "date", time.Now().UTC().Format(time.DateOnly), "the release date in the changelog")
	flag.Parse()
	c.archs = strings.Split(archs, ",")
	if c.ko == "" || c.helm == "" {
		log.Fatal("--ko and --helm are required")
	}
	if err := run(context.Background(), c); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, c config) error {
	start := time.Now()
	chartVersion, err := ChartVersion(c.version)
	if err != nil {
		return err
	}
	dest := Destination{Registry: strings.TrimSuffix(c.registry, "/")}
	repo, plainHTTP := koimage.DefaultRepository, false
	if dest.Registry != "" {
		if plainHTTP, err = dest.PlainHTTP(); err != nil {
			return err
		}
		repo = dest.ImageRepo()
	}
	// The changelog is checked before the slow steps and written only after them.
	oldLog, err := os.ReadFile(c.changelog)
	if err != nil {
		return err
	}
	newLog, notes, err := ReleaseChangelog(string(oldLog), chartVersion, c.date)
	if err != nil {
		return fmt.Errorf("%s: %w", c.changelog, err)
	}
	if err := os.RemoveAll(c.out); err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}

	img, err := koimage.Build(ctx, koimage.Options{
		Ko: c.ko, Repo: repo, Version: c.version, Archs: c.archs,
		Layout: filepath.Join(c.out, "image"), SBOMDir: filepath.Join(c.out, "sbom"), Push: dest.Registry != "",
	})
	if err != nil {
		return err
	}
	digest := img.Descriptor.Digest.String()
	log.Printf("image %s:%s@%s (%s)", repo, c.version, digest, strings.Join(c.archs, ", "))

	crds, err := joinCRDs(filepath.Join(c.root, "config", "crd", "bases"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.out, "raygate-crds.yaml"), []byte(crds), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.out, "RELEASE-NOTES.md"), []byte(notes), 0o644); err != nil {
		return err
	}
	chart, err := packageChart(c, chartVersion, repo, digest)
	if err != nil {
		return err
	}
	if err := checksums(c.out, "image"); err != nil {
		return err
	}
	chartRef := ""
	if dest.Registry != "" {
		args := []string{"push", chart, dest.ChartRepo()}
		if plainHTTP {
			args = append(args, "--plain-http")
		}
		out, err := runTool(c.helm, args...)
		if err != nil {
			return err
		}
		chartRef = dest.ChartRepo() + "/raygate"
		log.Printf("chart %s --version %s (%s)", chartRef, chartVersion, pushedDigest(out))
	}
	if string(oldLog) != newLog {
		if err := os.WriteFile(c.changelog, []byte(newLog), 0o644); err != nil {
			return err
		}
		log.Printf("%s: the Unreleased section is now [%s]; commit it with the tag %s", c.changelog, chartVersion, c.version)
	}
	fmt.Printf("release %s in %s (%s): chart %s, CRDs raygate-crds.yaml, SBOMs sbom/, notes RELEASE-NOTES.md, SHA256SUMS\n",
		c.version, c.out, time.Since(start).Round(time.Second), filepath.Base(chart))
	if chartRef != "" {
		fmt.Printf("install: helm install raygate %s --version %s --namespace raygate-system%s\n", chartRef, chartVersion,
			map[bool]string{true: " --plain-http"}[plainHTTP])
	} else {
		fmt.Printf("image not pushed: push the OCI layout %s/image to %s (crane push, or skopeo copy oci:...) keeping its digest %s\n", c.out, repo, digest)
	}
	return nil
}

// packageChart copies the chart, points its values at the image and packages it with the
// release's version (the chart's) and appVersion (the image tag).
func packageChart(c config, chartVersion, repo, digest string) (string, error) {
	tmp, err := os.MkdirTemp("", "raygate-chart-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	dir := filepath.Join(tmp, "raygate")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(c.root, "charts", "raygate"))); err != nil {
		return "", err
	}
	valuesPath := filepath.Join(dir, "values.yaml")
	values, err := os.ReadFile(valuesPath)
	if err != nil {
		return "", err
	}
	if values, err = SetImage(values, repo, digest); err != nil {
		return "", err
	}
	if err := os.WriteFile(valuesPath, values, 0o644); err != nil {
		return "", err
	}
	out, err := filepath.Abs(c.out)
	if err != nil {
		return "", err
	}
	if _, err := runTool(c.helm, "package", dir, "--version", chartVersion, "--app-version", c.version, "--destination", out); err != nil {
		return "", err
	}
	chart := filepath.Join(c.out, "raygate-"+chartVersion+".tgz")
	if _, err := os.Stat(chart); err != nil {
		return "", fmt.Errorf("helm package wrote no %s: %w", chart, err)
	}
	return chart, nil
}

func joinCRDs(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no CRDs in %s", dir)
	}
	docs := make([]string, len(files))
	for i, f := range files { // Glob sorts
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		docs[i] = string(b)
	}
	return JoinYAML(docs), nil
}

// runTool runs a tool and returns its stdout and stderr together (Helm 4 reports pushes on
// stderr); a failure carries them.
func runTool(bin string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, out.String())
		}
		return "", err
	}
	return out.String(), nil
}

var digestLineRE = regexp.MustCompile(`(?m)^Digest: (sha256:[0-9a-f]{64})`)

func pushedDigest(helmOut string) string {
	if m := digestLineRE.FindStringSubmatch(helmOut); m != nil {
		return m[1]
	}
	return "digest not reported"
}
