#!/usr/bin/env bash
# Builds the project's tools from the Go modules pinned under hack/tools/ and caches them
# outside the checkout, keyed by version, so nothing is downloaded as a binary and a second
# run is instant.
#
#   hack/tools.sh install        build every tool the tests need that is missing (`make tools`),
#                                in parallel, one progress line per tool, then a table of each
#                                build's wall time, CPU and peak memory (hack/testtime)
#   hack/tools.sh ensure <name>  build one tool if missing (ko: `make image` and `make release`
#                                do not depend on `make tools`), then print its path
#   hack/tools.sh path <name>    print where a tool is; never builds: a missing tool fails at
#                                once and names `make tools`. Names: envtest (directory of etcd,
#                                kube-apiserver, kubectl), cluster (envtest plus
#                                kube-controller-manager and kube-scheduler), kwok, kwok-stages
#                                (kwok's stage files), helm, helm3, controller-gen,
#                                golangci-lint, cert-manager-crds, kueue, kueue-crds,
#                                kueue-webhooks (Kueue's CRDs and webhook configuration),
#                                volcano-crds (Volcano's PodGroup and Queue CRDs),
#                                scheduler-plugins-crds (the coscheduling PodGroup CRD)
#                                kuberay (KubeRay's operator), kuberay-crds (KubeRay's RayJob CRD),
#                                kuberay-samples (KubeRay's sample manifests, config/samples and its folders),
#                                ko (builds the operator image without a container engine; the
#                                install suite's release spec runs `make release`),
#                                traefik (Traefik, the Gateway API implementation of the tests,
#                                built without lego's ACME DNS providers: see build_traefik),
#                                cert-manager (cert-manager's controllers and CA injector,
#                                hack/tools/cert-manager),
#                                prometheus, promtool (Prometheus and its rule checker,
#                                hack/tools/prometheus, built without cloud service discovery),
#                                openshift-route-crd (OpenShift's Route CRD, hack/tools/openshift)
#   hack/tools.sh list           print every tool's path, one per line
#   hack/tools.sh compat         opt-in, not part of install: build (if missing) the control
#                                plane of the oldest Kubernetes minor the docs claim
#                                (hack/tools/k8s-compat: kube-apiserver, kubectl,
#                                kube-controller-manager, kube-scheduler, with today's etcd),
#                                then print its directory (`make test-compat` uses it)
#
# The cache root is $RAYGATE_CACHE, else ~/.cache/raygate.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools_mod="$here/tools"
cache_root="${RAYGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/raygate}"

# modver <module dir> <module path>: the version pinned in that tools module's go.mod.
modver() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }

