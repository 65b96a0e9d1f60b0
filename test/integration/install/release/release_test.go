package release

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// `make release` as a platform team's pipeline runs it, pushing to a registry served on
// loopback; the chart is then installed from that registry as docs/install.md says. Only the
// host's arch is built: the Go build cache (warm after `make image` or an earlier run) then
// leaves ko little but linking.
var _ = Describe("a release made by make release", Ordered, func() {
	const version, chartVersion = "v9.9.9", "9.9.9"
	var reg, out, changelog string

	BeforeAll(func(ctx context.Context) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				GinkgoWriter.Println("registry:", err)
			}
		}()
		DeferCleanup(srv.Close)
		reg = ln.Addr().String() + "/rg"

		tmp := GinkgoT().TempDir()
		out, changelog = filepath.Join(tmp, "release"), filepath.Join(tmp, "CHANGELOG.md")
		b, err := os.ReadFile(filepath.Join(repoRoot, "CHANGELOG.md"))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(changelog, b, 0o644)).To(Succeed())

		start := time.Now()
		cmd := exec.CommandContext(ctx, "make", "-C", repoRoot, "--no-print-directory", "release", "VERSION="+version,
			"REGISTRY="+reg, "RELEASE_ARCHS="+runtime.GOARCH, "RELEASE_DIR="+out, "CHANGELOG="+changelog)
		cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
		Expect(cmd.Run()).To(Succeed())
		GinkgoWriter.Printf("make release (%s only) took %s\n", runtime.GOARCH, time.Since(start).Round(time.Second))
	}, NodeTimeout(10*time.Minute)) // a cold Go build cache compiles the manager for linux first

	It("writes the chart, the CRDs as one file, the SBOMs, the version's changelog section and their checksums", func(ctx context.Context) {
		crds := kinds(readFileOrEmpty(filepath.Join(out, "raygate-crds.yaml")))
		chartCRDs, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(crds).To(HaveLen(len(chartCRDs)))
		Expect(crds).To(HaveEach("CustomResourceDefinition"))
		applied, stderr, err := env.Kubectl(ctx, "", "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", filepath.Join(out, "raygate-crds.yaml"))
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(strings.Count(applied, "serverside-applied (server dry run)")).To(Equal(len(chartCRDs)), applied)

		Expect(filepath.Join(out, "raygate-"+chartVersion+".tgz")).To(BeARegularFile())
		Expect(filepath.Join(out, "sbom", "raygate-linux-"+runtime.GOARCH+".spdx.json")).To(BeARegularFile())

		log := readFileOrEmpty(changelog)
		Expect(log).To(ContainSubstring("## [Unreleased]\n\n## [" + chartVersion + "] - " + time.Now().UTC().Format(time.DateOnly) + "\n"))
		Expect(log).To(ContainSubstring("[" + chartVersion + "]: https://github.com/raygate/raygate/"))
		notes := readFileOrEmpty(filepath.Join(out, "RELEASE-NOTES.md"))
		Expect(notes).To(HavePrefix("## [" + chartVersion + "] - "))
		Expect(log).To(ContainSubstring(notes))

		sums := readFileOrEmpty(filepath.Join(out, "SHA256SUMS"))
		for _, f := range []string{"raygate-crds.yaml", "raygate-" + chartVersion + ".tgz", "RELEASE-NOTES.md", "sbom/raygate-linux-" + runtime.GOARCH + ".spdx.json"} {
			Expect(sums).To(MatchRegexp(`(?m)^[0-9a-f]{64}  `+f+`$`), "checksum of "+f)
		}
	})

	It("pushes the image by tag, with its SPDX SBOM attached where ko attaches it", func() {
		ref, err := name.NewTag(reg + "/raygate:" + version)
		Expect(err).NotTo(HaveOccurred())
		img, err := remote.Image(ref)
		Expect(err).NotTo(HaveOccurred())
		digest, err := img.Digest()
		Expect(err).NotTo(HaveOccurred())
		cfg, err := img.ConfigFile()
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Architecture).To(Equal(runtime.GOARCH))
		Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", version))

		// cosign's convention (`cosign download sbom` reads it): tag sha256-<hex>.sbom.
		sbomRef, err := name.NewTag(reg + "/raygate:sha256-" + digest.Hex + ".sbom")
		Expect(err).NotTo(HaveOccurred())
		sbomImg, err := remote.Image(sbomRef)
		Expect(err).NotTo(HaveOccurred())
		layers, err := sbomImg.Layers()
		Expect(err).NotTo(HaveOccurred())
		Expect(layers).To(HaveLen(1))
		mt, err := layers[0].MediaType()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(mt)).To(Equal("text/spdx+json"))
		rc, err := layers[0].Uncompressed()
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = rc.Close() }()
		raw, err := io.ReadAll(rc)
		Expect(err).NotTo(HaveOccurred())
		var doc struct {
			SPDXVersion string `json:"spdxVersion"`
			Packages    []struct {
				Name string `json:"name"`
			} `json:"packages"`
		}
		Expect(json.Unmarshal(raw, &doc)).To(Succeed())
		Expect(doc.SPDXVersion).To(HavePrefix("SPDX-2."))
		var names []string
		for _, p := range doc.Packages {
			names = append(names, p.Name)
		}
		Expect(names).To(ContainElements(digest.String(), "github.com/raygate/raygate", "k8s.io/client-go"))
		Expect(string(raw)).To(Equal(readFileOrEmpty(filepath.Join(out, "sbom", "raygate-linux-"+runtime.GOARCH+".spdx.json"))),
			"the pushed SBOM is the one in the release directory")
	})

	DescribeTable("installs from oci:// (--plain-http), the Deployment running the pushed image by digest",
		func(ctx context.Context, bin func() string, rel string) {
			desc, err := remote.Head(mustTag(reg + "/raygate:" + version))
			Expect(err).NotTo(HaveOccurred())
			kc := "--kubeconfig=" + env.Kubeconfig
			const ns = "release-ops"
			start := time.Now()
			installed, err := runHelmBin(bin(), "install", rel, "oci://"+reg+"/charts/raygate", "--version", chartVersion, "--plain-http", "--skip-crds",
				kc, "--namespace", ns, "--create-namespace", "--set", "watchNamespaces={team-a}")
			Expect(err).NotTo(HaveOccurred())
			Expect(installed).To(ContainSubstring("STATUS: deployed"))
			GinkgoWriter.Printf("helm install took %s\n", time.Since(start).Round(time.Millisecond))
			// Without --wait: the webhook configurations are gone when the command returns.
			DeferCleanup(func() {
				_, err := runHelmBin(bin(), "uninstall", rel, kc, "--namespace", ns)
				Expect(err).NotTo(HaveOccurred())
			})

			image, stderr, err := env.Kubectl(ctx, "", "get", "deployment", "-n", ns, rel+"-raygate", "-o", "jsonpath={.spec.template.spec.containers[0].image}")
			Expect(err).NotTo(HaveOccurred(), stderr)
			Expect(image).To(Equal(reg + "/raygate@" + desc.Digest.String()))

			list, err := runHelmBin(bin(), "list", kc, "--namespace", ns, "-o", "json")
			Expect(err).NotTo(HaveOccurred())
			var releases []struct {
				Name, Chart string
				AppVersion  string `json:"app_version"`
			}
			Expect(json.Unmarshal([]byte(list), &releases)).To(Succeed())
			Expect(releases).To(ContainElement(And(
				HaveField("Name", rel), HaveField("Chart", "raygate-"+chartVersion), HaveField("AppVersion", version))))
		},
		// The binaries are found in BeforeSuite, after the table is constructed.
		Entry("Helm 4", func() string { return helm }, "rel4"),
		Entry("Helm 3", func() string { return helm3 }, "rel3"),
	)
})

func mustTag(ref string) name.Tag {
	t, err := name.NewTag(ref)
	Expect(err).NotTo(HaveOccurred())
	return t
}
