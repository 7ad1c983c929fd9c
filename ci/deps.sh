#!/usr/bin/env bash
# ci/deps.sh - install what building and testing gorperf needs on Debian or
# Ubuntu: the rdma-core libraries and headers, and for the soft-RoCE VM qemu,
# a kernel with rdma_rxe and static busybox. Installs only what is missing:
# as root, or through `sudo -n` (sudo without a password); else it prints
# the apt-get line and exits 1. Then it compiles a C program against
# libibverbs and librdmacm, as cgo will, and exits 1 if that fails.
#
# usage: ci/deps.sh [build|vm]   (default: vm, which includes build)
set -euo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/kernel.sh"

# libc6-dev: gcc only recommends it, and without it cgo finds no stdlib.h.
# ca-certificates: go mod download's HTTPS (a bare debian:bookworm lacks it).
build=(gcc libc6-dev make pkg-config libibverbs-dev librdmacm-dev ibverbs-providers
	rdma-core ibverbs-utils rdmacm-utils perftest iproute2 ca-certificates)
# The VM boots a kernel installed here: one with both an image in /boot and
# rdma_rxe in /lib/modules (ci/kernel.sh, the VM runner's own test); its
# modules may be compressed (xz, zstd), and the runner unpacks those it puts
# in the initramfs. Without one, the distribution's kernel metapackage.
# procps: the guest sets sysctls.
vm=(qemu-system-x86 busybox-static kmod cpio xz-utils zstd procps)

mode=${1:-vm}
case $mode in
build | vm) ;;
*) echo "usage: ci/deps.sh [build|vm]" >&2; exit 2 ;;
esac
want=("${build[@]}")
[ "$mode" = vm ] && want+=("${vm[@]}")
missing=()
# Installed: dpkg's status letter (the second of Status-Abbrev) is i, for
# any of its architectures (Multi-Arch gives a line each), whatever the
# wanted state (a held package is "hi").
for p in "${want[@]}"; do
	s=$(dpkg-query -W -f='${db:Status-Abbrev}\n' "$p" 2>/dev/null || true)
	grep -q '^.i' <<<"$s" || missing+=("$p")
done
kernel=$(rxe_kernel_package)
# No kernel the VM can boot, or only ones without its virtio and 9p
# modules: the distribution's kernel, where it is not installed already.
if [ "$mode" = vm ] && { ! rxe_kernel || [ -n "$RXE_KVER_MISSING" ]; } &&
	! dpkg-query -W -f='${db:Status-Abbrev}\n' "$kernel" 2>/dev/null | grep -q '^.i'; then
	missing+=("$kernel")
