# raygate — the two commands users need are `make run` and `make test`.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
GO ?= go
# Every build here is made like the tools' (hack/tools.sh): with -trimpath, so the build
# cache's entries name no checkout directory and a clean clone anywhere (CI's) reuses what
# an earlier clone compiled, and without cgo, so no binary is linked by gcc (kustomize, which
# cli-runtime brings into most test binaries, imports "plugin": with cgo that forces external
# linking, twice the CPU per link). Packages the tools share at the same versions then compile
# once. A plain `go test` without these keeps its own cache entries and works the same.
export CGO_ENABLED ?= 0
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)
TOOLS := hack/tools.sh
# Tool paths are looked up (never built) when a recipe runs, after `tools` has built them.
CONTROLLER_GEN = $(shell $(TOOLS) path controller-gen)
HELM = $(shell $(TOOLS) path helm)
GOLANGCI_LINT = $(shell $(TOOLS) path golangci-lint)
# etcd, kube-apiserver, kubectl, kube-controller-manager and kube-scheduler: the tests, the
# local mode and the benchmark find them here.
CLUSTER_ASSETS = $(shell $(TOOLS) path cluster)
# The version stamped into the binary and the image (pods carry it; a newer operator re-stamps
# what an older one built instead of recreating it): the git tag or commit, -dirty when the
# tree has changes.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/raygate/raygate/internal/version.Version=$(VERSION)

.PHONY: all
all: build

##@ Build
.PHONY: build
build: ## Build the manager binary into bin/raygate, stamped with VERSION (from git).
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/raygate ./cmd/raygate

.PHONY: image
image: tools ## Build the operator image with ko, without Docker: OCI layout bin/image and tarball bin/image.tar, tagged VERSION.
	$(GO) run ./hack/image --ko "$$($(TOOLS) ensure ko)" --version "$(VERSION)" --out bin/image

# make release: where the artefacts go, the image's archs, where to push (empty: nowhere) and
# the changelog whose Unreleased section becomes the version's.
RELEASE_DIR ?= bin/release
RELEASE_ARCHS ?= amd64,arm64
REGISTRY ?=
CHANGELOG ?= CHANGELOG.md

.PHONY: release
release: ## Release VERSION=vX.Y.Z into bin/release: image (amd64, arm64) with SPDX SBOMs, chart pinned to its digest, CRDs in one file, CHANGELOG section; REGISTRY=host[/path] pushes image and chart (OCI).
	$(GO) run ./hack/release --version "$(VERSION)" --ko "$$($(TOOLS) ensure ko)" --helm "$(HELM)" --out "$(RELEASE_DIR)" \
		--archs "$(RELEASE_ARCHS)" --registry "$(REGISTRY)" --changelog "$(CHANGELOG)"

.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-raygate (put bin/ on the PATH: `kubectl raygate status <name>`).
	$(GO) build -o bin/kubectl-raygate ./cmd/kubectl-raygate

##@ Tools
.PHONY: tools
tools: ## Build every pinned tool from its Go module into ~/.cache/raygate (RAYGATE_CACHE); only missing ones are built.
	@$(TOOLS) install

##@ Development
.PHONY: generate
generate: tools ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...

