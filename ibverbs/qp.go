//go:build linux && cgo

package ibverbs

// #include "shim.h"
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// QPCap is a queue pair's capacity (struct ibv_qp_cap). Each is from 0 to
// math.MaxUint32, the verbs' uint32_t: CreateQP and Modify refuse others
// with an error matching syscall.EINVAL.
type QPCap struct {
	// MaxSendWR and MaxRecvWR are how many work requests the send and
	// receive queues hold: how many may be outstanding at once.
	MaxSendWR, MaxRecvWR int
	// MaxSendSGE and MaxRecvSGE are how many SGEs a request's SGL may
	// have.
	MaxSendSGE, MaxRecvSGE int
	// MaxInline is the most bytes a send with SendInline may carry.
	MaxInline int
}

// QPInit describes a queue pair to create (struct ibv_qp_init_attr).
type QPInit struct {
	Type   QPType
	SendCQ *CQ  // required: where the send queue's completions go
	RecvCQ *CQ  // defaults to SendCQ
	SRQ    *SRQ // receives come from the SRQ; RecvCQ still gets their completions
	// Cap is the capacity asked for; the device may grant more (QP.Cap).
	// Over the device's limits (Context.QueryDevice's MaxQPWR, MaxSGE), CreateQP
	// fails with an error matching syscall.EINVAL that names them.
	Cap QPCap
	// SigAll makes every send signalled, whatever its flags.
	SigAll bool
	// WRAPI creates the QP with ibv_create_qp_ex and the send operations
	// its type allows (RC: writes, sends, with and without immediate,
	// reads and atomics; UC: writes and sends; UD: sends), and makes
	// PostSend and PostSendLists build the requests with the ibv_wr_* API
	// (ibv_wr_start, ibv_wr_rdma_write, ..., ibv_wr_complete) instead of
	// ibv_post_send. That is the path perftest takes by default on the
	// devices that have it (mlx5, among others); other opcodes are refused
	// on such a QP. A provider without the API fails the creation with an
	// error that matches errors.ErrUnsupported.
	// rxe in rdma-core before commit 406cd2ad0 (Debian 12's 44.0 among
	// them) gets the length of a request with several SGEs wrong on this
	// path; inline data the binding gathers itself.
	WRAPI bool
	// WROps, with WRAPI, are the opcodes the QP is created for in place
	// of the list above: the memory-window opcodes (OpBindMW, OpLocalInv,
	// OpSendWithInv) are not in it, as not every provider has them. A
	// provider refuses a set it lacks.
	WROps []Opcode
}

// check refuses capacities that the verbs' uint32_t fields cannot hold,
// which would wrap (1<<32 + 16 to 16) or, negative, ask for 4 billion.
func (c QPCap) check(verb string) error {
	for _, f := range []struct {
		name string
		n    int
	}{{"MaxSendWR", c.MaxSendWR}, {"MaxRecvWR", c.MaxRecvWR}, {"MaxSendSGE", c.MaxSendSGE},
		{"MaxRecvSGE", c.MaxRecvSGE}, {"MaxInline", c.MaxInline}} {
		if err := checkU32(verb, "QPCap."+f.name, f.n); err != nil {
			return err
		}
	}
	return nil
}

// checkU32 refuses a count n, named what, that a uint32_t cannot hold.
func checkU32(verb, what string, n int) error {
	if n < 0 || uint64(n) > math.MaxUint32 {
		return fmt.Errorf("%s: %s %d: want 0 to %d: %w", verb, what, n, uint32(math.MaxUint32), syscall.EINVAL)
	}
	return nil
}

// QP is a queue pair (struct ibv_qp).
type QP struct {
	c    *C.struct_ibv_qp
	pd   *PD
	send *CQ
	recv *CQ
	srq  *SRQ
	typ  QPType
	num  uint32
	cap  QPCap
	psn  uint32
	// peerRdAtomic is the remote Endpoint's RdAtomic, from ToRTR.
	peerRdAtomic uint8
	// sendS and recvS are the C memory PostSend and PostRecv fill, one
	// caller at a time (sendMu, recvMu).
	sendS          *C.struct_gv_post_scratch
	recvS          *C.struct_gv_post_scratch
	sendMu, recvMu sync.Mutex
	// inl is the MR the last inline SGE that PostSend checked lay in
	// (under sendMu).
	inl inlineCache
	// qx is the QP's struct ibv_qp_ex when it posts through the ibv_wr_*
	// API, and wrOps the opcodes (bits of 1<<Opcode) it was created with.
	qx    *C.struct_ibv_qp_ex
	wrOps uint32
	// destroy replaces ibv_destroy_qp for QPs made by other libraries.
	destroy func() error
	kids    refs         // open SendBatches and RecvBatches
	groups  []mcastGroup // attached with AttachMcast
	// use guards c against Close for the methods that take neither
	// sendMu nor recvMu (Modify, Query, Endpoint, NewSendBatch, ...).
	use inUse
}

// maxBatch bounds the WRs one cgo call posts; longer lists take several.
const maxBatch = 256

// CreateQP creates a queue pair (ibv_create_qp, or ibv_create_qp_ex with
// init.WRAPI). The capacities granted, which may exceed those asked for,
// are in QP.Cap. Its CQs and SRQ must be on the PD's context, or on
// another handle on the same struct ibv_context (WrapContext): those of
// another Open of the device fail with an error matching syscall.EINVAL,
// as do, later, a UD send's AH and a bound window's.
func (pd *PD) CreateQP(init QPInit) (*QP, error) {
	if init.WRAPI {
		return pd.createQPEx(init, func(ax *C.struct_ibv_qp_init_attr_ex) (*C.struct_ibv_qp, error) {
			q, err := C.ibv_create_qp_ex(pd.ctx.c, ax)
			if q == nil {
				return nil, errnoOf("ibv_create_qp_ex", err)
			}
			return q, nil
		}, nil)
	}
	return pd.createQP(init, func(a *C.struct_ibv_qp_init_attr) (*C.struct_ibv_qp, error) {
		q, err := C.ibv_create_qp(pd.c, a)
		if q == nil {
			return nil, errnoOf("ibv_create_qp", err)
		}
		return q, nil
	}, nil)
}

