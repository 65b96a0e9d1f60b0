#!/usr/bin/env bash
# Fails when the repository tracks a built program or an oversized file. A submission has a
# size limit, and one stray binary (a `go build` output at the top level) once cost a whole
# session's work. Generated CRDs (~1.2 MB each) are the largest legitimate files.
set -euo pipefail
cd "$(dirname "$0")/.."
git rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout: tracked-file check skipped"; exit 0; }
limit=$((1536 * 1024))
files() { git ls-files -z | xargs -0 -r ls -d 2>/dev/null | tr '\n' '\0'; }
big=$(files | xargs -0 -r stat -c '%s %n' | awk -v l="$limit" '$1 > l {print "  " $2 " (" $1 " bytes)"}')
# ELF programs start with 0x7f 'E' 'L' 'F'; grep reads many files in one process.
elf=$(files | LC_ALL=C xargs -0 -r grep -l -a -P '^\x7fELF' 2>/dev/null | sed 's/^/  /' || true)
if [[ -n $big || -n $elf ]]; then
	[[ -z $big ]] || printf 'tracked files over %d bytes:\n%s\n' "$limit" "$big" >&2
	[[ -z $elf ]] || printf 'tracked built programs (ELF):\n%s\n' "$elf" >&2
	echo "remove them from git (git rm --cached) and ignore them" >&2
	exit 1
fi
echo "no built programs or oversized files tracked"