.PHONY: manifests
manifests: tools ## Generate CRDs (trimmed to fit etcd's object size limit; ray.io/v1alpha1 served as a deprecated copy of v1), RBAC and webhook configuration (with matchConditions).
	@# allowDangerousTypes: RayJob's entrypointNumCpus and entrypointNumGpus are numbers, as in KubeRay.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true,allowDangerousTypes=true paths=./apis/... output:crd:artifacts:config=config/crd/bases
	$(GO) run ./hack/crdtrim config/crd/bases/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=raygate-manager-role paths=./controllers/... paths=./internal/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./webhooks/... output:webhook:artifacts:config=config/webhook
	@# controller-gen's markers cannot express matchConditions (skip objects being deleted).
	$(GO) run ./hack/webhookconditions config/webhook/manifests.yaml
	@# Until markers exist controller-gen writes nothing; empty stand-ins keep kustomize working.
	@mkdir -p config/rbac config/webhook charts/raygate/crds charts/raygate/generated
	@test -f config/rbac/role.yaml || printf 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: raygate-manager-role\nrules: []\n' > config/rbac/role.yaml
	@test -f config/webhook/manifests.yaml || : > config/webhook/manifests.yaml
	@# The chart takes its CRDs, RBAC rules and webhook settings from the generated files.
	rm -f charts/raygate/crds/*.yaml charts/raygate/generated/*.yaml
	cp config/crd/bases/*.yaml charts/raygate/crds/
	cp config/rbac/role.yaml charts/raygate/generated/role.yaml
	cp config/webhook/manifests.yaml charts/raygate/generated/webhooks.yaml

.PHONY: docs
docs: ## Regenerate the reference tables of docs/reference/ (flags, Helm values, feature gates, metrics, conditions and events, CRDs and webhooks, RBAC) from their sources.
	$(GO) run ./hack/docgen

VERIFY := hack/verify-files.sh && hack/verify-generated.sh && $(GO) run ./hack/doccheck
.PHONY: verify
verify: ## Fail if regenerating changes any generated file (docs/reference/ included), if git tracks a built program or an oversized file, or if a doc names a link, anchor, make target, flag, Helm value, ray.io key, path or test that does not exist.
	$(VERIFY)

.PHONY: lint
lint: tools ## golangci-lint (gofmt, go vet, architecture rules: see .golangci.yml).
	$(GOLANGCI_LINT) run ./...

##@ Test
# hack/testtime times each phase and each package's test binary, prints which package is
# running, and ends with a table of wall time, CPU and peak memory; outputs and exit statuses
# pass through unchanged. Its `tests` builds the test binaries with go test -c into
# ~/.cache/raygate/test-binaries (RAYGATE_CACHE), where a binary whose inputs did not change is
# not linked again (go test links every one on every run), and runs them as go test would,
# slowest first by the previous run's times.
# TEST_PACKAGES: test packages run side by side. Most integration suites wait (upgrade
# steps, simulated pods) far more than they compute, so four share two cores well.
TEST_PACKAGES ?= 4
# Test binaries (about 100, up to ~100 MB each) are linked when their inputs change; without DWARF (which
# only debuggers read: stack traces and pprof use the symbol tables kept) a link takes ~19%
# less CPU. TEST_LDFLAGS= keeps DWARF for a debugger.
TEST_LDFLAGS ?= -w
# GOMAXPROCS for the test binaries and what they start (control planes, kubectl, Helm): with
# four packages on two cores, one thread of Go code per process spends 10–13% less CPU than
# two (less parallel GC and idle spinning, measured). test/e2e gives the programs it runs
# every core, as a user has. TEST_GOMAXPROCS=0 keeps the default.
TEST_GOMAXPROCS ?= 1
TESTTIME := $(CURDIR)/bin/testtime
TIMING := $(TESTTIME) run -dir $(CURDIR)/bin/testtime.d
# The system suites run raygate as users install, upgrade, break and attack it, beside real
# third-party programs (Helm, cert-manager, KubeRay, Traefik, the local mode's cluster), for
# minutes each and most of the tests' CPU. make test leaves them out, so the everyday loop
# answers in about ten minutes; make test-system runs them; CI (.ci/run) runs both.
SYSTEM_SUITES := ./test/e2e/... ./test/integration/install/... ./test/integration/certmanager/... \
	./test/integration/faults/... ./test/integration/upgradematrix/... ./test/integration/hostile/...
TESTS := $(TESTTIME) tests -p $(TEST_PACKAGES) -gomaxprocs $(TEST_GOMAXPROCS) -timeout 30m -ldflags='$(TEST_LDFLAGS)'
.PHONY: test
test: tools ## lint, generated-file check, unit and integration tests but the system suites (make test-system); ends with a timing table.
	@$(GO) build -o $(TESTTIME) ./hack/testtime
	$(TIMING) -reset -name lint -- $(GOLANGCI_LINT) run ./...
	$(TIMING) -name verify -- bash -c '$(VERIFY)'
	KUBEBUILDER_ASSETS="$(CLUSTER_ASSETS)" $(TIMING) -name 'tests ./...' -table -- \
		$(TESTS) -skip '$(SYSTEM_SUITES)' ./...

.PHONY: test-system
test-system: tools ## The system suites make test leaves out: e2e (make run, make demo), Helm install, cert-manager, faults, KubeRay upgrade matrix, hostile tenants; ends with a timing table.
	@$(GO) build -o $(TESTTIME) ./hack/testtime
	KUBEBUILDER_ASSETS="$(CLUSTER_ASSETS)" $(TIMING) -reset -name 'system suites' -table -- \
		$(TESTS) $(SYSTEM_SUITES)

.PHONY: unit
unit: ## Unit tests only (no control plane).
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /test/)

.PHONY: chart-test
chart-test: tools ## Lint the Helm chart in each mode and run the install tests (template, dry-run, RBAC, pod security).
	for v in "" charts/raygate/ci/namespaced-values.yaml charts/raygate/ci/byo-cert-values.yaml charts/raygate/ci/admission-policies-values.yaml charts/raygate/ci/all-settings-values.yaml; do \
		$(HELM) lint --strict charts/raygate $${v:+-f $$v}; done
	KUBEBUILDER_ASSETS="$(CLUSTER_ASSETS)" $(GO) test -count=1 ./test/integration/install/... ./test/integration/certmanager/...

# The oldest Kubernetes minor the docs claim (hack/tools/k8s-compat), built on first use into
# the same cache; `make tools` never builds it. One suite at a time, each with its time.
COMPAT_SUITES := ./test/integration/admission/... ./test/integration/raycluster/... ./test/integration/rayservice/...
.PHONY: test-compat
test-compat: tools ## Run the admission, RayCluster and RayService suites against Kubernetes 1.30 (the oldest minor the docs claim), built on first use from its module.
	@assets="$$($(TOOLS) compat)"; \
	echo "test-compat: $$("$$assets/kube-apiserver" --version) in $$assets"; \
	KUBEBUILDER_ASSETS="$$assets" $(GO) test -count=1 -p 1 -timeout 60m $(COMPAT_SUITES); \
	echo "test-compat: passed on $$("$$assets/kube-apiserver" --version), $$(date -u +%Y-%m-%d)"

##@ Benchmarks
.PHONY: bench
bench: tools ## Measure raygate on a cluster without containers; rewrites docs/benchmarks.md. BENCH_ARGS passes flags.
	KUBEBUILDER_ASSETS="$(CLUSTER_ASSETS)" $(GO) run ./test/bench $(BENCH_ARGS)

##@ Run
# Built, then run (not `go run`, which exits 1 on Ctrl-C even after a clean shutdown).
# ARGS passes flags, e.g. make run ARGS="--nodes 5" or make demo ARGS="--interval 1".
.PHONY: run
run: tools ## Start raygate on a local cluster (simulated pods, Ray dashboards and Gateway) and bring up a sample RayService; Ctrl-C stops it.
	@$(GO) build -o bin/raygate-local ./cmd/raygate-local
	@KUBEBUILDER_ASSETS="$(CLUSTER_ASSETS)" bin/raygate-local $(ARGS)

.PHONY: demo
demo: tools ## Scripted incremental upgrade with a live traffic table and invariant checks (attaches to a running make run, else starts its own).
	@$(GO) build -o bin/raygate-demo ./cmd/raygate-demo
	@KUBEBUILDER_ASSETS="$(CLUSTER_ASSETS)" bin/raygate-demo $(ARGS)

.PHONY: help
help:
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
