// Package ibverbs is a thin, fast and safe binding to libibverbs, the
// rdma-core library that drives RDMA NICs (ConnectX, soft-RoCE, ...).
//
// # Quick start
//
//	ctx, err := ibverbs.Open("mlx5_0")          // ibv_open_device
//	gid, err := ctx.SelectGID(1, ibverbs.GIDRule{}) // the RoCE v2 GID to use, and why
//	pd, err := ctx.AllocPD()
//	buf, err := ibverbs.NewBuffer(1<<20, ibverbs.BufferOptions{}) // off the Go heap
//	mr, err := pd.RegMR(buf, ibverbs.AccessLocalWrite|ibverbs.AccessRemoteWrite)
//	cq, err := ctx.CreateCQ(256, nil)
//	qp, err := pd.CreateQP(ibverbs.QPInit{Type: ibverbs.QPTypeRC, SendCQ: cq,
//		Cap: ibverbs.QPCap{MaxSendWR: 128, MaxRecvWR: 128}})
//	local, err := qp.Endpoint(1, gid.Entry.Index) // send this to the peer ...
//	msg, err := local.AppendBinary(nil)          // ... encoded, EndpointSize bytes ...
//	msg, err = mr.Remote().AppendBinary(msg)     // ... with this, its view of mr
//	err = remote.UnmarshalBinary(their[:ibverbs.EndpointSize]) // the peer's, an ibverbs.Endpoint
//	err = qp.Connect(remote, ibverbs.ConnParams{GIDIndex: gid.Entry.Index}) // connect to it
//	err = peer.UnmarshalBinary(their[ibverbs.EndpointSize:]) // peer is an ibverbs.RemoteMR
//	wr := ibverbs.SendWR{Opcode: ibverbs.OpRDMAWrite, Flags: ibverbs.SendSignaled,
//		SGL: []ibverbs.SGE{mr.SGE(0, 4096)}}
//	err = wr.SetRemote(peer, 0)                  // RemoteAddr and RKey, bounds checked
//	err = qp.PostSend([]ibverbs.SendWR{wr})
//	n, err := cq.Poll(wcs) // wcs is a []ibverbs.WC the caller reuses
//
// Every function that wraps a verb names it in its doc comment.
//
// # Naming
//
// The ibv_ prefix goes, the first C argument becomes the receiver, and every
// destroy, dealloc and dereg is Close:
//
//	ibv_get_device_list        Devices
//	ibv_get_device_index       DeviceInfo.Index (from Devices)
//	ibv_fork_init              ForkInit             ibv_is_fork_initialized ForkState
//	ibv_open_device            Open                 ibv_close_device   (*Context).Close
//	ibv_query_device_ex        (*Context).QueryDevice
//	ibv_query_port             (*Context).QueryPort
//	ibv_query_gid_table        (*Context).GIDTable  ibv_query_gid_ex   (*Context).QueryGID
//	ibv_query_pkey             (*Context).QueryPKey
//	ibv_get_pkey_index         (*Context).PKeyIndex
//	ibv_query_rt_values_ex     (*Context).RawClock
//	ibv_alloc_pd               (*Context).AllocPD   ibv_dealloc_pd     (*PD).Close
//	ibv_reg_mr                 (*PD).RegMR, RegMRRange               ibv_dereg_mr (*MR).Close
//	ibv_reg_mr_iova2           (*PD).RegMRIOVA
//	ibv_rereg_mr               (*MR).Rereg
//	ibv_alloc_null_mr          (*PD).AllocNullMR    ibv_dereg_mr       (*NullMR).Close
//	ibv_alloc_mw               (*PD).AllocMW        ibv_dealloc_mw     (*MW).Close
//	ibv_bind_mw                (*QP).BindMW         ibv_inc_rkey       NextRKey
//	ibv_create_comp_channel    (*Context).CreateCompChannel
//	ibv_get_cq_event           (*CompChannel).Wait, Block (ack with ibv_ack_cq_events)
//	ibv_create_cq              (*Context).CreateCQ  ibv_destroy_cq     (*CQ).Close
//	ibv_create_cq_ex           (*Context).CreateCQEx (CQInit.SingleThreaded, Timestamps)
//	ibv_poll_cq                (*CQ).Poll           ibv_req_notify_cq  (*CQ).ReqNotify
//	ibv_start_poll, ibv_wc_read_*, ibv_end_poll   (*CQ).PollEx, WaitEx
//	ibv_resize_cq              (*CQ).Resize         ibv_modify_cq      (*CQ).Moderate
//	ibv_create_qp              (*PD).CreateQP       ibv_destroy_qp     (*QP).Close
//	ibv_create_qp_ex           (*PD).CreateQP with QPInit.WRAPI
//	ibv_modify_qp              (*QP).Modify, ToInit, ToRTR, ToRTS, Connect, ToError, Reset
//	ibv_query_qp               (*QP).Query, State
//	ibv_query_qp_data_in_order (*QP).DataInOrder
//	ibv_query_ece              (*QP).QueryECE       ibv_set_ece        (*QP).SetECE
//	ibv_post_send              (*QP).PostSend       ibv_post_recv      (*QP).PostRecv
//	ibv_wr_start ... ibv_wr_complete  (*QP).PostSend on a QPInit.WRAPI QP
//	ibv_create_ah              (*PD).CreateAH, CreateAHTo            ibv_destroy_ah (*AH).Close
//	ibv_create_ah_from_wc      (*PD).CreateAHFromWC ibv_init_ah_from_wc (*Context).AHAttrFromWC
//	ibv_attach_mcast           (*QP).AttachMcast    ibv_detach_mcast   (*QP).DetachMcast
//	ibv_create_srq             (*PD).CreateSRQ      ibv_post_srq_recv  (*SRQ).PostRecv
//	ibv_modify_srq             (*SRQ).Arm, Resize   ibv_destroy_srq    (*SRQ).Close
//	ibv_query_srq              (*SRQ).Query
//	ibv_get_async_event        (*Context).Events    (acks with ibv_ack_async_event)
//
// Enums are named types with String methods (WCStatus, QPState, MTU, ...);
// their values are checked against verbs.h by the tests.
//
// # Memory
//
// Memory a NIC touches never lives on the Go heap: a Buffer is an mmap of
// page-aligned memory (optionally huge pages, or a file's pages with
// MapFile) exposed as a []byte, and MRs register all or part of one, at
// its own address or at an iova of the caller's (RegMRIOVA). The memory a work request names must stay
// registered and untouched until its completion is polled.
//
// # Remote memory
//
// A peer's RDMA reads, writes and atomics name memory of this side by its
// address and rkey, which a RemoteMR carries with the region's length.
// MR.Remote makes one (RemoteMR.Range a part of it, to lend the peer no
// more), and AppendBinary encodes it in RemoteMRSize bytes, big-endian,
// to send the peer by any means: rdma_cm's private data (package rdmacm
// says how), or a TCP exchange with the QP's Endpoint, which
// Endpoint.AppendBinary encodes in EndpointSize bytes (the two fill the
// 56 bytes of an rdma_cm connection request's private data). The peer's
// UnmarshalBinary decodes it and ignores what follows, such as the CM's
// zero padding; SendWR.SetRemote then puts its address and key in a
// request at an offset, once it has checked that the request stays within
// it. The region must be registered with the access the peer's requests
// need (AccessRemoteWrite, AccessRemoteRead, AccessRemoteAtomic).
//
// # Lifetimes
//
// A child keeps its parent: an MR holds its PD and Buffer, an MW or NullMR its PD, a
// QP its PD, CQs and SRQ, a CQ its Context and channel. Close a child
// before its parent; a handle that WrapContext made on a Context from Open
// counts as the Context's child. A parent's Close while children are open
// fails with an error that matches
// syscall.EBUSY and says how many are open, and changes nothing, so any
// order a program tries is safe and the right order always works. A
// memory window bound to an MR is not the MR's child (the peer may
// invalidate it): the MR's Close then fails with the device's errno
// (EINVAL on rxe), says a window may be bound, and leaves the MR open
// (see MR.Close). Close is idempotent. Methods of a closed object return ErrClosed (which also
// matches os.ErrClosed). Getters of what the object was made with go on
// answering from values cached at creation (Context.Name, QP.Num and Cap,
// MR.Len); those that would read what Close freed answer
// zero values: nil from Buffer.Bytes, MR.Bytes and every Raw, 0
// from Buffer.Len and Addr, MW.RKey and Context.NumCompVectors, and -1
// from CompChannel.Fd. So do those of keys, which the device may give to
// a later registration once Close frees them: 0 from MR.LKey, RKey and
// Addr and NullMR.LKey, and the zero RemoteMR from MR.Remote. The one exception: MR.SGE
// (and NullMR.SGE) panics once its MR is closed, as no SGE value would be refused by every
// post and device (see MR.SGE). Finalizers play no part.
//
// Close may run while other goroutines use the object, as closing a file
// or a connection to end a reader is ordinary Go: a Close of a Context,
// PD, CQ, QP, SRQ, CompChannel or Buffer waits for the calls of the object
// under way (a Poll, a post, a Modify or Query, a RegMR on a PD or of a
// Buffer) to return before it destroys or unmaps it, and a call that
// begins once Close has begun returns ErrClosed, never touching freed
// memory. Two Closes of an MR, NullMR, AH or MW may run at once (one destroys
// it, the other returns nil once it has), and so may an MW's Close and a
// QP.BindMW of it, or an MR's Close and its Rereg; unlike the objects
// above, these do not turn away the posts that name them, which take no
// lock for them. A CQ.Wait, CQ.WaitEx,
// CompChannel.Wait or Block asleep is woken by the Close of its CQ or
// channel and returns ErrClosed; each panics at once on a nil context,
// naming itself, as net.Dialer.DialContext does. (A call that begins while a Close is
// under way, and a wait that such a Close woke, return ErrClosed even
// when that Close then fails, EBUSY for a child made meanwhile, say.) The guard is an atomic add before and
// after each call: Poll and the posts still do not allocate. What this
// does not cover is C's own rule: an object that a posted request names
// (an MR's memory, an MW, an AH) must outlive the request, and a
// SendBatch or RecvBatch is one goroutine's at a time, its Close
// included.
//
// # Goroutines
//
// PostSend, PostSendLists and PostRecv may be called from several
// goroutines at once, as the verbs may: each queue's C array is filled
// under a lock of its own (uncontended, it costs a few nanoseconds). A
// SendBatch or RecvBatch, which holds its requests in an array of its own,
// is one goroutine's at a time, and posts without that lock: its Post must
// not run beside another post to the same queue (PostSend, or another
// batch's Post). A CQ made with CQInit.SingleThreaded is one goroutine's
// at a time too. BindMW, AttachMcast and DetachMcast take the send
// queue's lock too, so a QP's Close waits for them. An object that a
// request in flight names (an AH, an MW, an MR's memory) must not be
// closed until that request has completed, as in C: Close does not wait
// for posts on other QPs that use it.
//
// # Errors
//
// errno is taken from the call that set it and wrapped as an
// *os.SyscallError naming the verb, so errors.Is works with syscall errnos
// and with errors.ErrUnsupported (ENOSYS, EOPNOTSUPP). A failed work
// completion is a *WCError with the status's name, the vendor error and the
// wr_id (WC.Err); it wraps its WCStatus, which is an error, so that
// errors.Is(err, WCRemAccessErr) or errors.Is(err, WCWRFlushErr) says
// why a completion failed.
//
// # Speed
//
// PostSend, PostRecv and Poll do not allocate. A list of work requests is
// posted with one cgo call (per 256), and Poll fills a caller-owned []WC
// with one cgo call; C-side arrays owned by each QP hold the requests.
// PostSendLists posts many lists, or many requests each with its own
// doorbell, in one cgo call too: a loop that posts one request at a time
// can post all the room a poll opened at once. On a QP created with
// QPInit.WRAPI both build the requests with the ibv_wr_* API, as perftest
// does on the devices that have it.
// Waiting for completions (CQ.Wait, CompChannel.Wait) and async events
// (Context.Events) goes through the Go netpoller, so a waiting goroutine
// holds no OS thread. A loop that owns its thread and wants the lowest
// latency on events uses CompChannel.Block instead: one cgo call sleeps in
// poll(2), reads and acknowledges the event and re-arms the CQ, without
// the netpoller's second thread waking for the same event.
//
// # Busy polling
//
// A goroutine that spins on Poll never blocks, which the Go scheduler
// handles in two ways worth knowing. After 10 ms on one scheduling tick the
// runtime's monitor thread tries to preempt it; most of a poller's time is
// in cgo calls, where preemption cannot reach, so the runtime takes its P
// away instead and the call's return must get one back. And a goroutine
// whose P is handed off may resume on another OS thread, and so another
// CPU, which with soft-RoCE (where posting is a system call that runs the
// data path) moves the kernel's work away from the poller. Two habits help,
// both measured in docs/performance.md: lock the polling goroutine to its
// thread (runtime.LockOSThread), and call runtime.Gosched about every 5 ms,
// half the runtime's limit, outside any timed section. No more often: from
// a locked thread a yield hands the P to another thread and waits for it
// back, which took about 100 µs of the loop's time on a 2-core virtual
// machine. Unlike GOMAXPROCS=1 or GODEBUG=asyncpreemptoff=1, both touch
// only the loop. Leave GOMAXPROCS at 2 or more even on a pinned CPU: with
// one P, the monitor hands the P away from nearly every cgo call that
// blocks or runs long (a Block, a post on soft-RoCE), and getting it back
// cost a send_lat -e round trip about 360 µs in the measurements.
package ibverbs
