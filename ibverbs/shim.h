// C helpers for the ibverbs package: verbs that are macros or static inlines
// in <infiniband/verbs.h>, errno returned from the call that set it, and
// batched posting and polling over flat structs that Go can fill.
#ifndef GORPERF_IBVERBS_SHIM_H
#define GORPERF_IBVERBS_SHIM_H

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

// The members of struct ibv_send_wr's wr union are anonymous structs, which
// Go cannot name. These have their layout (shim.c asserts it), so that Go
// fills requests in place, in the C memory the provider reads them from.
struct gv_wr_rdma {
	uint64_t remote_addr;
	uint32_t rkey;
};

struct gv_wr_atomic {
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t rkey;
};

struct gv_wr_ud {
	struct ibv_ah *ah;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
};

// gv_wr_bind_mw is the layout of the request's bind_mw, another anonymous
// member; gv_send_wr_bind is where it lies.
struct gv_wr_bind_mw {
	struct ibv_mw *mw;
	uint32_t rkey;
	struct ibv_mw_bind_info bind_info;
};

enum { gv_send_wr_bind = offsetof(struct ibv_send_wr, bind_mw) };

// gv_send_wr_imm is where imm_data (and invalidate_rkey) lie in a request,
// an anonymous union that Go cannot name either.
enum { gv_send_wr_imm = offsetof(struct ibv_send_wr, imm_data) };

// gv_wc has the layout of the Go type WC: Poll writes straight into Go's slice.
struct gv_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; // host order
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint8_t pad[2];
};

// gv_wc_ex has the layout of the Go type WCEx.
struct gv_wc_ex {
	struct gv_wc wc;
	uint64_t ts;
	uint64_t wallclock_ns;
};

// gv_fill_wc converts w, a completion ibv_poll_cq took, to the Go layout. A
// failed completion has wr_id, status, vendor_err and qp_num alone, as
// gv_poll_cq_ex's: libibverbs leaves its other fields undefined (a provider
// need not write them), and they are zeroed rather than copied.
static inline void gv_fill_wc(struct gv_wc *o, const struct ibv_wc *w)
{
	o->wr_id = w->wr_id;
	o->status = w->status;
	o->vendor_err = w->vendor_err;
	o->qp_num = w->qp_num;
	if (w->status != IBV_WC_SUCCESS) {
		o->opcode = o->byte_len = o->imm_data = o->src_qp = o->wc_flags = 0;
		o->pkey_index = o->slid = o->sl = o->dlid_path_bits = 0;
		return;
	}
	o->opcode = w->opcode;
	o->byte_len = w->byte_len;
	if (w->wc_flags & IBV_WC_WITH_IMM)
		o->imm_data = ntohl(w->imm_data);
	else if (w->wc_flags & IBV_WC_WITH_INV)
		o->imm_data = w->invalidated_rkey;
	else
		o->imm_data = 0;
	o->src_qp = w->src_qp;
	o->wc_flags = w->wc_flags;
	o->pkey_index = w->pkey_index;
	o->slid = w->slid;
	o->sl = w->sl;
	o->dlid_path_bits = w->dlid_path_bits;
}

// gv_poll_end is what a poll returns when the provider's call answered rc,
// not 0, after got completions were taken: ibv_poll_cq's negative count, or
// ibv_start_poll's ENOENT or EBUSY (none found now), errno, or a failure
// that is no errno (mlx5's CQ_POLL_ERR, -2). The completions taken are
// returned, and the failure only where there are none, as -errno: -EIO for
// one that is no errno, which negated would count as completions taken.
static inline int gv_poll_end(int got, int rc)
{
	if (got || rc == ENOENT || rc == EBUSY)
		return got;
	return rc > 0 ? -rc : -EIO;
}

// gv_post_scratch is C memory for cap requests of up to max_sge SGEs each,
// filled from Go: request i's SGEs are sge[i*max_sge:]. A QP or SRQ owns
// one for each direction it posts; a SendBatch is one.
struct gv_post_scratch {
	int cap;
	int max_sge;
	struct ibv_send_wr *swr;
	struct ibv_recv_wr *rwr;
	struct ibv_sge *sge;
};

struct gv_post_scratch *gv_scratch_new(int cap, int max_sge, int send);
void gv_scratch_free(struct gv_post_scratch *s);

// The hot-path calls take the C handles (QP, requests, CQ, SRQ) as
// uintptr_t: passed as C pointers to structs that hold pointers, each
// would cost a cgo pointer check per call (about 7 ns of a 27 ns call on
// the CI host; docs/performance.md). They are C memory, which Go's
// collector neither moves nor frees.
int gv_post_send(uintptr_t qp, uintptr_t wr, int n, int list, int *bad);
int gv_wr_post(uintptr_t qx, uintptr_t wr, int n, int list, int *bad);
void gv_fill_attr_ex(struct ibv_qp_init_attr_ex *ax, const struct ibv_qp_init_attr *a,
		     struct ibv_pd *pd, uint64_t send_ops);
struct ibv_qp_ex *gv_qp_ex(struct ibv_qp *qp);
int gv_post_recv(uintptr_t qp, uintptr_t wr, int n, int list, int *bad);
int gv_post_srq_recv(uintptr_t srq, uintptr_t wr, int n, int list, int *bad);
int gv_poll_cq(uintptr_t cq, int n, struct gv_wc *out);
// gv_create_cq_ex creates a CQ with ibv_create_cq_ex, with the standard
// work completion fields and those in fields (timestamps), and the
// ibv_create_cq_attr_flags in flags. It returns NULL with errno set on
// failure.
struct ibv_cq_ex *gv_create_cq_ex(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch,
				  int vector, uint32_t flags, uint64_t fields);
