# gorperf image: the gorperf command, perftest for comparison, and the Go test
# binaries, to run against an RDMA device of the host (hardware, or soft-RoCE
# made with ci/setup-rxe.sh).
#
#   docker build -t gorperf .
#   docker run --rm --device /dev/infiniband --cap-add IPC_LOCK \
#       --ulimit memlock=-1 --network host gorperf --help
#   docker run --rm --device /dev/infiniband --cap-add IPC_LOCK \
#       --ulimit memlock=-1 --network host -e GORPERF_TEST_DEVICE=rxe0 \
#       --entrypoint gorperf-device-tests gorperf [-- -test.run X -test.v]
#
# --device /dev/infiniband  the uverbs character devices (uverbs0..) and
#                           rdma_cm; without them libibverbs finds no device
# --cap-add IPC_LOCK        lets the process pin memory for memory regions
#                           beyond the memlock limit
# --ulimit memlock=-1       no limit on locked memory; the default 64 KiB (or
#                           8 MiB) fails ibv_reg_mr of a larger buffer
# --network host            RDMA devices are shared by all network namespaces,
#                           but their RoCE GIDs are built from the host netdevs'
#                           IP addresses; with the host's network the container
#                           has those addresses, so GID selection matches and
#                           rdma_cm can resolve and route to them
#
# The sysfs view of the device (/sys/class/infiniband) is the host's already:
# Docker mounts /sys read-only, which is all libibverbs needs.

# ---- build -----------------------------------------------------------------
FROM golang:1.26-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libibverbs-dev librdmacm-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
ENV CGO_ENABLED=1
WORKDIR /src
COPY go.mod go.sum* ./
RUN go mod download
COPY . .
# /out/gorperf              the command
# /out/gorperf-device-tests ci/device-tests.sh
# /out/tests/NAME.test      one test binary for each package with tests, NAME
#                           its directory with / as _ (internal/bench ->
#                           internal_bench, as make test-binaries names them);
#                           NAME.srcdir names the directory it runs in
# /out/src/DIR/testdata     each package's testdata, for the tests that read it
# /out/src/docs/cli         the CLI reference, which gendocs' test compares
# /out/src/docs/getting-started.md  the guide, whose --help excerpts
#                           internal/cli's TestHelpExcerptsInDocs checks
RUN set -eu; \
    mkdir -p /out/tests /out/src; \
    go build -trimpath -o /out/gorperf ./cmd/gorperf; \
    install -m 0755 ci/device-tests.sh /out/gorperf-device-tests; \
    mod=$(go list -m); \
    pkgs=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...); \
    for p in $pkgs; do \
        rel=${p#"$mod"}; rel=${rel#/}; \
        name=$(echo "${rel:-${mod##*/}}" | tr / _); \
        echo "test binary $name.test <- $p"; \
        go test -c -o "/out/tests/$name.test" "$p"; \
        mkdir -p "/out/src/$rel"; \
        if [ -n "$rel" ] && [ -d "$rel/testdata" ]; then cp -a "$rel/testdata" "/out/src/$rel/"; fi; \
        if [ -z "$rel" ] && [ -d testdata ]; then cp -a testdata /out/src/; fi; \
        echo "/opt/gorperf/src/$rel" >"/out/tests/$name.srcdir"; \
    done; \
    mkdir -p /out/src/docs && cp -a docs/cli docs/getting-started.md /out/src/docs/; \
    ls -l /out /out/tests

# ---- runtime -----------------------------------------------------------------
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        rdma-core ibverbs-providers librdmacm1 ibverbs-utils rdmacm-utils perftest iproute2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/gorperf /out/gorperf-device-tests /usr/local/bin/
COPY --from=build /out/tests /opt/gorperf/tests
COPY --from=build /out/src /opt/gorperf/src
ENV GORPERF_TEST_BINARIES=/opt/gorperf/tests
ENTRYPOINT ["gorperf"]
