package exchange

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"strings"

	"github.com/gorperf/gorperf/ibverbs"
)

// Test is one of perftest's tests. The zero Test is invalid.
type Test uint8

// Tests.
const (
	WriteBW Test = iota + 1
	WriteLat
	ReadBW
	ReadLat
	SendBW
	SendLat
	AtomicBW
	AtomicLat
)

var testNames = [...]string{"", "write_bw", "write_lat", "read_bw", "read_lat",
	"send_bw", "send_lat", "atomic_bw", "atomic_lat"}

// String returns the test's name without perftest's "ib_" prefix, e.g.
// "write_bw".
func (t Test) String() string {
	if t.valid() {
		return testNames[t]
	}
	return fmt.Sprintf("Test(%d)", uint8(t))
}

func (t Test) valid() bool { return t >= WriteBW && t <= AtomicLat }

// IsLatency reports whether t measures latency rather than bandwidth.
func (t Test) IsLatency() bool {
	return t == WriteLat || t == ReadLat || t == SendLat || t == AtomicLat
}

// IsAtomic reports whether t is atomic_bw or atomic_lat.
func (t Test) IsAtomic() bool { return t == AtomicBW || t == AtomicLat }

// Receives reports whether t is send_bw or send_lat, the tests whose
// messages always consume posted receives; TestSpec.Receives also counts
// writes with immediate data.
func (t Test) Receives() bool { return t == SendBW || t == SendLat }

// IsWrite reports whether t is write_bw or write_lat.
func (t Test) IsWrite() bool { return t == WriteBW || t == WriteLat }

// UsesRemoteMemory reports whether t's requests name the peer's memory
// (RDMA write, read, atomics), so that QPInfo's buffer must be valid.
func (t Test) UsesRemoteMemory() bool { return t.valid() && !t.Receives() }

