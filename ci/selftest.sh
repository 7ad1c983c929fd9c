#!/usr/bin/env bash
# ci/selftest.sh - checks of the CI scripts themselves that need no VM and
# no RDMA device (make ci-selftest; .ci/run runs it first). Programs the
# scripts call are replaced where a case needs another host: fake id, sudo,
# apt-get and dpkg-query for a user who may sudo, a failing gcc, an old go,
# a gorperf whose client fails. Nothing is installed and nothing is sent.
# The VM runner's own checks are make vm-selftest's.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
T=$(mktemp -d "${TMPDIR:-/tmp}/ci-selftest.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failures=0
pass() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
# fake DIR NAME BODY: an executable DIR/NAME running BODY under sh.
fake() {
	mkdir -p "$1"
	printf '#!/bin/sh\n%s\n' "$3" >"$1/$2"
	chmod +x "$1/$2"
}

# ---- deps.sh: a user who may sudo without a password gets the packages
# through sudo -n (it printed the sudo line and exited 1).
B=$T/sudoer
fake "$B" id 'if [ "$1" = -u ]; then echo 1000; else exec /usr/bin/id "$@"; fi'
fake "$B" sudo 'echo "sudo $*" >>'"$T"'/sudo.log
[ "$1" = -n ] || exit 1
shift
exec "$@"'
fake "$B" apt-get 'echo "apt-get $*" >>'"$T"'/sudo.log'
# Every package installed but perftest (dpkg-query's ${db:Status-Abbrev}).
fake "$B" dpkg-query 'for a; do p=$a; done
[ "$p" = perftest ] || printf "ii \n"'
out=$(PATH=$B:$PATH ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 0 ] && grep -q '^sudo -n env DEBIAN_FRONTEND=noninteractive apt-get .* install .*--no-install-recommends perftest$' "$T/sudo.log"; then
	pass "deps.sh: a user who may sudo installs through sudo -n"
else
	fail "deps.sh as a user who may sudo: exit $rc, want 0 and apt-get install through sudo -n"
	echo "$out"
	cat "$T/sudo.log" 2>/dev/null
fi
# Where sudo asks for a password: the line to run, exit 1.
fake "$B" sudo 'exit 1'
out=$(PATH=$B:$PATH ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q 'deps: fix: sudo apt-get update && sudo apt-get install -y --no-install-recommends perftest' <<<"$out"; then
	pass "deps.sh: a user who may not sudo is told the line to run"
else
	fail "deps.sh as a user who may not sudo: exit $rc, want 1 and the apt-get line"
	echo "$out"
fi

# apt-daily holds apt's lists lock: apt-get update fails at once (exit
# 100), and DPkg::Lock::Timeout does not wait for it. deps.sh waits and
# tries again (it died with the first failure).
: >"$T/sudo.log"
fake "$B" sudo 'echo "sudo $*" >>'"$T"'/sudo.log
[ "$1" = -n ] || exit 1
shift
exec "$@"'
fake "$B" apt-get 'echo "apt-get $*" >>'"$T"'/sudo.log
n=$(cat '"$T"'/apt.count 2>/dev/null || echo 0)
echo $((n + 1)) >'"$T"'/apt.count
if [ "$n" -lt 2 ]; then
	echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)" >&2
	echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
	exit 100
fi'
out=$(PATH=$B:$PATH DEPS_APT_LOCK_WAIT=0 ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 0 ] && [ "$(grep -c "waiting for apt's lock (apt-daily?)" <<<"$out")" = 2 ] &&
	[ "$(grep -c '^apt-get .* update -qq$' "$T/sudo.log")" = 3 ] && grep -q ' install .*perftest$' "$T/sudo.log"; then
	pass "deps.sh: apt-get update that finds apt's lock held is tried again"
else
	fail "deps.sh with apt's lock held twice: exit $rc, want 0, two waits, three updates and an install"
	echo "$out"
	cat "$T/sudo.log"
fi
# Held for good: it gives up after DEPS_APT_LOCK_TRIES tries, with apt's error.
: >"$T/sudo.log"
echo -1000 >"$T/apt.count"
out=$(PATH=$B:$PATH DEPS_APT_LOCK_WAIT=0 DEPS_APT_LOCK_TRIES=3 ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 100 ] && [ "$(grep -c '^apt-get .* update -qq$' "$T/sudo.log")" = 3 ] && ! grep -q ' install ' "$T/sudo.log" &&
	grep -q "apt's lock was still held after 3 tries" <<<"$out" && grep -q 'E: Could not get lock' <<<"$out"; then
	pass "deps.sh: apt's lock held for good: it gives up after its tries, with apt's error"
else
	fail "deps.sh with apt's lock held for good: exit $rc, want 100 after 3 updates"
	echo "$out"
	cat "$T/sudo.log"
fi
# Another failure of apt-get (exit 100 too) is not taken for the lock.
: >"$T/sudo.log"
fake "$B" apt-get 'echo "apt-get $*" >>'"$T"'/sudo.log
echo "E: Unable to locate package perftest" >&2
exit 100'
out=$(PATH=$B:$PATH DEPS_APT_LOCK_WAIT=0 ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 100 ] && [ "$(grep -c '^apt-get ' "$T/sudo.log")" = 1 ] && ! grep -q "waiting for apt's lock" <<<"$out" &&
	grep -q 'E: Unable to locate package perftest' <<<"$out"; then
	pass "deps.sh: another apt-get failure fails at once, with apt's error"
else
	fail "deps.sh with apt-get install failing: exit $rc, want 100 at once"
	echo "$out"
	cat "$T/sudo.log"
fi
# A held package ("hi") is installed; a package of two architectures
# (Multi-Arch) is one installed: neither is installed again (they were).
: >"$T/sudo.log"
fake "$B" dpkg-query 'for a; do p=$a; done
case $p in
perftest) printf "hi \n" ;;
gcc) printf "ii \nii \n" ;;
*) printf "ii \n" ;;
esac'
out=$(PATH=$B:$PATH ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 0 ] && [ ! -s "$T/sudo.log" ]; then
	pass "deps.sh: a held package, and one of two architectures, count as installed"
