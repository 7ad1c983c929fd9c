#!/usr/bin/env bash
# ci/go-version.sh [GO] - check that the Go toolchain GO (default: go on
# PATH) is at least the version of go.mod's go line; exit 1, saying which Go
# was found where and what is needed, if it is older or missing. A
# development build (GOVERSION "devel ...") passes.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${1:-go}
want=$(sed -n 's/^go \([^ ]*\)$/\1/p' go.mod)
[ -n "$want" ] || { echo "go-version: go.mod has no go line" >&2; exit 1; }
need="Go $want or newer is needed, first on PATH or in /usr/local/go (https://go.dev/dl/)"
if ! path=$(command -v "$go" 2>/dev/null); then
	echo "go-version: no $go on PATH; $need" >&2
	exit 1
fi
# Go 1.21 and later switch to go.mod's toolchain themselves where
# GOTOOLCHAIN lets them; GOVERSION is then the one that builds.
if ! have=$("$go" env GOVERSION 2>&1) || [ -z "$have" ]; then
	echo "go-version: $path env GOVERSION failed: ${have:-no output}" >&2
	echo "go-version: $need" >&2
	exit 1
fi
case $have in devel*) exit 0 ;; esac
# older A B: whether Go version A comes before B, in Go's order:
# 1.26 < 1.26beta1 < 1.26rc1 < 1.26.0 < 1.26.1.
older() {
	awk -v a="$1" -v b="$2" '
	function key(v,   m, n, k, r) {
		sub(/^go/, "", v)
		n = split(v, m, /[^0-9]+/)
		k = 0; r = 0
		if (v ~ /beta/) k = 1
		else if (v ~ /rc/) k = 2
		else if (n >= 3) { k = 3; r = m[3] }
		if (k == 1 || k == 2) r = m[3]
		return sprintf("%06d%06d%d%06d", m[1], m[2], k, r)
	}
	BEGIN { exit !(key(a) < key(b)) }'
}
if older "$have" "$want"; then
	echo "go-version: $path is $have, but go.mod says go $want; $need" >&2
	exit 1
fi