// ParseTest parses a test name such as "write_bw" or "ib_write_bw".
func ParseTest(s string) (Test, error) {
	name := strings.TrimPrefix(s, "ib_")
	for t := WriteBW; t <= AtomicLat; t++ {
		if name == testNames[t] {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown test %q: want one of %s", s, strings.Join(testNames[1:], ", "))
}

// AtomicOp is the operation of an atomic test, perftest's -A.
type AtomicOp uint8

// Atomic operations. FetchAdd, the zero value, is perftest's default.
const (
	FetchAdd AtomicOp = 0
	CmpSwap  AtomicOp = 1
)

func (a AtomicOp) String() string {
	switch a {
	case FetchAdd:
		return "FETCH_AND_ADD"
	case CmpSwap:
		return "CMP_AND_SWAP"
	}
	return fmt.Sprintf("AtomicOp(%d)", uint8(a))
}

// ParseAtomicOp parses perftest's -A values, "FETCH_AND_ADD" and
// "CMP_AND_SWAP".
func ParseAtomicOp(s string) (AtomicOp, error) {
	for _, a := range []AtomicOp{FetchAdd, CmpSwap} {
		if strings.EqualFold(s, a.String()) {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown atomic operation %q: want FETCH_AND_ADD or CMP_AND_SWAP", s)
}

// Sizes of an AllSizes sweep, perftest's -a: every power of two from
// AllSizesMin to AllSizesMax (to the MTU for UD).
const (
	AllSizesMin = 2
	AllSizesMax = 1 << 23
)

// MaxMessages bounds the messages of a size's run, Iterations times
// NumQPs: a work request's ID carries a message's number in 48 bits.
const MaxMessages = 1<<48 - 1

// MaxSetupQPs bounds NumQPs and the QPs of a Setup, whatever the Limits:
// that many QPInfos fill most of a frame.
const MaxSetupQPs = 1024

// MaxInline bounds TestSpec.Inline; no device inlines more.
const MaxInline = 4096

// TestSpec is what the client asks the server to run: the test and every
// option both sides must agree on. The server checks it with CheckLimits
// before it allocates anything.
type TestSpec struct {
	Test     Test
	Atomic   AtomicOp       // atomic tests only
	ConnType ibverbs.QPType // RC, UC or UD
	// Size is the message size in bytes; atomic tests use 8. It is
	// ignored when AllSizes is set, unless RunInfinitely is too, which
	// overrides AllSizes as perftest's --run_infinitely overrides -a.
	Size     uint32
	AllSizes bool
	// Iterations per size, or, if Duration is non-zero, the test runs for
	// Duration seconds instead. One of the two must be set.
	Iterations uint64
	Duration   uint32
	// Margin is, with a Duration, the seconds at each end of a size's run
	// that are not measured (perftest's -f): the results count what
	// completed from Margin after the start to Margin before the end, so
	// that neither the ramp-up nor the wind-down shows. 0: the whole run.
	Margin        uint32
	NumQPs        uint16
	Bidirectional bool   // bandwidth tests only
	TXDepth       uint32 // send queue depth, at least 1
	RXDepth       uint32 // receive queue depth; at least 1 for send tests
	CQModeration  uint32 // signal one send in this many; 0 or 1: every one
	PostList      uint32 // requests per post call; 0 or 1: one at a time
	// RecvPostList makes the receiving side of a bandwidth test replace
	// its used receives only in lists of this many, one post call a list
	// (perftest's --recv_post_list); 0 or 1: all a poll found, in one list.
	RecvPostList  uint32
	Inline        uint32 // inline data size in bytes (write and send only); see InlineDefault
	MTU           ibverbs.MTU
	RdmaCM        bool // connect with rdma_cm instead of swapping Setups
	TrafficClass  uint8
	SL            uint8
	RunInfinitely bool // bandwidth tests only: report every Duration, forever
	// OutReads caps the RDMA reads and atomics each QP has outstanding
	// (perftest's -o); 0: as many as both devices allow.
	OutReads uint8
	// ValidateData makes the sender write a known pattern and the receiver
	// check it, reporting failures in Result.Mismatches: once a size's run
	// ends, the last message each QP received, wrote or read (in a
	// latency test, QP 0's), the value the last atomic fetched, and with
	// Immediate every message's immediate data. Validate refuses what
	// cannot be checked so (checkValidation).
	ValidateData bool
	// OldPostSend posts with ibv_post_send even where the device has the
	// ibv_wr_* API, which is used by default (perftest's
	// --use_old_post_send).
	OldPostSend bool
	// NoRelaxedOrdering registers memory without PCIe relaxed ordering,
	// which both sides otherwise ask for, as perftest does (its
	// --disable_pcie_relaxed); a device without it ignores the request.
	// WriteLat never asks for it (see RelaxedOrdering).
	NoRelaxedOrdering bool
	// Events makes both sides sleep on completion events while they wait
	// for a completion, instead of polling (perftest's -e). write_lat,
	// which waits for a byte in memory, cannot.
	Events bool
	// HugePages puts both sides' buffers on 2 MiB huge pages (perftest's
	// --use_hugepages); a side with too few free fails the test. Sent as
	// bit 0 of the flags word.
	HugePages bool
	// SRQ makes each side's QPs take their receives from one shared
	// receive queue of RXDepth receives (perftest's --use-srq); send tests
	// only. Sent as bit 1 of the flags word.
	SRQ bool
	// Reversed makes the server the side that sends, writes or reads in
	// a bandwidth test (perftest's --reversed); not bidirectional, and
	// not with RunInfinitely, whose reports the client's sends make. Sent
	// as bit 2 of the flags word.
	Reversed bool
	// Flags holds the flag bits this release does not know; Validate
	// refuses any, so that a newer client fails clearly.
	Flags uint32
	// FlowLabels are the GRH flow labels of the QPs, taken in turn: QP i
	// of each side gets FlowLabels[i % len(FlowLabels)] (perftest's
	// --flow_label). On RoCE v2, rdma-core's providers and the kernel
	// derive a QP's UDP source port from its flow label, so the labels
	// choose the ECMP paths of the test's flows. Empty: the device's own
	// choice. They do not apply to RC through rdma_cm, which resolves
	// the path itself.
	FlowLabels []uint32
	// Immediate makes the write and send tests carry 32 bits of immediate
	// data in every message (perftest's --write_with_imm and
	// --send_with_imm): RDMA writes then consume a receive on the peer
	// and complete there, as sends do. Sent as bit 3 of the flags word.
	Immediate bool
	// WarmUp makes each active side post a TX depth of messages on every
	// QP and wait for them before each size's measurement (perftest's
	// --perform_warm_up): write, read and atomic bandwidth tests only.
	// Sent as bit 4 of the flags word.
	WarmUp bool
	// MRPerQP makes each side register one memory region per QP, over
	// the QP's part of the buffer, instead of one for the whole buffer
	// (perftest's --mr_per_qp): bandwidth tests only. Sent as bit 5 of the
	// flags word.
	MRPerQP bool
	// Multicast makes a send test's receiving sides members of multicast
	// groups, each side its own, to which the other sends (perftest's
	// -g/--mcg): UD, one QP, one way or a latency test; with RdmaCM
	// rdma_cm joins the groups.
	// Sent as bit 6 of the flags word.
	Multicast bool
	// InlineDefault says that Inline is perftest's default for the test,
	// not a size the user asked for (-I): a device that cannot inline
	// that much makes its QPs with the most it can, down to none, where
	// an inline size asked for fails. perftest picks its default per
	// device, and providers refuse a QP whose inline size is over their
	// own (irdma's 101 bytes, siw's 80, and others less than perftest's
	// 220 and 236). Sent as bit 7 of the flags word.
	InlineDefault bool
	// RXDepthDefault says that RXDepth is perftest's deep default for the
	// send tests over UD and UC (-n, up to 16000), not a depth the user
	// asked for (-r): a server whose limits refuse it lowers its own with
	// FitRXDepth, where a depth asked for is refused. Each side posts its
	// own receives, so the sides need not agree. Sent as bit 8 of the
	// flags word.
	RXDepthDefault bool
	// SizeDefault says that Size is UD's default, the most the client
	// offers as the path MTU (no -s), not a size the user asked for: once
	// the endpoints are swapped both sides take it down to the path MTU,
	// which the server's side may make smaller, where a size asked for
	// over it is refused. Only a single size over UD heeds it. Sent as
	// bit 9 of the flags word; a release that does not know the bit
	// refuses the spec (Flags).
	SizeDefault bool
	// Threads, above 1, runs a bandwidth test as that many connections
	// between the two sides at once, each with its own control
	// connection, QPs, CQs and buffer, and its own thread and CPU on each
	// side (gorperf's --threads; perftest has no such option). A spec on
	// the wire is connection Thread's (0 to Threads-1), with NumQPs its
	// share of the test's QPs; Group, the same non-zero number in all of
	// them, tells a server which connections make up one test. 0 or 1:
	// one connection, and Thread and Group are 0.
	Threads uint16
	Thread  uint16
	Group   uint64
}

// MaxThreads bounds TestSpec.Threads.
const MaxThreads = 256

// Receives reports whether the test's messages consume receives that the
// receiving side posts (perftest's has_recv_comp): the send tests, and
// the write tests with Immediate.
func (s TestSpec) Receives() bool {
	return s.Test.Receives() || s.Immediate && s.Test.IsWrite()
}

// RelaxedOrdering reports whether both sides register their buffers with
// PCIe relaxed ordering: unless NoRelaxedOrdering, and never for
// WriteLat, as ib_write_lat never does. Its receiver learns that a
// message came by polling the message's last byte, which tells only where
// the NIC writes the buffer in order: with relaxed ordering the last byte
// may land before the others.
func (s TestSpec) RelaxedOrdering() bool {
	return !s.NoRelaxedOrdering && s.Test != WriteLat
}

// MaxFlowLabel is the largest GRH flow label: it has 20 bits.
const MaxFlowLabel = 1<<20 - 1

// FlowLabel returns the flow label of QP i: FlowLabels in turn, or 0.
func (s TestSpec) FlowLabel(i int) uint32 {
	if len(s.FlowLabels) == 0 {
		return 0
	}
	return s.FlowLabels[i%len(s.FlowLabels)]
}

// Bits of the spec's one-byte bool field.
const (
	specAllSizes = 1 << iota
	specBidirectional
	specRdmaCM
	specRunInfinitely
	specValidateData
	specOldPostSend
	specNoRelaxedOrdering
	specEvents
)

// Bits of the spec's flags word, for options added after the bools ran out.
const (
	flagHugePages = 1 << iota
	flagSRQ
	flagReversed
	flagImmediate
	flagWarmUp
	flagMRPerQP
	flagMulticast
	flagInlineDefault
	flagRXDepthDefault
	flagSizeDefault

	knownFlags = flagHugePages | flagSRQ | flagReversed | flagImmediate | flagWarmUp | flagMRPerQP | flagMulticast |
		flagInlineDefault | flagRXDepthDefault | flagSizeDefault
)

// flagOptions pairs the options sent in the flags word with their bits.
func (s *TestSpec) flagOptions() []struct {
	set *bool
	bit uint32
} {
	return []struct {
		set *bool
		bit uint32
	}{
		{&s.HugePages, flagHugePages}, {&s.SRQ, flagSRQ}, {&s.Reversed, flagReversed},
		{&s.Immediate, flagImmediate}, {&s.WarmUp, flagWarmUp}, {&s.MRPerQP, flagMRPerQP},
		{&s.Multicast, flagMulticast}, {&s.InlineDefault, flagInlineDefault},
		{&s.RXDepthDefault, flagRXDepthDefault}, {&s.SizeDefault, flagSizeDefault},
	}
}

// specLen is the bytes of a TestSpec payload without flow labels; each
// adds 4, up to MaxSetupQPs of them.
const specLen = 75

// AppendPayload appends, big-endian: test uint8, atomic uint8, conn type
// uint32, size uint32, iterations uint64, duration and margin uint32, QPs uint16, TX
// depth, RX depth, CQ moderation, post list, receive post list and inline uint32, MTU, traffic
// class, SL and outstanding reads uint8, then one byte of bools (bit 0 AllSizes, 1
// Bidirectional, 2 RdmaCM, 3 RunInfinitely, 4 ValidateData, 5 OldPostSend,
// 6 NoRelaxedOrdering, 7 Events), flags uint32 (bit 0 HugePages, 1 SRQ,
// 2 Reversed, 3 Immediate, 4 WarmUp, 5 MRPerQP, 6 Multicast, 7
// InlineDefault, 8 RXDepthDefault, 9 SizeDefault), threads and thread
// uint16, group uint64, and a uint16 count of flow labels, each a uint32.
func (s TestSpec) AppendPayload(b []byte) []byte {
	b = append(b, uint8(s.Test), uint8(s.Atomic))
	b = binary.BigEndian.AppendUint32(b, uint32(s.ConnType))
	b = binary.BigEndian.AppendUint32(b, s.Size)
	b = binary.BigEndian.AppendUint64(b, s.Iterations)
	b = binary.BigEndian.AppendUint32(b, s.Duration)
	b = binary.BigEndian.AppendUint32(b, s.Margin)
	b = binary.BigEndian.AppendUint16(b, s.NumQPs)
	for _, v := range []uint32{s.TXDepth, s.RXDepth, s.CQModeration, s.PostList, s.RecvPostList, s.Inline} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = append(b, uint8(s.MTU), s.TrafficClass, s.SL, s.OutReads)
	var bools uint8
	for _, f := range []struct {
		set bool
		bit uint8
	}{
		{s.AllSizes, specAllSizes}, {s.Bidirectional, specBidirectional}, {s.RdmaCM, specRdmaCM},
		{s.RunInfinitely, specRunInfinitely}, {s.ValidateData, specValidateData},
		{s.OldPostSend, specOldPostSend}, {s.NoRelaxedOrdering, specNoRelaxedOrdering},
		{s.Events, specEvents},
	} {
		if f.set {
			bools |= f.bit
		}
	}
	b = append(b, bools)
	flags := s.Flags
	for _, f := range s.flagOptions() {
		if *f.set {
			flags |= f.bit
		}
	}
	b = binary.BigEndian.AppendUint32(b, flags)
	b = binary.BigEndian.AppendUint16(b, s.Threads)
	b = binary.BigEndian.AppendUint16(b, s.Thread)
	b = binary.BigEndian.AppendUint64(b, s.Group)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.FlowLabels)))
	for _, fl := range s.FlowLabels {
		b = binary.BigEndian.AppendUint32(b, fl)
	}
	return b
}

func decodeSpec(p []byte) (TestSpec, error) {
	r := reader{t: TypeSpec, b: p}
	var s TestSpec
	s.Test = Test(r.u8())
	s.Atomic = AtomicOp(r.u8())
	s.ConnType = ibverbs.QPType(r.u32())
	s.Size = r.u32()
	s.Iterations = r.u64()
	s.Duration = r.u32()
	s.Margin = r.u32()
	s.NumQPs = r.u16()
	s.TXDepth = r.u32()
	s.RXDepth = r.u32()
	s.CQModeration = r.u32()
	s.PostList = r.u32()
	s.RecvPostList = r.u32()
	s.Inline = r.u32()
	s.MTU = ibverbs.MTU(r.u8())
	s.TrafficClass = r.u8()
	s.SL = r.u8()
	s.OutReads = r.u8()
	bools := r.u8() // every bit has a meaning: a later option takes one of Flags
	s.AllSizes = bools&specAllSizes != 0
	s.Bidirectional = bools&specBidirectional != 0
	s.RdmaCM = bools&specRdmaCM != 0
	s.RunInfinitely = bools&specRunInfinitely != 0
	s.ValidateData = bools&specValidateData != 0
	s.OldPostSend = bools&specOldPostSend != 0
	s.NoRelaxedOrdering = bools&specNoRelaxedOrdering != 0
	s.Events = bools&specEvents != 0
	flags := r.u32()
	for _, f := range s.flagOptions() {
		*f.set = flags&f.bit != 0
	}
	s.Flags = flags &^ knownFlags
	s.Threads = r.u16()
	s.Thread = r.u16()
	s.Group = r.u64()
	n := int(r.u16())
	if n > MaxSetupQPs {
		return s, malformed(TypeSpec, "%d flow labels, more than %d", n, MaxSetupQPs)
	}
	if r.err == nil && len(r.b) != 4*n {
		return s, malformed(TypeSpec, "%d bytes for %d flow labels, want %d", len(r.b), n, 4*n)
	}
	if n > 0 {
		s.FlowLabels = make([]uint32, n)
	}
	for i := range s.FlowLabels {
		s.FlowLabels[i] = r.u32()
	}
	return s, r.done()
}

// sweep reports whether the test runs the AllSizes sweep: not when it
// runs infinitely, which runs Size alone, as perftest's --run_infinitely
// overrides -a (its size stays the default, or -s).
func (s TestSpec) sweep() bool { return s.AllSizes && !s.RunInfinitely }

// MaxSize returns the largest message size the test uses: 8 for atomics,
// the top of the sweep with AllSizes (and not RunInfinitely), else Size.
func (s TestSpec) MaxSize() uint32 {
	switch {
	case s.Test.IsAtomic():
		return 8
	case !s.sweep():
		return s.Size
	case s.ConnType == ibverbs.QPTypeUD:
		return s.udMax()
	}
	return AllSizesMax
}

// udMax is the largest UD message: the MTU, or 4096 while it is unknown.
func (s TestSpec) udMax() uint32 {
	if b := s.MTU.Bytes(); b != 0 {
		return uint32(b)
	}
	return 4096
}

// Sizes returns the message sizes the test runs, in order: the AllSizes
// sweep (not when RunInfinitely), or just MaxSize.
func (s TestSpec) Sizes() []uint32 {
	if !s.sweep() || s.Test.IsAtomic() {
		return []uint32{s.MaxSize()}
	}
	var sizes []uint32
	for n := uint32(AllSizesMin); n <= s.MaxSize(); n *= 2 {
		sizes = append(sizes, n)
	}
	return sizes
}

// memDepth is the queue depth Memory counts: receives matter only to send
// tests.
func (s TestSpec) memDepth() uint32 {
	if s.Receives() {
		return max(s.TXDepth, s.RXDepth)
	}
	return s.TXDepth
}

// GRHLen is the room a UD receive needs before the message, for the
// global route header the device writes there.
const GRHLen = 40

// RegionLen returns the bytes of each of the two regions a side's buffer
// holds for every QP (what it sends, and where the peer's messages land):
// MaxSize and room for a GRH, rounded up to 64 bytes so that each region
// starts on a cache line.
func (s TestSpec) RegionLen() uint64 {
	return (uint64(s.MaxSize()) + GRHLen + 63) &^ 63
}

// BufferLen returns the bytes of the buffer each side maps and registers
// for the test: two regions (RegionLen) for each of NumQPs QPs, whatever
// the depths and in either direction. In a test of several threads each
// connection has its own, of its share of the QPs. It cannot overflow:
// both factors are bounded by their types.
func (s TestSpec) BufferLen() uint64 {
	return 2 * uint64(s.NumQPs) * s.RegionLen()
}

// Memory bounds the bytes each side registers for the test: the larger
// of the buffer it maps (BufferLen) and the estimate servers have always
// counted, MaxSize × depth × NumQPs, doubled when Bidirectional, where
// depth is TXDepth, or max(TXDepth, RXDepth) for the tests that post
// receives (Receives). It is rounded up to whole pages, huge pages
// (ibverbs.HugePageSize) with HugePages, as the buffer is mapped, and
// saturates at math.MaxUint64.
func (s TestSpec) Memory() uint64 {
	n := max(s.depthEstimate(), s.BufferLen())
	page := uint64(os.Getpagesize())
	if s.HugePages {
		page = ibverbs.HugePageSize
	}
	if n%page != 0 {
		if n > math.MaxUint64-page {
			return math.MaxUint64
		}
		n += page - n%page
	}
	return n
}

// memoryHow says how Memory counts, for CheckLimits's messages, with qps
// for the QPs: "size 65536 × depth 128 × 4 QPs × 2 directions", or, where
// the buffer is the larger, "2 regions of 65600 bytes × 4 QPs".
func (s TestSpec) memoryHow(qps string) string {
	if s.BufferLen() > s.depthEstimate() {
		return fmt.Sprintf("2 regions of %d bytes × %s", s.RegionLen(), qps)
	}
	how := fmt.Sprintf("size %d × depth %d × %s", s.MaxSize(), s.memDepth(), qps)
	if s.Bidirectional {
		how += " × 2 directions"
	}
	return how
}

// depthEstimate is MaxSize × depth × NumQPs, doubled when Bidirectional,
// saturated at math.MaxUint64.
func (s TestSpec) depthEstimate() uint64 {
	n := uint64(s.MaxSize())
	for _, f := range []uint64{uint64(s.memDepth()), uint64(s.NumQPs)} {
		hi, lo := bits.Mul64(n, f)
		if hi != 0 {
			return math.MaxUint64
		}
		n = lo
	}
	if s.Bidirectional {
		if n > math.MaxUint64/2 {
			return math.MaxUint64
		}
		n *= 2
	}
	return n
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, args...))
}

