#!/usr/bin/env bash
# ci/setup-rxe.sh - create a soft-RoCE (rdma_rxe) device on a host whose kernel
# has the rdma_rxe module (a laptop, a CI runner), and print its GID table.
#
# usage: sudo ci/setup-rxe.sh [-n NETDEV] [-d RXENAME]
#
#   -n NETDEV   Ethernet interface to bind to (default: the interface of the
#               default route, else the first UP non-loopback interface)
#   -d RXENAME  name of the RDMA device (default rxe0)
#   -h          this help
#
# Running it again is safe: an rxe device already bound to NETDEV is reported
# and kept. Hosts without the module: see docs/testing-on-soft-roce.md.
set -euo pipefail

PROG=setup-rxe
SELF=$(readlink -f "$0")
ZERO_GID=0000:0000:0000:0000:0000:0000:0000:0000

log() { echo "$PROG: $*" >&2; }
die() { log "$*"; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; }

IFACE="" NAME=rxe0
while getopts "n:d:h" opt; do
	case $opt in
	n) IFACE=$OPTARG ;;
	d) NAME=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { usage >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "needs root: run sudo ci/setup-rxe.sh"

# ---- the kernel module ------------------------------------------------------
if [ -d /sys/module/rdma_rxe ]; then
	: # already loaded (or built in, or insmod'ed from an out-of-tree build)
elif ! command -v modprobe >/dev/null 2>&1; then
	die "modprobe not found: apt-get install -y kmod"
elif ! modprobe rdma_rxe; then
	die "cannot load rdma_rxe: kernel $(uname -r) lacks the module.
$PROG: on Ubuntu it is in linux-modules-extra: apt-get install -y linux-modules-extra-$(uname -r)
$PROG: otherwise build drivers/infiniband/sw/rxe out of tree against this kernel's
$PROG: headers, or run the device tests in the VM (ci/rxe-vm/run); both are in
$PROG: docs/testing-on-soft-roce.md"
fi

# ---- tools -------------------------------------------------------------------
if ! command -v rdma >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
	die "the rdma tool (iproute2) is missing; install it with:
apt-get install -y iproute2 rdma-core ibverbs-utils"
fi

# ---- the netdev -----------------------------------------------------------------
if [ -z "$IFACE" ]; then
	IFACE=$(ip route show default 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
fi
if [ -z "$IFACE" ]; then
	# "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 ..."; veths are "name@peer"
	IFACE=$(ip -o link show up 2>/dev/null |
		awk -F': ' '$3 !~ /LOOPBACK/ { sub(/@.*/, "", $2); print $2; exit }')
fi
[ -n "$IFACE" ] || die "no default route and no UP non-loopback interface; pass -n NETDEV"
[ -e "/sys/class/net/$IFACE" ] || die "no such network interface: $IFACE"
if ! ip -o link show dev "$IFACE" | grep -q '[<,]UP[,>]'; then
	log "warning: $IFACE is down; the rxe port stays DOWN until: ip link set $IFACE up"
fi

# ---- the rxe link, once per netdev ------------------------------------------------
# Only rxe devices have a "parent" attribute; it holds the netdev's name.
existing=""
for d in /sys/class/infiniband/*; do
	[ -r "$d/parent" ] || continue
	if [ "$(cat "$d/parent")" = "$IFACE" ]; then
		existing=${d##*/}
		break
	fi
done
if [ -n "$existing" ]; then
	log "$IFACE already has rxe device $existing; not adding another"
	[ "$existing" = "$NAME" ] || log "note: using $existing, not $NAME"
	NAME=$existing
elif [ -e "/sys/class/infiniband/$NAME" ]; then
	die "an RDMA device named $NAME already exists (not on $IFACE); choose another with -d"
else
	rdma link add "$NAME" type rxe netdev "$IFACE" ||
		die "rdma link add $NAME type rxe netdev $IFACE failed (see the kernel log: dmesg | tail)"
	log "added $NAME on $IFACE"
fi

# ---- wait for the GID table ------------------------------------------------------
# The link-local GID comes first; the IPv4 one (when IFACE has an IPv4 address)
# may follow a moment later.
PORT=/sys/class/infiniband/$NAME/ports/1
gids() { # print "index gid" for every non-zero entry, in index order
	local f idx v
	for f in "$PORT"/gids/*; do
		idx=${f##*/}
		read -r v 2>/dev/null <"$f" || continue
		if [ "$v" != "$ZERO_GID" ]; then echo "$idx $v"; fi
	done | sort -n
}
want_v4=0
[ -n "$(ip -o -4 addr show dev "$IFACE" 2>/dev/null)" ] && want_v4=1
ready() {
	local g
	g=$(gids)
	[ -n "$g" ] || return 1
	[ $want_v4 = 0 ] || grep -q ' 0000:0000:0000:0000:0000:ffff:' <<<"$g"
}
for _ in $(seq 1 50); do
	ready && break
	sleep 0.1
done
[ -n "$(gids)" ] || die "$NAME has no GID after 5 s: is $IFACE up, with an IP address?"

# ---- print it ---------------------------------------------------------------------
state=$(cut -d' ' -f2- "$PORT/state" 2>/dev/null || echo '?')
echo "GID table of $NAME port 1 (netdev $IFACE, port $state):"
printf '%-5s  %-39s  %-8s  %s\n' index gid type netdev
table=$(gids)
v4=""
while read -r idx gid; do
	# for an empty entry these reads fail with EINVAL; a populated one has both
	gtype=$(cat "$PORT/gid_attrs/types/$idx" 2>/dev/null || echo '?')
	ndev=$(cat "$PORT/gid_attrs/ndevs/$idx" 2>/dev/null || echo '?')
	printf '%-5s  %-39s  %-8s  %s\n' "$idx" "$gid" "$gtype" "$ndev"
	case $gid in 0000:0000:0000:0000:0000:ffff:*)
		# ...:ffff:c612:0002 -> 198.18.0.2
		[ "$gtype" = "RoCE v2" ] && [ -z "$v4" ] &&
			v4=$(printf '%d.%d.%d.%d' "0x${gid:30:2}" "0x${gid:32:2}" "0x${gid:35:2}" "0x${gid:37:2}")
		;;
	esac
done <<<"$table"
if [ -z "$v4" ]; then
	log "warning: no IPv4 RoCE v2 GID; rdma_cm over IPv4 needs an IPv4 address on $IFACE"
else
	# The device tests send only to the VM's 198.18.0.0/15 unless told
	# an address of this host's (docs/testing-on-soft-roce.md, section 2).
	echo "Device tests on it, over $v4 (this host's own address):"
	echo "  ulimit -l unlimited; GORPERF_TEST_DEVICE=$NAME GORPERF_TEST_ADDR=$v4 GORPERF_REQUIRE_DEVICE=1 go test ./..."
fi
