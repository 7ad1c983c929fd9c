#!/usr/bin/env bash
# ci/selftest.sh - checks of the CI scripts themselves that need no VM and
# no RDMA device (make ci-selftest; .ci/run runs it first). Programs the
# scripts call are replaced where a case needs another host: fake id, sudo,
# apt-get and dpkg-query for a user who may sudo, a failing gcc, an old go,
# a gorperf whose client fails, a qemu that starts nothing and a fake root
# of kernels (RXE_SYSROOT) for the VM runner, a go and a VM for make.
# Nothing is installed and nothing is sent. The VM runner's checks that
# boot the VM are make vm-selftest's.
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
out=$(PATH=$B:$PATH DEPS_APT_LOCK_WAIT=0 DEPS_APT_LOCK_TRIES=3 DEPS_APT_TRIES=1 ci/deps.sh build 2>&1)
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
out=$(PATH=$B:$PATH DEPS_APT_LOCK_WAIT=0 DEPS_APT_TRIES=2 DEPS_APT_RETRY_WAIT=0 ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 100 ] && [ "$(grep -c '^apt-get ' "$T/sudo.log")" = 2 ] && ! grep -q "waiting for apt's lock" <<<"$out" &&
	grep -q 'E: Unable to locate package perftest' <<<"$out" && grep -q 'trying again in 0s, try 2 of 2' <<<"$out" &&
	grep -q 'apt-get failed 2 times (exit 100): giving up' <<<"$out"; then
	pass "deps.sh: another apt-get failure is not taken for the lock: tried again from the update, then given up, with apt's error"
else
	fail "deps.sh with apt-get failing for good: exit $rc, want 100 after 2 tries, no lock wait"
	echo "$out"
	cat "$T/sudo.log"
fi
# A mirror mid-sync fails one install: the next try, from a new update,
# installs.
: >"$T/sudo.log"
rm -f "$T/apt.count"
fake "$B" apt-get 'echo "apt-get $*" >>'"$T"'/sudo.log
n=$(cat '"$T"'/apt.count 2>/dev/null || echo 0)
echo $((n + 1)) >'"$T"'/apt.count
if [ "$n" = 1 ]; then
	echo "E: Failed to fetch http://deb.debian.org/debian/pool/main/p/perftest/perftest.deb  Hash Sum mismatch" >&2
	exit 100
fi'
out=$(PATH=$B:$PATH DEPS_APT_RETRY_WAIT=0 ci/deps.sh build 2>&1)
rc=$?
if [ $rc = 0 ] && [ "$(grep -c '^apt-get .* update -qq$' "$T/sudo.log")" = 2 ] &&
	[ "$(grep -c '^apt-get .* install .*perftest$' "$T/sudo.log")" = 2 ] && grep -q 'Hash Sum mismatch' <<<"$out"; then
	pass "deps.sh: an install that fails once (a mirror mid-sync) is tried again from a new update"
else
	fail "deps.sh with an install failing once: exit $rc, want 0 after two updates and two installs"
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

# ---- rxe-vm/run and kernel.sh: which kernel the VM boots, and its
# initramfs, in a fake root (RXE_SYSROOT) with a qemu that starts nothing.
# mkkernel VER FILE...: a kernel VER with an image, rdma_rxe (unless
# FILE is -norxe) and the module FILEs under kernel/; builtin:PATH lines
# go to its modules.builtin.
S=$T/sysroot
mkkernel() {
	local v=$1 f
	shift
	mkdir -p "$S/boot" "$S/lib/modules/$v/kernel/drivers/infiniband/sw/rxe"
	echo "fake kernel $v" >"$S/boot/vmlinuz-$v"
	: >"$S/lib/modules/$v/modules.builtin"
	[ "${1:-}" = -norxe ] && shift || : >"$S/lib/modules/$v/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko"
	for f; do
		case $f in
		builtin:*) echo "${f#builtin:}" >>"$S/lib/modules/$v/modules.builtin" ;;
		*) mkdir -p "$(dirname "$S/lib/modules/$v/kernel/$f")" && echo "module $f" >"$S/lib/modules/$v/kernel/$f" ;;
		esac
	done
}
virtio9p=(drivers/virtio/virtio_ring.ko drivers/virtio/virtio.ko drivers/virtio/virtio_pci.ko
	net/9p/9pnet.ko net/9p/9pnet_virtio.ko fs/9p/9p.ko)