// Validate reports whether s is a test gorperf can run, whatever the
// server's limits. Its errors wrap ErrInvalidSpec.
func (s TestSpec) Validate() error {
	t := s.Test
	if !t.valid() {
		return invalid("unknown test %d", uint8(s.Test))
	}
	// What each test takes, as the message says: send RC, UC or UD,
	// write RC or UC, read and atomic RC only.
	takes := "RC"
	switch t {
	case WriteBW, WriteLat:
		takes = "RC or UC"
	case SendBW, SendLat:
		takes = "RC, UC or UD"
	}
	switch s.ConnType {
	case ibverbs.QPTypeRC:
	case ibverbs.QPTypeUC:
		if t != WriteBW && t != WriteLat && t != SendBW && t != SendLat {
			return invalid("%s takes %s, not UC", t, takes)
		}
	case ibverbs.QPTypeUD:
		if t != SendBW && t != SendLat {
			return invalid("%s takes %s, not UD", t, takes)
		}
	default:
		return invalid("connection type %v: want RC, UC or UD", s.ConnType)
	}
	if s.Atomic != FetchAdd && s.Atomic != CmpSwap {
		return invalid("unknown atomic operation %d", uint8(s.Atomic))
	}
	switch {
	case t.IsAtomic() && (s.AllSizes || s.Size != 8):
		return invalid("%s moves 8 bytes: -s must be 8 or left out, and -a has no sizes to sweep", t)
	case !s.sweep() && s.Size == 0:
		return invalid("message size 0")
	}
	if s.MTU != 0 && s.MTU.Bytes() == 0 {
		return invalid("MTU %d: want 0 (the port's) or 1-5 (256-4096 bytes)", uint8(s.MTU))
	}
	if s.ConnType == ibverbs.QPTypeUD && s.MaxSize() > s.udMax() {
		return invalid("UD messages are at most the MTU, %d bytes, not %d", s.udMax(), s.MaxSize())
	}
	if s.Iterations == 0 && s.Duration == 0 {
		return invalid("neither iterations nor a duration")
	}
	if qps := uint64(max(s.NumQPs, 1)); s.Iterations > MaxMessages/qps {
		return invalid("%d iterations on %d QPs: at most %d messages in all", s.Iterations, qps, uint64(MaxMessages))
	}
	if t.IsLatency() && s.Duration == 0 && s.Iterations < 2 {
		// perftest's iters-1 samples: none of one iteration.
		return invalid("%s of %d iteration: a latency sample is the time from one post to the next, so at least 2", t, s.Iterations)
	}
	if t.IsLatency() && s.Bidirectional {
		return invalid("%s cannot be bidirectional", t)
	}
	if t.IsLatency() && s.RunInfinitely {
		return invalid("%s cannot run infinitely; only bandwidth tests can", t)
	}
	if s.Immediate && !t.IsWrite() && !t.Receives() {
		return invalid("%s carries no immediate data: only the write and send tests do", t)
	}
	if s.Events && t == WriteLat && !s.Immediate {
		return invalid("%s cannot wait on completion events: each side polls the last byte of its buffer for the peer's write, which completes nothing on the receiving side (--write_with_imm makes each write complete a receive there)", t)
	}
	if s.RunInfinitely && s.Duration == 0 {
		return invalid("running infinitely needs a duration, the reporting period")
	}
	if s.Margin > 0 && (s.Duration == 0 || s.RunInfinitely) {
		return invalid("a margin of %d s leaves out the ends of a run of fixed duration; this run has none", s.Margin)
	}
	if s.Margin > 0 && uint64(s.Duration) <= 2*uint64(s.Margin) {
		return invalid("a margin of %d s at each end leaves nothing of %d s to measure: want a duration over twice the margin", s.Margin, s.Duration)
	}
	if s.NumQPs == 0 || s.NumQPs > MaxSetupQPs {
		return invalid("%d QPs: want 1 to %d", s.NumQPs, MaxSetupQPs)
	}
	if s.TXDepth == 0 {
		return invalid("TX depth 0")
	}
	if s.Reversed && t.IsLatency() {
		return invalid("--reversed is for a bandwidth test, not %s", t)
	}
	if s.Reversed && (s.Bidirectional || s.RunInfinitely) {
		return invalid("--reversed is for a one-way bandwidth test of fixed length, not a bidirectional or infinite one")
	}
	if s.WarmUp && (t != WriteBW && t != ReadBW && t != AtomicBW || s.Immediate) {
		return invalid("a warm-up is for the write, read and atomic bandwidth tests (not %s, or writes with immediate data, whose receives the peer counts)", t)
	}
	if s.MRPerQP && t.IsLatency() {
		return invalid("%s runs on one QP: a memory region per QP is for the bandwidth tests", t)
	}
	if s.Multicast && (!t.Receives() || s.ConnType != ibverbs.QPTypeUD || s.NumQPs != 1 || s.Bidirectional) {
		var but []string
		if !t.Receives() || s.ConnType != ibverbs.QPTypeUD {
			but = append(but, fmt.Sprintf("%s over %v", t, s.ConnType))
		}
		if s.NumQPs != 1 {
			but = append(but, fmt.Sprintf("%d QPs", s.NumQPs))
		}
		if s.Bidirectional {
			but = append(but, "bidirectional")
		}
		return invalid("multicast is for the send tests over UD with one QP, one way or a latency test (not %s)", strings.Join(but, ", "))
	}
	if s.SRQ && !t.Receives() {
		return invalid("%s receives nothing: a shared receive queue is for the send tests", t)
	}
	if s.Receives() && s.RXDepth == 0 {
		return invalid("RX depth 0 for %s", t)
	}
	if s.CQModeration > s.TXDepth {
		return invalid("CQ moderation %d exceeds the TX depth %d", s.CQModeration, s.TXDepth)
	}
	if s.PostList > s.TXDepth {
		return invalid("post list %d exceeds the TX depth %d", s.PostList, s.TXDepth)
	}
	if s.PostList > 1 && t.IsLatency() {
		return invalid("a post list is for the bandwidth tests, not %s, as perftest's", t)
	}
	if s.PostList > 1 && s.CQModeration > 1 && s.PostList%s.CQModeration != 0 {
		// Each list then ends with a request that asks for a completion,
		// and a send queue too full for another whole list always drains.
		return invalid("post list %d must be a multiple of the CQ moderation %d, as perftest requires", s.PostList, s.CQModeration)
	}
	if s.RecvPostList > 1 {
		switch {
		case t.IsLatency() || !s.Receives():
			what := t.String()
			if t == WriteBW {
				what += " without immediate data"
			}
			return invalid("a receive post list is for the bandwidth tests that receive (send_bw, write_bw with immediate data), not %s", what)
		case s.RecvPostList > s.RXDepth:
			return invalid("receive post list %d exceeds the RX depth %d", s.RecvPostList, s.RXDepth)
		}
	}
	if s.Inline > MaxInline {
		return invalid("inline size %d exceeds %d", s.Inline, MaxInline)
	}
	if s.Inline != 0 && (t == ReadBW || t == ReadLat || t.IsAtomic()) {
		return invalid("%s cannot send inline", t)
	}
	if s.SL > 15 {
		return invalid("service level %d: want 0 to 15", s.SL)
	}
	if len(s.FlowLabels) > MaxSetupQPs {
		return invalid("%d flow labels: at most %d", len(s.FlowLabels), MaxSetupQPs)
	}
	for _, fl := range s.FlowLabels {
		if fl > MaxFlowLabel {
			return invalid("flow label %#x has more than 20 bits", fl)
		}
	}
	if s.RdmaCM && s.ConnType != ibverbs.QPTypeUD && len(s.FlowLabels) > 0 {
		return invalid("rdma_cm resolves the path of its %v connections itself: flow labels apply without -R, or to UD", s.ConnType)
	}
	if s.Flags != 0 {
		return invalid("unknown option flags %#x (is the client a newer gorperf?)", s.Flags)
	}
	if err := s.checkValidation(); err != nil {
		return err
	}
	if err := s.validateThreads(); err != nil {
		return err
	}
	if t.IsLatency() && s.NumQPs > 1 {
		// As perftest's "Multiple QPs only available on bw tests": a
		// latency test's messages go one at a time, on QP 0.
		return invalid("%s measures one message at a time, on one QP: %d QPs (-q) are for the bandwidth tests, as perftest's", t, s.NumQPs)
	}
	return nil
}

