#!/usr/bin/env bash
# ci/deps.sh - install what building and testing gorperf needs on Debian or
# Ubuntu: the rdma-core libraries and headers, and for the soft-RoCE VM qemu,
# a Debian kernel with rdma_rxe and static busybox. Installs only what is
# missing; without root it prints the apt-get line instead.
#
# usage: ci/deps.sh [build|vm]   (default: vm, which includes build)
set -euo pipefail

build=(gcc make pkg-config libibverbs-dev librdmacm-dev ibverbs-providers rdma-core
	ibverbs-utils rdmacm-utils perftest iproute2)
# The VM boots the host's distribution kernel; its modules may be
# compressed (xz, zstd), and the runner unpacks those it puts in the
# initramfs. Ubuntu's kernel metapackage is linux-image-generic, which
# brings the modules-extra package that holds rdma_rxe.
kernel=linux-image-amd64
if grep -qs '^ID=ubuntu' /etc/os-release; then
	kernel=linux-image-generic
fi
vm=(qemu-system-x86 "$kernel" busybox-static kmod cpio xz-utils zstd)

want=("${build[@]}")
[ "${1:-vm}" = vm ] && want+=("${vm[@]}")
missing=()
for p in "${want[@]}"; do
	s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$s" = "install ok installed" ] || missing+=("$p")
done
# The kernel package is a metapackage: any installed kernel with rdma_rxe will do.
if [[ " ${missing[*]} " == *" $kernel "* ]] &&
	compgen -G "/lib/modules/*/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null; then
	missing=("${missing[@]/$kernel/}")
fi
read -r -a missing <<<"${missing[*]}"
if [ ${#missing[@]} -eq 0 ]; then
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
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends ${missing[*]} >/dev/null
