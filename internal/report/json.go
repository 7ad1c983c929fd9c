package report

import (
	"encoding/json"
	"io"
	"math"
	"time"

	"github.com/gorperf/gorperf/internal/stats"
)

// SchemaVersion is the version of the JSON document WriteJSON writes. It
// changes when a field is removed or changes meaning; adding a field does
// not change it.
const SchemaVersion = 1

// Tool is the value of the "tool" field of every JSON document.
const Tool = "gorperf"

// Result is the JSON document for one gorperf run. A run that failed
// before measuring anything is still a valid Result: it carries an Error
// and an empty Results array.
type Result struct {
	// SchemaVersion and Tool are set by WriteJSON.
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`
	// Version is gorperf's version.
	Version string `json:"version"`
	// Test names the test, for example "write_bw" or "send_lat".
	Test string `json:"test"`
	// Role is "client", "server" or "loopback".
	Role string `json:"role"`
	// StartTime is when the test began on this side, its QPs connected
	// and its sizes about to run, and EndTime when its outcome was
	// known, both UTC in RFC 3339 with milliseconds (TimeFormat). A run
	// that failed before its test began has no StartTime.
	StartTime string `json:"start_time,omitempty"`
	EndTime   string `json:"end_time,omitempty"`
	Device    string `json:"device"`
	Port      int    `json:"port"`
	GIDIndex  int    `json:"gid_index"`
	GIDReason string `json:"gid_reason"`
	// Env is where this side ran, left out of a run that failed before
	// it opened its device; PeerDevice and PeerEnv are the other side's
	// device and where it ran, as it said, left out of a run that failed
	// before the two sides connected.
	Env        *Env   `json:"env,omitempty"`
	PeerDevice string `json:"peer_device,omitempty"`
	PeerEnv    *Env   `json:"peer_env,omitempty"`
	// PeerAddr is, on a server, its client's address as host:port (the
	// control connection's remote end), left out where no client was
	// known.
	PeerAddr string `json:"peer_addr,omitempty"`
	// Connection is "RC", "UC" or "UD".
	Connection string `json:"connection"`
	QPs        int    `json:"qps"`
	RdmaCM     bool   `json:"rdma_cm"`
	// WRAPI reports that sends went through the ibv_wr_* API rather than
	// ibv_post_send.
	WRAPI         bool `json:"wr_api"`
	Bidirectional bool `json:"bidirectional"`
	// Events reports that the test slept on completion events (-e)
	// instead of polling.
	Events bool `json:"events"`
	// SRQ reports that the QPs took their receives from a shared receive
	// queue (--use-srq).
	SRQ bool `json:"srq"`
	// Reversed reports that the server sent (--reversed).
	Reversed bool `json:"reversed"`
	// Immediate reports that the messages carried immediate data
	// (--write_with_imm, --send_with_imm).
	Immediate bool `json:"immediate"`
	// DurationS is, in a run of fixed duration (-D), the seconds each
	// size ran, and in a run of --run_infinitely (RunInfinitely) the
	// seconds of each interval; a run of so many iterations (-n) leaves
	// it out, and its sizes' iterations are the -n.
	DurationS uint32 `json:"duration_s,omitempty"`
	// MarginS is, in a run of fixed duration, the seconds at each end
	// of a size's run that its results leave out (-f).
	MarginS uint32 `json:"margin_s,omitempty"`
	// RunInfinitely reports a run of --run_infinitely: its figures are
	// Intervals, one every DurationS, until it was stopped.
	RunInfinitely bool `json:"run_infinitely,omitempty"`
	// WarmUp reports a warm-up before each size (--perform_warm_up), and
	// MRPerQP one memory region per QP (--mr_per_qp).
	WarmUp  bool `json:"warm_up,omitempty"`
	MRPerQP bool `json:"mr_per_qp,omitempty"`
	// CPUs are the CPUs this side's threads could run on at the end of
	// the run, as a list such as "0-3,8", and CPUReason why (--pin_cores,
	// --numa_node, the device's NUMA node).
	CPUs      string `json:"cpus,omitempty"`
	CPUReason string `json:"cpu_reason,omitempty"`
	// TXDepth, RXDepth, CQModeration and PostList are as perftest's
	// header (and gorperf's text) gives them on this side, and left out
	// where it leaves them out: TXDepth, the send queue's depth (-t), on
	// the side that posts the requests (both sides of a bidirectional
	// test); RXDepth, the receive queue's (-r), on the side that
	// receives sends or writes with immediate data; and in a bandwidth
	// test CQModeration, the requests to each signalled completion (-Q),
	// and PostList, where requests were posted in lists (-l above 1), the
	// length of a list.
	TXDepth      int    `json:"tx_depth,omitempty"`
	RXDepth      int    `json:"rx_depth,omitempty"`
	CQModeration int    `json:"cq_moderation,omitempty"`
	PostList     uint32 `json:"post_list,omitempty"`
	// RecvPostList is, where the receiver replaced its receives in lists
	// (--recv_post_list above 1), the length of a list.
	RecvPostList uint32 `json:"recv_post_list,omitempty"`
	// MTU is the path MTU in bytes: the smaller of the two ports' active
	// MTUs and -m's (env's active_mtu is this side's port's).
	MTU int `json:"mtu,omitempty"`
	// MaxInline is, in a write or send test, the most bytes a request
	// carried inline, as the QPs got it (-I, or the test's default,
	// lowered to what the device allows), 0 included; OutstandingReads
	// is, in a read or atomic test, the reads or atomics each QP could
	// have outstanding, as the QPs got them (-o, both devices' caps).
	// Each is left out of the other kind of test.
	MaxInline        *int `json:"max_inline,omitempty"`
	OutstandingReads int  `json:"outstanding_reads,omitempty"`
	// SL and TrafficClass are the service level (--sl) and the traffic
	// class (--tclass) of the QPs' packets, left out where 0, the
	// default.
	SL           uint8 `json:"sl,omitempty"`
	TrafficClass uint8 `json:"traffic_class,omitempty"`
	// AtomicType is an atomic test's operation (-A): "FETCH_AND_ADD" or
	// "CMP_AND_SWAP".
	AtomicType string `json:"atomic_type,omitempty"`
	// MulticastGroup is the multicast group this side's QP joined (-g).
	MulticastGroup string `json:"multicast_group,omitempty"`
	// RateLimit describes this side's rate limit, if it had one
	// (--rate_limit).
	RateLimit string `json:"rate_limit,omitempty"`
	// FlowLabels are the GRH flow labels the QPs took in turn, where
	// the test set them (--flow_label).
	FlowLabels []uint32 `json:"flow_labels,omitempty"`
	// Threads is, in a test of several threads (--threads), their
	// number, and ThreadResults each one's part: Results are their sum.
	Threads       int            `json:"threads,omitempty"`
	ThreadResults []ThreadResult `json:"thread_results,omitempty"`
	// Results holds one entry per message size; WriteJSON writes an
	// empty array rather than null when there are none.
	Results []SizeResult `json:"results"`
	// Intervals holds the periodic reports of --run-infinitely.
	Intervals []Interval `json:"intervals,omitempty"`
	// Error describes why the run failed, if it did.
	Error *Error `json:"error,omitempty"`
	// Interrupted reports that the run was stopped (Ctrl-C) before it
	// finished; Results then holds what was measured.
	Interrupted bool `json:"interrupted"`
	// PeerInterrupted reports that the peer was stopped (Ctrl-C) before
	// the run finished, which ended this side's run too; Results then
	// holds what was measured until then.
	PeerInterrupted bool `json:"peer_interrupted"`
}

// TimeFormat is the layout of Result's StartTime and EndTime, RFC 3339
// with milliseconds, which they hold in UTC: 2026-12-07T08:40:01.123Z.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime is t as Result's StartTime and EndTime hold it, "" for the
// zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeFormat)
}

// SizeResult is the result for one message size. A bandwidth test fills
// the bandwidth fields and a latency test the latency fields; the others
// are left out of the JSON. A bandwidth test's size has its bandwidth
// fields even when they are zero (nothing completed), and a latency
// test's size its latency fields (a t_stdev of 0), except where the peer
// measured it; or where its rates are unknown (RateUnknown), which
// bw_peak_mbps, bw_avg_mbps, bw_avg_gbps and msg_rate_mpps are then left
// out of, as bw_peak_mbps is where there is no peak (NoPeak): a rate
// not measured is not a rate of zero. Latencies are in microseconds.
type SizeResult struct {
	Bytes      int    `json:"bytes"`
	Iterations uint64 `json:"iterations"`

	// Bandwidth in MB/sec (MB = 2^20 bytes) and Gbit/sec. A BWPeakMBps
	// of 0 beside an average is no peak (NoPeak): the receiving side of
	// a one-way send test times no windows of messages, and its JSON
	// leaves bw_peak_mbps out, as an Interval's, its CSV cell is empty,
	// and its text reads 0.00, as perftest's.
	BWPeakMBps  float64 `json:"bw_peak_mbps,omitempty"`
	BWAvgMBps   float64 `json:"bw_avg_mbps,omitempty"`
	BWAvgGbps   float64 `json:"bw_avg_gbps,omitempty"`
	MsgRateMpps float64 `json:"msg_rate_mpps,omitempty"`

	// perftest's latency columns, named as in its --out_json
	// (t_min, ..., percentile_99.9) and computed as it does: all but
	// t_min leave out the two largest samples (see stats.Latency).
	TMinUs          float64 `json:"t_min_us,omitempty"`
	TMaxUs          float64 `json:"t_max_us,omitempty"`
	TTypicalUs      float64 `json:"t_typical_us,omitempty"`
	TAvgUs          float64 `json:"t_avg_us,omitempty"`
	TStdevUs        float64 `json:"t_stdev_us,omitempty"`
	Percentile99Us  float64 `json:"percentile_99_us,omitempty"`
	Percentile999Us float64 `json:"percentile_99_9_us,omitempty"`
	// gorperf's percentiles (nearest rank) and maximum, of all the
	// samples.
	P50Us   float64 `json:"p50_us,omitempty"`
	P90Us   float64 `json:"p90_us,omitempty"`
	P99Us   float64 `json:"p99_us,omitempty"`
	P999Us  float64 `json:"p99_9_us,omitempty"`
	P9999Us float64 `json:"p99_99_us,omitempty"`
	MaxUs   float64 `json:"max_us,omitempty"`
	// WindowS, WindowTAvgUs and TPSAverage are, in a latency test of a
	// duration (-D), perftest's figures of its table (LatDur.Figures),
	// the text's row: the measuring window's measured time in seconds,
	// the time its iterations took, pauses included; t_avg from it, the
	// window divided by the iterations in microseconds (and halved for
	// write_lat and send_lat, perftest's rtt_factor); and tps average,
	// the iterations a second of the window. t_avg_us is still the mean
	// of the samples (all but the two largest), which leave gorperf's
	// pauses out and so fill less than the window.
	WindowS      float64 `json:"window_s,omitempty"`
	WindowTAvgUs float64 `json:"window_t_avg_us,omitempty"`
	TPSAverage   float64 `json:"tps_average,omitempty"`
	// SampledEvery and SamplesKept are there only where the run took
	// more samples than the memory set aside for them holds: one in
	// SampledEvery (a power of two) was kept, evenly through the run,
	// SamplesKept in all. t_typical, percentile_99 and percentile_99_9,
	// the p* percentiles and samples_us are then of the samples kept;
	// iterations, t_min, t_max, t_avg, t_stdev and max of all of them
	// (see stats.Latency).
	SampledEvery int `json:"sampled_every,omitempty"`
	SamplesKept  int `json:"samples_kept,omitempty"`
	// MeasuredByPeer marks a latency test's size on the side that kept
	// no samples (the server: the client times every test): its latency
	// fields are left out rather than given as zero, and the peer's
	// document has them.
	MeasuredByPeer bool `json:"measured_by_peer,omitempty"`
	// SamplesUs holds every latency sample in microseconds, in the order
	// measured, where the run asked for them (-U or -H).
	SamplesUs []float64 `json:"samples_us,omitempty"`

	// Counters is how this side's port counters moved during the size's
	// run, when asked for (-W).
	Counters []Counter `json:"counters,omitempty"`
	// CPU is this side's processor time during the size's run, when asked
	// for (--cpu_util).
	CPU *CPU `json:"cpu,omitempty"`
	// Local and Remote are, in a bidirectional bandwidth test, what this
	// side and the peer each sent, with their own peaks; the fields above
	// are their sum (perftest's --report-both).
	Local  *SizeResult `json:"local,omitempty"`
	Remote *SizeResult `json:"remote,omitempty"`

	// exact is the latency figures as measured, before SizeFromLatency
	// rounded them (exactLat); nil in a SizeResult built otherwise.
	exact *exactLat
}

// exactLat is a latency size's figures in microseconds as measured, not
// rounded to the nanosecond as SizeResult's fields are: the figures the
// text prints (WriteLatRow, WriteLatValue, WriteLatWindowRow ...), from
// which perftest's file (WritePerftestJSON) is written, so that its
// decimals are the text's digit for digit, as perftest prints and writes
// the same double. JSON does not carry them: a SizeResult decoded has
// none, and the file then has its rounded fields' (exactFigures).
type exactLat struct {
	min, tmax, typical, avg, stdev, t99, t999, max float64
	// windowAvg and tps are the window's t_avg and tps average of a
	// latency test of a duration (WindowTAvgUs, TPSAverage).
	windowAvg, tps float64
}

// exactFigures returns s's latency figures as measured where it has them,
// else its fields'.
func (s SizeResult) exactFigures() exactLat {
	if s.exact != nil {
		return *s.exact
	}
	return exactLat{min: s.TMinUs, tmax: s.TMaxUs, typical: s.TTypicalUs, avg: s.TAvgUs, stdev: s.TStdevUs,
		t99: s.Percentile99Us, t999: s.Percentile999Us, max: s.MaxUs, windowAvg: s.WindowTAvgUs, tps: s.TPSAverage}
}

// sizeBW is SizeResult with the bandwidth fields written even when zero:
// the JSON of a bandwidth test's size always has them, also where nothing
// completed (an interrupted run of fixed duration), so that a reader can
// tell it from a latency test's. Its fields must stay SizeResult's, in
// order: MarshalJSON converts one to the other.
type sizeBW struct {
	Bytes           int         `json:"bytes"`
	Iterations      uint64      `json:"iterations"`
	BWPeakMBps      float64     `json:"bw_peak_mbps"`
	BWAvgMBps       float64     `json:"bw_avg_mbps"`
	BWAvgGbps       float64     `json:"bw_avg_gbps"`
	MsgRateMpps     float64     `json:"msg_rate_mpps"`
	TMinUs          float64     `json:"t_min_us,omitempty"`
	TMaxUs          float64     `json:"t_max_us,omitempty"`
	TTypicalUs      float64     `json:"t_typical_us,omitempty"`
	TAvgUs          float64     `json:"t_avg_us,omitempty"`
	TStdevUs        float64     `json:"t_stdev_us,omitempty"`
	Percentile99Us  float64     `json:"percentile_99_us,omitempty"`
	Percentile999Us float64     `json:"percentile_99_9_us,omitempty"`
	P50Us           float64     `json:"p50_us,omitempty"`
	P90Us           float64     `json:"p90_us,omitempty"`
	P99Us           float64     `json:"p99_us,omitempty"`
	P999Us          float64     `json:"p99_9_us,omitempty"`
	P9999Us         float64     `json:"p99_99_us,omitempty"`
	MaxUs           float64     `json:"max_us,omitempty"`
	WindowS         float64     `json:"window_s,omitempty"`
	WindowTAvgUs    float64     `json:"window_t_avg_us,omitempty"`
	TPSAverage      float64     `json:"tps_average,omitempty"`
	SampledEvery    int         `json:"sampled_every,omitempty"`
	SamplesKept     int         `json:"samples_kept,omitempty"`
	MeasuredByPeer  bool        `json:"measured_by_peer,omitempty"`
	SamplesUs       []float64   `json:"samples_us,omitempty"`
	Counters        []Counter   `json:"counters,omitempty"`
	CPU             *CPU        `json:"cpu,omitempty"`
	Local           *SizeResult `json:"local,omitempty"`
	Remote          *SizeResult `json:"remote,omitempty"`
	exact           *exactLat
}

// sizeLat is SizeResult with the latency fields written even when zero:
// the JSON of a latency test's measured size always has them all, so
// that a t_stdev of 0 (one sample, or all alike) is given as 0 rather
// than left out. Its fields must stay SizeResult's, in order:
// MarshalJSON converts one to the other.
type sizeLat struct {
	Bytes           int         `json:"bytes"`
	Iterations      uint64      `json:"iterations"`
	BWPeakMBps      float64     `json:"bw_peak_mbps,omitempty"`
	BWAvgMBps       float64     `json:"bw_avg_mbps,omitempty"`
	BWAvgGbps       float64     `json:"bw_avg_gbps,omitempty"`
	MsgRateMpps     float64     `json:"msg_rate_mpps,omitempty"`
	TMinUs          float64     `json:"t_min_us"`
	TMaxUs          float64     `json:"t_max_us"`
	TTypicalUs      float64     `json:"t_typical_us"`
	TAvgUs          float64     `json:"t_avg_us"`
	TStdevUs        float64     `json:"t_stdev_us"`
	Percentile99Us  float64     `json:"percentile_99_us"`
	Percentile999Us float64     `json:"percentile_99_9_us"`
	P50Us           float64     `json:"p50_us"`
	P90Us           float64     `json:"p90_us"`
	P99Us           float64     `json:"p99_us"`
	P999Us          float64     `json:"p99_9_us"`
	P9999Us         float64     `json:"p99_99_us"`
	MaxUs           float64     `json:"max_us"`
	WindowS         float64     `json:"window_s,omitempty"`
	WindowTAvgUs    float64     `json:"window_t_avg_us,omitempty"`
	TPSAverage      float64     `json:"tps_average,omitempty"`
	SampledEvery    int         `json:"sampled_every,omitempty"`
	SamplesKept     int         `json:"samples_kept,omitempty"`
	MeasuredByPeer  bool        `json:"measured_by_peer,omitempty"`
	SamplesUs       []float64   `json:"samples_us,omitempty"`
	Counters        []Counter   `json:"counters,omitempty"`
	CPU             *CPU        `json:"cpu,omitempty"`
	Local           *SizeResult `json:"local,omitempty"`
	Remote          *SizeResult `json:"remote,omitempty"`
	exact           *exactLat
}

// latency reports whether s is a latency test's size: it has latency
// figures (a measurement never gives them all as zero), samples, or the
// peer measured it. Any other is a bandwidth test's.
func (s SizeResult) latency() bool {
	return s.MeasuredByPeer || s.TMaxUs != 0 || s.TAvgUs != 0 || s.TTypicalUs != 0 || len(s.SamplesUs) > 0
}

// NoPeak reports whether s is a bandwidth test's size that has an
// average and no peak (BWPeakMBps 0): a measured peak is never below the
// average.
func (s SizeResult) NoPeak() bool { return s.BWPeakMBps == 0 && s.BWAvgMBps != 0 }

// RateUnknown reports whether s is a bandwidth test's size whose
// messages came but whose rates are unknown: the receiver timed none of
// them (stats.Bandwidth.RateUnknown), and its rates are zero. A rate
// measured is never zero.
func (s SizeResult) RateUnknown() bool {
	return !s.MeasuredByPeer && !s.latency() && s.Iterations > 0 && s.BWAvgMBps == 0 && s.MsgRateMpps == 0
}

// MarshalJSON writes s with its bandwidth fields, zero or not, where it
// is a bandwidth test's size, but bw_peak_mbps where it has no peak
// (NoPeak) and none of its rates where they are unknown (RateUnknown);
// with its latency fields, zero or not, and without the
// bandwidth fields where it is a latency test's size that this side
// measured; and with neither where the peer measured it.
func (s SizeResult) MarshalJSON() ([]byte, error) {
	switch {
	case s.MeasuredByPeer || s.RateUnknown():
		type plain SizeResult // without this method
		return json.Marshal(plain(s))
	case s.latency():
		return json.Marshal(sizeLat(s))
	case s.NoPeak():
		// The outer field hides sizeBW's, and, 0, is left out.
		return json.Marshal(struct {
			sizeBW
			BWPeakMBps float64 `json:"bw_peak_mbps,omitempty"`
		}{sizeBW: sizeBW(s)})
	}
	return json.Marshal(sizeBW(s))
}

// ThreadResult is one thread's part of a test of several threads: its
// QPs, the CPU it was pinned to (absent when it was not), its own
// bandwidth at each size, and its error if it failed.
type ThreadResult struct {
	Thread  int          `json:"thread"`
	QPs     int          `json:"qps"`
	CPU     *int         `json:"cpu,omitempty"`
	Results []SizeResult `json:"results"`
	Error   string       `json:"error,omitempty"`
}

// Interval is one periodic bandwidth report of a --run-infinitely run.
// It has no peak: an interval times no window of messages, and the
// text's row of it reads 0.00 there (WriteIntervalRow), the CSV's cell is
// empty.
type Interval struct {
	// EndS is the end of the interval in seconds since the test started,
	// and DurationS its length in seconds.
	EndS      float64 `json:"end_s"`
	DurationS float64 `json:"duration_s"`
	// Iterations is the number of messages completed in the interval.
	Iterations  uint64  `json:"iterations"`
	BWAvgMBps   float64 `json:"bw_avg_mbps"`
	BWAvgGbps   float64 `json:"bw_avg_gbps"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
}

