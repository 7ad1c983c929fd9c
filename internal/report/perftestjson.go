package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/gorperf/gorperf/internal/stats"
)

// PerftestJSON says what WritePerftestJSON needs beyond a Result: what
// the command line asked of the figures, which the Result does not keep.
type PerftestJSON struct {
	// Gbits gives bandwidth in Gbit/sec rather than MB/sec
	// (--report_gbits), as perftest's file follows its text.
	Gbits bool
	// Value is --output's figure: the results then hold only it, under
	// perftest's name for it (bw_avg, msgRate_avg, avg_lat, t_avg).
	Value Value
	// RelaxedOrdering reports that memory was registered with PCIe
	// relaxed ordering (no --disable_pcie_relaxed): PCIe_relax_order.
	RelaxedOrdering bool
	// MsgSize is the message size of a run of --run_infinitely, whose
	// results are its last interval, which has no size of its own, where
	// the Result has no size.
	MsgSize int
}

// WritePerftestJSON writes r as perftest's --out_json writes its file:
// an object with "test_info", the test's settings as perftest's header
// gives them, and "results", the figures of one size under perftest's
// names (MsgSize, n_iterations, BW_peak, BW_average, MsgRate; t_min ...
// percentile_99.9 for a latency test; t_avg and tps_average for a
// latency test of a duration), each with perftest's decimals, formatted
// from the figures the text prints (as measured, where --json's are
// rounded to the nanosecond), so that file and text agree digit for
// digit, as perftest's, which prints and writes the same double. perftest
// writes the file again after each size, so that a sweep's (-a) and a
// --run_infinitely run's hold the last size or interval; so do these.
// The keys and layout are those of perftest since 24.01 (standard JSON);
// perftest 4.5 wrote the same names unquoted, with trailing commas,
// which no JSON parser reads.
//
// One key is gorperf's: "gorperf" holds r as WriteJSON writes it (every
// size, thread, interval and sample, and the error of a run that
// failed), beside perftest's two, where a reader of perftest's keys does
// not look. A run that failed before it measured anything has empty
// results, and one that failed before it opened its device a test_info
// of its test and device only.
func WritePerftestJSON(w io.Writer, r Result, o PerftestJSON) error {
	var own bytes.Buffer
	if err := WriteJSON(&own, r); err != nil {
		return err
	}
	doc := object{
		{"test_info", perftestInfo(r, o)},
		{"results", perftestResults(r, o)},
		{"gorperf", json.RawMessage(own.Bytes())},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = out.WriteTo(w)
	return err
}

// perftestInfo is perftest's "test_info": its header's lines, in its
// order, each under the conditions its header has it.
func perftestInfo(r Result, o PerftestJSON) object {
	latency := isLatencyTest(r.Test)
	info := object{{"test", perftestTitle(r, latency)}}
	if r.Env == nil && r.Error != nil {
		// The run failed before it opened its device: what it would
		// have had is not known.
		return append(info, member{"Device", r.Device})
	}
	if r.Events {
		// perftest's events use the device's completion vector 0, as
		// gorperf's.
		info = append(info, member{"Test with events", "Using_" + r.Device + "_comp0"})
	}
	if r.MulticastGroup != "" {
		info = append(info, member{"MultiCast_runs", "on_UD"})
	}
	info = append(info,
		member{"Dual_port", "OFF"},
		member{"Device", r.Device},
		member{"Number_of_qps", r.QPs},
		member{"Transport_type", "IB"}, // InfiniBand and RoCE alike
		member{"Connection_type", r.Connection},
		member{"Using_SRQ", onOff(r.SRQ)},
		member{"PCIe_relax_order", onOff(o.RelaxedOrdering)},
		member{"ibv_wr_API", onOff(r.WRAPI)})
	if r.TXDepth > 0 {
		info = append(info, member{"TX_depth", r.TXDepth})
	}
	if r.PostList > 1 {
		info = append(info, member{"Post_List", r.PostList})
	}
	if r.RecvPostList > 1 {
		info = append(info, member{"Recv_Post_List", r.RecvPostList})
	}
	if r.RXDepth > 0 {
		info = append(info, member{"RX_depth", r.RXDepth})
	}
	if !latency && r.CQModeration > 0 {
		info = append(info, member{"CQ_Moderation", r.CQModeration})
	}
	link := "IB"
	if r.Env != nil && r.Env.Netdev != "" {
		link = "Ethernet"
	}
	info = append(info, member{"Mtu", r.MTU}, member{"Link_type", link})
	if r.GIDIndex >= 0 {
		info = append(info, member{"GID_index", r.GIDIndex})
	}
	if r.MaxInline != nil {
		info = append(info, member{"Max_inline_data", *r.MaxInline})
	} else if r.OutstandingReads > 0 {
		info = append(info, member{"Outstand_reads", r.OutstandingReads})
	}
	dataEx := "Ethernet"
	if r.RdmaCM {
		dataEx = "rdma_cm"
	}
	info = append(info,
		member{"rdma_cm_QPs", onOff(r.RdmaCM)},
		member{"Use_ROCm_memory", "OFF"},
		member{"Use_MUSA_memory", "OFF"},
		member{"Data_ex_method", dataEx})
	if r.RdmaCM && r.TrafficClass != 0 {
		info = append(info, member{"TOS", r.TrafficClass})
	}
	return info
}

// perftestTitle is perftest's "test": its verb, the atomic's kind, what
// the test measures and how, as in "RDMA_Write_BW_Test",
// "Atomic_FETCH_AND_ADD_Bidirectional_BW_Test" or "Send_Latency_Test".
func perftestTitle(r Result, latency bool) string {
	verb := map[string]string{"write": "RDMA_Write", "read": "RDMA_Read", "send": "Send", "atomic": "Atomic"}[testVerb(r.Test)]
	if r.Immediate && (verb == "RDMA_Write" || verb == "Send") {
		verb += "_imm"
	}
	t := verb + "_"
	if r.AtomicType != "" {
		t += r.AtomicType + "_"
	}
	if latency {
		t += "Latency_"
	} else {
		if r.Bidirectional {
			t += "Bidirectional_"
		}
		if r.PostList > 1 {
			t += "Post_List_"
		}
		t += "BW_"
	}
	if r.MulticastGroup != "" {
		t += "Multicast_"
	}
	return t + "Test"
}

// testVerb is the verb of a test's name ("write" of "write_bw").
func testVerb(test string) string {
	verb, _, _ := strings.Cut(test, "_")
	return verb
}

// isLatencyTest reports whether test, as Result.Test names it, is a
// latency test.
func isLatencyTest(test string) bool {
	return strings.HasSuffix(test, "_lat")
}

// perftestResults is perftest's "results": the last size's figures, or
// with --run_infinitely the last interval's; empty where there are none.
func perftestResults(r Result, o PerftestJSON) object {
	if r.RunInfinitely && !isLatencyTest(r.Test) {
		if len(r.Intervals) == 0 {
			return object{}
		}
		in := r.Intervals[len(r.Intervals)-1]
		size := o.MsgSize
		if len(r.Results) > 0 {
			size = r.Results[len(r.Results)-1].Bytes
		}
		// An interval has no peak: perftest's is 0 there too.
		s := SizeResult{Bytes: size, Iterations: in.Iterations, BWAvgMBps: in.BWAvgMBps, BWAvgGbps: in.BWAvgGbps, MsgRateMpps: in.MsgRateMpps}
		return perftestBW(s, o)
	}
	if len(r.Results) == 0 {
		return object{}
	}
	s := r.Results[len(r.Results)-1]
	if !isLatencyTest(r.Test) {
		return perftestBW(s, o)
	}
	res := object{{"MsgSize", s.Bytes}, {"n_iterations", s.Iterations}}
	if s.MeasuredByPeer || !s.latency() {
		return res // the peer timed the test: it has no figures
	}
	if r.DurationS > 0 {
		avg, tps := latDurationUs(s, testVerb(r.Test))
		if o.Value == LatValue {
			return object{{"t_avg", fixed(avg, 6)}}
		}
		res = append(res, member{"t_avg", fixed(avg, 2)}, member{"tps_average", fixed(tps, 2)})
		return withCPU(res, s)
	}
	// The figures as measured, as the text prints them: the fields are
	// rounded to the nanosecond.
	e := s.exactFigures()
	if o.Value == LatValue {
		return object{{"avg_lat", fixed(e.avg, 6)}}
	}
	res = append(res,
		member{"t_min", fixed(e.min, 2)},
		member{"t_max", fixed(e.tmax, 2)},
		member{"t_typical", fixed(e.typical, 2)},
		member{"t_avg", fixed(e.avg, 2)},
		member{"t_stdev", fixed(e.stdev, 2)},
		member{"percentile_99", fixed(e.t99, 2)},
		member{"percentile_99.9", fixed(e.t999, 2)})
	return withCPU(res, s)
}

// latDurationUs returns perftest's figures of a latency run of a
// duration (print_report_lat_duration), as the text's row has them
// (WriteLatWindowRow): t_avg in microseconds and tps average, from the
// measuring window (window_t_avg_us, tps_average). A size without a
// window (a Result built without one) falls back to the figures of its
// samples: the mean of all of them, and the iterations a second, an
// iteration two samples of a write or send's half round trip. s keeps no
// sum of all its samples: it is its samples' where it has them (-U),
// else its t_avg of all but the two largest, one for each of its
// iterations but those two, and t_max and max.
func latDurationUs(s SizeResult, verb string) (avg, tps float64) {
	e := s.exactFigures() // as measured, as the text's row has them
	if s.WindowS > 0 {
		return e.windowAvg, e.tps
	}
	n := float64(s.Iterations)
	var sum float64
	switch {
	case len(s.SamplesUs) > 0:
		n = float64(len(s.SamplesUs))
		for _, x := range s.SamplesUs {
			sum += x
		}
	case n > 2:
		sum = e.avg*(n-2) + e.tmax + e.max
	default:
		sum = e.avg * n
	}
	if n == 0 || sum <= 0 {
		return e.avg, 0
	}
	per := sum
	if verb == "write" || verb == "send" {
		per *= 2
	}
	return sum / n, n / (per / 1e6)
}

// perftestBW is a bandwidth test's results for s: in MB/sec or Gbit/sec
// with two decimals, six where Gbit/sec gives an average under 0.1, as
// perftest's (extGbps); and the message rate in Mpps with six. In a
// bidirectional test this side's own average (s.Local's) decides the
// decimals, not the total's, as in the text's row (WriteBidiRow) and in
// perftest's print_full_bw_report.
func perftestBW(s SizeResult, o PerftestJSON) object {
	peak, avg := s.BWPeakMBps, s.BWAvgMBps
	if o.Gbits {
		peak, avg = peak*stats.BytesPerMB*8/1e9, s.BWAvgGbps
	}
	mine := avg
	if s.Local != nil {
		mine = s.Local.BWAvgGbps
	}
	switch o.Value {
	case BWValue:
		return withCPU(object{{"bw_avg", fixed(avg, 6)}}, s)
	case MsgRateValue:
		return withCPU(object{{"msgRate_avg", fixed(s.MsgRateMpps, 6)}}, s)
	}
	prec := 2
	if o.Gbits && mine < extGbps {
		prec = 6
	}
	return withCPU(object{
		{"MsgSize", s.Bytes},
		{"n_iterations", s.Iterations},
		{"BW_peak", fixed(peak, prec)},
		{"BW_average", fixed(avg, prec)},
		{"MsgRate", fixed(s.MsgRateMpps, 6)},
	}, s)
}

// withCPU adds perftest's CPU_util where the size has gorperf's
// --cpu_util figures: perftest's quantity, the host's user share in
// percent (CPU.HostUserPct), not the process's time (UtilPct).
func withCPU(res object, s SizeResult) object {
	if s.CPU != nil {
		res = append(res, member{"CPU_util", fixed(s.CPU.HostUserPct, 2)})
	}
	return res
}

// fixed is x as a JSON number of so many decimals, as perftest's %.2f.
func fixed(x float64, decimals int) json.Number {
	return json.Number(strconv.FormatFloat(x, 'f', decimals, 64))
}

// object is a JSON object whose keys keep their order, as perftest's
// file has them.
type object []member

type member struct {
	key string
	val any
}

// MarshalJSON writes o's members in order.
func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.val)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}
