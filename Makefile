# gorperf: the index of what one can do. See README.md.
SHELL := /bin/bash
GO ?= go
# /usr/local/go/bin first, so that an older Go earlier on PATH (Debian's
# golang-go) does not win over the one installed there; deps checks the
# version against go.mod (ci/go-version.sh).
export PATH := /usr/local/go/bin:$(PATH):$(shell $(GO) env GOPATH 2>/dev/null)/bin

BUILD := build
TESTBIN := $(BUILD)/test
VM := ci/rxe-vm/run
# Packages whose tests touch a device: built here, run on the device or in the VM
# (those whose tests import internal/rdmatest, and rdmatest's own). Listed when
# test-binaries runs, after deps has installed the C compiler that cgo, and so
# those tests, need.
DEVICE_PKGS_CMD := CGO_ENABLED=1 $(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | awk '/internal\/rdmatest/ { print $$1 }'
# HAVE_DEVICE: non-empty where this host has an RDMA device the tests can
# use: a uverbs character device (/dev/infiniband/uverbs*, which a container
# without --device /dev/infiniband lacks though it sees /sys) and a port in
# state ACTIVE. Then test, demo, compare, bench and race-device run on the
# host's device; else in the soft-RoCE VM. `make test HAVE_DEVICE=` forces
# the VM, as .ci/run does: there every device test runs in the VM, with the
# two devices and the IPv6 address that some tests need.
HAVE_DEVICE := $(shell ls /dev/infiniband/uverbs* >/dev/null 2>&1 && grep -l ACTIVE /sys/class/infiniband/*/ports/*/state 2>/dev/null | head -1)

# LOCKED CMD: CMD holding $(BUILD)/.lock (flock, util-linux's), so that two
# makes in one checkout (make bench beside make test) do not both remove,
# rebuild and run the test binaries at once: the second waits. The make
# that CMD runs (GORPERF_BUILD_LOCK set) does not take it again.
LOCKED = $(if $(GORPERF_BUILD_LOCK)$(NOFLOCK),,mkdir -p $(BUILD) && \
	{ flock -n $(BUILD)/.lock true || echo "make: waiting for $(BUILD)/.lock: another make builds or runs the device tests in this checkout" >&2; } && \
	GORPERF_BUILD_LOCK=1 flock $(BUILD)/.lock)
NOFLOCK := $(if $(shell command -v flock),,1)

.PHONY: all deps build test unit device-tests device-tests-vm demo compare fuzz race race-device check fmt-check ci-selftest bench clean docs man

all: build

## deps: the packages to build and test (ci/deps.sh), and for the VM only
## where there is no device here (HAVE_DEVICE); Go as new as go.mod's.
deps:
	ci/deps.sh $(if $(HAVE_DEVICE),build,vm)
	ci/go-version.sh $(GO)
	@# The module proxy drops a download now and then, and go retries none.
	@for i in 1 2 3; do $(GO) mod download && exit 0; [ $$i = 3 ] || { echo "deps: go mod download failed: trying again in 20s" >&2; sleep 20; }; done; exit 1

build:
	$(GO) build ./...

## test: unit tests natively, then every device test on this host's RDMA
## device if it has one (HAVE_DEVICE above), else inside the soft-RoCE VM.
## On the host the tests that need the VM's second device or its IPv6
## address (RXE_DEV2, RXE_IP6) skip; `make test HAVE_DEVICE=` runs all in the VM.
## There the rdma_cm tests need the device's address outside the VM's
## 198.18.0.0/15 named: GORPERF_TEST_ADDR=10.1.2.3 make test (see
## docs/testing-on-soft-roce.md).
## Device tests must run:
## GORPERF_REQUIRE_DEVICE=1 turns a missing device into a failure.
test: deps unit device-tests

unit:
	$(GO) test -count=1 ./...

device-tests:
	@$(LOCKED) $(MAKE) --no-print-directory device-tests-locked

device-tests-locked: test-binaries
ifneq ($(HAVE_DEVICE),)
	ci/device-tests.sh $(TESTBIN)
else
	$(VM) -2 -t 2400 -- ci/device-tests.sh $(TESTBIN)
endif

## The same tests in a VM without an rxe device must fail, not skip.
device-tests-must-fail:
	@$(LOCKED) $(MAKE) --no-print-directory device-tests-must-fail-locked

device-tests-must-fail-locked: test-binaries
	@if $(VM) -n -t 300 -- ci/device-tests.sh $(TESTBIN) -- -test.run 'TestDeviceSmoke' >$(BUILD)/no-device.log 2>&1; then \
		cat $(BUILD)/no-device.log; echo "FAIL: device tests passed in a VM without an RDMA device"; exit 1; \
	else \
		grep -q 'GORPERF_REQUIRE_DEVICE=1 but' $(BUILD)/no-device.log || { cat $(BUILD)/no-device.log; echo "FAIL: no device gave an unexpected error"; exit 1; }; \
		echo "ok: without an RDMA device the device tests fail, as they must"; \
	fi

## vm-selftest: the VM runner fails a run whose guest set-up fails (an MTU
## the veth cannot take), with exit 125 and the reason, rather than running
## the command on a half-made VM. The run's paths have commas (TMPDIR, the
## work share), which qemu's options must escape, and HOME is unset, so the
## initramfs is built for the run alone. A command's standard output is a
## pipe, not a terminal (no progress lines or colours in the run's log),
## and its exit ends the run, with its status, though it left a process
## running.
vm-selftest:
	@d=$$(mktemp -d "$${TMPDIR:-/tmp}/rxe-vm,selftest.XXXXXX") && mkdir "$$d/tmp" "$$d/work,dir" || exit 1; \
	out=$$(cd "$$d/work,dir" && env -u HOME -u XDG_CACHE_HOME -u RXE_VM_CACHE TMPDIR="$$d/tmp" \
		$(abspath $(VM)) -M 99999 -t 300 -- true 2>&1); rc=$$?; \
	left=$$(ls -A "$$d/tmp"); rm -rf "$$d"; \
	if [ $$rc -ne 125 ] || ! grep -q 'guest set-up failed' <<<"$$out" || ! grep -q 'mtu greater than device maximum' <<<"$$out"; then \
		echo "$$out"; echo "FAIL: a failed guest set-up gave exit $$rc, want 125 and ip's refusal of MTU 99999"; exit 1; \
	fi; \
	grep -q 'the initramfs is built for this run alone' <<<"$$out" || { echo "$$out"; echo "FAIL: no note of the initramfs built for the run without HOME"; exit 1; }; \
	[ -z "$$left" ] || { echo "FAIL: the run left $$left in its TMPDIR"; exit 1; }; \
	echo "ok: a failed guest set-up fails the run (exit 125), with commas in its paths and no HOME"; \
	out=$$($(VM) -n -t 120 -- bash -c 'if [ -t 1 ]; then echo "stdout: a terminal"; else echo "stdout: not a terminal"; fi; sleep 600 & exit 7' 2>&1); rc=$$?; \
	if [ $$rc -ne 7 ] || ! grep -q '^stdout: not a terminal$$' <<<"$$out"; then \
		echo "$$out"; echo "FAIL: a command that leaves a process running gave exit $$rc, want its own 7, and its output on a pipe, not a terminal"; exit 1; \
	fi; \
	echo "ok: the command writes to a pipe, not a terminal, and its exit ends the run, not the process it left"

.PHONY: test-binaries device-tests-must-fail vm-selftest device-tests-locked device-tests-must-fail-locked bench-locked race-device-locked
test-binaries:
	@rm -rf $(TESTBIN); mkdir -p $(TESTBIN)
	@set -o pipefail; pkgs=$$($(DEVICE_PKGS_CMD)) || exit 1; \
	[ -n "$$pkgs" ] || { echo "test-binaries: no device test packages found (is gcc there for cgo? is go on PATH?)" >&2; exit 1; }; \
	for p in $$pkgs; do \
		n=$$(echo $${p#github.com/gorperf/gorperf/} | tr / _); \
		$(GO) test -c $(TESTFLAGS) -o $(TESTBIN)/$$n.test $$p || exit 1; \
		$(GO) list -f '{{.Dir}}' $$p > $(TESTBIN)/$$n.srcdir; \
	done

## demo: the main job: gorperf devices and doctor, then a bandwidth and a
## latency benchmark, on this host's RDMA device, else in the soft-RoCE VM
## between two rxe devices at the ends of a veth pair.
demo: deps
	$(GO) build -o $(BUILD)/gorperf ./cmd/gorperf
ifneq ($(HAVE_DEVICE),)
	ci/demo.sh $(BUILD)
else
	$(VM) -2 -t 600 -- ci/demo.sh $(BUILD)
endif

## compare: gorperf and perftest side by side on the same devices (the VM's
## two rxe devices where the host has none); a table of ratios, and JSON in
## build/compare.json. COMPARE_FLAGS passes options (see bench/compare).
compare: deps
	$(GO) build -o $(BUILD)/gorperf ./cmd/gorperf
	$(GO) build -o $(BUILD)/compare ./bench/compare
ifneq ($(HAVE_DEVICE),)
	$(BUILD)/compare -gorperf $(BUILD)/gorperf -json $(BUILD)/compare.json $(COMPARE_FLAGS)
else
	$(VM) -2 -t 3600 -- $(BUILD)/compare -gorperf $(BUILD)/gorperf -json $(BUILD)/compare.json $(COMPARE_FLAGS)
endif

## fuzz: every fuzz target of the network decoders for FUZZTIME each (a
## duration, or a count of inputs such as 200000x: CI uses a count, since
## go test -fuzz can end a timed run with "context deadline exceeded"); the
## seed corpus of the exchange lives in internal/exchange/testdata/fuzz.
FUZZTIME ?= 10s
fuzz:
	@set -o pipefail; for p in ./internal/exchange ./rdmamsg; do \
		ts=$$(CGO_ENABLED=0 $(GO) test -list 'Fuzz.*' $$p | grep ^Fuzz) || { echo "fuzz: no fuzz targets found in $$p" >&2; exit 1; }; \
		for t in $$ts; do \
			echo "fuzz $$p $$t for $(FUZZTIME)"; \
			CGO_ENABLED=0 $(GO) test -run XXX -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$p || { \
				for f in $$(git ls-files --others --exclude-standard -- "$$p/testdata/fuzz/$$t"); do \
					echo "fuzz: the failing input, $$f (gone with this machine):" >&2; cat "$$f" >&2; \
				done; exit 1; }; \
		done; \
	done

## race: the race detector on everything that runs without a device.
race:
	$(GO) test -race -count=1 ./...

## race-device: the device tests built with the race detector, on this
## host's RDMA device or in the VM, with -test.short (6 minutes under TCG).
race-device:
	@$(LOCKED) $(MAKE) --no-print-directory race-device-locked

race-device-locked:
	@$(MAKE) --no-print-directory test-binaries TESTBIN=$(BUILD)/race TESTFLAGS=-race
ifneq ($(HAVE_DEVICE),)
	ci/device-tests.sh $(BUILD)/race -- -test.short
else
	$(VM) -2 -t 2400 -- env GORPERF_TEST_TIMEOUT=30m ci/device-tests.sh $(BUILD)/race -- -test.short
endif

check:
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) vet ./...
	CGO_ENABLED=0 $(GO) build ./...
	GOOS=darwin CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./...
	CGO_ENABLED=0 $(GO) tool staticcheck ./internal/cli
	@$(MAKE) --no-print-directory fmt-check
	$(GO) tool staticcheck ./...

## fmt-check: gofmt -l with the gofmt of $(GO)'s GOROOT lists no file; a
## gofmt that is missing or fails fails it too.
fmt-check:
	@gofmt="$$($(GO) env GOROOT)/bin/gofmt"; \
	out=$$("$$gofmt" -l .) || { echo "fmt-check: $$gofmt -l . failed" >&2; exit 1; }; \
	[ -z "$$out" ] || { echo "fmt-check: not gofmt'ed:" >&2; echo "$$out" >&2; exit 1; }

## ci-selftest: the CI scripts' own checks, on this host, without a VM or a
## device (ci/selftest.sh): deps.sh through sudo -n, waiting for apt's lock,
## and its C toolchain check, go-version.sh, fmt-check, demo.sh's server log
## on a failure and its doctor's exit status, the VM runner's choice of
## kernel and its initramfs (a fake root and qemu), and the build lock.
ci-selftest:
	ci/selftest.sh

## bench: every benchmark (allocations reported) on this host's RDMA
## device, else in the soft-RoCE VM; BENCHTIME is each one's -benchtime.
BENCHTIME ?= 2000x
BENCHFLAGS = -- -test.run '^$$' -test.bench . -test.benchtime $(BENCHTIME) -test.benchmem
bench:
	@$(LOCKED) $(MAKE) --no-print-directory bench-locked

bench-locked: test-binaries
ifneq ($(HAVE_DEVICE),)
	ci/device-tests.sh $(TESTBIN) $(BENCHFLAGS)
else
	$(VM) -2 -t 1800 -- ci/device-tests.sh $(TESTBIN) $(BENCHFLAGS)
endif

## docs: regenerate the command reference in docs/cli from the cobra
## commands (TestCLIReferenceInSync fails when it is stale).
docs:
	rm -rf docs/cli
	$(GO) run ./internal/cli/gendocs -md docs/cli

## man: man pages for every command, into build/man (not committed).
man:
	$(GO) run ./internal/cli/gendocs -man $(BUILD)/man

clean:
	rm -rf $(BUILD)
