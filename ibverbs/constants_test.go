//go:build linux && cgo

package ibverbs_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gorperf/gorperf/ibverbs"
	"github.com/gorperf/gorperf/ibverbs/internal/cverbs"
)

// TestConstantsMatchC checks every Go constant against its verbs.h value.
func TestConstantsMatchC(t *testing.T) {
	goValues := map[string]int64{
		"MTU256":                int64(ibverbs.MTU256),
		"MTU512":                int64(ibverbs.MTU512),
		"MTU1024":               int64(ibverbs.MTU1024),
		"MTU2048":               int64(ibverbs.MTU2048),
		"MTU4096":               int64(ibverbs.MTU4096),
		"PortNop":               int64(ibverbs.PortNop),
		"PortDown":              int64(ibverbs.PortDown),
		"PortInit":              int64(ibverbs.PortInit),
		"PortArmed":             int64(ibverbs.PortArmed),
		"PortActive":            int64(ibverbs.PortActive),
		"PortActiveDefer":       int64(ibverbs.PortActiveDefer),
		"LinkLayerUnspecified":  int64(ibverbs.LinkLayerUnspecified),
		"LinkLayerInfiniBand":   int64(ibverbs.LinkLayerInfiniBand),
		"LinkLayerEthernet":     int64(ibverbs.LinkLayerEthernet),
		"NodeUnknown":           int64(ibverbs.NodeUnknown),
		"NodeCA":                int64(ibverbs.NodeCA),
		"NodeSwitch":            int64(ibverbs.NodeSwitch),
		"NodeRouter":            int64(ibverbs.NodeRouter),
		"NodeRNIC":              int64(ibverbs.NodeRNIC),
		"NodeUSNIC":             int64(ibverbs.NodeUSNIC),
		"NodeUSNICUDP":          int64(ibverbs.NodeUSNICUDP),
		"NodeUnspecified":       int64(ibverbs.NodeUnspecified),
		"TransportUnknown":      int64(ibverbs.TransportUnknown),
		"TransportIB":           int64(ibverbs.TransportIB),
		"TransportIWARP":        int64(ibverbs.TransportIWARP),
		"TransportUSNIC":        int64(ibverbs.TransportUSNIC),
		"TransportUSNICUDP":     int64(ibverbs.TransportUSNICUDP),
		"TransportUnspecified":  int64(ibverbs.TransportUnspecified),
		"GIDTypeIB":             int64(ibverbs.GIDTypeIB),
		"GIDTypeRoCEv1":         int64(ibverbs.GIDTypeRoCEv1),
		"GIDTypeRoCEv2":         int64(ibverbs.GIDTypeRoCEv2),
		"AccessLocalWrite":      int64(ibverbs.AccessLocalWrite),
		"AccessRemoteWrite":     int64(ibverbs.AccessRemoteWrite),
		"AccessRemoteRead":      int64(ibverbs.AccessRemoteRead),
		"AccessRemoteAtomic":    int64(ibverbs.AccessRemoteAtomic),
		"AccessMWBind":          int64(ibverbs.AccessMWBind),
		"AccessZeroBased":       int64(ibverbs.AccessZeroBased),
		"AccessOnDemand":        int64(ibverbs.AccessOnDemand),
		"AccessHugeTLB":         int64(ibverbs.AccessHugeTLB),
		"AccessRelaxedOrdering": int64(ibverbs.AccessRelaxedOrdering),
		"QPTypeRC":              int64(ibverbs.QPTypeRC),
		"QPTypeUC":              int64(ibverbs.QPTypeUC),
		"QPTypeUD":              int64(ibverbs.QPTypeUD),
		"QPTypeRawPacket":       int64(ibverbs.QPTypeRawPacket),
		"QPStateReset":          int64(ibverbs.QPStateReset),
		"QPStateInit":           int64(ibverbs.QPStateInit),
		"QPStateRTR":            int64(ibverbs.QPStateRTR),
		"QPStateRTS":            int64(ibverbs.QPStateRTS),
		"QPStateSQD":            int64(ibverbs.QPStateSQD),
		"QPStateSQE":            int64(ibverbs.QPStateSQE),
		"QPStateError":          int64(ibverbs.QPStateError),
		"QPStateUnknown":        int64(ibverbs.QPStateUnknown),
		"QPAttrState":           int64(ibverbs.QPAttrState),
		"QPAttrCurState":        int64(ibverbs.QPAttrCurState),
		"QPAttrEnSQDAsync":      int64(ibverbs.QPAttrEnSQDAsync),
		"QPAttrAccessFlags":     int64(ibverbs.QPAttrAccessFlags),
		"QPAttrPKeyIndex":       int64(ibverbs.QPAttrPKeyIndex),
		"QPAttrPort":            int64(ibverbs.QPAttrPort),
		"QPAttrQKey":            int64(ibverbs.QPAttrQKey),
		"QPAttrAV":              int64(ibverbs.QPAttrAV),
		"QPAttrPathMTU":         int64(ibverbs.QPAttrPathMTU),
		"QPAttrTimeout":         int64(ibverbs.QPAttrTimeout),
		"QPAttrRetryCnt":        int64(ibverbs.QPAttrRetryCnt),
		"QPAttrRNRRetry":        int64(ibverbs.QPAttrRNRRetry),
		"QPAttrRQPSN":           int64(ibverbs.QPAttrRQPSN),
		"QPAttrMaxQPRdAtomic":   int64(ibverbs.QPAttrMaxQPRdAtomic),
		"QPAttrAltPath":         int64(ibverbs.QPAttrAltPath),
		"QPAttrMinRNRTimer":     int64(ibverbs.QPAttrMinRNRTimer),
		"QPAttrSQPSN":           int64(ibverbs.QPAttrSQPSN),
		"QPAttrMaxDestRdAtomic": int64(ibverbs.QPAttrMaxDestRdAtomic),
		"QPAttrPathMigState":    int64(ibverbs.QPAttrPathMigState),
		"QPAttrCap":             int64(ibverbs.QPAttrCap),
		"QPAttrDestQPN":         int64(ibverbs.QPAttrDestQPN),
		"QPAttrRateLimit":       int64(ibverbs.QPAttrRateLimit),
		"OpRDMAWrite":           int64(ibverbs.OpRDMAWrite),
		"OpRDMAWriteWithImm":    int64(ibverbs.OpRDMAWriteWithImm),
		"OpSend":                int64(ibverbs.OpSend),
		"OpSendWithImm":         int64(ibverbs.OpSendWithImm),
		"OpRDMARead":            int64(ibverbs.OpRDMARead),
		"OpAtomicCmpAndSwp":     int64(ibverbs.OpAtomicCmpAndSwp),
		"OpAtomicFetchAdd":      int64(ibverbs.OpAtomicFetchAdd),
		"OpLocalInv":            int64(ibverbs.OpLocalInv),
		"OpBindMW":              int64(ibverbs.OpBindMW),
		"OpSendWithInv":         int64(ibverbs.OpSendWithInv),
		"MWType1":               int64(ibverbs.MWType1),
		"MWType2":               int64(ibverbs.MWType2),
		"SendFence":             int64(ibverbs.SendFence),
		"SendSignaled":          int64(ibverbs.SendSignaled),
		"SendSolicited":         int64(ibverbs.SendSolicited),
		"SendInline":            int64(ibverbs.SendInline),
		"SendIPCsum":            int64(ibverbs.SendIPCsum),
		"WCSuccess":             int64(ibverbs.WCSuccess),
		"WCLocLenErr":           int64(ibverbs.WCLocLenErr),
		"WCLocQPOpErr":          int64(ibverbs.WCLocQPOpErr),
		"WCLocEECOpErr":         int64(ibverbs.WCLocEECOpErr),
		"WCLocProtErr":          int64(ibverbs.WCLocProtErr),
		"WCWRFlushErr":          int64(ibverbs.WCWRFlushErr),
		"WCMWBindErr":           int64(ibverbs.WCMWBindErr),
		"WCBadRespErr":          int64(ibverbs.WCBadRespErr),
		"WCLocAccessErr":        int64(ibverbs.WCLocAccessErr),
		"WCRemInvReqErr":        int64(ibverbs.WCRemInvReqErr),
		"WCRemAccessErr":        int64(ibverbs.WCRemAccessErr),
		"WCRemOpErr":            int64(ibverbs.WCRemOpErr),
		"WCRetryExcErr":         int64(ibverbs.WCRetryExcErr),
		"WCRNRRetryExcErr":      int64(ibverbs.WCRNRRetryExcErr),
		"WCLocRDDViolErr":       int64(ibverbs.WCLocRDDViolErr),
		"WCRemInvRdReqErr":      int64(ibverbs.WCRemInvRdReqErr),
		"WCRemAbortErr":         int64(ibverbs.WCRemAbortErr),
		"WCInvEECNErr":          int64(ibverbs.WCInvEECNErr),
		"WCInvEECStateErr":      int64(ibverbs.WCInvEECStateErr),
		"WCFatalErr":            int64(ibverbs.WCFatalErr),
		"WCRespTimeoutErr":      int64(ibverbs.WCRespTimeoutErr),
		"WCGeneralErr":          int64(ibverbs.WCGeneralErr),
		"WCTMErr":               int64(ibverbs.WCTMErr),
		"WCTMRndvIncomplete":    int64(ibverbs.WCTMRndvIncomplete),
		"WCSend":                int64(ibverbs.WCSend),
		"WCRDMAWrite":           int64(ibverbs.WCRDMAWrite),
		"WCRDMARead":            int64(ibverbs.WCRDMARead),
		"WCCompSwap":            int64(ibverbs.WCCompSwap),
		"WCFetchAdd":            int64(ibverbs.WCFetchAdd),
		"WCBindMW":              int64(ibverbs.WCBindMW),
		"WCLocalInv":            int64(ibverbs.WCLocalInv),
		"WCRecv":                int64(ibverbs.WCRecv),
		"WCRecvRDMAWithImm":     int64(ibverbs.WCRecvRDMAWithImm),
		"WCWithGRH":             int64(ibverbs.WCWithGRH),
		"WCWithImm":             int64(ibverbs.WCWithImm),
		"WCIPCsumOK":            int64(ibverbs.WCIPCsumOK),
		"WCWithInv":             int64(ibverbs.WCWithInv),
		"AtomicNone":            int64(ibverbs.AtomicNone),
		"AtomicHCA":             int64(ibverbs.AtomicHCA),
		"AtomicGlob":            int64(ibverbs.AtomicGlob),
		"EventCQErr":            int64(ibverbs.EventCQErr),
		"EventQPFatal":          int64(ibverbs.EventQPFatal),
		"EventQPReqErr":         int64(ibverbs.EventQPReqErr),
		"EventQPAccessErr":      int64(ibverbs.EventQPAccessErr),
		"EventCommEst":          int64(ibverbs.EventCommEst),
		"EventSQDrained":        int64(ibverbs.EventSQDrained),
		"EventPathMig":          int64(ibverbs.EventPathMig),
		"EventPathMigErr":       int64(ibverbs.EventPathMigErr),
		"EventDeviceFatal":      int64(ibverbs.EventDeviceFatal),
		"EventPortActive":       int64(ibverbs.EventPortActive),
		"EventPortErr":          int64(ibverbs.EventPortErr),
		"EventLIDChange":        int64(ibverbs.EventLIDChange),
		"EventPKeyChange":       int64(ibverbs.EventPKeyChange),
		"EventSMChange":         int64(ibverbs.EventSMChange),
		"EventSRQErr":           int64(ibverbs.EventSRQErr),
		"EventSRQLimitReached":  int64(ibverbs.EventSRQLimitReached),
		"EventQPLastWQEReached": int64(ibverbs.EventQPLastWQEReached),
		"EventClientReregister": int64(ibverbs.EventClientReregister),
		"EventGIDChange":        int64(ibverbs.EventGIDChange),
		"EventWQFatal":          int64(ibverbs.EventWQFatal),
	}
	if len(goValues) != len(cverbs.Values) {
		t.Fatalf("%d Go constants, %d C values", len(goValues), len(cverbs.Values))
	}
	for name, v := range goValues {
		if c, ok := cverbs.Values[name]; !ok || c != v {
			t.Errorf("%s = %d, C has %d", name, v, c)
		}
	}
}