// validateWhat says what --validate checks, for its errors.
const validateWhat = "--validate checks, when a size's run ends, the last message that arrived or was read on each QP and the value each QP's last atomic fetched"

// checkValidation refuses ValidateData where nothing would be checked:
// a run that never ends, a bidirectional read_bw, whose reads land where
// the peer reads the same pattern from, and FETCH_AND_ADD bandwidth for a
// duration, where no side knows how many operations each QP made.
func (s TestSpec) checkValidation() error {
	switch {
	case !s.ValidateData:
		return nil
	case s.RunInfinitely:
		return invalid("%s; a run that reports forever has none", validateWhat)
	case s.Test == ReadBW && s.Bidirectional:
		return invalid("%s; in a bidirectional read_bw each side's reads land in the region the peer reads, which holds the pattern from the start: validate one way", validateWhat)
	case s.Test == AtomicBW && s.Atomic == FetchAdd && s.Duration > 0:
		return invalid("%s, which for FETCH_AND_ADD is the count of the QP's operations; a run of fixed duration does not know it: give iterations, or use CMP_AND_SWAP", validateWhat)
	}
	return nil
}

// validateThreads checks Threads, Thread and Group.
func (s TestSpec) validateThreads() error {
	t := s.Test
	switch {
	case s.Threads <= 1 && (s.Thread != 0 || s.Group != 0):
		return invalid("connection %d of group %#x, in a test of one connection", s.Thread, s.Group)
	case s.Threads <= 1:
		return nil
	case s.Threads > MaxThreads:
		return invalid("%d threads: at most %d", s.Threads, MaxThreads)
	case s.Thread >= s.Threads:
		return invalid("connection %d of a test of %d threads", s.Thread, s.Threads)
	case t.IsLatency():
		return invalid("%s measures one message at a time: threads are for the bandwidth tests", t)
	case s.Multicast:
		return invalid("multicast runs on one QP: threads need one QP each")
	}
	return nil
}