// Error is the JSON form of a failure: a stable machine-readable code and
// a message for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// SizeFromBandwidth returns the SizeResult of a bandwidth test.
func SizeFromBandwidth(b stats.Bandwidth) SizeResult {
	_, gbps := b.Gbps()
	return SizeResult{
		Bytes:       b.Bytes,
		Iterations:  b.Iterations,
		BWPeakMBps:  b.PeakMBps,
		BWAvgMBps:   b.AvgMBps,
		BWAvgGbps:   gbps,
		MsgRateMpps: b.MsgRateMpps,
	}
}

// SizeFromLatency returns the SizeResult of a latency test of iters
// iterations of size bytes. l is in nanoseconds; the result holds
// microseconds rounded to the nanosecond, so that the JSON carries no
// digits beyond what was measured, and keeps them unrounded for
// perftest's file (exactLat). Without samples (l.N is 0) it has
// no latency figures and MeasuredByPeer is set. Where the run kept one
// sample in so many (l.Every over 1), SampledEvery and SamplesKept say
// so.
func SizeFromLatency(size int, iters uint64, l stats.Latency) SizeResult {
	if l.N == 0 {
		return SizeResult{Bytes: size, Iterations: iters, MeasuredByPeer: true}
	}
	return SizeResult{
		Bytes:           size,
		Iterations:      iters,
		TMinUs:          usec(l.Min),
		TMaxUs:          usec(l.TMax),
		TTypicalUs:      usec(l.Typical),
		TAvgUs:          usec(l.Avg),
		TStdevUs:        usec(l.Stdev),
		Percentile99Us:  usec(l.T99),
		Percentile999Us: usec(l.T999),
		P50Us:           usec(l.P50),
		P90Us:           usec(l.P90),
		P99Us:           usec(l.P99),
		P999Us:          usec(l.P999),
		P9999Us:         usec(l.P9999),
		MaxUs:           usec(l.Max),
		SampledEvery:    l.Every,
		SamplesKept:     l.Stored,
		exact: &exactLat{min: l.Min / nsPerUsec, tmax: l.TMax / nsPerUsec, typical: l.Typical / nsPerUsec,
			avg: l.Avg / nsPerUsec, stdev: l.Stdev / nsPerUsec, t99: l.T99 / nsPerUsec, t999: l.T999 / nsPerUsec,
			max: l.Max / nsPerUsec},
	}
}

