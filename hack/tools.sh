#!/usr/bin/env bash
# Builds the project's tools from the Go modules pinned in hack/tools/go.mod and caches
# them outside the checkout, keyed by version, so nothing is downloaded as a binary and a
# second run is instant.
#
#   hack/tools.sh envtest          -> prints the directory holding kube-apiserver, etcd, kubectl
#   hack/tools.sh cluster          -> as envtest, plus kube-controller-manager and kube-scheduler
#   hack/tools.sh <tool>           -> prints the path of one tool (controller-gen, helm, helm3, kwok)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools_mod="$here/tools"
cache_root="${RAYGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/raygate}"

modver() { (cd "$tools_mod" && go list -m -f '{{.Version}}' "$1"); }

build() { # build <dir> <name> <package> [ldflags]
	local dir=$1 name=$2 pkg=$3 ldflags=${4:-}
	if [[ -x "$dir/$name" ]]; then return; fi
	mkdir -p "$dir"
	echo "building $name from $pkg (first run only; cached in $dir)" >&2
	(cd "$tools_mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$dir/$name.tmp" "$pkg")
	mv "$dir/$name.tmp" "$dir/$name"
}

k8s_ldflags() {
	local v=$1 # e.g. v1.36.3
	local minor=${v#v1.}; minor=${minor%%.*}
	local vb=k8s.io/component-base/version
	local cg=k8s.io/client-go/pkg/version
	echo "-X $vb.gitVersion=$v -X $vb.gitMajor=1 -X $vb.gitMinor=$minor -X $vb.gitTreeState=clean" \
		"-X $cg.gitVersion=$v -X $cg.gitMajor=1 -X $cg.gitMinor=$minor -X $cg.gitTreeState=clean"
}

k8s_dir() {
	local kv etcdv
	kv=$(modver k8s.io/kubernetes)
	etcdv=$(modver go.etcd.io/etcd/server/v3)
	echo "$cache_root/k8s-$kv-etcd-$etcdv"
}

envtest() {
	local kv dir
	kv=$(modver k8s.io/kubernetes)
	dir=$(k8s_dir)
	build "$dir" etcd go.etcd.io/etcd/server/v3
	build "$dir" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$(k8s_ldflags "$kv")"
	build "$dir" kubectl k8s.io/kubernetes/cmd/kubectl "$(k8s_ldflags "$kv")"
	echo "$dir"
}

cluster() {
	local kv dir
	kv=$(modver k8s.io/kubernetes)
	dir=$(envtest)
	build "$dir" kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$(k8s_ldflags "$kv")"
	build "$dir" kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$(k8s_ldflags "$kv")"
	echo "$dir"
}

tool() {
	local name=$1 pkg mod v dir verflag="" ldflags=""
	case "$name" in
	controller-gen) pkg=sigs.k8s.io/controller-tools/cmd/controller-gen mod=sigs.k8s.io/controller-tools ;;
	# helm has its own module (hack/tools/helm): its k8s.io pins differ from this one's.
	helm) pkg=helm.sh/helm/v4/cmd/helm mod=helm.sh/helm/v4 tools_mod="$here/tools/helm" verflag=helm.sh/helm/v4/internal/version.version ;;
	# Helm 3, to check the chart still works for its users (hack/tools/helm3). Like Helm's own
	# Makefile, stamp the Kubernetes version it assumes from its client-go; unstamped it
	# assumes v1.20 and refuses the chart's kubeVersion.
	helm3)
		pkg=helm.sh/helm/v3/cmd/helm mod=helm.sh/helm/v3 tools_mod="$here/tools/helm3" verflag=helm.sh/helm/v3/internal/version.version
		local cg; cg=$(modver k8s.io/client-go); cg=${cg#v0.}; cg=${cg%%.*}
		ldflags="-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$cg"
		ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$cg" ;;
	*) echo "unknown tool: $name" >&2; exit 2 ;;
	esac
	v=$(modver "$mod")
	dir="$cache_root/$name-$v"
	build "$dir" "$name" "$pkg" "${verflag:+-X $verflag=$v} $ldflags"
	echo "$dir/$name"
}

# kwok has its own module (hack/tools/kwok): its k8s.io pins differ from the main tools module's.
# tools_mod is rebound locally so modver and build (dynamic scope) use that module.
kwok() {
	local tools_mod="$here/tools/kwok" v dir
	v=$(modver sigs.k8s.io/kwok)
	dir="$cache_root/kwok-$v"
	build "$dir" kwok sigs.k8s.io/kwok/cmd/kwok
	echo "$dir/kwok"
}

case "${1:-}" in
envtest) envtest ;;
cluster) cluster ;;
kwok) kwok ;;
"") echo "usage: $0 envtest|cluster|<tool>" >&2; exit 2 ;;
*) tool "$1" ;;
esac
