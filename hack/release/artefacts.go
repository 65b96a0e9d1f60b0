package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/yaml"
)

var valuesKeyRE = regexp.MustCompile(`^  (repository|digest):.*$`)

// SetImage points the chart's values.yaml at the released image: image.repository and
// image.digest (which wins over the tag) are rewritten in place, every comment kept.
func SetImage(values []byte, repo, digest string) ([]byte, error) {
	var out strings.Builder
	inImage, set := false, map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(values)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "image:":
			inImage = true
		case inImage && line != "" && !strings.HasPrefix(line, " "):
			inImage = false
		case inImage && valuesKeyRE.MatchString(line):
			key := valuesKeyRE.FindStringSubmatch(line)[1]
			value := map[string]string{"repository": repo, "digest": digest}[key]
			line = fmt.Sprintf("  %s: %q", key, value)
			set[key] = true
		}
		out.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !set["repository"] || !set["digest"] {
		return nil, fmt.Errorf("values.yaml: no image.repository or image.digest line to set (found %v)", set)
	}
	// The edit must mean what it says: read it back as Helm will.
	var got struct {
		Image struct{ Repository, Digest string } `json:"image"`
	}
	if err := yaml.Unmarshal([]byte(out.String()), &got); err != nil {
		return nil, fmt.Errorf("values.yaml after setting the image: %w", err)
	}
	if got.Image.Repository != repo || got.Image.Digest != digest {
		return nil, fmt.Errorf("values.yaml after setting the image reads %s@%s, want %s@%s", got.Image.Repository, got.Image.Digest, repo, digest)
	}
	return []byte(out.String()), nil
}

// JoinYAML joins YAML files into one multi-document stream.
func JoinYAML(docs []string) string {
	var b strings.Builder
	for _, d := range docs {
		d = strings.TrimPrefix(strings.TrimSpace(d), "---\n")
		b.WriteString("---\n" + d + "\n")
	}
	return b.String()
}

// Destination is where a release is pushed: the image to <registry>/raygate and the chart to
// oci://<registry>/charts/raygate, where registry is a host with an optional path.
type Destination struct{ Registry string }

func (d Destination) ImageRepo() string { return d.Registry + "/raygate" }
func (d Destination) ChartRepo() string { return "oci://" + d.Registry + "/charts" }

// PlainHTTP says whether the registry is spoken to over plain HTTP: ko (go-containerregistry)
// decides so by itself for loopback, localhost, *.local and private addresses; Helm must be
// told with --plain-http.
func (d Destination) PlainHTTP() (bool, error) {
	host, _, _ := strings.Cut(d.Registry, "/")
	r, err := name.NewRegistry(host)
	if err != nil {
		return false, fmt.Errorf("REGISTRY %q: %w", d.Registry, err)
	}
	if _, err := name.NewRepository(d.ImageRepo()); err != nil {
		return false, fmt.Errorf("REGISTRY %q: %w", d.Registry, err)
	}
	return r.Scheme() == "http", nil
}

// checksums writes SHA256SUMS (sha256sum's format) for every file under dir but the OCI
// layout, whose blobs are named by their digests already.
func checksums(dir string, skip ...string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	fsys := root.FS()
	var lines []string
	err = fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if slices.Contains(skip, path) {
				return fs.SkipDir
			}
			return nil
		}
		f, err := fsys.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		lines = append(lines, hex.EncodeToString(h.Sum(nil))+"  "+path)
		return nil
	})
	if err != nil {
		return err
	}
	return root.WriteFile("SHA256SUMS", []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
