#!/usr/bin/env bash
# ci/deps.sh - install what building and testing gorperf needs on Debian or
# Ubuntu: the rdma-core libraries and headers, and for the soft-RoCE VM qemu,
# a kernel with rdma_rxe and static busybox. Installs only what is missing;
# without root it prints the apt-get line instead.
#
# usage: ci/deps.sh [build|vm]   (default: vm, which includes build)
set -euo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/kernel.sh"

build=(gcc make pkg-config libibverbs-dev librdmacm-dev ibverbs-providers rdma-core
	ibverbs-utils rdmacm-utils perftest iproute2)
# The VM boots a kernel installed here: one with both an image in /boot and
# rdma_rxe in /lib/modules (ci/kernel.sh, the VM runner's own test); its
# modules may be compressed (xz, zstd), and the runner unpacks those it puts
# in the initramfs. Without one, the distribution's kernel metapackage.
# procps: the guest sets sysctls.
vm=(qemu-system-x86 busybox-static kmod cpio xz-utils zstd procps)

mode=${1:-vm}
want=("${build[@]}")
[ "$mode" = vm ] && want+=("${vm[@]}")
missing=()
for p in "${want[@]}"; do
	s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$s" = "install ok installed" ] || missing+=("$p")
done
kernel=$(rxe_kernel_package)
if [ "$mode" = vm ] && ! rxe_kernel; then
	missing+=("$kernel")
fi
# kernel_check: after the packages, a kernel the VM can boot, or why not.
kernel_check() {
	[ "$mode" = vm ] || return 0
	if ! rxe_kernel; then
		echo "deps: no installed kernel has both /boot/vmlinuz-VERSION and rdma_rxe under /lib/modules/VERSION (after $kernel); the VM cannot boot" >&2
		return 1
	fi
	if [ "$RXE_KVER_UNREADABLE" = 1 ]; then
		echo "deps: $(rxe_kernel_unreadable_msg)" >&2
		return 1
	fi
	return 0
}
if [ ${#missing[@]} -eq 0 ]; then
	kernel_check
	exit 0
fi
line="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages: ${missing[*]}" >&2
	echo "deps: fix: sudo apt-get update && sudo $line" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh Ubuntu machine's apt-daily may hold the lock for minutes: wait.
lock=(-o DPkg::Lock::Timeout=600)
apt-get "${lock[@]}" update -qq
# shellcheck disable=SC2086
apt-get "${lock[@]}" install -y -qq --no-install-recommends ${missing[*]} >/dev/null
kernel_check