// wrOpFlags are the IBV_QP_EX_WITH_* flags that ask for each opcode.
var wrOpFlags = map[Opcode]uint64{
	OpRDMAWrite:        C.IBV_QP_EX_WITH_RDMA_WRITE,
	OpRDMAWriteWithImm: C.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
	OpSend:             C.IBV_QP_EX_WITH_SEND,
	OpSendWithImm:      C.IBV_QP_EX_WITH_SEND_WITH_IMM,
	OpRDMARead:         C.IBV_QP_EX_WITH_RDMA_READ,
	OpAtomicCmpAndSwp:  C.IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
	OpAtomicFetchAdd:   C.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
	OpLocalInv:         C.IBV_QP_EX_WITH_LOCAL_INV,
	OpBindMW:           C.IBV_QP_EX_WITH_BIND_MW,
	OpSendWithInv:      C.IBV_QP_EX_WITH_SEND_WITH_INV,
}

// wrOps returns the opcodes (bits 1<<Opcode) a QP of type t made for the
// ibv_wr_* API takes, and the IBV_QP_EX_WITH_* flags that ask for them:
// those in want, or with none the ones of QPInit.WRAPI's list.
func wrOps(t QPType, want []Opcode) (ops uint32, flags uint64, err error) {
	if len(want) == 0 {
		want = []Opcode{OpSend, OpSendWithImm}
		if t == QPTypeRC || t == QPTypeUC {
			want = append(want, OpRDMAWrite, OpRDMAWriteWithImm)
		}
		if t == QPTypeRC {
			want = append(want, OpRDMARead, OpAtomicCmpAndSwp, OpAtomicFetchAdd)
		}
	}
	for _, o := range want {
		f, ok := wrOpFlags[o]
		if !ok {
			return 0, 0, fmt.Errorf("ibv_create_qp_ex: opcode %v has no ibv_wr_* call here: %w", o, syscall.EINVAL)
		}
		ops, flags = ops|1<<o, flags|f
	}
	return ops, flags, nil
}

// WRAPI reports whether the QP posts sends through the ibv_wr_* API
// (QPInit.WRAPI).
func (qp *QP) WRAPI() bool { return qp.qx != nil }

// CreateQPWith creates a queue pair through another library's verb, such
// as rdma_create_qp. create gets a struct ibv_qp_init_attr* filled from init
// as CreateQP fills it, makes the QP on pd and returns its struct ibv_qp*;
// the capacities the verb writes back into the attributes are what QP.Cap
// reports. Close calls destroy instead of ibv_destroy_qp.
//
// With init.WRAPI, create gets a struct ibv_qp_init_attr_ex* instead, with
// the PD and the send_ops_flags set, for a verb such as rdma_create_qp_ex.
func (pd *PD) CreateQPWith(init QPInit, create func(attr unsafe.Pointer) (unsafe.Pointer, error), destroy func() error) (*QP, error) {
	if create == nil || destroy == nil {
		return nil, fmt.Errorf("ibverbs: CreateQPWith needs a create and a destroy function: %w", syscall.EINVAL)
	}
	if init.WRAPI {
		return pd.createQPEx(init, func(ax *C.struct_ibv_qp_init_attr_ex) (*C.struct_ibv_qp, error) {
			q, err := create(unsafe.Pointer(ax))
			if err == nil && q == nil {
				err = fmt.Errorf("ibverbs: CreateQPWith: create returned no QP: %w", syscall.EINVAL)
			}
			return (*C.struct_ibv_qp)(q), err
		}, destroy)
	}
	return pd.createQP(init, func(a *C.struct_ibv_qp_init_attr) (*C.struct_ibv_qp, error) {
		q, err := create(unsafe.Pointer(a))
		if err == nil && q == nil {
			err = fmt.Errorf("ibverbs: CreateQPWith: create returned no QP: %w", syscall.EINVAL)
		}
		return (*C.struct_ibv_qp)(q), err
	}, destroy)
}

// createQPEx is createQP for a QP that posts through the ibv_wr_* API:
// create gets the attributes as a struct ibv_qp_init_attr_ex with the PD
// and the send operations of the QP's type.
func (pd *PD) createQPEx(init QPInit, create func(*C.struct_ibv_qp_init_attr_ex) (*C.struct_ibv_qp, error), destroy func() error) (*QP, error) {
	var qx *C.struct_ibv_qp_ex
	ops, flags, err := wrOps(init.Type, init.WROps)
	if err != nil {
		return nil, err
	}
	qp, err := pd.createQP(init, func(a *C.struct_ibv_qp_init_attr) (*C.struct_ibv_qp, error) {
		var ax C.struct_ibv_qp_init_attr_ex
		C.gv_fill_attr_ex(&ax, a, pd.c, C.uint64_t(flags))
		q, err := create(&ax)
		if err != nil {
			return nil, err
		}
		if qx = C.gv_qp_ex(q); qx == nil {
			if destroy != nil {
				destroy()
			} else {
				C.ibv_destroy_qp(q)
			}
			return nil, verbError("ibv_qp_to_qp_ex", int(syscall.EOPNOTSUPP))
		}
		a.cap = ax.cap
		return q, nil
	}, destroy)
	if err != nil {
		return nil, err
	}
	qp.qx, qp.wrOps = qx, ops
	return qp, nil
}

// createQP checks init, applies its defaults, fills the C attributes and
// wraps the QP that create makes from them.
func (pd *PD) createQP(init QPInit, create func(*C.struct_ibv_qp_init_attr) (*C.struct_ibv_qp, error), destroy func() error) (*QP, error) {
	if !pd.use.Enter() {
		return nil, ErrClosed
	}
	defer pd.use.Leave()
	if init.SendCQ == nil {
		return nil, fmt.Errorf("ibv_create_qp: a send CQ is required: %w", syscall.EINVAL)
	}
	if len(init.WROps) > 0 && !init.WRAPI {
		return nil, fmt.Errorf("ibv_create_qp: QPInit.WROps is for a QP with WRAPI: %w", syscall.EINVAL)
	}
	if init.RecvCQ == nil {
		init.RecvCQ = init.SendCQ
	}
	// The CQs and SRQ, entered, stay open until the QP holds them.
	for _, u := range []*inUse{&init.SendCQ.use, &init.RecvCQ.use, srqUse(init.SRQ)} {
		if u == nil {
			continue
		}
		if !u.Enter() {
			return nil, ErrClosed
		}
		defer u.Leave()
	}
	if err := pd.ctx.sameContext("ibv_create_qp", "the send CQ", init.SendCQ.ctx); err != nil {
		return nil, err
	}
	if err := pd.ctx.sameContext("ibv_create_qp", "the receive CQ", init.RecvCQ.ctx); err != nil {
		return nil, err
	}
	if init.SRQ != nil {
		if err := pd.ctx.sameContext("ibv_create_qp", "the SRQ", init.SRQ.pd.ctx); err != nil {
			return nil, err
		}
	}
	if err := init.Cap.check("ibv_create_qp"); err != nil {
		return nil, err
	}
	if init.Cap.MaxSendSGE == 0 {
		init.Cap.MaxSendSGE = 1
	}
	if init.Cap.MaxRecvSGE == 0 && init.SRQ == nil {
		init.Cap.MaxRecvSGE = 1
	}
	var a C.struct_ibv_qp_init_attr
	a.send_cq = init.SendCQ.c
	a.recv_cq = init.RecvCQ.c
	if init.SRQ != nil {
		a.srq = init.SRQ.c
	}
	a.qp_type = C.enum_ibv_qp_type(init.Type)
	a.cap.max_send_wr = C.uint32_t(init.Cap.MaxSendWR)
	a.cap.max_recv_wr = C.uint32_t(init.Cap.MaxRecvWR)
	a.cap.max_send_sge = C.uint32_t(init.Cap.MaxSendSGE)
	a.cap.max_recv_sge = C.uint32_t(init.Cap.MaxRecvSGE)
	a.cap.max_inline_data = C.uint32_t(init.Cap.MaxInline)
	if init.SigAll {
		a.sq_sig_all = 1
	}
	q, err := create(&a)
	if err != nil {
		if errors.Is(err, syscall.EINVAL) {
			if over := pd.ctx.capOver(init.Cap); over != "" {
				return nil, fmt.Errorf("%s QP with %+v: %s: %w", init.Type, init.Cap, over, err)
			}
		}
		return nil, fmt.Errorf("%s QP with %+v: %w", init.Type, init.Cap, err)
	}
	return pd.adopt(q, init, &a.cap, destroy)
}