// SizeFromLatencyWindow returns the result of a latency test of a
// duration (-D), as SizeFromLatency's for d's iterations, with d's
// figures (window_s, window_t_avg_us, tps_average) where this side
// measured the test (l has samples), kept unrounded too (exactLat).
func SizeFromLatencyWindow(size int, d LatDur, l stats.Latency) SizeResult {
	r := SizeFromLatency(size, d.Iterations, l)
	if l.N > 0 && d.Window > 0 {
		avg, tps := d.Figures()
		// Whole nanoseconds over 1e9, which prints as the nanoseconds
		// do (1.997882324), where Seconds' sum of its parts may not
		// (1.9978823239999999).
		r.WindowS = float64(d.Window) / 1e9
		r.WindowTAvgUs, r.TPSAverage = usec(avg), math.Round(tps*1e3)/1e3
		r.exact.windowAvg, r.exact.tps = avg/nsPerUsec, tps
	}
	return r
}

// SamplesUs returns latency samples in nanoseconds as the microseconds of
// SizeResult.SamplesUs, in the same order.
func SamplesUs(ns []float64) []float64 {
	us := make([]float64, len(ns))
	for i, v := range ns {
		us[i] = v / nsPerUsec
	}
	return us
}

// usec converts nanoseconds to microseconds rounded to the nanosecond.
func usec(ns float64) float64 {
	return math.Round(ns) / nsPerUsec
}