// Limits bound what a server allocates for one test, whatever a client
// asks. Every field is a maximum; a zero field allows nothing.
type Limits struct {
	MaxMsgSize uint32 // largest message size in bytes (TestSpec.MaxSize)
	MaxQPs     uint16 // most QPs (TestSpec.NumQPs); above MaxSetupQPs is invalid anyway
	MaxDepth   uint32 // deepest TX or RX queue
	MaxMemory  uint64 // bytes the server will register for one test (TestSpec.Memory)
	// MaxIterations bounds Iterations of latency tests, for which a side
	// keeps one 8-byte sample per iteration; bandwidth tests only count.
	// gorperf's server also keeps at most this many samples of a latency
	// test of a duration, thinning them past it.
	MaxIterations uint64
	// MaxDuration bounds, in seconds, how long a test of a duration runs
	// by the clock: Duration, once for each size of a sweep (AllSizes),
	// and never RunInfinitely, which has no end. 0 bounds nothing. A
	// test of so many iterations cannot be judged so when it comes:
	// gorperf's server stops it once it has run that long.
	MaxDuration uint32
}

// DefaultLimits returns limits that let every perftest default run, the
// -a sweep included: messages up to 8 MiB (perftest -a's largest), 64 QPs,
// queues 8192 deep, 4 GiB of registered memory (the -a sweep with perftest's
// TX depth of 128, bidirectional, on two QPs) and 2^24 latency iterations
// (128 MiB of samples); no bound on a test's duration.
func DefaultLimits() Limits {
	return Limits{
		MaxMsgSize:    AllSizesMax,
		MaxQPs:        64,
		MaxDepth:      8192,
		MaxMemory:     4 << 30,
		MaxIterations: 1 << 24,
	}
}

