package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestChartVersion(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{in: "v1.2.3", want: "1.2.3"},
		{in: "v0.2.0-rc.1", want: "0.2.0-rc.1"},
		{in: "1.2.3", err: `VERSION "1.2.3" is not a release version`},
		{in: "v1.2", err: "not a release version"},
		{in: "v01.2.3", err: "not a release version"},
		{in: "531e911-dirty", err: "not a release version"},
		{in: "", err: "not a release version"},
	} {
		got, err := ChartVersion(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ChartVersion(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ChartVersion(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

const head = "# Changelog\n\nIntro naming [Unreleased] in prose.\n\n"

func TestReleaseChangelog(t *testing.T) {
	tests := []struct {
		name, in, version      string
		want, wantNotes, error string
	}{
		{
			name: "the first release",
			in: head + "## [Unreleased]\n\n### Added\n\n- everything\n\n" +
				"[Unreleased]: https://github.com/raygate/raygate/commits/HEAD\n",
			version: "0.1.0",
			want: head + "## [Unreleased]\n\n## [0.1.0] - 2026-11-29\n\n### Added\n\n- everything\n\n" +
				"[Unreleased]: https://github.com/raygate/raygate/compare/v0.1.0...HEAD\n" +
				"[0.1.0]: https://github.com/raygate/raygate/releases/tag/v0.1.0\n",
			wantNotes: "## [0.1.0] - 2026-11-29\n\n### Added\n\n- everything\n",
		},
		{
			name: "a later release, above the previous one",
			in: head + "## [Unreleased]\n### Fixed\n- a bug\n\n## [0.1.0] - 2026-11-01\n\n- first\n\n" +
				"[Unreleased]: https://github.com/raygate/raygate/compare/v0.1.0...HEAD\n" +
				"[0.1.0]: https://github.com/raygate/raygate/releases/tag/v0.1.0\n",
			version: "0.2.0-rc.1",
			want: head + "## [Unreleased]\n\n## [0.2.0-rc.1] - 2026-11-29\n\n### Fixed\n- a bug\n\n## [0.1.0] - 2026-11-01\n\n- first\n\n" +
				"[Unreleased]: https://github.com/raygate/raygate/compare/v0.2.0-rc.1...HEAD\n" +
				"[0.2.0-rc.1]: https://github.com/raygate/raygate/compare/v0.1.0...v0.2.0-rc.1\n" +
				"[0.1.0]: https://github.com/raygate/raygate/releases/tag/v0.1.0\n",
			wantNotes: "## [0.2.0-rc.1] - 2026-11-29\n\n### Fixed\n- a bug\n",
		},
		{
			name:      "a re-run: the version is there already",
			in:        head + "## [Unreleased]\n\n## [0.1.0] - 2026-11-28\n\n- everything\n\n[0.1.0]: https://x/releases/tag/v0.1.0\n",
			version:   "0.1.0",
			want:      head + "## [Unreleased]\n\n## [0.1.0] - 2026-11-28\n\n- everything\n\n[0.1.0]: https://x/releases/tag/v0.1.0\n",
			wantNotes: "## [0.1.0] - 2026-11-28\n\n- everything\n",
		},
		{
			name:    "nothing unreleased",
			in:      head + "## [Unreleased]\n\n## [0.1.0] - 2026-11-28\n\n- everything\n",
			version: "0.2.0",
			error:   "the changelog's ## [Unreleased] section is empty: say what 0.2.0 changes",
		},
		{
			name:    "no Unreleased section",
			in:      head + "## 0.1.0\n- everything\n",
			version: "0.2.0",
			error:   `no "## [Unreleased]" section line in the changelog`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes, err := ReleaseChangelog(tt.in, tt.version, "2026-11-29")
			if tt.error != "" {
				if err == nil || err.Error() != tt.error {
					t.Fatalf("error %v, want %q", err, tt.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changelog (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantNotes, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
	if _, _, err := ReleaseChangelog(head+"## [Unreleased]\n- x\n", "0.1.0", "29.11.2026"); err == nil {
		t.Error("a malformed date is accepted")
	}
}

// The repository's own changelog can be released: it has an Unreleased section with content.
func TestTheChangelogReleases(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, notes, err := ReleaseChangelog(string(b), "9.9.9", "2026-11-29")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(notes, "## [9.9.9] - 2026-11-29\n\n") || !strings.Contains(got, "## [Unreleased]\n\n## [9.9.9] - 2026-11-29\n") ||
		!strings.Contains(got, "[9.9.9]: https://github.com/raygate/raygate/") {
		t.Errorf("released changelog:\n%s", got)
	}
}

func TestSetImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	values := "nameOverride: \"\"\nimage:\n  repository: ghcr.io/raygate/raygate\n  # -- a comment\n  tag: \"\"\n  digest: \"\"\n" +
		"  pullPolicy: IfNotPresent\n\nother:\n  repository: keep\n  digest: keep\n"
	got, err := SetImage([]byte(values), "127.0.0.1:5000/rg/raygate", digest)
	if err != nil {
		t.Fatal(err)
	}
	want := "nameOverride: \"\"\nimage:\n  repository: \"127.0.0.1:5000/rg/raygate\"\n  # -- a comment\n  tag: \"\"\n  digest: \"" + digest + "\"\n" +
		"  pullPolicy: IfNotPresent\n\nother:\n  repository: keep\n  digest: keep\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if _, err := SetImage([]byte("image:\n  repository: x\n"), "r", digest); err == nil {
		t.Error("values without image.digest are accepted")
	}

	// The chart's own values.yaml takes the edit.
	b, err := os.ReadFile(filepath.Join("..", "..", "charts", "raygate", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err = SetImage(b, "registry.example.com/raygate", digest)
	if err != nil {
		t.Fatal(err)
	}
	var before, after map[string]any
	if err := yaml.Unmarshal(b, &before); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(got, &after); err != nil {
		t.Fatal(err)
	}
	image := before["image"].(map[string]any)
	image["repository"], image["digest"] = "registry.example.com/raygate", digest
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("charts/raygate/values.yaml: more than the image changed (-want +got):\n%s", diff)
	}
}

func TestDestination(t *testing.T) {
	for _, tt := range []struct {
		registry, image, chart string
		plain                  bool
	}{
		{registry: "127.0.0.1:5000", image: "127.0.0.1:5000/raygate", chart: "oci://127.0.0.1:5000/charts", plain: true},
		{registry: "localhost:5000/team", image: "localhost:5000/team/raygate", chart: "oci://localhost:5000/team/charts", plain: true},
		{registry: "ghcr.io/acme", image: "ghcr.io/acme/raygate", chart: "oci://ghcr.io/acme/charts"},
	} {
		d := Destination{Registry: tt.registry}
		plain, err := d.PlainHTTP()
		if err != nil || plain != tt.plain || d.ImageRepo() != tt.image || d.ChartRepo() != tt.chart {
			t.Errorf("%s: image %s, chart %s, plain HTTP %t (%v); want %s, %s, %t", tt.registry, d.ImageRepo(), d.ChartRepo(), plain, err, tt.image, tt.chart, tt.plain)
		}
	}
	if _, err := (Destination{Registry: "Not A Registry"}).PlainHTTP(); err == nil {
		t.Error("a malformed registry is accepted")
	}
}

func TestJoinYAML(t *testing.T) {
	got := JoinYAML([]string{"---\na: 1\n", "b: 2\n\n"})
	if want := "---\na: 1\n---\nb: 2\n"; got != want {
		t.Errorf("JoinYAML = %q, want %q", got, want)
	}
}

// SHA256SUMS lists every file by its path under the release directory, in sha256sum's
// format, leaving out the OCI layout (its blobs are named by their digests).
func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	for path, content := range map[string]string{"a.yaml": "a\n", "sbom/x.spdx.json": "{}", "image/blobs/sha256/ff": "blob"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := checksums(dir, "image"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	want := "87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7  a.yaml\n" +
		"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a  sbom/x.spdx.json\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("SHA256SUMS (-want +got):\n%s", diff)
	}
}