// capOver names the capacities of c over the device's limits, which it
// queries (ibv_query_device): "QPCap.MaxSendWR 1073741824 is over the
// device's max_qp_wr, 1048576". It returns "" where none is, or the query
// fails. For the error of a QP's creation only.
func (c *Context) capOver(qc QPCap) string {
	var a C.struct_ibv_device_attr
	if C.ibv_query_device(c.c, &a) != 0 {
		return ""
	}
	var over []string
	for _, f := range []struct {
		name  string
		n     int
		limit string
		max   int
	}{
		{"MaxSendWR", qc.MaxSendWR, "max_qp_wr", int(a.max_qp_wr)},
		{"MaxRecvWR", qc.MaxRecvWR, "max_qp_wr", int(a.max_qp_wr)},
		{"MaxSendSGE", qc.MaxSendSGE, "max_sge", int(a.max_sge)},
		{"MaxRecvSGE", qc.MaxRecvSGE, "max_sge", int(a.max_sge)},
	} {
		if f.n > f.max {
			over = append(over, fmt.Sprintf("QPCap.%s %d is over the device's %s, %d", f.name, f.n, f.limit, f.max))
		}
	}
	return strings.Join(over, "; ")
}

func (pd *PD) adopt(q *C.struct_ibv_qp, init QPInit, c *C.struct_ibv_qp_cap, destroy func() error) (*QP, error) {
	qp := &QP{destroy: destroy, c: q, pd: pd, send: init.SendCQ, recv: init.RecvCQ, srq: init.SRQ, typ: init.Type,
		num: uint32(q.qp_num), psn: rand.Uint32() & 0xffffff}
	qp.cap = QPCap{
		MaxSendWR: int(c.max_send_wr), MaxRecvWR: int(c.max_recv_wr),
		MaxSendSGE: max(int(c.max_send_sge), 1), MaxRecvSGE: int(c.max_recv_sge),
		MaxInline: int(c.max_inline_data),
	}
	qp.sendS = C.gv_scratch_new(C.int(min(max(qp.cap.MaxSendWR, 1), maxBatch)), C.int(qp.cap.MaxSendSGE), 1)
	qp.recvS = C.gv_scratch_new(C.int(min(max(qp.cap.MaxRecvWR, 1), maxBatch)), C.int(max(qp.cap.MaxRecvSGE, 1)), 0)
	if qp.sendS == nil || qp.recvS == nil {
		C.gv_scratch_free(qp.sendS)
		C.gv_scratch_free(qp.recvS)
		if destroy != nil {
			destroy()
		} else {
			C.ibv_destroy_qp(q)
		}
		return nil, fmt.Errorf("ibverbs: out of memory for post scratch: %w", syscall.ENOMEM)
	}
	pd.kids.add()
	init.SendCQ.kids.add()
	if init.RecvCQ != init.SendCQ {
		init.RecvCQ.kids.add() // a QP counts once with a CQ it uses for both
	}
	if init.SRQ != nil {
		init.SRQ.kids.add()
	}
	qp.use.Open()
	pd.ctx.register(unsafe.Pointer(q), qp)
	return qp, nil
}

// Num returns the queue pair number.
func (qp *QP) Num() uint32 { return qp.num }

// Type returns the QP's transport type.
func (qp *QP) Type() QPType { return qp.typ }

// Cap returns the capacities that the verb that created the QP
// (ibv_create_qp) wrote back into its attributes: at least those asked
// for. Some providers write back what was asked while the queues hold
// more, as Query says (soft-RoCE: Cap's MaxRecvWR 8, Query's 15); Cap is
// what the QP is promised, and so what a program should post up to and
// size the QP's CQs for. The provider takes posts beyond it, up to its
// queue's real size, but a CQ sized from Cap may have no room for their
// completions. A queue full, the post fails with an error matching
// syscall.ENOMEM that says so, with the queue's size and, where Cap is
// smaller, Cap's.
func (qp *QP) Cap() QPCap { return qp.cap }

// PSN returns the send PSN this QP uses when it moves to RTS through
// ToRTS or Connect. It is random; set it with SetPSN before Endpoint.
func (qp *QP) PSN() uint32 { return qp.psn }

// SetPSN sets the send PSN (24 bits) used by ToRTS and Connect.
func (qp *QP) SetPSN(psn uint32) { qp.psn = psn & 0xffffff }

// PD returns the QP's protection domain.
func (qp *QP) PD() *PD { return qp.pd }

// SendCQ returns the CQ the QP's send completions go to (QPInit.SendCQ).
func (qp *QP) SendCQ() *CQ { return qp.send }

// RecvCQ returns the CQ the QP's receive completions go to (QPInit.RecvCQ).
func (qp *QP) RecvCQ() *CQ { return qp.recv }

// SRQ returns the shared receive queue the QP takes its receives from
// (QPInit.SRQ), or nil.
func (qp *QP) SRQ() *SRQ { return qp.srq }

// Raw returns the struct ibv_qp pointer, valid until Close.
func (qp *QP) Raw() unsafe.Pointer { return unsafe.Pointer(qp.c) }