// gv_poll_cq_ex polls up to n completions into out, through the extended
// CQ's iterator and ibv_wc_read_* where exh (a struct ibv_cq_ex) is not 0,
// reading the timestamps in fields, else with ibv_poll_cq on cqh, their
// timestamps 0. Returns the count, or -errno: -EIO for a start_poll
// failure that is no errno (mlx5's CQ_POLL_ERR, -2). A wall-clock read that
// start_poll refuses for now (EBUSY) counts as no completion.
int gv_poll_cq_ex(uintptr_t cqh, uintptr_t exh, uint64_t fields, int n, struct gv_wc_ex *out);
int gv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
// gv_modify_cq sets the CQ's event moderation (ibv_modify_cq with
// IBV_CQ_ATTR_MODERATE) and returns 0 or the verb's errno (EOPNOTSUPP
// where the provider has no modify_cq).
int gv_modify_cq(struct ibv_cq *cq, uint16_t count, uint16_t period_us);
// gv_query_pkey reads the P_Key at index of port's table (ibv_query_pkey)
// into *pkey, in host order, and returns 0 or errno (EIO where the verb
// failed without setting one).
int gv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, uint16_t *pkey);
// gv_alloc_null_mr is ibv_alloc_null_mr, an inline of verbs.h: NULL with
// errno set (EOPNOTSUPP where the provider has no null MRs) on failure.
struct ibv_mr *gv_alloc_null_mr(struct ibv_pd *pd);
// gv_get_pkey_index returns the index of the P_Key pkey, in host order,
// in port's table (ibv_get_pkey_index), or -errno (-EIO where the verb
// failed without setting one; -ENOENT for a key the table lacks).
int gv_get_pkey_index(struct ibv_context *ctx, uint8_t port, uint16_t pkey);
// gv_query_raw_clock reads the device's raw clock (ibv_query_rt_values_ex
// with IBV_VALUES_MASK_RAW_CLOCK) into *ns as tv_sec*1e9 + tv_nsec, and
// returns 0 or the verb's errno: EOPNOTSUPP where the provider has no
// query_rt_values, or answers without the raw clock.
int gv_query_raw_clock(struct ibv_context *ctx, uint64_t *ns);
// gv_init_ah_from_wc fills *attr with the address vector of a reply to the
// sender of the receive completion w (ibv_init_ah_from_wc), grh being the
// GRH area at the start of its buffer (NULL where w has no GRH: zeros are
// read then). It returns
// 0, or -1 with errno set.
int gv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port, const struct gv_wc *w,
		       void *grh, struct ibv_ah_attr *attr);
// gv_post_poll posts w[0:n] as gv_post_send (or, qx not 0, gv_wr_post)
// does and, if that succeeds, polls cq as gv_poll_cq does until it takes
// a completion or spin_ns has passed (0: once), storing the count, or
// -errno, in *polled. It returns the post's result.
int gv_post_poll(uintptr_t qp, uintptr_t qx, uintptr_t wr, int n, int list, int *bad,
		 uintptr_t cq, int nwc, struct gv_wc *out, int64_t spin_ns, int *polled);

/* ibv_query_port, and the port's active_speed_ex (0 where the library or
 * the kernel lacks it) whichever verbs.h this is built against. */
int gv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, uint32_t *speed_ex);
int gv_query_device_ex(struct ibv_context *ctx, struct ibv_device_attr_ex *attr);
long gv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e, long max);
/* gv_query_gid_port reads port's GID table slot by slot (ibv_query_gid_ex)
 * into e, which holds len entries, skipping unused slots (ENODATA) and
 * all-zero GIDs, as ibv_query_gid_table does. It returns the number of
 * entries read, or -errno of the first slot that fails otherwise, with
 * that slot's index in *bad. */
long gv_query_gid_port(struct ibv_context *ctx, uint32_t port, struct ibv_gid_entry *e, uint32_t len, uint32_t *bad);
struct ibv_mr *gv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, unsigned int access, int *err);
struct ibv_mw *gv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type, int *err);
int gv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, uint64_t wr_id, unsigned int flags,
	       struct ibv_mr *mr, uint64_t addr, uint64_t length, unsigned int access);
int gv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq);
// gv_channel_wait waits, with the thread asleep in poll(2), for the
// channel's next event and reads it (ibv_get_cq_event) without
// acknowledging it: gv_cq_event_done does. It waits until *end_ns on the
// monotonic clock, which a first call, with *end_ns 0, sets to timeout_ns
// from now, so that a caller that drops an event and waits again keeps the
// first call's deadline. It stores the event's CQ in *cq (NULL if the time
// passed first) and returns 0, or an errno: of ibv_get_cq_event, or,
// negated, of poll or read. kick, unless negative, is a non-blocking
// eventfd that gv_kick writes to end the wait early: when it is readable
// gv_channel_wait empties it, sets *kicked and returns 0 with *cq NULL,
// before it looks for an event.
int gv_channel_wait(uintptr_t ch, int kick, int64_t timeout_ns, int64_t *end_ns, struct ibv_cq **cq,
		    int *kicked);
// gv_kick adds one to eventfd fd's count, which wakes a gv_channel_wait
// polling it, and returns 0 or write's errno.
int gv_kick(int fd);
// gv_cq_event_done re-arms cq (ibv_req_notify_cq) for its next completion
// when arm is 1, its next solicited one when arm is 2, then acknowledges one
// event of it (ibv_ack_cq_events), and returns ibv_req_notify_cq's errno, or 0.
int gv_cq_event_done(uintptr_t cq, int arm);
int gv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev,
		       uint32_t *qpn, void **obj);

#endif
