# raygate — the two commands users need are `make run` and `make test`.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
GO ?= go
TOOLS := hack/tools.sh
CONTROLLER_GEN = $(shell $(TOOLS) controller-gen)
HELM = $(shell $(TOOLS) helm)
# Integration tests get the control-plane binaries from here (built once, then cached).
ENVTEST_ASSETS = $(shell $(TOOLS) envtest)

.PHONY: all
all: build

##@ Build
.PHONY: build
build: ## Build the manager binary into bin/raygate.
	$(GO) build -o bin/raygate ./cmd/raygate

##@ Development
.PHONY: generate
generate: ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...

.PHONY: manifests
manifests: ## Generate CRDs (trimmed to fit etcd's object size limit), RBAC and webhook configuration.
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true paths=./apis/... output:crd:artifacts:config=config/crd/bases
	$(GO) run ./hack/crdtrim config/crd/bases/*.yaml
	$(CONTROLLER_GEN) rbac:roleName=raygate-manager-role paths=./controllers/... paths=./internal/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./webhooks/... output:webhook:artifacts:config=config/webhook
	@# Until markers exist controller-gen writes nothing; empty stand-ins keep kustomize working.
	@mkdir -p config/rbac config/webhook charts/raygate/crds charts/raygate/generated
	@test -f config/rbac/role.yaml || printf 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: raygate-manager-role\nrules: []\n' > config/rbac/role.yaml
	@test -f config/webhook/manifests.yaml || : > config/webhook/manifests.yaml
	@# The chart takes its CRDs, RBAC rules and webhook settings from the generated files.
	rm -f charts/raygate/crds/*.yaml charts/raygate/generated/*.yaml
	cp config/crd/bases/*.yaml charts/raygate/crds/
	cp config/rbac/role.yaml charts/raygate/generated/role.yaml
	cp config/webhook/manifests.yaml charts/raygate/generated/webhooks.yaml

.PHONY: verify
verify: ## Fail if regenerating changes any generated file.
	hack/verify-generated.sh

.PHONY: lint
lint: ## gofmt and go vet.
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './hack/tools/*' -not -path './bin/*')); test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...

.PHONY: envtest
envtest: ## Build (once) and print the directory of kube-apiserver, etcd and kubectl.
	@$(TOOLS) envtest

##@ Test
.PHONY: test
test: lint verify ## Everything CI runs: lint, generated-file check, unit and integration tests.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) test -count=1 -timeout 30m ./...

.PHONY: unit
unit: ## Unit tests only (no control plane).
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /test/)

.PHONY: chart-test
chart-test: ## Lint the Helm chart in each mode and run the install tests (template, dry-run, RBAC, pod security).
	for v in "" charts/raygate/ci/namespaced-values.yaml charts/raygate/ci/byo-cert-values.yaml; do \
		$(HELM) lint --strict charts/raygate $${v:+-f $$v}; done
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) test -count=1 ./test/integration/install/...

##@ Benchmarks
.PHONY: bench
bench: ## Measure raygate on a cluster without containers (about 20 min); rewrites docs/benchmarks.md. BENCH_ARGS passes flags.
	KUBEBUILDER_ASSETS="$$($(TOOLS) cluster)" $(GO) run ./test/bench $(BENCH_ARGS)

##@ Run
# The local mode also runs kube-controller-manager and kube-scheduler (built into the same
# directory as the envtest binaries) and kwok (built by hack/tools.sh kwok on first use).
CLUSTER_ASSETS = $(shell $(TOOLS) cluster)

# Built, then run (not `go run`, which exits 1 on Ctrl-C even after a clean shutdown).
# ARGS passes flags, e.g. make run ARGS="--nodes 5" or make demo ARGS="--interval 1".
.PHONY: run
run: ## Start raygate on a local cluster (simulated pods, Ray dashboards and Gateway) and bring up a sample RayService; Ctrl-C stops it.
	@$(GO) build -o bin/raygate-local ./cmd/raygate-local
	@KUBEBUILDER_ASSETS="$(CLUSTER_ASSETS)" bin/raygate-local $(ARGS)

.PHONY: demo
demo: ## Scripted incremental upgrade with a live traffic table and invariant checks (attaches to a running make run, else starts its own).
	@$(GO) build -o bin/raygate-demo ./cmd/raygate-demo
	@KUBEBUILDER_ASSETS="$(CLUSTER_ASSETS)" bin/raygate-demo $(ARGS)

.PHONY: help
help:
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