else
	fail "deps.sh with perftest held and gcc of two architectures: exit $rc, want 0 and nothing installed"
	echo "$out"
	cat "$T/sudo.log"
fi

# ---- deps.sh: it proves that cgo can compile: a gcc that finds no
# stdlib.h (gcc without libc6-dev) fails it, with the package to install.
C=$T/noheaders
fake "$C" dpkg-query 'printf "ii \n"'
fake "$C" gcc 'echo "t.c:1:10: fatal error: stdlib.h: No such file or directory" >&2; exit 1'
out=$(PATH=$C:$PATH ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q 'no C library headers: apt-get install libc6-dev' <<<"$out"; then
	pass "deps.sh: a C compiler without headers fails it, naming libc6-dev"
else
	fail "deps.sh with gcc finding no stdlib.h: exit $rc, want 1 naming libc6-dev"
	echo "$out"
fi
rm "$C/gcc"
out=$(PATH=$C:$PATH ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 0 ]; then
	pass "deps.sh: this host's gcc compiles and links against libibverbs and librdmacm"
else
	fail "deps.sh's toolchain check on this host: exit $rc"
	echo "$out"
fi

# ---- go-version.sh: an older Go than go.mod's is refused, this one taken.
G=$T/oldgo
fake "$G" go 'case "$1 $2" in
"env GOVERSION") echo go1.19.8 ;;
"env GOROOT") echo '"$T"'/goroot ;;
*) exit 2 ;;
esac'
mkdir -p "$T/goroot/bin"
out=$(PATH=$G:$PATH ci/go-version.sh 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q "is go1.19.8, but go.mod says go $(sed -n 's/^go //p' go.mod)" <<<"$out"; then
	pass "go-version.sh: Go 1.19.8 first on PATH is refused"
else
	fail "go-version.sh with Go 1.19.8: exit $rc, want 1 and the two versions"
	echo "$out"
fi
if out=$(ci/go-version.sh 2>&1); then
	pass "go-version.sh: $(go env GOVERSION) is taken"
else
	fail "go-version.sh refused this host's $(go env GOVERSION): $out"
fi

# ---- make fmt-check: a GOROOT without gofmt fails it (it passed).
out=$(make -s --no-print-directory fmt-check GO="$G/go" 2>&1)
rc=$?
if [ $rc != 0 ] && grep -q "fmt-check: $T/goroot/bin/gofmt -l . failed" <<<"$out"; then
	pass "make fmt-check: a missing gofmt fails it"
else
	fail "make fmt-check with no gofmt: exit $rc, want a failure"
	echo "$out"
fi

# ---- demo.sh: when a benchmark's client fails, the server's output is
# printed (it was left in the guest's tmpfs).
D=$T/demo
fake "$D" gorperf 'case "$*" in
devices* | doctor*) echo "$1: fake" ;;
*"-p 18515"*) echo "fake server: QP went to the error state"; exit 3 ;;
*) echo "fake client: connection refused" >&2; exit 1 ;;
esac'
out=$(RXE_DEV=rxe0 RXE_DEV2=rxe1 RXE_IP=198.18.0.1 RXE_IP2=198.18.0.2 timeout 60 ci/demo.sh "$D" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q 'server: fake server: QP went to the error state' <<<"$out"; then
	pass "demo.sh: a failed benchmark prints the server's output"
else
	fail "demo.sh with a failing client: exit $rc, want 1 and the server's output"
	echo "$out"
fi
fake "$D" gorperf 'echo "fake gorperf $*"'
out=$(RXE_DEV=rxe0 RXE_DEV2=rxe1 RXE_IP=198.18.0.1 RXE_IP2=198.18.0.2 timeout 60 ci/demo.sh "$D" 2>&1)
rc=$?
if [ $rc = 0 ] && [ "$(grep -c '^fake gorperf .*-d rxe1' <<<"$out")" = 3 ] && ! grep -q server: <<<"$out"; then
	pass "demo.sh: three benchmarks that succeed, without the server's output"
else
	fail "demo.sh with a gorperf that succeeds: exit $rc, want 0 and three clients"
	echo "$out"
fi

# doctor may fail a check (exit 1): the benchmarks still run. A doctor
# that crashes (a Go panic exits 2) fails the demo (it was ignored).
fake "$D" gorperf 'case "$1" in
doctor) echo "doctor: [FAIL] fake"; exit 1 ;;
*) echo "fake gorperf $*" ;;
esac'
out=$(RXE_DEV=rxe0 RXE_DEV2=rxe1 RXE_IP=198.18.0.1 RXE_IP2=198.18.0.2 timeout 60 ci/demo.sh "$D" 2>&1)
rc=$?
if [ $rc = 0 ] && [ "$(grep -c '^fake gorperf .*-d rxe1' <<<"$out")" = 3 ]; then
	pass "demo.sh: a doctor that fails a check (exit 1) does not stop the benchmarks"
else
	fail "demo.sh with doctor exit 1: exit $rc, want 0 and three clients"
	echo "$out"
fi
fake "$D" gorperf 'case "$1" in
doctor) echo "panic: fake" >&2; exit 2 ;;
*) echo "fake gorperf $*" ;;
esac'
out=$(RXE_DEV=rxe0 RXE_DEV2=rxe1 RXE_IP=198.18.0.1 RXE_IP2=198.18.0.2 timeout 60 ci/demo.sh "$D" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q 'gorperf doctor failed (exit 2)' <<<"$out" && ! grep -q '^fake gorperf .*-d rxe1' <<<"$out"; then
	pass "demo.sh: a doctor that crashes (exit 2) fails the demo"
else
	fail "demo.sh with doctor exit 2: exit $rc, want 1 and the doctor's failure"
	echo "$out"
fi

echo "ci-selftest: $failures failed"
[ $failures = 0 ]