mkkernel 6.1.0-9-amd64 "${virtio9p[@]}" fs/netfs/netfs.ko
# newer, but without virtio and 9p (it had them neither as files nor built in)
mkkernel 6.9.0-1-amd64
# newer still, without rdma_rxe
mkkernel 6.12.0-1-amd64 -norxe "${virtio9p[@]}"
Q=$T/fakeqemu
fake "$Q" qemu-system-x86_64 'echo "$*" >'"$T"'/qemu.args'
# vmrun ENV...: the runner in the fake root, its output in $out, exit in $rc.
vmrun() {
	out=$(env PATH="$Q:$PATH" RXE_SYSROOT="$S" RXE_VM_CACHE="$T/vmcache" RXE_VM_ACCEL=tcg "$@" \
		ci/rxe-vm/run -t 30 -- true 2>&1)
	rc=$?
}
vmrun
if [ $rc = 126 ]; then
	echo "skip: rxe-vm/run: this host lacks packages the VM needs: $out"
else
	# It takes the older kernel, which has the modules the guest needs,
	# and builds an initramfs with them, its init and busybox.
	list=$(zcat "$T"/vmcache/initramfs-6.1.0-9-amd64-*.cpio.gz 2>/dev/null | cpio -t --quiet 2>/dev/null)
	if [ $rc = 125 ] && grep -q 'the guest reported no exit code' <<<"$out" &&
		grep -q -- "-kernel $S/boot/vmlinuz-6.1.0-9-amd64 " "$T/qemu.args" &&
		grep -qx mods/9p.ko <<<"$list" && grep -qx mods/netfs.ko <<<"$list" &&
		grep -qx init <<<"$list" && grep -qx bin/busybox <<<"$list"; then
		pass "rxe-vm/run: the newest kernel with rdma_rxe and the guest's modules is booted, with them in its initramfs"
	else
		fail "rxe-vm/run with kernels 6.12 (no rdma_rxe), 6.9 (no 9p) and 6.1: exit $rc, want 125 (fake qemu) and 6.1 booted"
		echo "$out"
		cat "$T/qemu.args"
		echo "$list"
	fi
	# Only a kernel without 9p: named, with its missing modules (virtio
	# built in is not missing), and what to do (it booted, and the guest
	# could not mount its root).
	rm -rf "$S/lib/modules/6.1.0-9-amd64" "$S/boot/vmlinuz-6.1.0-9-amd64"
	printf 'kernel/%s\n' drivers/virtio/virtio_ring.ko drivers/virtio/virtio.ko drivers/virtio/virtio_pci.ko \
		>"$S/lib/modules/6.9.0-1-amd64/modules.builtin"
	rm -f "$T/qemu.args"
	vmrun
	if [ $rc = 125 ] && grep -q 'kernel 6.9.0-1-amd64 has neither a module file .* for: 9pnet 9pnet_virtio 9p;' <<<"$out" &&
		grep -q 'RXE_VM_KVER=VERSION' <<<"$out" && [ ! -e "$T/qemu.args" ]; then
		pass "rxe-vm/run: a kernel without the 9p modules is refused, naming them"
	else
		fail "rxe-vm/run with a kernel without 9p: exit $rc, want 125 naming 9pnet 9pnet_virtio 9p"
		echo "$out"
	fi
	# RXE_VM_KVER: a kernel that is not there, and one without rdma_rxe.
	vmrun RXE_VM_KVER=7.0-nope
	if [ $rc = 125 ] && grep -q "RXE_VM_KVER=7.0-nope: no such kernel image, $S/boot/vmlinuz-7.0-nope" <<<"$out"; then
		pass "rxe-vm/run: RXE_VM_KVER of a kernel that is not installed: no such kernel image"
	else
		fail "rxe-vm/run with RXE_VM_KVER=7.0-nope: exit $rc, want 125 and no such kernel image"
		echo "$out"
	fi
	vmrun RXE_VM_KVER=6.12.0-1-amd64
	if [ $rc = 125 ] && grep -q 'RXE_VM_KVER=6.12.0-1-amd64: this kernel has no rdma_rxe' <<<"$out"; then
		pass "rxe-vm/run: RXE_VM_KVER of a kernel without rdma_rxe is refused"
	else
		fail "rxe-vm/run with RXE_VM_KVER=6.12.0-1-amd64 (no rdma_rxe): exit $rc, want 125 naming rdma_rxe"
		echo "$out"
	fi
	# An initramfs that fails to build (cpio fails) fails the run, and
	# leaves nothing in the cache (it left its temporary file).
	mkkernel 6.1.0-9-amd64 "${virtio9p[@]}"
	rm -rf "$T/vmcache"
	fake "$Q" cpio 'exit 1'
	vmrun
	rm "$Q/cpio"
	if [ $rc = 125 ] && grep -q 'could not build the initramfs' <<<"$out" && [ -z "$(ls -A "$T/vmcache")" ]; then
		pass "rxe-vm/run: an initramfs that fails to build fails the run, and leaves nothing in the cache"
	else
		fail "rxe-vm/run with cpio failing: exit $rc, want 125 and an empty cache"
		echo "$out"
		ls -A "$T/vmcache"
	fi
	# A module compressed with zstd where there is no zstd: the package to
	# install (exit 126), as for the runner's other tools.
	mv "$S/lib/modules/6.1.0-9-amd64/kernel/fs/9p/9p.ko" "$S/lib/modules/6.1.0-9-amd64/kernel/fs/9p/9p.ko.zst"
	NZ=$T/nozstd
	mkdir -p "$NZ"
	# each program on PATH but zstd and xz (ln takes the first of a name)
	ln -s /usr/local/bin/* /usr/sbin/* /usr/bin/* /sbin/* /bin/* "$NZ/" 2>/dev/null
	rm -f "$NZ/zstd" "$NZ/xz"
	out=$(env PATH="$Q:$NZ" RXE_SYSROOT="$S" RXE_VM_CACHE="$T/vmcache" ci/rxe-vm/run -t 30 -- true 2>&1)
	rc=$?
	if [ $rc = 126 ] && grep -q 'apt-get install -y --no-install-recommends zstd$' <<<"$out"; then
		pass "rxe-vm/run: modules compressed with zstd, and no zstd: the package to install"
	else
		fail "rxe-vm/run with 9p.ko.zst and no zstd: exit $rc, want 126 and zstd's apt-get line"
		echo "$out"
	fi
fi

# ---- kernel.sh: rxe_kernel takes the newest kernel with rdma_rxe whose
# image this user can read and that has the guest's modules (built in
# counts), else says which it lacks.
rm -rf "$S"
mkkernel 6.1.0-9-amd64 $(printf 'builtin:kernel/%s ' "${virtio9p[@]}")
mkkernel 6.9.0-1-amd64 drivers/virtio/virtio.ko
got=$(RXE_SYSROOT=$S bash -c '. ci/kernel.sh && rxe_kernel && echo "$RXE_KVER [$RXE_KVER_MISSING]"' 2>&1)
if [ "$got" = "6.1.0-9-amd64 []" ]; then
	pass "kernel.sh: rxe_kernel prefers an older kernel that has the guest's modules (built in) to a newer without"
else
	fail "kernel.sh's rxe_kernel with 6.9 (no 9p) and 6.1 (all built in): got '$got', want 6.1.0-9-amd64 []"
fi
rm -rf "$S/lib/modules/6.1.0-9-amd64"
got=$(RXE_SYSROOT=$S bash -c '. ci/kernel.sh && rxe_kernel && echo "$RXE_KVER [$RXE_KVER_MISSING]"' 2>&1)
if [ "$got" = "6.9.0-1-amd64 [virtio_ring virtio_pci 9pnet 9pnet_virtio 9p]" ]; then
	pass "kernel.sh: rxe_kernel names the modules a kernel lacks"
else
	fail "kernel.sh's rxe_kernel with only 6.9 (virtio alone): got '$got'"
fi

# ---- make bench beside make device-tests in one checkout: the second
# waits for the first (its test-binaries removed and rebuilt the binaries
# the first's run was using). A fake go builds a test binary in 1s, a fake
# VM runs it for 2s and checks that it is still the one it started.
M=$T/make
fake "$M" go 'case $1 in
list) echo "example.com/p example.com/internal/rdmatest" ;;
test) for a; do [ "$prev" = -o ] && out=$a; prev=$a; done; sleep 1; echo "bin $$" >"$out" ;;
esac'
fake "$M" vm 'for a; do [ "$prev" = ci/device-tests.sh ] && tb=$a; prev=$a; done
b=$(cat "$tb/example.com_p.test")
echo "start $b" >>'"$T"'/vm.log
sleep 2
if [ "$(cat "$tb/example.com_p.test")" = "$b" ]; then echo "ok $b" >>'"$T"'/vm.log; else echo "changed $b" >>'"$T"'/vm.log; exit 1; fi'
mk() { make -s --no-print-directory "$@" BUILD="$T/mkbuild" GO="$M/go" VM="$M/vm" HAVE_DEVICE= >>"$T/make.out" 2>&1; }
mk bench &
p1=$!
sleep 1.5
mk device-tests
rc2=$?
wait $p1
rc1=$?
if [ $rc1 = 0 ] && [ $rc2 = 0 ] && [ "$(cut -d' ' -f1 "$T/vm.log" | tr '\n' ' ')" = "start ok start ok " ] &&
	grep -q 'make: waiting for .*/mkbuild/.lock' "$T/make.out"; then
	pass "make bench and make device-tests at once in one checkout: the second waits for the first"
else
	fail "make bench and make device-tests at once: exits $rc1 and $rc2, want 0 and 0, and one run after the other, each with its binary"
	cat "$T/vm.log" "$T/make.out"
fi

echo "ci-selftest: $failures failed"
[ $failures = 0 ]