func overLimit(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrOverLimit, fmt.Sprintf(format, args...))
}

// CheckLimits validates s and reports whether the server may run it
// within l. Its errors wrap ErrInvalidSpec or ErrOverLimit; a server sends
// them to the client with NewErrorMsg.
//
// A connection of a test of several threads holds only its share of the
// test's QPs, and the server runs all of them at once: it is judged by
// the least test it can be part of (leastTest), every thread of it at
// its depths, so that no test within l whose connections ask for the
// same depths is refused for one of them. Once all of them have come,
// CheckGroupLimits judges the test they make.
func (s TestSpec) CheckLimits(l Limits) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Threads > 1 && s.Group == 0 {
		// A client numbers each test of several threads: Validate
		// allows 0 only in the test a caller asks for, before that.
		return invalid("a connection of a test of %d threads without a group number", s.Threads)
	}
	if n := s.MaxSize(); n > l.MaxMsgSize {
		size, most := formatOver(uint64(n), uint64(l.MaxMsgSize))
		return overLimit("message size %s exceeds this server's maximum of %s", size, most)
	}
	qps, full, exact := s.leastTest()
	if qps > uint64(l.MaxQPs) {
		if s.Threads > 1 {
			return overLimit("%s exceeds this server's maximum of %d QPs", s.ofThreads(qps, exact), l.MaxQPs)
		}
		return overLimit("%d QPs exceed this server's maximum of %d", s.NumQPs, l.MaxQPs)
	}
	if d := max(s.TXDepth, s.RXDepth); d > l.MaxDepth {
		return overLimit("queue depth %d exceeds this server's maximum of %d", d, l.MaxDepth)
	}
	if s.Test.IsLatency() && s.Iterations > l.MaxIterations {
		return overLimit("%d iterations of %s exceed this server's maximum of %d", s.Iterations, s.Test, l.MaxIterations)
	}
	if err := s.checkDuration(l.MaxDuration); err != nil {
		return err
	}
	if m := s.leastMemory(full); m > l.MaxMemory {
		mem, most := formatOver(m, l.MaxMemory)
		if s.Threads > 1 {
			needs := "needs at least"
			if exact {
				needs = "needs"
			}
			return overLimit("%s %s %s of registered memory (%s), more than this server's maximum of %s",
				s.ofThreads(qps, exact), needs, mem, s.memoryHow(fmt.Sprintf("%d QPs", qps)), most)
		}
		return overLimit("the test needs %s of registered memory (%s), more than this server's maximum of %s",
			mem, s.memoryHow(fmt.Sprintf("%d QPs", s.NumQPs)), most)
	}
	return nil
}

