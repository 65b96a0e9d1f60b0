package main

import (
	"regexp"
	"strings"
)

// External programs whose flags the documents show. Their flag lists are written by hand and
// kept small: only flags the documents use, so a new one is a conscious addition.
const (
	kubectl     = "kubectl"
	helm        = "helm"
	ray         = "ray (the Ray CLI)"
	kubectlRay  = "kubectl ray (KubeRay's plugin)"
	git         = "git"
	docker      = "docker"
	certManager = "cert-manager's controller"
	goTool      = "go"
	curl        = "curl"
	traefik     = "Traefik"
	// historyCollector is KubeRay's history server collector, a sidecar raygate adds.
	historyCollector = "the history server collector"
	noFlagsKnown     = "a command whose flags are not checked"
)

func set(names ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

var externalFlags = map[string]map[string]bool{
	kubectl: set("all-namespaces", "as", "clusterrole", "context", "dry-run", "field-selector", "filename",
		"follow", "for", "force-conflicts", "kubeconfig", "namespace", "output", "overwrite", "previous",
		"raw", "resource", "role", "selector", "server-side", "serviceaccount", "sort-by", "timeout", "type",
		"validate", "verb", "replicas", "wait", "cert", "key", "all-containers"),
	helm: set("api-versions", "plain-http", "create-namespace", "dry-run", "namespace", "reuse-values", "set", "set-json", "set-string", "show-only", "skip-crds", "timeout", "version", "wait", "values"),
	ray: set("address", "block", "dashboard-agent-listen-port", "dashboard-host", "entrypoint-num-cpus", "entrypoint-num-gpus", "entrypoint-resources",
		"events-port", "head", "labels", "memory", "metadata-json", "metrics-export-port", "no-monitor",
		"no-wait", "num-cpus", "num-gpus", "redis-password", "redis-username",
		"resources", "runtime-env", "runtime-env-json", "submission-id", "working-dir", "follow"),
	kubectlRay: set("head-cpu", "image", "name", "namespace", "node-type",
		"ray-cluster-name", "ray-cluster-namespace", "ray-version", "replicas", "ttl-seconds-after-finished", "worker-replicas", "working-dir", "runtime-env",
		"submission-id", "file", "out-dir", "autoscaler",
		"labels", "annotations", "wait", "link", "timeout", "dry-run", "no-wait"),
	git:              set("always", "dirty", "tags", "short"),
	docker:           set("build-arg", "file"),
	certManager:      set("enable-certificate-owner-ref"),
	goTool:           set("timeout", "tags"),
	curl:             set("data-urlencode"),
	traefik:          set("metrics.prometheus"),
	historyCollector: set("role", "ray-cluster-name", "ray-cluster-namespace", "ray-root-dir", "events-port"),
	noFlagsKnown:     {},
}

// segments splits a command line into its commands: pipes, &&, ;, and a `--` after which
// another program's arguments start (kubectl exec ... -- ray job submit ...).
func segments(cmd string) []string {
	return commandSeparator.Split(cmd, -1)
}

var commandSeparator = regexp.MustCompile(`\|\||&&|[|;]|\s--\s|\$\(`)

// programOf is the program a command runs, "" when it is not a command (a manifest's args,
// prose).
func programOf(seg string) string {
	words := strings.Fields(seg)
	for len(words) > 0 && (words[0] == "$" || words[0] == "sudo" || words[0] == "env" || words[0] == "(" ||
		strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-")) {
		words = words[1:]
	}
	if len(words) == 0 {
		return ""
	}
	arg := func(i int) string {
		if i < len(words) {
			return words[i]
		}
		return ""
	}
	switch first := strings.TrimPrefix(words[0], "./"); first {
	case "kubectl":
		switch arg(1) {
		case "raygate":
			return plugin
		case "ray":
			return kubectlRay
		}
		return kubectl
	case "kubectl-raygate", "bin/kubectl-raygate":
		return plugin
	case "helm":
		return helm
	case "ray", "serve":
		return ray
	case "git":
		return git
	case "docker":
		return docker
	case "curl":
		return curl
	case "raygate", "bin/raygate", "/manager", "manager":
		return manager
	case "bin/raygate-local", "raygate-local":
		return local
	case "bin/raygate-demo", "raygate-demo":
		return demo
	case "make":
		switch arg(1) {
		case "run":
			return local
		case "demo":
			return demo
		case "bench":
			return bench
		}
		return noFlagsKnown
	case "go":
		for _, w := range words[1:] {
			switch strings.TrimSuffix(strings.TrimPrefix(w, "./"), "/") {
			case "test/bench":
				return bench
			case "cmd/raygate-local":
				return local
			case "cmd/raygate-demo":
				return demo
			case "cmd/raygate":
				return manager
			}
		}
		return goTool
	}
	return ""
}

// programMentions: a line naming one of these is about that program, so its bare flags may
// be the program's.
var programMentions = []struct {
	re   *regexp.Regexp
	prog string
}{
	{regexp.MustCompile(`(?i)make run|local mode|raygate-local`), local},
	{regexp.MustCompile(`(?i)make demo|raygate-demo|\bdemo\b`), demo},
	{regexp.MustCompile(`(?i)kubectl raygate|kubectl-raygate`), plugin},
	{regexp.MustCompile(`(?i)make bench|BENCH_ARGS|benchmark`), bench},
	{regexp.MustCompile(`(?i)kubectl ray\b|KubeRay's (kubectl )?plugin`), kubectlRay},
	{regexp.MustCompile(`(?i)\bkubectl\b`), kubectl},
	{regexp.MustCompile(`(?i)\bhelm\b|--set\b`), helm},
	{regexp.MustCompile(`(?i)\bray (start|job)|rayStartParams|RAY_ADDRESS|submitter`), ray},
	{regexp.MustCompile(`(?i)cert-manager`), certManager},
	{regexp.MustCompile(`(?i)history server|collector`), historyCollector},
	{regexp.MustCompile(`(?i)traefik`), traefik},
}

func mentioned(text string) []string {
	var out []string
	for _, m := range programMentions {
		if m.re.MatchString(text) {
			out = append(out, m.prog)
		}
	}
	return out
}

// notKeys are names under ray.io/ that are not annotation or label keys: Kueue's names of
// its Ray integrations (its configuration's integrations.frameworks).
var notKeys = set("ray.io/raycluster", "ray.io/rayjob", "ray.io/rayservice")

// kubeRayTests are KubeRay's Go tests the documents cite (as the cases raygate's admission
// is compared with): they are KubeRay's, not this repository's.
var kubeRayTests = set("TestValidateRayJobStatus", "TestValidateRayJobSpec", "TestValidateRayJobSpecWithFeatureGate",
	"TestValidateRayJobMetadata", "TestValidateRayCronJobSpec")