// PostSend posts a list of send work requests (ibv_post_send, or the
// ibv_wr_* API on a QP created with QPInit.WRAPI), in as few cgo calls as
// the list allows (one per 256 requests). It does not allocate. If the
// device refuses a request, the error is a *PostError whose Index says
// which: the ones before it were posted. Through the ibv_wr_* API a list
// is posted whole or not at all, so Index is then the list's first.
//
// A request the QP cannot take is refused before it reaches the device,
// with an error matching syscall.EINVAL that says why: more SGEs than
// QPCap.MaxSendSGE ("5 SGEs, the QP allows 4"), more bytes with
// SendInline than QPCap.MaxInline ("inline 65 bytes, the QP allows 64"),
// an inline SGE outside the live MRs of the QP's PD (see SendInline), an
// opcode no verb has ("unknown opcode 99"), an atomic whose SGL is not one
// SGE of 8 bytes or whose RemoteAddr is not 8-byte aligned, an RDMA_READ
// or atomic on a UC QP (which the provider would take, and fail at its
// completion, the QP to the error state), a UD send whose AH is of
// another PD, a bind of a window of another PD, among others. An EINVAL
// from the device says the QP's state, which the post then queries
// (ibv_query_qp): a QP not yet in RTS takes no sends ("QP 0x11 is in
// INIT, and takes sends from RTS on"); where the state is not the cause,
// it says so, and which opcode, SGEs and bytes the provider refused. A full send queue fails the post with
// an error matching syscall.ENOMEM that says so, with the queue's size.
//
// A post of OpBindMW requests may run beside the Close of a window or MR
// they name, or the MR's Rereg, as QP.BindMW may: it holds them from
// its check of the requests to the post's end, so that the Close waits
// for it, or it waits for the Close and refuses the request (EINVAL).
func (qp *QP) PostSend(wrs []SendWR) error { return qp.postSend(wrs, 0) }

// PostSendLists posts wrs as consecutive lists of listLen work requests,
// one ibv_post_send (one doorbell) per list, or one ibv_wr_start ...
// ibv_wr_complete on a QPInit.WRAPI QP, like calling PostSend on each
// list in turn, but with one cgo call for up to 256 requests. With listLen
// 1 it rings a doorbell per request, as a loop of single posts does, at a
// fraction of the cost in Go; a list longer than 256 is split. Errors are
// as PostSend's: a *PostError's Index counts from the start of wrs.
//
// A type 2 window (OpBindMW) takes its new rkey when the list that binds
// it is posted, so a later list may bind it again (after an OpLocalInv).
// Within one list the provider still names it by its key from before the
// list, as with ibv_post_send itself: bind a window at most once a list.
func (qp *QP) PostSendLists(wrs []SendWR, listLen int) error {
	if listLen < 1 {
		return fmt.Errorf("ibv_post_send: list length %d: %w", listLen, syscall.EINVAL)
	}
	return qp.postSend(wrs, listLen)
}

// postSend posts wrs in lists of list requests (0: as long as fit).
func (qp *QP) postSend(wrs []SendWR, list int) error {
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	if qp.c == nil {
		return ErrClosed
	}
	s := qp.sendS
	capn := int(s.cap)
	maxSGE := int(s.max_sge)
	step := capn
	if list > 0 && list < capn {
		step -= capn % list // no list straddles two cgo calls
	}
	ws := unsafe.Slice(s.swr, capn)
	sges := unsafe.Slice((*SGE)(unsafe.Pointer(s.sge)), capn*maxSGE)
	for base := 0; base < len(wrs); base += step {
		chunk := wrs[base:min(base+step, len(wrs))]
		var refused error // a request refused here: the ones before it still go
		// binds is the chunk from its first OpBindMW on, whose windows
		// and MRs lockBinds holds from their check to the post's end.
		var binds []SendWR
		for i := range chunk {
			w := &chunk[i]
			if w.Opcode == OpBindMW && binds == nil {
				binds = chunk[i:]
				lockBinds(binds)
			}
			if why := qp.checkSend(w, maxSGE, &qp.inl); why != nil {
				refused = &PostError{Index: base + i, Err: why}
				chunk = chunk[:i]
				break
			}
			fillSend(&ws[i], sges[i*maxSGE:(i+1)*maxSGE], w)
		}
		if len(chunk) > 0 {
			if binds != nil {
				if h := postBindHook.Load(); h != nil {
					(*h)()
				}
			}
			bad, err := qp.post(&ws[0], len(chunk), list)
			if binds != nil {
				rekey(chunk[:bad])
			}
			if err != nil {
				refused = &PostError{Index: base + bad, Err: err}
			}
		}
		if binds != nil {
			unlockBinds(binds)
		}
		if refused != nil {
			return refused
		}
	}
	return nil
}

// bindMu is held by a post of OpBindMW requests while lockBinds takes
// their windows' and MRs' closeMu, so that two such posts, each taking
// several, never wait on each other's. Every other holder of a closeMu
// takes at most a window's and then an MR's (QP.BindMW), as lockBinds
// takes all the windows' before any MR's.
var bindMu sync.Mutex

// postBindHook, if set, runs in a post of OpBindMW requests once they are
// checked, just before they are posted (a test's way in between the
// two).
var postBindHook atomic.Pointer[func()]

// lockBinds takes the closeMu of each window and MR that the OpBindMW
// requests of wrs name, each once, so that neither MW.Close nor
// MR.Close or Rereg frees or changes what a request names between its
// check (checkBind) and the post's end, as QP.BindMW holds them;
// unlockBinds releases them. Requests of other opcodes, and a request's
// nil window or MR, which checkBind refuses, take nothing.
func lockBinds(wrs []SendWR) {
	bindMu.Lock()
	defer bindMu.Unlock()
	for i := range wrs {
		if mw := bindWindow(wrs, i); mw != nil {
			mw.closeMu.Lock()
		}
	}
	for i := range wrs {
		if mr := bindMR(wrs, i); mr != nil {
			mr.closeMu.Lock()
		}
	}
}

// unlockBinds releases what lockBinds(wrs) took.
func unlockBinds(wrs []SendWR) {
	for i := range wrs {
		if mr := bindMR(wrs, i); mr != nil {
			mr.closeMu.Unlock()
		}
	}
	for i := range wrs {
		if mw := bindWindow(wrs, i); mw != nil {
			mw.closeMu.Unlock()
		}
	}
}

