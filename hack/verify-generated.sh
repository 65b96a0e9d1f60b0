#!/usr/bin/env bash
# Fails when regenerating (deepcopy, CRDs, RBAC, webhook configuration, chart CRDs, the
# reference tables of docs/reference/) changes any file. Works without git, so it gives the
# same answer in a dirty tree and in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=()
for p in apis config charts docs/reference; do [[ -d $p ]] && paths+=("$p"); done
snapshot() { find "${paths[@]}" -type f \( -name '*.go' -o -name '*.yaml' -o -name '*.json' -o -name '*.md' \) | LC_ALL=C sort | xargs -r sha256sum; }
before=$(snapshot)
# docs last: the reference tables are generated from the manifests too.
make --no-print-directory generate manifests docs >/dev/null
after=$(snapshot)
if [[ "$before" != "$after" ]]; then
	echo "generated files were stale and have been regenerated; review and commit them:" >&2
	diff <(echo "$before") <(echo "$after") | grep '^[<>]' | awk '{print "  " $3}' | sort -u >&2
	exit 1
fi
echo "generated files are up to date"
