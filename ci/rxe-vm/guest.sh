#!/bin/bash
# Stage 2 of the rxe-vm guest, PID 1 on the host's read-only root: set up
# rdma_rxe and the veth pair, run the command, report its exit code, power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin
export HOME=/tmp/home LANG=C.UTF-8 TERM=dumb
X=/run/rxe-vm
poweroff_now() {
	sync
	umount "$X" 2>/dev/null
	echo o >/proc/sysrq-trigger
	sleep 30
}
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=1777 tmpfs /var/tmp
mkdir -p /dev/pts /dev/shm "$X" "$HOME"
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
o9p=trans=virtio,version=9p2000.L,msize=512000,cache=mmap
if ! mount -t 9p -o "$o9p" xfer "$X"; then
	echo "rxe-vm guest: cannot mount the transfer share" >/dev/console
	poweroff_now
fi
. "$X/params"
echo "ready=$(cut -d' ' -f1 /proc/uptime)" >>"$X/timing"

# wait_gid DEV: print the index of DEV's RoCE v2 GID that maps an IPv4 address
wait_gid() {
	local dev=$1 g=/sys/class/infiniband/$1/ports/1 i idx t v
	for i in $(seq 1 100); do
		for idx in $(ls "$g/gids" 2>/dev/null | sort -n); do
			read -r t <"$g/gid_attrs/types/$idx" 2>/dev/null || continue
			read -r v <"$g/gids/$idx" 2>/dev/null || continue
			case $v in 0000:0000:0000:0000:0000:ffff:*)
				[ "$t" = "RoCE v2" ] && { echo "$idx"; return 0; } ;;
			esac
		done
		sleep 0.05
	done
	echo "rxe-vm guest: $dev has no IPv4 RoCE v2 GID after 5s" >&2
	return 1
}

setup() {
	set -e
	mkdir -p "$WORKDIR"
	mount -t 9p -o "$o9p" work "$WORKDIR"
	ip link set lo up
	modprobe -a veth
	ip link add rxeveth0 type veth peer name rxeveth1
	ip addr add 198.18.0.1/24 dev rxeveth0
	ip addr add 198.18.0.2/24 dev rxeveth1
	ip link set rxeveth0 mtu "$MTU"
	ip link set rxeveth1 mtu "$MTU"
	ip link set rxeveth0 up
	ip link set rxeveth1 up
	env="export RXE_VM=1 RXE_IP=198.18.0.1 RXE_PEER_IP=198.18.0.2"
	if [ "$NONE" = 1 ]; then
		echo "$env" >/run/rxe-vm-env
		return 0
	fi
	modprobe -a rdma_rxe ib_uverbs rdma_ucm ib_umad
	if [ "$TWO" = 1 ]; then
		# Both ends stay in the root namespace (rxe on this kernel works only
		# there); policy routing sends traffic for each address out of the
		# other end, so it crosses the veth pair as between two hosts.
		for k in all default rxeveth0 rxeveth1; do
			sysctl -qw net.ipv4.conf.$k.accept_local=1 net.ipv4.conf.$k.rp_filter=0
		done
		ip rule add pref 100 lookup local
		ip rule del pref 0
		ip rule add pref 10 to 198.18.0.1 iif lo lookup 101
		ip rule add pref 11 to 198.18.0.2 iif lo lookup 102
		ip route add 198.18.0.1 dev rxeveth1 src 198.18.0.2 table 101
		ip route add 198.18.0.2 dev rxeveth0 src 198.18.0.1 table 102
	fi
	rdma link add rxe0 type rxe netdev rxeveth0
	env="$env RXE_DEV=rxe0 RXE_NETDEV=rxeveth0 RXE_GID_INDEX=$(wait_gid rxe0)"
	# An IPv6 address for the IPv6 tests (RFC 5180's benchmarking prefix),
	# on rxe0's netdev only: rxe0 reaches it itself, and the VM has no
	# other NIC. Its GID follows the IPv4 one, which stays the default.
	# Kept when the link goes down: a test takes the port down and up.
	sysctl -qw net.ipv6.conf.rxeveth0.keep_addr_on_down=1
	ip -6 addr add 2001:2::1/64 dev rxeveth0 nodad
	env="$env RXE_IP6=2001:2::1"
	if [ "$TWO" = 1 ]; then
		rdma link add rxe1 type rxe netdev rxeveth1
		env="$env RXE_DEV2=rxe1 RXE_NETDEV2=rxeveth1 RXE_IP2=198.18.0.2 RXE_GID_INDEX2=$(wait_gid rxe1)"
	fi
	echo "$env" >/run/rxe-vm-env
}
# Not as an if's condition: there bash ignores set -e, even in the
# subshell, and a failed step would go unnoticed.
(setup) >"$X/setup.log" 2>&1
setup_rc=$?
if [ "$setup_rc" -ne 0 ]; then
	echo "setup failed (exit $setup_rc)" >>"$X/setup.log"
	cp "$X/setup.log" "$X/setup.err"
	echo 125 >"$X/rc"
	poweroff_now
fi
echo "setup=$(cut -d' ' -f1 /proc/uptime)" >>"$X/timing"
stty -F /dev/ttyS1 raw -echo 2>/dev/null
# The command writes to a pipe that cat copies to the serial port, not to
# the port itself: on a terminal, programs draw progress lines and colours
# (gorperf's progress, jq's), which the host's log of the run then holds
# as carriage returns and escape codes. A process the command leaves
# running keeps the pipe open: cat gets 2 s to copy what came before the
# command ended, not the time until that process ends.
mkfifo /run/rxe-vm-out
cat /run/rxe-vm-out >/dev/ttyS1 &
copier=$!
exec 3>/run/rxe-vm-out
(
	. /run/rxe-vm-env
	ulimit -l unlimited
	cd "$CWD" 2>/dev/null || cd /
	exec bash "$X/cmd.sh"
) </dev/null >&3 2>&1 3>&-
rc=$?
exec 3>&-
for _ in $(seq 20); do
	kill -0 "$copier" 2>/dev/null || break
	sleep 0.1
done
echo "$rc" >"$X/rc"
poweroff_now