// checkDuration refuses a test that runs longer than most seconds by the
// clock (Limits.MaxDuration; 0 refuses none): one that runs infinitely,
// or whose Duration, on each of its sizes, adds up to more.
func (s TestSpec) checkDuration(most uint32) error {
	if most == 0 || s.Duration == 0 {
		return nil
	}
	if s.RunInfinitely {
		return overLimit("a run without end (--run_infinitely) exceeds this server's maximum duration of %d s", most)
	}
	if n := uint64(len(s.Sizes())); uint64(s.Duration)*n > uint64(most) {
		if n > 1 {
			return overLimit("-D %d on each of %d sizes (-a), %d s in all, exceeds this server's maximum duration of %d s",
				s.Duration, n, uint64(s.Duration)*n, most)
		}
		return overLimit("-D %d exceeds this server's maximum duration of %d s", s.Duration, most)
	}
	return nil
}

// leastTest returns the least test that s, a connection of a test of
// Threads threads, can be part of, as clients share a test's QPs out
// (the first total%Threads threads take one QP more than the others,
// and no thread none): its QPs in all, and full, how many of its
// threads, the first, have s's share, NumQPs, where the others have one
// QP fewer. exact says it is the one test s can be part of. A spec of
// one connection is its own test.
//
// Thread i's share n is either the even share of a total of n×Threads
// to n×Threads+i QPs, or, for n of 2 or more and all but the last
// thread, the larger share of a total of (n-1)×Threads+i+1 to
// n×Threads-1: the least of these is the least test.
func (s TestSpec) leastTest() (qps uint64, full int, exact bool) {
	n, t, i := uint64(s.NumQPs), uint64(max(s.Threads, 1)), uint64(s.Thread)
	if n >= 2 && i+1 < t {
		return (n-1)*t + i + 1, int(i + 1), false
	}
	return n * t, int(t), i == 0
}

// LeastTestQPs returns the QPs in all of the least test that s, a
// connection of a test of Threads threads holding its thread's share of
// the QPs, can be part of, as CheckLimits judges a connection (the first
// total%Threads threads take one QP more than the others), and exact,
// whether that is the one test s can be part of. A spec of one
// connection is its own test: NumQPs, exact.
func (s TestSpec) LeastTestQPs() (qps uint64, exact bool) {
	qps, _, exact = s.leastTest()
	return qps, exact
}

// leastMemory is the Memory of the least test s can be part of (full of
// its threads with s's share of the QPs, the others with one fewer:
// leastTest), each thread at s's depths, saturated at math.MaxUint64.
func (s TestSpec) leastMemory(full int) uint64 {
	m := mulSat(s.Memory(), uint64(full))
	if rest := int(max(s.Threads, 1)) - full; rest > 0 {
		c := s
		c.NumQPs--
		m = addSat(m, mulSat(c.Memory(), uint64(rest)))
	}
	return m
}

// ofThreads names the test of several threads of qps QPs in all, at
// least unless exact, of which s is a connection, for CheckLimits's
// messages.
func (s TestSpec) ofThreads(qps uint64, exact bool) string {
	least := "at least "
	if exact {
		least = ""
	}
	return fmt.Sprintf("a test of %d threads of %s%d QPs (thread %d has %d)", s.Threads, least, qps, s.Thread, s.NumQPs)
}

func mulSat(a, b uint64) uint64 {
	if hi, lo := bits.Mul64(a, b); hi == 0 {
		return lo
	}
	return math.MaxUint64
}

func addSat(a, b uint64) uint64 {
	if sum, carry := bits.Add64(a, b, 0); carry == 0 {
		return sum
	}
	return math.MaxUint64
}

// groupMemory is the Memory of all of specs, saturated at
// math.MaxUint64.
func groupMemory(specs []TestSpec) uint64 {
	var m uint64
	for _, s := range specs {
		m = addSat(m, s.Memory())
	}
	return m
}

// CheckGroupLimits reports whether a server may run, within l, the test
// of several threads whose connections' specs are specs, all of them,
// each of which has passed CheckLimits: their QPs and their registered
// memory (Memory) together, which CheckLimits, judging a connection by
// the least test it can be part of, could only bound from below. A test
// that passes it passes CheckLimits for each of its connections where it
// shares its QPs out as clients do and its connections ask for the same
// depths. Its errors wrap ErrOverLimit.
func CheckGroupLimits(specs []TestSpec, l Limits) error {
	var qps uint64
	for _, s := range specs {
		qps += uint64(s.NumQPs)
	}
	if qps > uint64(l.MaxQPs) {
		return overLimit("a test of %d threads of %d QPs in all exceeds this server's maximum of %d QPs", len(specs), qps, l.MaxQPs)
	}
	if m := groupMemory(specs); m > l.MaxMemory {
		// The thread that needs the most says how it is counted.
		big := specs[0]
		for _, s := range specs[1:] {
			if s.Memory() > big.Memory() {
				big = s
			}
		}
		mem, most := formatOver(m, l.MaxMemory)
		return overLimit("a test of %d threads of %d QPs in all needs %s of registered memory (thread %d the most, %s: %s), more than this server's maximum of %s",
			len(specs), qps, mem, big.Thread, formatBytes(big.Memory()), big.memoryHow(fmt.Sprintf("%d QPs", big.NumQPs)), most)
	}
	return nil
}

