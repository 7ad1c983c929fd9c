#!/usr/bin/env bash
# ci/device-tests.sh - run prebuilt Go test binaries (go test -c) against an
# RDMA device, one after another, and say how many passed.
#
# usage: ci/device-tests.sh [DIR] [-- TESTFLAG...]
#
# Runs every DIR/*.test with GORPERF_REQUIRE_DEVICE=1 and -test.count=1, then
# the TESTFLAGs (e.g. -- -test.run 'Loopback' -test.v). DIR defaults to
# $GORPERF_TEST_BINARIES (set in the container image). When DIR/NAME.srcdir
# exists, NAME.test runs in the directory named there, so testdata/ is found.
# In the rxe VM, RXE_DEV names the device unless GORPERF_TEST_DEVICE is set.
# GORPERF_TEST_TIMEOUT (default 10m) is each binary's -test.timeout.
# glibc's per-thread malloc caches are turned off (GLIBC_TUNABLES), so that
# the leak checks count the C heap exactly. A device test of what the device
# lacks fails too, unless GORPERF_ALLOW_UNSUPPORTED lists it (a verb such as
# ibv_alloc_mw, or link-local-gid: the failure names it).
#
# The last line is "N passed, M failed", counting binaries; exit 1 if any
# failed or none was found, 2 on a usage error.
set -uo pipefail

PROG=device-tests
SELF=$(readlink -f "$0")

log() { echo "$PROG: $*" >&2; }
usage() { sed -n '2,/^set -uo/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; }

DIR=${GORPERF_TEST_BINARIES:-}
case ${1:-} in
-h | --help) usage; exit 0 ;;
-- | "") ;;
-*) usage >&2; exit 2 ;;
*) DIR=$1; shift ;;
esac
if [ $# -gt 0 ]; then
	[ "$1" = -- ] || { usage >&2; exit 2; }
	shift
fi
[ -n "$DIR" ] || { usage >&2; exit 2; }
[ -d "$DIR" ] || { log "no such directory: $DIR"; exit 1; }
DIR=$(cd "$DIR" && pwd)

export GORPERF_REQUIRE_DEVICE=1
# A chunk freed into a thread's tcache still counts as in use in
# mallinfo2, and which thread holds what varies: with the caches the C
# heap the leak checks measure swings by tens of KiB between two points
# (seen: 70 KiB in TestServeManyNoLeaks, over its 64 KiB slack), without
# them by a few KiB.
export GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.tcache_count=0
if [ -n "${RXE_DEV:-}" ]; then
	export GORPERF_TEST_DEVICE=${GORPERF_TEST_DEVICE:-${RXE_DEV:-}}
fi

shopt -s nullglob
bins=("$DIR"/*.test)
if [ ${#bins[@]} -eq 0 ]; then
	log "no test binaries (*.test) in $DIR; build them with go test -c"
	exit 1
fi
log "${#bins[@]} binaries in $DIR, GORPERF_TEST_DEVICE=${GORPERF_TEST_DEVICE:-<any>}"

passed=0 failed=0 failures=()
for bin in "${bins[@]}"; do
	name=$(basename "$bin" .test)
	echo "=== $name"
	wd=$DIR
	if [ -f "$DIR/$name.srcdir" ]; then
		read -r wd <"$DIR/$name.srcdir"
		case $wd in /*) ;; *) wd=$DIR/$wd ;; esac
	fi
	start=$SECONDS
	if [ ! -x "$bin" ]; then
		echo "$bin is not executable"
		rc=126
	elif ! cd "$wd" 2>/dev/null; then
		echo "cannot enter its source directory $wd"
		rc=1
	else
		"$bin" -test.count=1 -test.timeout="${GORPERF_TEST_TIMEOUT:-10m}" "$@"
		rc=$?
	fi
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		echo "--- $name: ok ($((SECONDS - start))s)"
	else
		failed=$((failed + 1))
		failures+=("$name")
		echo "--- $name: FAIL, exit $rc ($((SECONDS - start))s)"
	fi
done

[ $failed -eq 0 ] || log "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