k8s_ldflags() {
	local v=$1 # e.g. v1.36.3
	local minor=${v#v1.}; minor=${minor%%.*}
	local vb=k8s.io/component-base/version
	local cg=k8s.io/client-go/pkg/version
	echo "-X $vb.gitVersion=$v -X $vb.gitMajor=1 -X $vb.gitMinor=$minor -X $vb.gitTreeState=clean" \
		"-X $cg.gitVersion=$v -X $cg.gitMajor=1 -X $cg.gitMinor=$minor -X $cg.gitTreeState=clean"
}

k8s_dir() { echo "$cache_root/k8s-$(modver "$tools_mod" k8s.io/kubernetes)-etcd-$(modver "$tools_mod" go.etcd.io/etcd/server/v3)"; }
kwok_dir() { echo "$cache_root/kwok-$(modver "$tools_mod/kwok" sigs.k8s.io/kwok)"; }
# cert-manager's controllers run from a main of this repository (hack/tools/cert-manager), so
# its cache key is the module version and a hash of that main.
cert_manager_dir() {
	local mod="$tools_mod/cert-manager"
	echo "$cache_root/cert-manager-controllers-$(modver "$mod" github.com/cert-manager/cert-manager)-$(cat "$mod/main.go" "$mod/go.sum" | sha256sum | cut -c1-10)"
}
# Traefik is built with lego's DNS-provider registry replaced (build_traefik), so its key
# also hashes that replacement.
traefik_dir() {
	local mod="$tools_mod/traefik-kueue"
	echo "$cache_root/traefik-$(modver "$mod" github.com/traefik/traefik/v3)-$(cat "$mod/lego_dns_providers.go.in" "$mod/go.sum" | sha256sum | cut -c1-10)"
}
tool_dir() { # tool_dir <name> <module dir> <module path>
	echo "$cache_root/$1-$(modver "$2" "$3")"
}

# Where each tool lives (the same function answers `path` and decides what `install` builds).
path_of() {
	case "$1" in
	envtest | cluster) k8s_dir ;;
	etcd | kube-apiserver | kubectl | kube-controller-manager | kube-scheduler) echo "$(k8s_dir)/$1" ;;
	kwok) echo "$(kwok_dir)/kwok" ;;
	kwok-stages) echo "$(kwok_dir)/stages" ;;
	cert-manager) echo "$(cert_manager_dir)/cert-manager" ;;
	cert-manager-crds) echo "$(tool_dir cert-manager "$tools_mod/helm" github.com/cert-manager/cert-manager)/crds" ;;
	helm) echo "$(tool_dir helm "$tools_mod/helm" helm.sh/helm/v4)/helm" ;;
	helm3) echo "$(tool_dir helm3 "$tools_mod/helm" helm.sh/helm/v3)/helm3" ;;
	controller-gen) echo "$(tool_dir controller-gen "$tools_mod" sigs.k8s.io/controller-tools)/controller-gen" ;;
	golangci-lint) echo "$(tool_dir golangci-lint "$tools_mod/golangci-lint" github.com/golangci/golangci-lint/v2)/golangci-lint" ;;
	kueue) echo "$(tool_dir kueue "$tools_mod/traefik-kueue" sigs.k8s.io/kueue)/kueue" ;;
	kueue-crds) echo "$(tool_dir kueue "$tools_mod/traefik-kueue" sigs.k8s.io/kueue)/crds" ;;
	kueue-webhooks) echo "$(tool_dir kueue "$tools_mod/traefik-kueue" sigs.k8s.io/kueue)/webhooks" ;;
	volcano-crds) echo "$(tool_dir volcano "$tools_mod/volcano" volcano.sh/apis)/crds" ;;
	scheduler-plugins-crds) echo "$(tool_dir scheduler-plugins "$tools_mod/scheduler-plugins" sigs.k8s.io/scheduler-plugins)/crds" ;;
	kuberay) echo "$(tool_dir kuberay "$tools_mod/kuberay" github.com/ray-project/kuberay/ray-operator)/kuberay" ;;
	kuberay-crds) echo "$(tool_dir kuberay "$tools_mod/kuberay" github.com/ray-project/kuberay/ray-operator)/crds" ;;
	kuberay-samples) echo "$(tool_dir kuberay "$tools_mod/kuberay" github.com/ray-project/kuberay/ray-operator)/samples-tree" ;;
	ko) echo "$(tool_dir ko "$tools_mod/ko" github.com/google/ko)/ko" ;;
	traefik) echo "$(traefik_dir)/traefik" ;;
	prometheus | promtool) echo "$(tool_dir prometheus "$tools_mod/prometheus" github.com/prometheus/prometheus)/$1" ;;
	openshift-route-crd) echo "$(tool_dir openshift "$tools_mod/openshift" github.com/openshift/api)/crds" ;;
	*) echo "unknown tool: $1" >&2; return 2 ;;
	esac
}

# What a name needs on disk to count as present.
members() {
	case "$1" in
	envtest) echo etcd kube-apiserver kubectl ;;
	cluster) echo etcd kube-apiserver kubectl kube-controller-manager kube-scheduler ;;
	kueue-manifests) echo kueue-crds kueue-webhooks ;;
	*) echo "$1" ;;
	esac
}

present() {
	local m p
	for m in $(members "$1"); do
		p=$(path_of "$m")
		if [[ $m == kwok-stages || $m == cert-manager-crds || $m == kueue-crds || $m == kueue-webhooks || $m == *-crds || $m == *-samples ]]; then [[ -f $p/.complete ]] || return 1; else [[ -x $p ]] || return 1; fi
	done
}

