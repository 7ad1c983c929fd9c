#!/usr/bin/env bash
# ci/demo.sh BUILD_DIR - the main job (`make demo`): what gorperf sees of the
# RDMA devices, then real benchmarks. In the rxe VM (-2) the server runs on
# rxe0 and the client on rxe1, the two ends of a veth pair, so the traffic
# crosses a wire as between two hosts; on a host with one RDMA device both
# run on it (loopback).
set -euo pipefail
g=$1/gorperf
echo "== gorperf devices: the RDMA devices, their ports and GID tables"
"$g" devices
echo
echo "== gorperf doctor: what makes RoCE v2 work or fail here"
"$g" doctor || true
bench() { # TEST FLAGS...
	local t=$1
	shift
	echo
	if [ -n "${RXE_DEV2:-}" ]; then
		echo "== gorperf $t $*: client on $RXE_DEV2 ($RXE_IP2) -> server on $RXE_DEV ($RXE_IP), across the veth pair"
		"$g" "$t" -d "$RXE_DEV" -p 18515 >/tmp/gorperf-server.log 2>&1 &
		local srv=$!
		for _ in $(seq 50); do ss -ltn 2>/dev/null | grep -q ':18515 ' && break; sleep 0.1; done
		"$g" "$t" -d "$RXE_DEV2" "$@" "$RXE_IP"
		wait "$srv"
	else
		echo "== gorperf loopback $t $*: server and client on one device"
		"$g" loopback "$t" "$@"
	fi
}
bench write-bw -s 65536 -n 2000
bench send-lat -s 64 -n 1000
bench write-bw -s 4096 -n 2000 -q 2 --threads 2
