#!/usr/bin/env bash
# ci/demo.sh BUILD_DIR - the main job (`make demo`): what gorperf sees of the
# RDMA devices, then real benchmarks. In the rxe VM (-2) the server runs on
# rxe0 and the client on rxe1, the two ends of a veth pair, so the traffic
# crosses a wire as between two hosts; on a host with one RDMA device both
# run on it (loopback). When a benchmark fails, the server's output (in the
# guest's tmpfs, gone with the VM) is printed before the script exits 1.
set -euo pipefail
g=$1/gorperf
log=$(mktemp "${TMPDIR:-/tmp}/gorperf-server.XXXXXX")
srv=""
end() {
	local rc=$?
	[ -z "$srv" ] || kill "$srv" 2>/dev/null
	rm -f "$log"
	exit $rc
}
trap end EXIT
# failed WHAT: the server's output, and exit 1.
failed() {
	echo "demo: $1 failed; the server's output:" >&2
	sed 's/^/  server: /' "$log" >&2
	exit 1
}
echo "== gorperf devices: the RDMA devices, their ports and GID tables"
"$g" devices
echo
echo "== gorperf doctor: what makes RoCE v2 work or fail here"
# doctor exits 1 where a check fails (a warning here, not the demo's
# failure); anything else (a crash: 2, a signal) fails the demo.
rc=0
"$g" doctor || rc=$?
if [ $rc -gt 1 ]; then
	echo "demo: gorperf doctor failed (exit $rc), where 0 or 1 (a check failed) was wanted" >&2
	exit 1
fi
bench() { # TEST FLAGS...
	local t=$1
	shift
	echo
	if [ -n "${RXE_DEV2:-}" ]; then
		echo "== gorperf $t $*: client on $RXE_DEV2 ($RXE_IP2) -> server on $RXE_DEV ($RXE_IP), across the veth pair"
		"$g" "$t" -d "$RXE_DEV" -p 18515 >"$log" 2>&1 &
		srv=$!
		for _ in $(seq 50); do
			ss -ltn 2>/dev/null | grep -q ':18515 ' && break
			kill -0 "$srv" 2>/dev/null || break # it failed: the client will say so
			sleep 0.1
		done
		"$g" "$t" -d "$RXE_DEV2" "$@" "$RXE_IP" || failed "the client (exit $?)"
		wait "$srv" || failed "the server (exit $?)"
		srv=""
	else
		echo "== gorperf loopback $t $*: server and client on one device"
		"$g" loopback "$t" "$@"
	fi
}
bench write-bw -s 65536 -n 2000
bench send-lat -s 64 -n 1000
bench write-bw -s 4096 -n 2000 -q 2 --threads 2
