// Command gorperf measures RDMA bandwidth and latency, perftest-style, and
// explains the host's RDMA set-up (gorperf devices, gorperf doctor).
package main

import (
	"os"

	"github.com/gorperf/gorperf/internal/cli"
)

func main() { os.Exit(cli.Main()) }
