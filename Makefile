# raygate — the two commands users need are `make run` and `make test`.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
GO ?= go
TOOLS := hack/tools.sh
CONTROLLER_GEN = $(shell $(TOOLS) controller-gen)
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

##@ Run
.PHONY: run
run: ## Start raygate on an embedded local control plane.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) run ./hack/local

.PHONY: help
help:
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