// IntervalFromBandwidth returns the Interval that ends at end (measured
// from the start of the test) with the bandwidth b, as returned by
// stats.Accumulator.Snapshot.
func IntervalFromBandwidth(end time.Duration, b stats.Bandwidth) Interval {
	_, gbps := b.Gbps()
	return Interval{
		EndS:        end.Seconds(),
		DurationS:   b.Elapsed.Seconds(),
		Iterations:  b.Iterations,
		BWAvgMBps:   b.AvgMBps,
		BWAvgGbps:   gbps,
		MsgRateMpps: b.MsgRateMpps,
	}
}

// WriteJSON writes r as one indented JSON document followed by a newline.
// It sets SchemaVersion and Tool, and writes a nil Results as [].
// Floating-point fields must be finite; encoding/json rejects NaN and Inf.
func WriteJSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.filled())
}

// WriteJSONLine writes r as WriteJSON does, but compact, on one line
// followed by a newline: one line a document, JSON Lines, as serve
// writes its tests' documents.
func WriteJSONLine(w io.Writer, r Result) error {
	return json.NewEncoder(w).Encode(r.filled())
}

// filled is r with SchemaVersion and Tool set, and a nil Results [].
func (r Result) filled() Result {
	r.SchemaVersion = SchemaVersion
	r.Tool = Tool
	if r.Results == nil {
		r.Results = []SizeResult{}
	}
	return r
}