path() {
	local name=$1
	if ! present "$name"; then
		echo "$name is not built in $cache_root: run \`make tools\` first (it builds every pinned tool from its Go module; the first run takes a while, later ones are instant)" >&2
		return 1
	fi
	path_of "$name"
}

# gobuild <module dir> <output dir> <ldflags> <package>...: builds into a temporary directory,
# then moves each binary into place, so an interrupted build never leaves a half-written tool.
# With one package, $name (if set) names the binary.
gobuild() {
	local mod=$1 out=$2 ldflags=$3; shift 3
	local tmp; tmp=$(mktemp -d "$out.tmp.XXXXXX")
	local o="$tmp/"
	if (($# == 1)) && [[ -n ${name:-} ]]; then o="$tmp/$name"; fi
	# Each step returns on failure itself: install calls builders inside `if`, where set -e
	# does not apply.
	(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$o" "$@") || { rm -rf "$tmp"; return 1; }
	mv "$tmp"/* "$out/" || return 1
	rmdir "$tmp"
}

build_k8s() {
	local kv dir; kv=$(modver "$tools_mod" k8s.io/kubernetes); dir=$(k8s_dir); mkdir -p "$dir"
	# One `go build` for the four Kubernetes binaries: they share most packages, and one
	# invocation compiles each package once.
	gobuild "$tools_mod" "$dir" "$(k8s_ldflags "$kv")" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl \
		k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
}

build_etcd() {
	local dir; dir=$(k8s_dir); mkdir -p "$dir"
	name=etcd gobuild "$tools_mod" "$dir" "" go.etcd.io/etcd/server/v3
}

# kwok, plus the stage files that configure it, copied from the module so nothing later
# needs the module cache.
build_kwok() {
	local dir; dir=$(kwok_dir); mkdir -p "$dir"
	name=kwok gobuild "$tools_mod/kwok" "$dir" "" sigs.k8s.io/kwok/cmd/kwok
}

build_kwok_stages() {
	local dir src mod="$tools_mod/kwok"; dir=$(kwok_dir); mkdir -p "$dir"
	src=$(cd "$mod" && go mod download -json sigs.k8s.io/kwok | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	rm -rf "$dir/stages"
	mkdir -p "$dir/stages"
	cp -r "$src/kustomize/stage/." "$dir/stages/"
	chmod -R u+w "$dir/stages"
	touch "$dir/stages/.complete"
}

# cert-manager's CRDs (deploy/crds of its module), which the chart's install tests need.
build_cert_manager_crds() {
	local dir src; dir=$(path_of cert-manager-crds)
	src=$(cd "$tools_mod/helm" && go mod download -json github.com/cert-manager/cert-manager | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -r "$src/deploy/crds/." "$dir/"
	chmod -R u+w "$dir"
	touch "$dir/.complete"
}

# Kueue's manager, which the Kueue integration suite runs against the envtest API server.
build_kueue() {
	local dir; dir=$(dirname "$(path_of kueue)"); mkdir -p "$dir"
	name=kueue gobuild "$tools_mod/traefik-kueue" "$dir" "" sigs.k8s.io/kueue/cmd/kueue
}

# Kueue's CRDs (config/components/crd/bases of its module) and webhook configuration
# (config/components/webhook/manifests.yaml), which the Kueue integration suite installs.
build_kueue_manifests() {
	local src dir
	src=$(cd "$tools_mod/traefik-kueue" && go mod download -json sigs.k8s.io/kueue | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	for dir in "$(path_of kueue-crds)" "$(path_of kueue-webhooks)"; do rm -rf "$dir"; mkdir -p "$dir"; done
	cp -r "$src/config/components/crd/bases/." "$(path_of kueue-crds)/"
	cp "$src/config/components/webhook/manifests.yaml" "$(path_of kueue-webhooks)/"
	for dir in "$(path_of kueue-crds)" "$(path_of kueue-webhooks)"; do chmod -R u+w "$dir"; touch "$dir/.complete"; done
}

# Volcano's PodGroup and Queue CRDs, which the batchscheduler integration suite installs.
# Volcano generates them with controller-gen from the kubebuilder markers of volcano.sh/apis
# (its API module ships no CRD files), so the same is done here from the pinned module.
# Needs controller-gen, so install builds it in a second phase.
build_volcano_crds() {
	# Every step checks its result: install runs builders where `set -e` does not apply.
	local dir tmp; dir=$(path_of volcano-crds) && mkdir -p "$(dirname "$dir")" || return 1
	tmp=$(mktemp -d "$dir.tmp.XXXXXX") && [[ -d $tmp ]] || return 1
	(cd "$tools_mod/volcano" && "$(path_of controller-gen)" crd:crdVersions=v1 \
		paths=volcano.sh/apis/pkg/apis/scheduling/v1beta1 output:crd:artifacts:config="$tmp") || { rm -rf "$tmp"; return 1; }
	rm -rf "$dir" && mv "$tmp" "$dir" && touch "$dir/.complete"
}

# scheduler-plugins' coscheduling PodGroup CRD (config/crd/bases of its module), which the
# batchscheduler integration suite installs.
build_scheduler_plugins_crds() {
	local dir src; dir=$(path_of scheduler-plugins-crds) || return 1
	src=$(cd "$tools_mod/scheduler-plugins" && go mod download -json sigs.k8s.io/scheduler-plugins | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	[[ -n $src ]] || return 1
	rm -rf "$dir" && mkdir -p "$dir" || return 1
	cp "$src/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" "$dir/" || return 1
	chmod -R u+w "$dir" && touch "$dir/.complete"
}

# KubeRay's operator (the module's root main package), which the migration suite runs against
# the envtest API server to check that raygate takes over from it, and back.
build_kuberay() {
	local dir; dir=$(dirname "$(path_of kuberay)"); mkdir -p "$dir"
	name=kuberay gobuild "$tools_mod/kuberay" "$dir" "" github.com/ray-project/kuberay/ray-operator
}

# KubeRay's RayJob CRD: KubeRay always runs its RayJob controller, which watches RayJobs;
# raygate's own CRDs cover RayCluster and RayService.
build_kuberay_crds() {
	local dir src; dir=$(path_of kuberay-crds)
	src=$(cd "$tools_mod/kuberay" && go mod download -json github.com/ray-project/kuberay/ray-operator | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$src/config/crd/bases/ray.io_rayjobs.yaml" "$dir/"
	chmod -R u+w "$dir"
	touch "$dir/.complete"
}

# KubeRay's sample manifests, which the admission suite applies unchanged through raygate's
# webhooks: what a KubeRay user switching brings.
build_kuberay_samples() {
	local dir src; dir=$(path_of kuberay-samples) || return 1
	src=$(cd "$tools_mod/kuberay" && go mod download -json github.com/ray-project/kuberay/ray-operator | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	[[ -n $src ]] || return 1
	rm -rf "$dir" && mkdir -p "$dir" || return 1
	# Every folder of config/samples, with its layout (vllm/, tpu/... hold RayServices too).
	(cd "$src/config/samples" && find . -name '*.yaml' -exec cp --parents {} "$dir/" \;) || return 1
	chmod -R u+w "$dir" && touch "$dir/.complete"
}

# ko, which `make image` runs (through hack/image) to build the operator image.
build_ko() {
	local dir; dir=$(dirname "$(path_of ko)"); mkdir -p "$dir"
	name=ko gobuild "$tools_mod/ko" "$dir" "" github.com/google/ko
}

# Traefik, the Gateway API implementation the tests and the local mode run (its Kubernetes
# Gateway provider). Stamped with its version like Traefik's own build. Built against a copy
# of its pinned lego (the ACME library) whose DNS-provider registry is
# hack/tools/traefik-kueue/lego_dns_providers.go.in: lego's own imports ~180 DNS providers'
# SDKs, a third of Traefik's packages, for the DNS-01 challenge nothing here uses. The copy is
# made from the module cache at build time and wired in by a replace in a temporary copy of
# the module's go.mod (-modfile); go.mod, go.sum and every other package stay as pinned.
build_traefik() {
	local v dir src work rc=0 mod="$tools_mod/traefik-kueue"
	v=$(modver "$mod" github.com/traefik/traefik/v3); dir=$(dirname "$(path_of traefik)"); mkdir -p "$dir"
	src=$(cd "$mod" && go mod download -json github.com/go-acme/lego/v4 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	[[ -n $src ]] || return 1
	work=$(mktemp -d "$dir.lego.XXXXXX")
	cp -r "$src" "$work/lego" && chmod -R u+w "$work/lego" &&
		cp "$mod/lego_dns_providers.go.in" "$work/lego/providers/dns/zz_gen_dns_providers.go" &&
		cp "$mod/go.mod" "$mod/go.sum" "$work/" &&
		echo "replace github.com/go-acme/lego/v4 => $work/lego" >>"$work/go.mod" &&
		GOFLAGS="${GOFLAGS:+$GOFLAGS }-modfile=$work/go.mod" name=traefik gobuild "$mod" "$dir" \
			"-X github.com/traefik/traefik/v3/pkg/version.Version=$v" github.com/traefik/traefik/v3/cmd/traefik || rc=1
	rm -rf "$work"
	return $rc
}

# Prometheus and promtool: the observability suites evaluate raygate's documented queries,
# alerts and dashboards with the real engine. remove_all_sd leaves out the cloud
# service-discovery SDKs (static and file discovery remain), which the tests never use and
# which would triple the build.
build_prometheus() {
	local v dir mod="$tools_mod/prometheus" vp=github.com/prometheus/common/version
	v=$(modver "$mod" github.com/prometheus/prometheus); dir=$(dirname "$(path_of prometheus)"); mkdir -p "$dir"
	GOFLAGS="${GOFLAGS:+$GOFLAGS }-tags=remove_all_sd" gobuild "$mod" "$dir" "-X $vp.Version=${v#v} -X $vp.Branch=module" \
		github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
}

# OpenShift's Route CRD from its API module, which the route suite installs when it plays an
# OpenShift cluster.
build_openshift_route_crd() {
	local dir src; dir=$(path_of openshift-route-crd) || return 1
	src=$(cd "$tools_mod/openshift" && go mod download -json github.com/openshift/api | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	[[ -n $src ]] || return 1
	rm -rf "$dir" && mkdir -p "$dir" || return 1
	cp "$src/route/v1/zz_generated.crd-manifests/routes.crd.yaml" "$dir/" || return 1
	chmod -R u+w "$dir" && touch "$dir/.complete"
}

# cert-manager's certificates, issuers and CA injector controllers (hack/tools/cert-manager),
# which the certmanager suite runs against the test control plane.
build_cert_manager() {
	local dir; dir=$(cert_manager_dir); mkdir -p "$dir"
	name=cert-manager gobuild "$tools_mod/cert-manager" "$dir" "" .
}

build_helm() {
	local v dir; v=$(modver "$tools_mod/helm" helm.sh/helm/v4); dir=$(dirname "$(path_of helm)"); mkdir -p "$dir"
	gobuild "$tools_mod/helm" "$dir" "-X helm.sh/helm/v4/internal/version.version=$v" helm.sh/helm/v4/cmd/helm
}

# Helm 3, to check the chart still works for its users. Like Helm's own Makefile, stamp the
# Kubernetes version it assumes from its client-go; unstamped it assumes v1.20 and refuses
# the chart's kubeVersion.
build_helm3() {
	local v cg dir ldflags mod="$tools_mod/helm"
	v=$(modver "$mod" helm.sh/helm/v3); dir=$(dirname "$(path_of helm3)"); mkdir -p "$dir"
	cg=$(modver "$mod" k8s.io/client-go); cg=${cg#v0.}; cg=${cg%%.*}
	ldflags="-X helm.sh/helm/v3/internal/version.version=$v"
	ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$cg"
	ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$cg"
	name=helm3 gobuild "$mod" "$dir" "$ldflags" helm.sh/helm/v3/cmd/helm
}

build_controller_gen() {
	local dir; dir=$(dirname "$(path_of controller-gen)"); mkdir -p "$dir"
	gobuild "$tools_mod" "$dir" "" sigs.k8s.io/controller-tools/cmd/controller-gen
}

build_golangci_lint() {
	local v dir mod="$tools_mod/golangci-lint"
	v=$(modver "$mod" github.com/golangci/golangci-lint/v2); dir=$(dirname "$(path_of golangci-lint)"); mkdir -p "$dir"
	gobuild "$mod" "$dir" "-X main.version=${v#v}" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
}

# install builds every missing tool. Each build runs as its own job (the Go build cache is
# safe to share), so module downloads and links overlap; a failed build prints its log.
install() {
	local logs; logs=$(mktemp -d)
	local -A jobs=()
	local -a order=()
	# start [--after <builder>] <label> <builder> <present-check>...
	# --after runs the build once that builder's job has ended: builds that share packages
	# (one module, or modules pinning the same client-go) would each compile them if they ran
	# at once (the build cache only serves what is already in it), so they run one after the
	# other.
	start() {
		local after=""
		if [[ $1 == --after ]]; then after=$2; shift 2; fi
		local label=$1 fn=$2; shift 2
		local missing=0 n
		for n in "$@"; do present "$n" || missing=1; done
		if ((missing == 0)); then
			printf 'tools: %-60s cached\n' "$label"
			return
		fi
		printf 'tools: %-60s building...\n' "$label"
		local checks=("$@")
		local waitfor=""
		if [[ -n $after && -n ${jobs[$after]:-} ]]; then waitfor="$logs/$after.done"; fi
		(
			trap 'touch "$logs/$fn.done"' EXIT
			while [[ -n $waitfor && ! -e $waitfor ]]; do sleep 1; done
			s=$SECONDS
			# A builder succeeds only if what it builds is then present: a step that failed
			# inside it (a full disk, a killed compiler) must not pass for a build.
			local ok=1 n
			if [[ -n $timer ]]; then
				# Measured in its own process (tools.sh _build), so its CPU and peak memory are
				# the build's own.
				"$timer" run -dir "$logs/times" -name "$label" -- "$here/tools.sh" _build "$fn" >"$logs/$fn.log" 2>&1 || ok=0
			else
				"$fn" >"$logs/$fn.log" 2>&1 || ok=0
			fi
			if ((ok)); then
				for n in "${checks[@]}"; do present "$n" || { echo "$n is missing after the build" >>"$logs/$fn.log"; ok=0; }; done
			fi
			if ((ok)); then
				printf 'tools: %-60s built in %ds\n' "$label" $((SECONDS - s))
			else
				printf 'tools: %-60s FAILED after %ds:\n' "$label" $((SECONDS - s))
				sed 's/^/    /' "$logs/$fn.log"
				exit 1
			fi
		) &
		jobs[$fn]=$!
		order+=("$fn")
	}
	local t0=$SECONDS
	# hack/testtime measures each build (std library only, so it builds in a second even on a
	# fresh machine); without it the tools still build, unmeasured.
	local timer="$logs/testtime"
	(cd "$here/.." && go build -o "$timer" ./hack/testtime) >/dev/null 2>&1 || timer=""
	# The longest chains first. A chain is builds that share compiled packages, one after the
	# other: builds from one module, and builds from modules whose Kubernetes client libraries
	# (client-go and every module under it) are pinned to the same versions, so the later
	# builds find those packages in the build cache instead of compiling their own copy (see
	# "Where make tools spends its time" in the README).
	start "traefik" build_traefik traefik
	start --after build_traefik "kueue" build_kueue kueue
	start --after build_kueue "kuberay" build_kuberay kuberay
	start "kube-apiserver, kubectl, kube-controller-manager, kube-scheduler" build_k8s \
		kube-apiserver kubectl kube-controller-manager kube-scheduler
	start --after build_k8s "etcd" build_etcd etcd
	start --after build_etcd "controller-gen" build_controller_gen controller-gen
	start --after build_controller_gen "cert-manager controllers" build_cert_manager cert-manager
	start --after build_cert_manager "kwok" build_kwok kwok
	start "helm (v4)" build_helm helm
	start --after build_helm "helm3" build_helm3 helm3
	start --after build_helm3 "prometheus, promtool" build_prometheus prometheus promtool
	start "golangci-lint" build_golangci_lint golangci-lint
	start "ko" build_ko ko
	start "kwok stage files" build_kwok_stages kwok-stages
	start "cert-manager CRDs" build_cert_manager_crds cert-manager-crds
	start "kueue CRDs and webhook configuration" build_kueue_manifests kueue-manifests
	start "scheduler-plugins CRDs" build_scheduler_plugins_crds scheduler-plugins-crds
	start "kuberay RayJob CRD" build_kuberay_crds kuberay-crds
	start "kuberay samples" build_kuberay_samples kuberay-samples
	start "OpenShift Route CRD" build_openshift_route_crd openshift-route-crd
	local failed=0 fn
	for fn in "${order[@]}"; do wait "${jobs[$fn]}" || failed=1; done
	# Second phase: what runs a tool built above.
	local built=${#order[@]}
	order=()
	if present controller-gen; then start "Volcano CRDs" build_volcano_crds volcano-crds; fi
	for fn in "${order[@]}"; do wait "${jobs[$fn]}" || failed=1; done
	built=$((built + ${#order[@]}))
	if ((built > 0)) && [[ -n $timer ]]; then
		"$timer" table -dir "$logs/times" -heading "tool (built side by side)" -slowest-first -total "make tools"
	fi
	rm -rf "$logs"
	if ((failed)); then echo "tools: some builds failed (see above)" >&2; return 1; fi
	if ((built > 0)); then echo "tools: all tools ready in $cache_root ($((SECONDS - t0))s)"; fi
}

# The compat control plane: Kubernetes from hack/tools/k8s-compat, etcd from hack/tools (the
# same etcd as the default control plane), in one directory for KUBEBUILDER_ASSETS.
compat_dir() { echo "$cache_root/k8s-$(modver "$tools_mod/k8s-compat" k8s.io/kubernetes)-etcd-$(modver "$tools_mod" go.etcd.io/etcd/server/v3)"; }

compat() {
	local dir kv b missing=0 s=$SECONDS
	dir=$(compat_dir); kv=$(modver "$tools_mod/k8s-compat" k8s.io/kubernetes)
	for b in etcd kube-apiserver kubectl kube-controller-manager kube-scheduler; do [[ -x $dir/$b ]] || missing=1; done
	if ((missing)); then
		echo "tools: building the $kv control plane into $dir (opt-in; the first build takes several minutes)..." >&2
		mkdir -p "$dir"
		gobuild "$tools_mod/k8s-compat" "$dir" "$(k8s_ldflags "$kv")" \
			k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl \
			k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler >&2
		name=etcd gobuild "$tools_mod" "$dir" "" go.etcd.io/etcd/server/v3 >&2
		echo "tools: $kv control plane built in $((SECONDS - s))s" >&2
	fi
	echo "$dir"
}

# ensure builds a tool if missing, for targets that do not depend on `make tools`.
ensure() {
	local fn
	case "$1" in
	ko) fn=build_ko ;;
	*) path "$1"; return ;;
	esac
	if ! present "$1"; then
		local s=$SECONDS
		echo "tools: building $1 (first use)..." >&2
		"$fn" >&2 || { echo "tools: building $1 failed" >&2; return 1; }
		present "$1" || { echo "tools: $1 is missing after its build" >&2; return 1; }
		echo "tools: $1 built in $((SECONDS - s))s" >&2
	fi
	path_of "$1"
}

list() {
	local n
	for n in etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kwok kwok-stages helm helm3 controller-gen golangci-lint cert-manager cert-manager-crds kueue kueue-crds kueue-webhooks volcano-crds scheduler-plugins-crds kuberay kuberay-crds kuberay-samples ko traefik prometheus promtool openshift-route-crd; do
		printf '%-24s %s\n' "$n" "$(path_of "$n")"
	done
}

case "${1:-}" in
install) install ;;
ensure) ensure "${2:?usage: $0 ensure <tool>}" ;;
# One builder, as install runs it in its own process to measure it.
_build) "${2:?}" ;;
path) path "${2:?usage: $0 path <tool>}" ;;
list) list ;;
compat) compat ;;
*) echo "usage: $0 install | ensure <tool> | path <tool> | list | compat" >&2; exit 2 ;;
esac
