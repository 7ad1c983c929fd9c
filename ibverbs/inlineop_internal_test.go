//go:build linux && cgo

package ibverbs

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// checkSend refuses SendInline on every opcode but the sends and RDMA
// writes (inlineOps), naming the opcode, and takes it on those: without a
// device, on an SGE that lies in a live MR. The old check let a READ or
// an atomic with SendInline through to the provider.
func TestCheckSendInlineOpcodes(t *testing.T) {
	buf := make([]byte, 64)
	m := registerFake(buf, 0x4321)
	defer unregisterFake(m)
	qp := &QP{pd: &PD{}, typ: QPTypeRC, cap: QPCap{MaxSendWR: 16, MaxSendSGE: 4, MaxInline: 64}}
	for op := OpRDMAWrite; op <= OpSendWithInv; op++ {
		w := SendWR{Opcode: op, Flags: SendInline, SGL: []SGE{{Addr: m.ptr, Length: 8, LKey: m.lkey}}}
		if op == OpBindMW {
			w.Bind = &MWBind{}
		}
		err := qp.checkSend(&w, 4, &qp.inl)
		if inlineOps&(1<<op) != 0 {
			if err != nil {
				t.Errorf("%v with SendInline: %v", op, err)
			}
			continue
		}
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "SendInline on a "+op.String()+" request") {
			t.Errorf("%v with SendInline: %v, want EINVAL naming the opcode", op, err)
		}
	}
}