// bindWindow returns the window that wrs[i] binds if it is an OpBindMW
// and no earlier request of wrs binds the same; else nil.
func bindWindow(wrs []SendWR, i int) *MW {
	w := &wrs[i]
	if w.Opcode != OpBindMW || w.Bind == nil || w.Bind.MW == nil {
		return nil
	}
	for j := range i {
		if v := &wrs[j]; v.Opcode == OpBindMW && v.Bind != nil && v.Bind.MW == w.Bind.MW {
			return nil
		}
	}
	return w.Bind.MW
}

// bindMR is bindWindow for the MR that wrs[i] binds a window to.
func bindMR(wrs []SendWR, i int) *MR {
	w := &wrs[i]
	if w.Opcode != OpBindMW || w.Bind == nil || w.Bind.MR == nil {
		return nil
	}
	for j := range i {
		if v := &wrs[j]; v.Opcode == OpBindMW && v.Bind != nil && v.Bind.MR == w.Bind.MR {
			return nil
		}
	}
	return w.Bind.MR
}

// rekey gives the windows that posted OpBindMW requests bind their new
// rkeys, as ibv_bind_mw does: providers (rxe among them) name the window
// of a later bind by the rkey its struct ibv_mw holds. The shim has set
// those of the lists it posted whole (rekey_windows), for the later lists
// of the same call; this sets them for a list posted in part, and the
// window's own copy (MW.RKey).
func rekey(posted []SendWR) {
	for i := range posted {
		if w := &posted[i]; w.Opcode == OpBindMW {
			w.Bind.MW.c.rkey = C.uint32_t(w.RKey)
			w.Bind.MW.rkey.Store(w.RKey)
		}
	}
}

// checkSend says why PostSend would refuse w before it reaches the
// provider, or returns nil. inl remembers the MR the last inline SGE lay
// in (inlineCache.checkSGL).
func (qp *QP) checkSend(w *SendWR, maxSGE int, inl *inlineCache) error {
	if n := inlineLen(w); n > uint64(qp.cap.MaxInline) {
		return fmt.Errorf("ibv_post_send: inline %d bytes, the QP allows %d: %w", n, qp.cap.MaxInline, syscall.EINVAL)
	}
	if w.Flags&SendInline != 0 {
		if err := notInline(w.Opcode); err != nil {
			return err
		}
		if err := inl.checkSGL(qp.pd.c, w.SGL); err != nil {
			return err
		}
	}
	atomic := w.Opcode == OpAtomicCmpAndSwp || w.Opcode == OpAtomicFetchAdd
	switch {
	case w.Opcode > OpSendWithInv:
		return fmt.Errorf("ibv_post_send: unknown opcode %d (%v): %w", uint32(w.Opcode), w.Opcode, syscall.EINVAL)
	case qp.typ == QPTypeUC && (atomic || w.Opcode == OpRDMARead):
		// The provider takes it, and its completion (LOC_QP_OP_ERR on
		// rxe) takes the QP to the error state, which flushes every
		// request after it.
		return fmt.Errorf("ibv_post_send: a UC QP takes writes and sends, not %v: %w", w.Opcode, syscall.EINVAL)
	case atomic && (len(w.SGL) != 1 || w.SGL[0].Length != 8):
		return fmt.Errorf("ibv_post_send: %v with %s: an atomic takes one SGE of 8 bytes: %w", w.Opcode, sglSize(w.SGL), syscall.EINVAL)
	case atomic && w.RemoteAddr%8 != 0:
		return misalignedAtomic("ibv_post_send", w.Opcode, w.RemoteAddr, syscall.EINVAL)
	case len(w.SGL) > maxSGE:
		return fmt.Errorf("ibv_post_send: %d SGEs, the QP allows %d: %w", len(w.SGL), maxSGE, syscall.EINVAL)
	case qp.qx != nil && (w.Opcode >= 32 || qp.wrOps&(1<<w.Opcode) == 0):
		return fmt.Errorf("ibv_wr_start: opcode %v is not one this %v QP was created with for the ibv_wr_* API (QPInit.WROps): %w", w.Opcode, qp.typ, syscall.EINVAL)
	case qp.typ == QPTypeUD && w.Opcode != OpSend && w.Opcode != OpSendWithImm:
		return fmt.Errorf("ibv_post_send: a UD QP sends SEND and SEND_WITH_IMM only, not %v: %w", w.Opcode, syscall.EINVAL)
	case qp.typ == QPTypeUD && w.AH == nil:
		return fmt.Errorf("ibv_post_send: a UD send without SendWR.AH: %w", syscall.EINVAL)
	case qp.typ == QPTypeUD && w.AH.c == nil:
		return fmt.Errorf("ibv_post_send: the send's AH: %w", ErrClosed)
	case qp.typ == QPTypeUD && w.AH.pd.ctx.dev != qp.pd.ctx.dev:
		return qp.pd.ctx.sameContext("ibv_post_send", "the send's AH", w.AH.pd.ctx)
	case qp.typ == QPTypeUD && w.AH.pd.c != qp.pd.c:
		// The device would drop it with LOC_QP_OP_ERR, the QP to the error
		// state (soft-RoCE: "PDs don't match for AH and QP").
		return fmt.Errorf("ibv_post_send: the send's AH is of another PD than the QP's: %w", syscall.EINVAL)
	case w.Opcode == OpBindMW:
		if w.Bind == nil {
			return fmt.Errorf("ibv_post_send: BIND_MW without SendWR.Bind: %w", syscall.EINVAL)
		}
		return qp.checkBind("ibv_post_send", w.Bind.MW, w.Bind)
	}
	return nil
}

// misalignedAtomic is the error for an atomic op at addr, which is not
// 8-byte aligned, as SetRemote words it, with errno: "ibv_post_send:
// ATOMIC_FETCH_AND_ADD at 0x1004: atomics need an 8-byte aligned address:
// invalid argument".
func misalignedAtomic(verb string, op Opcode, addr uint64, errno syscall.Errno) error {
	return fmt.Errorf("%s: %v at %#x: atomics need an 8-byte aligned address: %w", verb, op, addr, errno)
}

// inlineCache remembers the live MR that an inline SGE last lay in, so
// that the check of the next, in the common case the same MR's, is a
// compare and not a lookup. Its user serializes its use.
type inlineCache struct {
	m    *MR
	lkey uint32 // m's, which its Close zeroes
}

// checkSGL says why a send with SendInline must not copy from sgl: an SGE
// of one byte or more that does not lie in the process memory of a live
// MR of pd registered under its LKey, or returns nil. The provider copies
// inline bytes with the CPU at the post, and an address no MR covers may
// not be mapped (SIGSEGV); the device checks the others.
func (c *inlineCache) checkSGL(pd *C.struct_ibv_pd, sgl []SGE) error {
	for j := range sgl {
		e := &sgl[j]
		if e.Length == 0 || (c.m != nil && c.lkey == e.LKey && c.m.covers(e.Addr, e.Length)) {
			continue
		}
		m := lookupMR(pd, e.LKey)
		if m == nil || !m.covers(e.Addr, e.Length) {
			return inlineSGEError(j, e, m)
		}
		c.m, c.lkey = m, e.LKey
	}
	return nil
}

