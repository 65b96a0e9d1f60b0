package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHeadingSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Upgrading raygate":                          "upgrading-raygate",
		"Metric gates (UpgradePolicy)":               "metric-gates-upgradepolicy",
		"Steering an upgrade: pause, resume, abort":  "steering-an-upgrade-pause-resume-abort",
		"KubeRay's RayJob validation test cases":     "kuberays-rayjob-validation-test-cases",
		"The `--feature-gates` flag":                 "the---feature-gates-flag",
		"Fields beyond KubeRay v1.5.1":               "fields-beyond-kuberay-v151",
		"[Linked](other.md) heading":                 "linked-heading",
		"The dashboard pool — one slow dashboard":    "the-dashboard-pool--one-slow-dashboard",
		"snake_case stays":                           "snake_case-stays",
		"<a id=\"x\"></a>Tagged":                     "tagged",
		"Kubernetes-delegated token  authentication": "kubernetes-delegated-token--authentication",
	} {
		if got := headingSlug(heading); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestRepeatedHeadingsAreNumbered(t *testing.T) {
	d := parseMarkdown("a.md", "# A\n## Tests\n## Tests\n```\n# Tests\n```\n## Tests\n<a id=\"custom\"></a>\n")
	for _, a := range []string{"a", "tests", "tests-1", "tests-2", "custom"} {
		if !d.anchors[a] {
			t.Errorf("no anchor #%s in %v", a, d.anchors)
		}
	}
	if d.anchors["tests-3"] {
		t.Error("a heading inside a fenced block got an anchor")
	}
}

// testFacts are a tiny repository's facts.
func testFacts() facts {
	files := set("docs/install.md", "docs/other.md", "charts/raygate/values.yaml", "config/samples/a.yaml",
		"internal/app/options.go", "internal/version", "charts/raygate")
	return facts{
		targets: set("run", "demo", "test", "verify", "manifests"),
		flags: map[string]map[string]bool{
			manager: set("leader-elect", "batch-scheduler", "max-pods-per-group", "watch-namespace"),
			local:   set("nodes", "deploy-delay"),
			demo:    set("rate"),
			plugin:  set("target", "namespace"),
			bench:   set("sizes"),
		},
		values: set("webhook", "webhook.timeoutSeconds", "image", "image.tag", "policy", "policy.allowedServiceTypes", "podLabels"),
		open:   set("podLabels"),
		keys:   set("ray.io/cluster", "raygate.ray.io/gateway"),
		tests:  set("TestReal"),
		flagValue: func(name, value string) string {
			if name == "batch-scheduler" && value != "volcano" && value != "kai-scheduler" {
				return "--batch-scheduler must be one of volcano, kai-scheduler or empty"
			}
			return ""
		},
		exists: func(p string) bool {
			matches := false
			for f := range files {
				if ok, _ := filepath.Match(p, f); ok || f == p {
					matches = true
				}
			}
			return matches
		},
	}
}

func runCheck(t *testing.T, path, text string) []string {
	t.Helper()
	other := parseMarkdown("docs/other.md", "# Other\n## Known section\n")
	load := func(p string) (doc, bool) {
		switch p {
		case "docs/other.md":
			return other, true
		case "docs/install.md":
			return parseMarkdown(p, "# Install\n## Upgrading\n"), true
		}
		return doc{}, false
	}
	d := parseMarkdown(path, text)
	if strings.HasSuffix(path, ".yaml") {
		d = parseValuesComments(path, text)
	}
	var got []string
	for _, f := range check([]doc{d}, testFacts(), load) {
		got = append(got, f.String())
	}
	return got
}

func TestCheck(t *testing.T) {
	for name, tc := range map[string]struct {
		path, text string
		want       []string
	}{
		"what exists passes": {path: "docs/a.md", text: strings.Join([]string{
			"# A", "## Section",
			"See [other](other.md#known-section), [here](#section) and [out](https://example.com/x#y).",
			"Run `make run ARGS=\"--nodes 5\"` or `make test`; `--leader-elect` and KubeRay's `--watch-namespace`.",
			"`helm upgrade raygate charts/raygate --set webhook.timeoutSeconds=10 --reuse-values`",
			"The Helm value `image.tag`, labels `podLabels.team`, the key `ray.io/cluster`, `raygate.ray.io/*`.",
			"`internal/app/options.go`, `config/samples/*.yaml`, `internal/version.Version`, `ray.io/v1`, TestReal.",
			"```sh", "kubectl get pods --field-selector x \\", "  --namespace y", "make run ARGS=\"--deploy-delay 1s\"", "```",
			"`--max-pods-per-*` limits pods; `make demo ARGS=\"--rate 5\"` is the demo.",
			"| KubeRay value | raygate value |", "| --- | --- |", "| `image.gone` | `image.tag` |",
		}, "\n")},
		"stale flag value": {path: "docs/a.md", text: "Run with `--batch-scheduler=kai`.",
			want: []string{"docs/a.md:1: --batch-scheduler=kai: --batch-scheduler must be one of volcano, kai-scheduler or empty"}},
		"flag values that are placeholders": {path: "docs/a.md", text: "`--batch-scheduler=<name>`, `--batch-scheduler=N`, `raygate --batch-scheduler=volcano`"},
		"stale flag": {path: "docs/a.md", text: "Set `--leader-election` to elect.",
			want: []string{"docs/a.md:1: --leader-election is not a flag of manager"}},
		"stale flag in a fenced manifest": {path: "docs/a.md", text: "```yaml\nargs:\n- --batch-schedule=volcano\n```",
			want: []string{"docs/a.md:3: --batch-schedule is not a flag of manager"}},
		"a local-mode flag outside its context": {path: "docs/a.md", text: "`raygate --nodes 3`",
			want: []string{"docs/a.md:1: --nodes is not a flag of manager"}},
		"stale value path": {path: "docs/a.md", text: "Set `webhooks.timeoutSeconds`.",
			want: []string{"docs/a.md:1: Helm value webhooks.timeoutSeconds: not in charts/raygate/values.yaml or values.schema.json"}},
		"stale value in --set": {path: "docs/a.md", text: "`helm install x --set policy.allowedTypes={a}`",
			want: []string{"docs/a.md:1: Helm value policy.allowedTypes: not in charts/raygate/values.yaml or values.schema.json"}},
		"stale value in values.yaml comment": {path: "charts/raygate/values.yaml", text: "a: 1 # see webhooks.timeoutSeconds\n",
			want: []string{"charts/raygate/values.yaml:1: Helm value webhooks.timeoutSeconds: not in charts/raygate/values.yaml or values.schema.json"}},
		"broken link": {path: "docs/a.md", text: "See [gone](gone.md).",
			want: []string{"docs/a.md:1: link gone.md: no file docs/gone.md in the repository"}},
		"broken anchor": {path: "docs/a.md", text: "# A\nSee\n[x](other.md#unknown-section).",
			want: []string{"docs/a.md:3: other.md#unknown-section: docs/other.md has no heading with anchor #unknown-section"}},
		"broken local anchor": {path: "docs/a.md", text: "# A\n[x](#b)",
			want: []string{"docs/a.md:2: #b: docs/a.md has no heading with anchor #b"}},
		"anchor in a chart comment": {path: "charts/raygate/values.yaml", text: "# See docs/install.md#upgrading-raygate.\nx: 1\n",
			want: []string{"charts/raygate/values.yaml:1: docs/install.md#upgrading-raygate: docs/install.md has no heading with anchor #upgrading-raygate"}},
		"missing file path": {path: "README.md", text: "The logic is in `controllers/rayservice/plan_gone.go`.",
			want: []string{"README.md:1: controllers/rayservice/plan_gone.go: no such file or directory in the repository"}},
		"missing make target": {path: "README.md", text: "```sh\nmake bench\n```",
			want: []string{"README.md:2: make bench: the Makefile has no target bench"}},
		"unknown key": {path: "docs/a.md", text: "The annotation `raygate.ray.io/gateways`.",
			want: []string{"docs/a.md:1: raygate.ray.io/gateways: no constant of the code has this key"}},
		"unknown test": {path: "docs/a.md", text: "`TestGone` asserts it.",
			want: []string{"docs/a.md:1: TestGone: no Go test function of the repository has this name"}},
		"a code span over two lines": {path: "docs/a.md", text: "Run `kubectl apply\n--server-sid` now.",
			want: []string{"docs/a.md:1: --server-sid is not a flag of kubectl"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, runCheck(t, tc.path, tc.text)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSegments(t *testing.T) {
	got := []string{}
	for _, s := range segments("kubectl exec -it x -- ray job submit --address a | grep y && helm list") {
		got = append(got, programOf(s))
	}
	if want := []string{kubectl, ray, "", helm}; !slices.Equal(got, want) {
		t.Errorf("programs %q, want %q", got, want)
	}
}

// The repository's documents name only what exists: `make verify` runs the same check.
func TestRepositoryDocs(t *testing.T) {
	findings, n, err := checkRepository(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("only %d documents checked", n)
	}
	for _, f := range findings {
		t.Error(f)
	}
}

// The manager's own parser and start-up checks judge a flag's value; a check of two flags
// together does not blame one of them.
func TestManagerFlagValue(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		refused     bool
	}{
		{"batch-scheduler", "kai", true},
		{"batch-scheduler", "kai-scheduler", false},
		{"tls-min-version", "1.4", true},
		{"feature-gates", "RayClusterMTLS=true", false},
		{"feature-gates", "NoSuchGate=true", true},
		{"reconcile-concurrency", "many", true},
		{"leader-elect-lease-duration", "8s", false}, // refused only with the default renew deadline
		{"watch-namespace", "a,b", false},
	} {
		if got := managerFlagValue(tc.name, tc.value); (got != "") != tc.refused {
			t.Errorf("--%s=%s: %q, want refused %v", tc.name, tc.value, got, tc.refused)
		}
	}
	// A refused gate does not stay behind for the next value.
	if got := managerFlagValue("feature-gates", "RayCronJob=true"); got != "" {
		t.Errorf("after a refused gate, --feature-gates=RayCronJob=true: %q", got)
	}
}