// DefaultRXDepth is perftest's RX depth for the send tests (DEF_RX_SEND),
// and the least FitRXDepth lowers a deep default to.
const DefaultRXDepth = 512

// MaxRecvCQ is the most entries FitRXDepth gives a connection's receive
// CQ, RX depth × its QPs: soft-RoCE's max_cqe, the least of the devices
// gorperf is tested on (mlx5's is 4194303).
const MaxRecvCQ = 32767

// rxFloor is the least depth FitRXDepth and FitGroupRXDepth lower a
// default RX depth to: DefaultRXDepth, or the receive post list.
func (s TestSpec) rxFloor() uint32 { return max(uint32(DefaultRXDepth), s.RecvPostList) }

// FitRXDepth lowers a deep default RX depth (RXDepthDefault) to the
// deepest, down to DefaultRXDepth and the receive post list, that keeps
// the queues within l's MaxDepth, the memory within l's MaxMemory, and
// the receive CQ, RX depth × QPs, within MaxRecvCQ. s is one
// connection's spec, as CheckLimits takes it; a spec without
// RXDepthDefault, or with no deeper depth to give up, is left as it is,
// as is one that fits. What even the least depth does not fit is left
// to CheckLimits to refuse.
//
// A connection of a test of several threads keeps its Memory within its
// part of MaxMemory, MaxMemory/Threads: stricter than CheckLimits, which
// counts the least test the connection can be part of, none of whose
// threads has more than its share. So CheckLimits takes the depth
// FitRXDepth leaves wherever it would take any depth FitRXDepth may give
// (down to its least), and the connections of a test, each fitted on its
// own, fit MaxMemory together whatever their shares, where each fits its
// part. Fitted each to the least test they would not: each thread of the
// larger share would count the others' as the smaller. FitGroupRXDepth
// lowers what does not fit together.
func (s *TestSpec) FitRXDepth(l Limits) {
	lo, hi := s.rxFloor(), s.RXDepth
	if !s.RXDepthDefault || hi <= lo {
		return
	}
	threads := uint64(max(s.Threads, 1))
	c := *s
	fits := func(d uint32) bool {
		c.RXDepth = d
		carry, m := bits.Mul64(c.Memory(), threads)
		return max(c.TXDepth, d) <= l.MaxDepth && carry == 0 && m <= l.MaxMemory &&
			uint64(d)*uint64(c.NumQPs) <= MaxRecvCQ
	}
	if fits(hi) {
		return
	}
	s.RXDepth = deepest(lo, hi, fits)
}

// deepest returns the deepest RX depth from lo up to hi, not hi, that
// fits, by bisection: lo fits, or nothing above it does; hi does not.
func deepest(lo, hi uint32, fits func(uint32) bool) uint32 {
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// FitGroupRXDepth lowers the deep default RX depths (RXDepthDefault) of
// specs, the connections of one test of several threads, each fitted on
// its own (FitRXDepth), where their Memory together is over l's
// MaxMemory: to the deepest bound, the same for all, that keeps it
// within, but none below DefaultRXDepth and its receive post list. That
// is where a connection with a larger share than the others does not
// fit its part of MaxMemory even at that least depth, and the others,
// fitted deeper, take what it needs. What even the least depths do not
// fit is left at them, for CheckGroupLimits to refuse.
func FitGroupRXDepth(specs []TestSpec, l Limits) {
	lowers := func(s TestSpec) bool { return s.RXDepthDefault && s.RXDepth > s.rxFloor() }
	lo, hi := uint32(math.MaxUint32), uint32(0)
	for _, s := range specs {
		if lowers(s) {
			lo, hi = min(lo, s.rxFloor()), max(hi, s.RXDepth)
		}
	}
	if hi == 0 || groupMemory(specs) <= l.MaxMemory {
		return
	}
	c := slices.Clone(specs)
	fits := func(d uint32) bool {
		for k, s := range specs {
			if lowers(s) {
				c[k].RXDepth = min(s.RXDepth, max(d, s.rxFloor()))
			}
		}
		return groupMemory(c) <= l.MaxMemory
	}
	fits(deepest(lo, hi, fits))
	for k := range specs {
		specs[k].RXDepth = c[k].RXDepth
	}
}

// formatBytes writes n in the largest binary unit that keeps it at least
// 1, to four digits ("8 MiB", "61.5 MiB"); where those digits would show
// a whole number of the unit that n is not, exactly, with that number and
// the bytes beside it ("8388609 B (8 MiB + 1 B)"): a size one byte past
// a limit of 8 MiB must not read as 8 MiB.
func formatBytes(n uint64) string {
	if n == math.MaxUint64 {
		return "more than 16 EiB"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for i < len(units)-1 && n>>(10*(i+1)) > 0 {
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	unit := uint64(1) << (10 * i)
	if n%unit == 0 {
		return fmt.Sprintf("%d %s", n/unit, units[i])
	}
	if approx := fmt.Sprintf("%.4g", float64(n)/float64(unit)); strings.ContainsAny(approx, ".e") {
		return approx + " " + units[i]
	}
	if r := n % unit; r >= unit/2 {
		up, u := n/unit+1, units[i]
		if up == 1024 && i+1 < len(units) {
			up, u = 1, units[i+1] // 1 MiB - 1 B, not 1024 KiB - 1 B
		}
		return fmt.Sprintf("%d B (%d %s - %d B)", n, up, u, unit-r)
	}
	return fmt.Sprintf("%d B (%d %s + %d B)", n, n/unit, units[i], n%unit)
}

// formatOver writes n, a value over limit, and limit, as formatBytes does,
// unless the two would then read the same (both rounded to the same four
// digits): then each exactly, in bytes, with formatBytes's beside it.
func formatOver(n, limit uint64) (string, string) {
	a, b := formatBytes(n), formatBytes(limit)
	if a != b || n == limit {
		return a, b
	}
	exact := func(n uint64) string {
		if f := formatBytes(n); !strings.HasSuffix(f, ")") {
			return fmt.Sprintf("%d B (%s)", n, f)
		}
		return formatBytes(n)
	}
	return exact(n), exact(limit)
}