// TestLayouts checks the Go types that C writes into, or reads, in place
// against the C structs they copy: the size of each, and the offset and
// size of every field, which C's offsetof and sizeof give (cverbs). Two
// fields swapped, or one widened, fail it even where the size holds.
func TestLayouts(t *testing.T) {
	for _, tc := range []struct {
		goType reflect.Type
		c      string
		fields map[string]string // Go field: C field
	}{
		{reflect.TypeOf(ibverbs.WC{}), "gv_wc", map[string]string{
			"WRID": "wr_id", "Status": "status", "Opcode": "opcode", "VendorErr": "vendor_err",
			"ByteLen": "byte_len", "Imm": "imm_data", "QPN": "qp_num", "SrcQP": "src_qp",
			"Flags": "wc_flags", "PKeyIndex": "pkey_index", "SLID": "slid", "SL": "sl",
			"DLIDPathBits": "dlid_path_bits", "_": "pad"}},
		{reflect.TypeOf(ibverbs.WCEx{}), "gv_wc_ex", map[string]string{
			"WC": "wc", "Timestamp": "ts", "Wallclock": "wallclock_ns"}},
		{reflect.TypeOf(ibverbs.SGE{}), "ibv_sge", map[string]string{
			"Addr": "addr", "Length": "length", "LKey": "lkey"}},
	} {
		if got, want := tc.goType.Size(), cverbs.Sizes[tc.c]; got != want {
			t.Errorf("sizeof %v %d, C %s %d", tc.goType, got, tc.c, want)
		}
		cFields := 0
		for name := range cverbs.Fields {
			if strings.HasPrefix(name, tc.c+".") {
				cFields++
			}
		}
		if tc.goType.NumField() != len(tc.fields) || cFields != len(tc.fields) {
			t.Errorf("%v has %d fields, C %s %d, the test maps %d", tc.goType, tc.goType.NumField(), tc.c, cFields, len(tc.fields))
		}
		for i := 0; i < tc.goType.NumField(); i++ {
			f := tc.goType.Field(i)
			cName, ok := tc.fields[f.Name]
			if !ok {
				t.Errorf("%v.%s: no C field to compare it with", tc.goType, f.Name)
				continue
			}
			c, ok := cverbs.Fields[tc.c+"."+cName]
			if !ok {
				t.Errorf("%v.%s: cverbs has no %s.%s", tc.goType, f.Name, tc.c, cName)
				continue
			}
			if f.Offset != c.Off || f.Type.Size() != c.Size {
				t.Errorf("%v.%s at %d, %d bytes; C %s.%s at %d, %d bytes",
					tc.goType, f.Name, f.Offset, f.Type.Size(), tc.c, cName, c.Off, c.Size)
			}
		}
	}
}

func TestRetries(t *testing.T) {
	for n, want := range map[int]uint8{0: 7, -1: 0, -100: 0, 1: 1, 7: 7, 8: 7} {
		if got := ibverbs.Retries(n); got != want {
			t.Errorf("Retries(%d) = %d, want %d", n, got, want)
		}
	}
}