// inlineSGEError is checkSGL's error for SGE j, e, and the live MR of its
// LKey, m, if any.
func inlineSGEError(j int, e *SGE, m *MR) error {
	why := "no live MR of the QP's PD has that LKey"
	if m != nil {
		s := m.st.Load()
		why = fmt.Sprintf("outside the process memory of its MR, %d bytes at %#x", s.n, s.ptr)
		if s.addr != s.ptr {
			why += " (registered at iova " + fmt.Sprintf("%#x", s.addr) + ": its SGEs name the iova, which cannot be sent inline)"
		}
	}
	return fmt.Errorf("ibv_post_send: inline SGE %d (%d bytes at %#x, lkey %#x): %s: %w",
		j, e.Length, e.Addr, e.LKey, why, syscall.EINVAL)
}

// cSGL is the SGL of a request in C memory, for an error.
func cSGL(p *C.struct_ibv_sge, n C.int) []SGE {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice((*SGE)(unsafe.Pointer(p)), int(n))
}

// sglSize describes sgl for an error: "2 SGEs, 12 bytes".
func sglSize(sgl []SGE) string {
	var n uint64
	for i := range sgl {
		n += uint64(sgl[i].Length)
	}
	if len(sgl) == 1 {
		return fmt.Sprintf("1 SGE, %d bytes", n)
	}
	return fmt.Sprintf("%d SGEs, %d bytes", len(sgl), n)
}

// inlineOps are the opcodes (bits 1<<Opcode) that the verbs take
// SendInline for: sends and writes.
const inlineOps = 1<<OpSend | 1<<OpSendWithImm | 1<<OpSendWithInv | 1<<OpRDMAWrite | 1<<OpRDMAWriteWithImm

// notInline says why a request of opcode op cannot have SendInline, or
// returns nil: only sends and writes carry bytes inline. A provider does
// not refuse the flag on a READ or an atomic: rxe's READ completed with
// LOC_PROT_ERR and took the QP to ERR.
func notInline(op Opcode) error {
	if op < 32 && inlineOps&(1<<op) != 0 {
		return nil
	}
	return fmt.Errorf("ibv_post_send: SendInline on a %v request: only sends and RDMA writes carry their bytes inline: %w", op, syscall.EINVAL)
}

// inlineLen returns the bytes that w, a send or write with SendInline,
// carries inline: its SGL's. It is 0 for any other request.
func inlineLen(w *SendWR) uint64 {
	if w.Flags&SendInline == 0 || w.Opcode >= 32 || inlineOps&(1<<w.Opcode) == 0 {
		return 0
	}
	var n uint64
	for i := range w.SGL {
		n += uint64(w.SGL[i].Length)
	}
	return n
}

// post posts the n requests at w, filled in C memory, in lists of list
// (0: one list): the one cgo call behind PostSend, PostSendLists and
// SendBatch.Post. On failure bad is the index of the first request not
// posted.
func (qp *QP) post(w *C.struct_ibv_send_wr, n, list int) (bad int, err error) {
	var b, rc C.int
	if qp.qx != nil {
		rc = C.gv_wr_post(handle(qp.qx), handle(w), C.int(n), C.int(min(list, n)), &b)
	} else {
		rc = C.gv_post_send(handle(qp.c), handle(w), C.int(n), C.int(min(list, n)), &b)
	}
	if rc != 0 {
		return int(b), qp.postError(int(rc), sendWRAt(w, n, int(b)))
	}
	return n, nil
}

// sendWRAt returns request i of the n at w, or nil where i is not one.
func sendWRAt(w *C.struct_ibv_send_wr, n, i int) *C.struct_ibv_send_wr {
	if i < 0 || i >= n {
		return nil
	}
	return (*C.struct_ibv_send_wr)(unsafe.Add(unsafe.Pointer(w), uintptr(i)*unsafe.Sizeof(*w)))
}

// postError wraps errno from a post in the name of the verb that failed,
// with the QP's state for EINVAL and its capacity for ENOMEM (see
// postErrno). r is the request refused, filled in C memory, or nil.
func (qp *QP) postError(errno int, r *C.struct_ibv_send_wr) error {
	var req func() string
	if r != nil {
		req = func() string { return fmt.Sprintf("%v, %s", Opcode(r.opcode), sglSize(cSGL(r.sg_list, r.num_sge))) }
	}
	return postErrno(qp.postVerb(), qp.c, nil, errno, QPStateRTS, "sends", req)
}

// postVerb names the verb that posts qp's sends.
func (qp *QP) postVerb() string {
	if qp.qx != nil {
		return "ibv_wr_complete"
	}
	return "ibv_post_send"
}

// postErrno wraps errno from a post of what (sends, receives) to qp, or
// to srq, in verb's name. req, if set, describes the request refused, for
// the messages below ("SEND, 1 SGE, 16 bytes").
//
// EINVAL, which a QP refuses them with before it is in state need (RTS for
// sends, INIT for receives), says the QP's state, which only then it
// queries (ibv_query_qp), and the state they need where it is before
// that: "ibv_post_send: QP 0x11 is in INIT, and takes sends from RTS on:
// invalid argument". Where the state is not the cause it says so, and
// what the provider refused: "QP 0x13 is in RTS, which takes sends: the
// provider refused the request (ATOMIC_FETCH_AND_ADD, 1 SGE, 4 bytes),
// not for the QP's state".
//
// ENOMEM, which a full queue answers, says so, with the queue's size,
// which only then it queries (ibv_query_qp, ibv_query_srq): "the receive
// queue of QP 0x11 is full: it holds 15 requests". The caller keeps qp
// and srq from being destroyed.
func postErrno(verb string, qp *C.struct_ibv_qp, srq *C.struct_ibv_srq, errno int, need QPState, what string, req func() string) error {
	if errno == int(syscall.ENOMEM) {
		return queueFull(verb, qp, srq, what)
	}
	if errno != int(syscall.EINVAL) || qp == nil {
		return verbError(verb, errno)
	}
	var a C.struct_ibv_qp_attr
	var ia C.struct_ibv_qp_init_attr
	if C.ibv_query_qp(qp, &a, C.IBV_QP_STATE, &ia) != 0 {
		return verbError(verb, errno)
	}
	num, st := uint32(qp.qp_num), QPState(a.qp_state)
	if st < need {
		return os.NewSyscallError(verb, fmt.Errorf("QP %#x is in %v, and takes %s from %v on: %w",
			num, st, what, need, syscall.EINVAL))
	}
	if st == QPStateError || st == QPStateSQE || (st == QPStateSQD && what == "sends") {
		return os.NewSyscallError(verb, fmt.Errorf("QP %#x is in %v: %w", num, st, syscall.EINVAL))
	}
	r := "the request"
	if req != nil {
		r += " (" + req() + ")"
	}
	return os.NewSyscallError(verb, fmt.Errorf("QP %#x is in %v, which takes %s: the provider refused %s, not for the QP's state: %w",
		num, st, what, r, syscall.EINVAL))
}