fi
# as_root CMD...: CMD as root: directly, or through sudo -n where this user
# may sudo without a password (sudo_ok), which a CI runner's user can.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	else
		sudo -n "$@"
	fi
}
sudo_ok() { [ "$(id -u)" = 0 ] || { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; }
# kernel_check: after the packages, a kernel the VM can boot, or why not.
# qemu reads the image as this user: in CI (CI set), one that only root
# may read (Ubuntu's 0600) is made readable to all through sudo -n where
# that works; elsewhere the message says how, and the choice is the user's.
kernel_check() {
	[ "$mode" = vm ] || return 0
	if ! rxe_kernel; then
		echo "deps: no installed kernel has both /boot/vmlinuz-VERSION and rdma_rxe under /lib/modules/VERSION (after $kernel); the VM cannot boot" >&2
		return 1
	fi
	if [ -n "$RXE_KVER_MISSING" ]; then
		echo "deps: $(rxe_kernel_missing_msg)" >&2
		return 1
	fi
	if [ "$RXE_KVER_UNREADABLE" = 1 ] && [ -n "${CI:-}" ] && sudo_ok; then
		echo "deps: making /boot/vmlinuz-$RXE_KVER readable, for qemu: sudo -n chmod a+r /boot/vmlinuz-$RXE_KVER" >&2
		as_root chmod a+r "/boot/vmlinuz-$RXE_KVER" && rxe_kernel
	fi
	if [ "$RXE_KVER_UNREADABLE" = 1 ]; then
		echo "deps: $(rxe_kernel_unreadable_msg)" >&2
		return 1
	fi
	return 0
}
# toolchain_check: compile and link a C program against libibverbs and
# librdmacm, as cgo will; say why not where that fails.
toolchain_check() {
	local d out flags rc=0
	d=$(mktemp -d "${TMPDIR:-/tmp}/deps-cc.XXXXXX") || return 1
	printf '%s\n' '#include <stdlib.h>' '#include <infiniband/verbs.h>' '#include <rdma/rdma_cma.h>' \
		'int main(void) { return ibv_get_device_list(NULL) == NULL && rdma_create_event_channel() == NULL; }' >"$d/t.c"
	if ! flags=$(pkg-config --cflags --libs libibverbs librdmacm 2>&1); then
		echo "deps: pkg-config finds no libibverbs or librdmacm, so cgo cannot build the bindings: $flags" >&2
		rc=1
	# shellcheck disable=SC2086
	elif ! out=$(gcc -o "$d/t" "$d/t.c" $flags 2>&1); then
		echo "deps: gcc cannot compile and link a C program against libibverbs and librdmacm, so cgo cannot build the bindings:" >&2
		echo "$out" | tail -n 5 >&2
		if grep -q 'stdlib.h: No such file' <<<"$out"; then
			echo "deps: no C library headers: apt-get install libc6-dev" >&2
		fi
		rc=1
	fi
	rm -rf "$d"
	return $rc
}
if [ ${#missing[@]} -eq 0 ]; then
	rc=0
	kernel_check || rc=1
	toolchain_check || rc=1
	exit $rc
fi
line="apt-get install -y --no-install-recommends ${missing[*]}"
if ! sudo_ok; then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: fix: sudo apt-get update && sudo $line" >&2
	exit 1
fi
how=""
[ "$(id -u)" = 0 ] || how=" (sudo -n)"
echo "deps: installing${how} ${missing[*]}" >&2
# A fresh Ubuntu machine's apt-daily may hold apt's locks for minutes.
# DPkg::Lock::Timeout waits for dpkg's lock, but not for the lock of
# apt-get update's lists (/var/lib/apt/lists/lock), where apt-get fails at
# once (exit 100, "Could not get lock"): apt_get retries that, every
# DEPS_APT_LOCK_WAIT seconds (10) for DEPS_APT_LOCK_TRIES tries (60).
apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
apt_get() { # ARGS...: apt-get ARGS as root; its standard error is shown
	local i rc out wait=${DEPS_APT_LOCK_WAIT:-10} tries=${DEPS_APT_LOCK_TRIES:-60}
	for ((i = 1; ; i++)); do
		rc=0
		{ out=$(as_root "${apt[@]}" "$@" 2>&1 1>&3 3>&-); } 3>&1 || rc=$?
		if [ $rc != 100 ] || ! grep -qE 'Could not get lock|Unable to acquire|Unable to lock' <<<"$out"; then
			[ -z "$out" ] || printf '%s\n' "$out" >&2
			return $rc
		fi
		if [ "$i" -ge "$tries" ]; then
			printf '%s\n' "$out" >&2
			echo "deps: apt's lock was still held after $tries tries, $((tries * wait))s: giving up (is apt-daily or unattended-upgrades still running?)" >&2
			return $rc
		fi
		echo "deps: waiting for apt's lock (apt-daily?): apt-get $1 says: $(grep -m1 -E 'Could not get lock|Unable to' <<<"$out"); try $i of $tries, again in ${wait}s" >&2
		sleep "$wait"
	done
}
# A mirror in the middle of a sync (a hash sum mismatch), or a network not
# up yet (an index fetch that failed, then "Unable to locate package"),
# fails apt-get now and then on a fresh machine: the update and the
# install are tried DEPS_APT_TRIES times (3), DEPS_APT_RETRY_WAIT seconds
# (30) apart, each time from a new update.
apt_tries=${DEPS_APT_TRIES:-3}
for ((try = 1; ; try++)); do
	rc=0
	# shellcheck disable=SC2086
	{ apt_get update -qq && apt_get install -y -qq --no-install-recommends ${missing[*]} >/dev/null; } || rc=$?
	[ $rc != 0 ] || break
	if [ "$try" -ge "$apt_tries" ]; then
		[ "$apt_tries" = 1 ] || echo "deps: apt-get failed $apt_tries times (exit $rc): giving up" >&2
		exit $rc
	fi
	echo "deps: apt-get failed (exit $rc, above): trying again in ${DEPS_APT_RETRY_WAIT:-30}s, try $((try + 1)) of $apt_tries" >&2
	sleep "${DEPS_APT_RETRY_WAIT:-30}"
done
rc=0
kernel_check || rc=1
toolchain_check || rc=1
exit $rc
