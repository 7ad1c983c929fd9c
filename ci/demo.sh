#!/usr/bin/env bash
# ci/demo.sh BUILD_DIR - what `make demo` runs on the RDMA device (in the rxe
# VM where the host has none).
set -euo pipefail
b=$1
echo "== gorperf devices: the RDMA devices, their ports and GID tables"
"$b/gorperf" devices
echo
echo "== gorperf doctor: what makes RoCE v2 work or fail here"
"$b/gorperf" doctor
echo
echo "== device smoke test: open the device, query the port, read and check the GID table"
ci/device-tests.sh "$b/test" -- -test.run 'TestDeviceSmoke' -test.v