// queueFull is postErrno's error for ENOMEM from a post of what to qp or
// srq: the queue is full, and holds as many requests as a query says;
// for a QP's queue, where the QP was granted fewer (QP.Cap: on soft-RoCE
// 4 where the queue holds 7), it says so, since a CQ sized from Cap has
// no room for the completions of the requests beyond it.
func queueFull(verb string, qp *C.struct_ibv_qp, srq *C.struct_ibv_srq, what string) error {
	var err error
	switch {
	case srq != nil:
		var a C.struct_ibv_srq_attr
		if C.ibv_query_srq(srq, &a) == 0 {
			err = fmt.Errorf("the SRQ is full: it holds %d receives: %w", uint32(a.max_wr), syscall.ENOMEM)
		}
	case qp != nil:
		var a C.struct_ibv_qp_attr
		var ia C.struct_ibv_qp_init_attr
		if C.ibv_query_qp(qp, &a, C.IBV_QP_CAP, &ia) == 0 {
			q, n, free := "send", int(a.cap.max_send_wr), "a send leaves it once its completion, or an unsignalled one's a later send's, is polled"
			granted, known := grantedCap(qp)
			g := granted.MaxSendWR
			if what != "sends" {
				q, n, free = "receive", int(a.cap.max_recv_wr), "a receive leaves it as it completes"
				g = granted.MaxRecvWR
			}
			var beyond string
			switch {
			case !known:
			case n > g:
				beyond = fmt.Sprintf(", %d more than the %d the QP was granted (QP.Cap), which a CQ sized from Cap has no room for", n-g, g)
			case n == g:
				beyond = " (QP.Cap)"
			default:
				beyond = fmt.Sprintf(", fewer than the %d the QP was granted (QP.Cap)", g)
			}
			err = fmt.Errorf("the %s queue of QP %#x is full: it holds %d requests%s; %s: %w",
				q, uint32(qp.qp_num), n, beyond, free, syscall.ENOMEM)
		}
	}
	if err == nil {
		return verbError(verb, int(syscall.ENOMEM))
	}
	return os.NewSyscallError(verb, err)
}

// grantedCap returns the Cap of the QP whose C handle is qp, for
// queueFull; known is false where no QP of this package's has it.
func grantedCap(qp *C.struct_ibv_qp) (c QPCap, known bool) {
	devStates.mu.Lock()
	d := devStates.m[qp.context]
	devStates.mu.Unlock()
	if d == nil {
		return QPCap{}, false
	}
	q, ok := d.lookup(unsafe.Pointer(qp)).(*QP)
	if !ok {
		return QPCap{}, false
	}
	return q.cap, true
}

// setImm writes v into w's imm_data (network order) or, for
// OpSendWithInv and OpLocalInv, its invalidate_rkey (host order): the two
// share a place.
func setImm(w *C.struct_ibv_send_wr, v uint32) {
	imm := (*[4]byte)(unsafe.Add(unsafe.Pointer(w), C.gv_send_wr_imm))
	if op := Opcode(w.opcode); op == OpSendWithInv || op == OpLocalInv {
		*(*uint32)(unsafe.Pointer(imm)) = v
	} else {
		binary.BigEndian.PutUint32(imm[:], v)
	}
}

// fillSend writes r into w, a request in C memory, and r's SGEs into sg,
// which has room for them (checkSend said so): every field the provider
// reads for r's opcode but next, which the post sets. Go writes the
// request where the provider reads it, with no second copy in C.
func fillSend(w *C.struct_ibv_send_wr, sg []SGE, r *SendWR) {
	w.wr_id = C.uint64_t(r.ID)
	w.opcode = uint32(r.Opcode)
	w.send_flags = C.uint(r.Flags)
	setImm(w, r.Imm)
	u := unsafe.Pointer(&w.wr)
	switch r.Opcode {
	case OpRDMAWrite, OpRDMAWriteWithImm, OpRDMARead:
		d := (*C.struct_gv_wr_rdma)(u)
		d.remote_addr = C.uint64_t(r.RemoteAddr)
		d.rkey = C.uint32_t(r.RKey)
	case OpAtomicCmpAndSwp, OpAtomicFetchAdd:
		d := (*C.struct_gv_wr_atomic)(u)
		d.remote_addr = C.uint64_t(r.RemoteAddr)
		d.rkey = C.uint32_t(r.RKey)
		d.compare_add = C.uint64_t(r.CompareAdd)
		d.swap = C.uint64_t(r.Swap)
	case OpBindMW:
		d := (*C.struct_gv_wr_bind_mw)(unsafe.Add(unsafe.Pointer(w), C.gv_send_wr_bind))
		b := r.Bind
		d.mw = b.MW.c
		d.rkey = C.uint32_t(r.RKey)
		d.bind_info.mr = b.MR.c
		d.bind_info.addr = C.uint64_t(b.Addr)
		d.bind_info.length = C.uint64_t(b.Length)
		d.bind_info.mw_access_flags = C.uint(b.Access)
	default:
		if r.AH != nil {
			d := (*C.struct_gv_wr_ud)(u)
			d.ah = r.AH.c
			d.remote_qpn = C.uint32_t(r.RemoteQPN)
			d.remote_qkey = C.uint32_t(r.RemoteQKey)
		}
	}
	w.num_sge = C.int(len(r.SGL))
	w.sg_list = copySGL(sg, r.SGL)
}

// copySGL copies sgl into sg, C memory with room for it, and returns the
// sg_list a request names: nil for none.
func copySGL(sg, sgl []SGE) *C.struct_ibv_sge {
	switch len(sgl) {
	case 0:
		return nil
	case 1:
		sg[0] = sgl[0] // no memmove call for the common case
	default:
		copy(sg, sgl)
	}
	return (*C.struct_ibv_sge)(unsafe.Pointer(&sg[0]))
}

