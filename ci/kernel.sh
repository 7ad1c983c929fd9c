# shellcheck shell=bash
# ci/kernel.sh - sourced by ci/deps.sh and ci/rxe-vm/run, so that both ask
# the same question: which installed kernel can the soft-RoCE VM boot, and
# which package brings one.
#
# RXE_SYSROOT: a directory that stands for / in the kernel's paths below
# and in ci/rxe-vm/run (unset: /), for ci/selftest.sh's fake kernels.
RXE_SYSROOT=${RXE_SYSROOT:-}

# RXE_VM_MODULES: the modules the VM's initramfs loads, in this order, from
# /lib/modules/V/kernel/ (compressed or not): virtio's PCI transport and 9p
# over it, with which the guest mounts the host's root. Those in
# RXE_VM_MODULES_NEEDED the guest cannot do without, so each must be a
# module file or built in (listed in /lib/modules/V/modules.builtin); the
# others some kernels split out of those, or need only in some versions,
# and where a kernel has none it does not need them.
RXE_VM_MODULES=(drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev
	drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci fs/netfs/netfs
	fs/fscache/fscache net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p)
RXE_VM_MODULES_NEEDED=(drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci
	net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p)

# rxe_vm_modules_missing V: prints the names of the modules of
# RXE_VM_MODULES_NEEDED that kernel V has neither as a file nor built in.
rxe_vm_modules_missing() {
	local d=$RXE_SYSROOT/lib/modules/$1 m out=""
	for m in "${RXE_VM_MODULES_NEEDED[@]}"; do
		compgen -G "$d/kernel/$m.ko*" >/dev/null && continue
		grep -qxF "kernel/$m.ko" "$d/modules.builtin" 2>/dev/null && continue
		out+="${out:+ }${m##*/}"
	done
	[ -z "$out" ] || echo "$out"
}

# rxe_kernel: sets RXE_KVER to the newest kernel version V that has both an
# image, /boot/vmlinuz-V, and the rdma_rxe module under /lib/modules/V
# (compressed or not), preferring one whose image this user can read (qemu
# reads it as this user) and, before that, one that has the modules the VM
# needs (rxe_vm_modules_missing). RXE_KVER_UNREADABLE=1 when the one it
# takes has an image this user cannot read (Ubuntu installs them mode
# 0600); RXE_KVER_MISSING the modules that one lacks, where no such
# version has them all. Returns 1, RXE_KVER empty, when no version has both.
rxe_kernel() {
	local k r miss best="" best_rank=9 rank
	RXE_KVER="" RXE_KVER_UNREADABLE=0 RXE_KVER_MISSING=""
	for k in $(ls -1 "$RXE_SYSROOT/lib/modules" 2>/dev/null | sort -V -r); do
		[ -f "$RXE_SYSROOT/boot/vmlinuz-$k" ] || continue
		compgen -G "$RXE_SYSROOT/lib/modules/$k/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko*" >/dev/null || continue
		r=0
		[ -r "$RXE_SYSROOT/boot/vmlinuz-$k" ] || r=1
		miss=$(rxe_vm_modules_missing "$k")
		# 0: all there; 1: unreadable (chmod fixes it); 2, 3: modules missing
		rank=$r
		[ -z "$miss" ] || rank=$((rank + 2))
		if [ $rank -lt $best_rank ]; then
			best=$k best_rank=$rank
			RXE_KVER_UNREADABLE=$r RXE_KVER_MISSING=$miss
		fi
		[ $rank != 0 ] || break
	done
	[ -n "$best" ] || return 1
	RXE_KVER=$best
	return 0
}

# rxe_kernel_missing_msg: what to do about a kernel, RXE_KVER, without the
# modules RXE_KVER_MISSING.
rxe_kernel_missing_msg() {
	echo "kernel $RXE_KVER has neither a module file under /lib/modules/$RXE_KVER/kernel nor a built-in entry (modules.builtin) for: $RXE_KVER_MISSING; the VM needs them to mount the host's root over virtio-9p: install the distribution's kernel (apt-get install $(rxe_kernel_package)), or name one that has them with RXE_VM_KVER=VERSION"
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
	echo "cannot read $RXE_SYSROOT/boot/vmlinuz-$RXE_KVER, the kernel the VM boots (qemu reads it as this user): run as root, or sudo chmod a+r $RXE_SYSROOT/boot/vmlinuz-$RXE_KVER"
}
