package report_test

import (
	"os"
	"time"

	"github.com/gorperf/gorperf/internal/report"
	"github.com/gorperf/gorperf/internal/stats"
)

func ExampleWriteBWRow() {
	b := stats.ComputeBandwidth(65536, 5000, time.Second, 100*time.Microsecond)
	report.WriteBWHeader(os.Stdout, false)
	report.WriteBWRow(os.Stdout, b, false)
	report.WriteRule(os.Stdout)
	// Output:
	//  #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
	//  65536      5000             625.00             312.50 		   0.005000
	// ---------------------------------------------------------------------------------------
}

func ExampleWriteJSON() {
	report.WriteJSON(os.Stdout, report.Result{
		Version: "0.1.0", Test: "write_bw", Role: "client", Device: "rxe0",
		Error: &report.Error{Code: "no_device", Message: "no RDMA device found"},
	})
	// Output:
	// {
	//   "schema_version": 1,
	//   "tool": "gorperf",
	//   "version": "0.1.0",
	//   "test": "write_bw",
	//   "role": "client",
	//   "device": "rxe0",
	//   "port": 0,
	//   "gid_index": 0,
	//   "gid_reason": "",
	//   "connection": "",
	//   "qps": 0,
	//   "rdma_cm": false,
	//   "wr_api": false,
	//   "bidirectional": false,
	//   "events": false,
	//   "srq": false,
	//   "reversed": false,
	//   "immediate": false,
	//   "results": [],
	//   "error": {
	//     "code": "no_device",
	//     "message": "no RDMA device found"
	//   },
	//   "interrupted": false,
	//   "peer_interrupted": false
	// }
}