// PostRecv posts a list of receive work requests (ibv_post_recv), like
// PostSend: one cgo call per 256, without allocating; a *PostError says
// which request the device refused. An EINVAL from the device says the
// QP's state, as PostSend's does: a QP in RESET takes no receives. A full
// receive queue fails with an error matching syscall.ENOMEM that says
// so, with the queue's size ("the receive queue of QP 0x11 is full: it
// holds 15 requests; ...").
func (qp *QP) PostRecv(wrs []RecvWR) error {
	qp.recvMu.Lock()
	defer qp.recvMu.Unlock()
	if qp.c == nil {
		return ErrClosed
	}
	if qp.srq != nil {
		return fmt.Errorf("ibv_post_recv: the QP takes receives from its SRQ: %w", syscall.EINVAL)
	}
	return postRecv(qp.c, nil, qp.recvS, wrs)
}

// postRecv posts to a QP's receive queue, or to an SRQ when srq is set.
// postRecvC calls C directly rather than through a function value, so that
// the bad-index out-parameter stays on the stack.
func postRecv(qp *C.struct_ibv_qp, srq *C.struct_ibv_srq, s *C.struct_gv_post_scratch, wrs []RecvWR) error {
	capn := int(s.cap)
	maxSGE := int(s.max_sge)
	ws := unsafe.Slice(s.rwr, capn)
	sges := unsafe.Slice((*SGE)(unsafe.Pointer(s.sge)), capn*maxSGE)
	for base := 0; base < len(wrs); base += capn {
		chunk := wrs[base:min(base+capn, len(wrs))]
		var refused error // a request refused here: the ones before it still go
		for i := range chunk {
			r := &chunk[i]
			if err := checkRecv(srq, r, maxSGE); err != nil {
				refused = &PostError{Index: base + i, Err: err}
				chunk = chunk[:i]
				break
			}
			fillRecv(&ws[i], sges[i*maxSGE:(i+1)*maxSGE], r)
		}
		if len(chunk) > 0 {
			if bad, err := postRecvC(qp, srq, &ws[0], len(chunk), 0); err != nil {
				return &PostError{Index: base + bad, Err: err}
			}
		}
		if refused != nil {
			return refused
		}
	}
	return nil
}

func recvVerb(srq *C.struct_ibv_srq) string {
	if srq != nil {
		return "ibv_post_srq_recv"
	}
	return "ibv_post_recv"
}

// checkRecv says why a receive queue that takes at most maxSGE SGEs a
// request would refuse r, or returns nil.
func checkRecv(srq *C.struct_ibv_srq, r *RecvWR, maxSGE int) error {
	if len(r.SGL) > maxSGE {
		return fmt.Errorf("%s: %d SGEs, the queue allows %d: %w", recvVerb(srq), len(r.SGL), maxSGE, syscall.EINVAL)
	}
	return nil
}

// fillRecv writes r into w, a receive request in C memory, and its SGEs
// into sg, which has room for them: all but next, which the post sets.
func fillRecv(w *C.struct_ibv_recv_wr, sg []SGE, r *RecvWR) {
	w.wr_id = C.uint64_t(r.ID)
	w.num_sge = C.int(len(r.SGL))
	w.sg_list = copySGL(sg, r.SGL)
}

// postRecvC posts the n receive requests at w, filled in C memory, to the
// QP or, if srq is set, the SRQ, in one cgo call: in lists of list
// requests, a post call each, or all as one list for list 0. On failure
// bad is the index of the first request not posted.
func postRecvC(qp *C.struct_ibv_qp, srq *C.struct_ibv_srq, w *C.struct_ibv_recv_wr, n, list int) (bad int, err error) {
	var b, rc C.int
	if srq != nil {
		rc = C.gv_post_srq_recv(handle(srq), handle(w), C.int(n), C.int(min(list, n)), &b)
	} else {
		rc = C.gv_post_recv(handle(qp), handle(w), C.int(n), C.int(min(list, n)), &b)
	}
	if rc != 0 {
		var req func() string
		if i := int(b); i >= 0 && i < n {
			r := (*C.struct_ibv_recv_wr)(unsafe.Add(unsafe.Pointer(w), uintptr(i)*unsafe.Sizeof(*w)))
			req = func() string { return sglSize(cSGL(r.sg_list, r.num_sge)) }
		}
		return int(b), postErrno(recvVerb(srq), qp, srq, int(rc), QPStateInit, "receives", req)
	}
	return n, nil
}

// Close detaches the QP from the multicast groups AttachMcast attached it
// to (ibv_detach_mcast) and destroys it (ibv_destroy_qp). Closing twice is
// a no-op; with a SendBatch or RecvBatch of the QP still open it is an
// error matching syscall.EBUSY. It may run while other goroutines use the
// QP: a method under way (a post, BindMW, Modify and the To* steps,
// Connect, Query, State, Endpoint, AttachMcast) finishes before the QP is
// destroyed, and one that begins once Close has begun returns ErrClosed.
func (qp *QP) Close() error {
	// A PostSend or PostRecv under way ends before the QP goes; one
	// after finds it gone, as does a second Close.
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	qp.recvMu.Lock()
	defer qp.recvMu.Unlock()
	if qp.c == nil {
		return nil
	}
	// The methods that hold neither lock: a Modify or Query under way
	// ends before the QP goes, one after returns ErrClosed.
	if n := qp.use.Quiesce(qp.kids.count, nil); n > 0 {
		return busyError("ibv_destroy_qp", n, "send or receive batch of the QP", "send or receive batches of the QP")
	}
	// Only now, when nothing can make the Close fail but the verbs: a
	// Close that fails with EBUSY leaves the QP in its groups.
	if err := qp.detachAll(); err != nil {
		qp.use.Open()
		return err
	}
	p := unsafe.Pointer(qp.c)
	qp.pd.ctx.unregister(p) // before its address can be another's
	if qp.destroy != nil {
		if err := qp.destroy(); err != nil {
			qp.pd.ctx.register(p, qp)
			qp.use.Open()
			return err
		}
	} else if rc := C.ibv_destroy_qp(qp.c); rc != 0 {
		qp.pd.ctx.register(p, qp)
		qp.use.Open()
		return verbError("ibv_destroy_qp", int(rc))
	}
	qp.c = nil
	C.gv_scratch_free(qp.sendS)
	C.gv_scratch_free(qp.recvS)
	qp.sendS, qp.recvS = nil, nil
	qp.pd.kids.done()
	qp.send.kids.done()
	if qp.recv != qp.send {
		qp.recv.kids.done()
	}
	if qp.srq != nil {
		qp.srq.kids.done()
	}
	return nil
}
