# shellcheck shell=bash
# ci/kernel.sh - sourced by ci/deps.sh and ci/rxe-vm/run, so that both ask
# the same question: which installed kernel can the soft-RoCE VM boot, and
# which package brings one.
#
# rxe_kernel: sets RXE_KVER to the newest kernel version V that has both an
# image, /boot/vmlinuz-V, and the rdma_rxe module under /lib/modules/V
# (compressed or not), preferring one whose image this user can read (qemu
# reads it as this user); RXE_KVER_UNREADABLE=1 when the only such versions
# have images this user cannot read (Ubuntu installs them mode 0600), and
# RXE_KVER is then the newest of those. Returns 1, RXE_KVER empty, when no
# version has both.
rxe_kernel() {
	local k unreadable=""
	RXE_KVER="" RXE_KVER_UNREADABLE=0
	for k in $(ls -1 /lib/modules 2>/dev/null | sort -V -r); do
		[ -f "/boot/vmlinuz-$k" ] || continue
		compgen -G "/lib/modules/$k/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null || continue
		if [ -r "/boot/vmlinuz-$k" ]; then
			RXE_KVER=$k
			return 0
		fi
		[ -n "$unreadable" ] || unreadable=$k
	done
	if [ -n "$unreadable" ]; then
		RXE_KVER=$unreadable RXE_KVER_UNREADABLE=1
		return 0
	fi
	return 1
}

# rxe_kernel_package prints the package that installs a kernel with
# rdma_rxe: Ubuntu's linux-image-generic (which brings the modules-extra
# package that holds it) on Ubuntu and its derivatives (ID or ID_LIKE
# ubuntu: Mint, Pop!_OS), else Debian's linux-image-amd64.
rxe_kernel_package() {
	local ids
	ids=$(. /etc/os-release 2>/dev/null && echo " ${ID:-} ${ID_LIKE:-} ")
	case $ids in
	*" ubuntu "*) echo linux-image-generic ;;
	*) echo linux-image-amd64 ;;
	esac
}

# rxe_kernel_unreadable_msg: what to do about an image this user cannot read.
rxe_kernel_unreadable_msg() {
	echo "cannot read /boot/vmlinuz-$RXE_KVER, the kernel the VM boots (qemu reads it as this user): run as root, or sudo chmod a+r /boot/vmlinuz-$RXE_KVER"
}
