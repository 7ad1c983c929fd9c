#include "shim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WR_UNION_AT(m, type, gm) \
	(offsetof(struct ibv_send_wr, wr.m) == offsetof(struct ibv_send_wr, wr) + offsetof(type, gm))
_Static_assert(WR_UNION_AT(rdma.remote_addr, struct gv_wr_rdma, remote_addr) &&
		       WR_UNION_AT(rdma.rkey, struct gv_wr_rdma, rkey),
	       "struct gv_wr_rdma is not the layout of ibv_send_wr.wr.rdma");
_Static_assert(WR_UNION_AT(atomic.remote_addr, struct gv_wr_atomic, remote_addr) &&
		       WR_UNION_AT(atomic.compare_add, struct gv_wr_atomic, compare_add) &&
		       WR_UNION_AT(atomic.swap, struct gv_wr_atomic, swap) &&
		       WR_UNION_AT(atomic.rkey, struct gv_wr_atomic, rkey),
	       "struct gv_wr_atomic is not the layout of ibv_send_wr.wr.atomic");
_Static_assert(WR_UNION_AT(ud.ah, struct gv_wr_ud, ah) &&
		       WR_UNION_AT(ud.remote_qpn, struct gv_wr_ud, remote_qpn) &&
		       WR_UNION_AT(ud.remote_qkey, struct gv_wr_ud, remote_qkey),
	       "struct gv_wr_ud is not the layout of ibv_send_wr.wr.ud");
_Static_assert(sizeof(struct gv_wr_atomic) <= sizeof(((struct ibv_send_wr *)0)->wr),
	       "struct gv_wr_atomic is larger than ibv_send_wr.wr");
_Static_assert(offsetof(struct ibv_send_wr, invalidate_rkey) == gv_send_wr_imm,
	       "imm_data and invalidate_rkey do not share their place");

#define BIND_AT(m, gm) \
	(offsetof(struct ibv_send_wr, bind_mw.m) == gv_send_wr_bind + offsetof(struct gv_wr_bind_mw, gm))
_Static_assert(BIND_AT(mw, mw) && BIND_AT(rkey, rkey) && BIND_AT(bind_info, bind_info) &&
		       sizeof(struct gv_wr_bind_mw) == sizeof(((struct ibv_send_wr *)0)->bind_mw),
	       "struct gv_wr_bind_mw is not the layout of ibv_send_wr.bind_mw");

struct gv_post_scratch *gv_scratch_new(int cap, int max_sge, int send)
{
	struct gv_post_scratch *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (max_sge < 1)
		max_sge = 1;
	s->cap = cap;
	s->max_sge = max_sge;
	s->sge = calloc((size_t)cap * max_sge, sizeof(*s->sge));
	if (send)
		s->swr = calloc(cap, sizeof(*s->swr));
	else
		s->rwr = calloc(cap, sizeof(*s->rwr));
	if (!s->sge || (send && !s->swr) || (!send && !s->rwr)) {
		gv_scratch_free(s);
		return NULL;
	}
	return s;
}

void gv_scratch_free(struct gv_post_scratch *s)
{
	if (!s)
		return;
	free(s->sge);
	free(s->swr);
	free(s->rwr);
	free(s);
}

// rekey_windows gives the windows that the posted requests w[i:end]
// bind their new rkeys before the next list is posted: providers (rxe
// among them) name the window of a bind by the rkey its struct ibv_mw
// holds when the bind is posted, so a later list's bind of the same
// window, in the same cgo call, needs it. (Go's rekey does the same for
// its own copy once the call returns.)
static void rekey_windows(struct ibv_send_wr *w, int i, int end)
{
	for (; i < end; i++)
		if (w[i].opcode == IBV_WR_BIND_MW)
			w[i].bind_mw.mw->rkey = w[i].bind_mw.rkey;
}

// Post the requests w[0:n], which Go filled (all but next), in lists of
// list requests, one ibv_post_send (one doorbell) per list; list <= 0
// means all n in one. On failure *bad is the index of the first request
// that was not posted.
int gv_post_send(uintptr_t qph, uintptr_t wrh, int n, int list, int *bad)
{
	struct ibv_qp *qp = (struct ibv_qp *)qph;
	struct ibv_send_wr *w = (struct ibv_send_wr *)wrh;
	struct ibv_send_wr *bad_wr = NULL;
	int i, j, end, rc;

	if (list <= 0 || list > n)
		list = n;
	for (i = 0; i < n; i = end) {
		end = i + list < n ? i + list : n;
		for (j = i; j < end - 1; j++)
			w[j].next = &w[j + 1];
		w[end - 1].next = NULL;
		rc = ibv_post_send(qp, &w[i], &bad_wr);
		if (rc) {
			*bad = bad_wr ? (int)(bad_wr - w) : i;
			return rc;
		}
		rekey_windows(w, i, end);
	}
	*bad = n;
	return 0;
}

// wr_set_inline sets a request's inline data from its SGEs. Several are
// gathered here into one buffer when they fit, since rxe before rdma-core
// commit 1e8ed0aff loses the length of an inline list.
static void wr_set_inline(struct ibv_qp_ex *qx, const struct ibv_sge *sge, uint32_t n)
{
	char buf[1024];
	struct ibv_data_buf bufs[n ? n : 1];
	size_t len = 0;
	uint32_t k;

	if (n == 1) {
		ibv_wr_set_inline_data(qx, (void *)(uintptr_t)sge[0].addr, sge[0].length);
		return;
	}
	for (k = 0; k < n; k++)
		len += sge[k].length;
	if (len <= sizeof(buf)) {
		for (len = 0, k = 0; k < n; len += sge[k].length, k++)
			memcpy(buf + len, (void *)(uintptr_t)sge[k].addr, sge[k].length);
		ibv_wr_set_inline_data(qx, buf, len);
		return;
	}
	for (k = 0; k < n; k++) {
		bufs[k].addr = (void *)(uintptr_t)sge[k].addr;
		bufs[k].length = sge[k].length;
	}
	ibv_wr_set_inline_data_list(qx, n, bufs);
}

// Post the requests w[0:n] through the ibv_wr_* API of a QP created with
// send_ops_flags: one ibv_wr_start ... ibv_wr_complete (one doorbell) per
// list of list requests; list <= 0 means all n in one. A list that fails
// is not posted at all, so on failure *bad is the index of its first
// request. The caller has checked that each opcode is one the QP was
// created with. A request of one SGE takes ibv_wr_set_sge, as perftest's
// do: rxe's ibv_wr_set_sge_list copies the list with a call to memcpy and
// sums its lengths: 24 more instructions a request under callgrind.
int gv_wr_post(uintptr_t qxh, uintptr_t wrh, int n, int list, int *bad)
{
	struct ibv_qp_ex *qx = (struct ibv_qp_ex *)qxh;
	struct ibv_send_wr *w = (struct ibv_send_wr *)wrh;
	int ud = qx->qp_base.qp_type == IBV_QPT_UD;
	int i, j, rc;

	if (list <= 0 || list > n)
		list = n;
	for (i = 0; i < n; i += list) {
		int end = i + list < n ? i + list : n;

		ibv_wr_start(qx);
		for (j = i; j < end; j++) {
			const struct ibv_send_wr *r = &w[j];

			qx->wr_id = r->wr_id;
			qx->wr_flags = r->send_flags; // rxe reads IBV_SEND_INLINE here too
			switch (r->opcode) {
			case IBV_WR_RDMA_WRITE:
				ibv_wr_rdma_write(qx, r->wr.rdma.rkey, r->wr.rdma.remote_addr);
				break;
			case IBV_WR_RDMA_WRITE_WITH_IMM:
				ibv_wr_rdma_write_imm(qx, r->wr.rdma.rkey, r->wr.rdma.remote_addr, r->imm_data);
				break;
			case IBV_WR_SEND:
				ibv_wr_send(qx);
				break;
			case IBV_WR_SEND_WITH_IMM:
				ibv_wr_send_imm(qx, r->imm_data);
				break;
			case IBV_WR_RDMA_READ:
				ibv_wr_rdma_read(qx, r->wr.rdma.rkey, r->wr.rdma.remote_addr);
				break;
			case IBV_WR_ATOMIC_CMP_AND_SWP:
				ibv_wr_atomic_cmp_swp(qx, r->wr.atomic.rkey, r->wr.atomic.remote_addr,
						      r->wr.atomic.compare_add, r->wr.atomic.swap);
				break;
			case IBV_WR_ATOMIC_FETCH_AND_ADD:
				ibv_wr_atomic_fetch_add(qx, r->wr.atomic.rkey, r->wr.atomic.remote_addr,
							r->wr.atomic.compare_add);
				break;
			case IBV_WR_SEND_WITH_INV:
				ibv_wr_send_inv(qx, r->invalidate_rkey);
				break;
			case IBV_WR_LOCAL_INV:
				ibv_wr_local_inv(qx, r->invalidate_rkey);
				continue; // no data, no address
			case IBV_WR_BIND_MW:
				ibv_wr_bind_mw(qx, r->bind_mw.mw, r->bind_mw.rkey, &r->bind_mw.bind_info);
				continue;
			default:
				ibv_wr_abort(qx);
				*bad = i;
				return EINVAL;
			}
			if (ud && r->wr.ud.ah)
				ibv_wr_set_ud_addr(qx, r->wr.ud.ah, r->wr.ud.remote_qpn, r->wr.ud.remote_qkey);
			if (r->send_flags & IBV_SEND_INLINE)
				wr_set_inline(qx, r->sg_list, (uint32_t)r->num_sge);
			else if (r->num_sge == 1)
				ibv_wr_set_sge(qx, r->sg_list[0].lkey, r->sg_list[0].addr, r->sg_list[0].length);
			else
				ibv_wr_set_sge_list(qx, (size_t)r->num_sge, r->num_sge ? r->sg_list : NULL);
		}
		rc = ibv_wr_complete(qx);
		if (rc) {
			*bad = i;
			return rc;
		}
		rekey_windows(w, i, end);
	}
	*bad = n;
	return 0;
}

// gv_fill_attr_ex fills ax from the attributes of ibv_create_qp, with pd
// and send_ops_flags, so that the QP it makes takes the ibv_wr_* API.
void gv_fill_attr_ex(struct ibv_qp_init_attr_ex *ax, const struct ibv_qp_init_attr *a,
		     struct ibv_pd *pd, uint64_t send_ops)
{
	memset(ax, 0, sizeof(*ax));
	ax->qp_context = a->qp_context;
	ax->send_cq = a->send_cq;
	ax->recv_cq = a->recv_cq;
	ax->srq = a->srq;
	ax->cap = a->cap;
	ax->qp_type = a->qp_type;
	ax->sq_sig_all = a->sq_sig_all;
	ax->comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax->pd = pd;
	ax->send_ops_flags = send_ops;
}

struct ibv_qp_ex *gv_qp_ex(struct ibv_qp *qp)
{
	return ibv_qp_to_qp_ex(qp);
}

// link chains the receive requests w[0:n], which Go filled (all but next).
static void link_recv(struct ibv_recv_wr *w, int n)
{
	int i;

	for (i = 0; i < n - 1; i++)
		w[i].next = &w[i + 1];
	w[n - 1].next = NULL;
}

// post_recv_lists posts the receive requests w[0:n] to qp, or to srq if
// it is set, in lists of list requests (one list of all n for list 0),
// one post call a list. On failure *bad is the index of the first request
// not posted: those of the lists before it were.
static int post_recv_lists(struct ibv_qp *qp, struct ibv_srq *srq, struct ibv_recv_wr *w,
			   int n, int list, int *bad)
{
	int i;

	if (list <= 0 || list > n)
		list = n;
	for (i = 0; i < n; i += list) {
		struct ibv_recv_wr *bad_wr = NULL;
		int k = n - i < list ? n - i : list;
		int rc;

		link_recv(w + i, k);
		rc = srq ? ibv_post_srq_recv(srq, w + i, &bad_wr) : ibv_post_recv(qp, w + i, &bad_wr);
		if (rc) {
			*bad = bad_wr ? (int)(bad_wr - w) : i;
			return rc;
		}
	}
	*bad = n;
	return 0;
}

int gv_post_recv(uintptr_t qph, uintptr_t wrh, int n, int list, int *bad)
{
	return post_recv_lists((struct ibv_qp *)qph, NULL, (struct ibv_recv_wr *)wrh, n, list, bad);
}

int gv_post_srq_recv(uintptr_t srqh, uintptr_t wrh, int n, int list, int *bad)
{
	return post_recv_lists(NULL, (struct ibv_srq *)srqh, (struct ibv_recv_wr *)wrh, n, list, bad);
}

// poll_cq polls up to n completions into out, each size bytes after the
// last. Returns the count, or -errno.
static int poll_cq(struct ibv_cq *cq, int n, void *out, size_t size)
{
	struct ibv_wc wc[32];
	int got = 0;

	while (got < n) {
		int want = n - got < 32 ? n - got : 32;
		int i, k = ibv_poll_cq(cq, want, wc);

		if (k < 0)
			return gv_poll_end(got, k);
		for (i = 0; i < k; i++)
			gv_fill_wc((struct gv_wc *)((char *)out + (size_t)(got + i) * size), &wc[i]);
		got += k;
		if (k < want)
			break;
	}
	return got;
}

// Poll up to n completions into out. Returns the count, or -errno.
int gv_poll_cq(uintptr_t cqh, int n, struct gv_wc *out)
{
	return poll_cq((struct ibv_cq *)cqh, n, out, sizeof(*out));
}

// read_wc_ex reads the extended CQ's current completion into o: the fields
// of IBV_WC_STANDARD_FLAGS, which gv_create_cq_ex always asks for, and the
// timestamps that fields asks for. A failed completion has wr_id, status,
// vendor_err and qp_num alone, as ibv_poll_cq's.
static inline void read_wc_ex(struct ibv_cq_ex *cq, struct gv_wc_ex *o, uint64_t fields)
{
	struct gv_wc *w = &o->wc;

	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->vendor_err = ibv_wc_read_vendor_err(cq);
	w->qp_num = ibv_wc_read_qp_num(cq);
	o->ts = fields & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP ? ibv_wc_read_completion_ts(cq) : 0;
	o->wallclock_ns = fields & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK ?
		ibv_wc_read_completion_wallclock_ns(cq) : 0;
	if (cq->status != IBV_WC_SUCCESS) {
		w->opcode = w->byte_len = w->imm_data = w->src_qp = w->wc_flags = 0;
		w->pkey_index = w->slid = w->sl = w->dlid_path_bits = 0;
		return;
	}
	w->opcode = ibv_wc_read_opcode(cq);
	w->wc_flags = ibv_wc_read_wc_flags(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	if (w->wc_flags & IBV_WC_WITH_IMM)
		w->imm_data = ntohl(ibv_wc_read_imm_data(cq));
	else if (w->wc_flags & IBV_WC_WITH_INV)
		w->imm_data = ibv_wc_read_invalidated_rkey(cq);
	else
		w->imm_data = 0;
	w->src_qp = ibv_wc_read_src_qp(cq);
	/* Not among the fields a CQ can be asked for: always 0 here. */
	w->pkey_index = 0;
	w->slid = ibv_wc_read_slid(cq);
	w->sl = ibv_wc_read_sl(cq);
	w->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
}

int gv_poll_cq_ex(uintptr_t cqh, uintptr_t exh, uint64_t fields, int n, struct gv_wc_ex *out)
{
	struct ibv_cq_ex *cq = (struct ibv_cq_ex *)exh;
	int got = 0;

	if (!cq) {
		int i, k = poll_cq((struct ibv_cq *)cqh, n, out, sizeof(*out));

		for (i = 0; i < k; i++)
			out[i].ts = out[i].wallclock_ns = 0;
		return k;
	}
	/*
	 * One completion a start_poll/end_poll batch, never ibv_next_poll:
	 * rxe before rdma-core 55 ends the batch itself when next_poll finds
	 * the CQ empty, and the end_poll that must follow then moves the
	 * consumer index past a completion not yet made, and unlocks twice.
	 */
	while (got < n) {
		struct ibv_poll_cq_attr attr = {0};
		int rc = ibv_start_poll(cq, &attr);

		if (rc)
			return gv_poll_end(got, rc);
		read_wc_ex(cq, &out[got++], fields);
		ibv_end_poll(cq);
	}
	return got;
}

struct ibv_cq_ex *gv_create_cq_ex(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch,
				  int vector, uint32_t flags, uint64_t fields)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = cqe,
		.channel = ch,
		.comp_vector = vector,
		.wc_flags = IBV_WC_STANDARD_FLAGS | fields,
	};

	if (flags) {
		a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
		a.flags = flags;
	}
	return ibv_create_cq_ex(ctx, &a);
}

int gv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port, const struct gv_wc *w,
		       void *grh, struct ibv_ah_attr *attr)
{
	struct ibv_wc wc = {
		.wr_id = w->wr_id,
		.status = w->status,
		.opcode = w->opcode,
		.vendor_err = w->vendor_err,
		.byte_len = w->byte_len,
		.qp_num = w->qp_num,
		.src_qp = w->src_qp,
		.wc_flags = w->wc_flags,
		.pkey_index = w->pkey_index,
		.slid = w->slid,
		.sl = w->sl,
		.dlid_path_bits = w->dlid_path_bits,
	};
	struct ibv_grh none = {0};

	/* The verb reads the flow label from grh even where wc has no GRH. */
	if (!grh)
		grh = &none;
	errno = 0;
	if (ibv_init_ah_from_wc(ctx, port, &wc, grh, attr)) {
		/* A GID search that ran off the table's end can leave errno 0. */
		if (!errno)
			errno = ENOENT;
		return -1;
	}
	return 0;
}

int gv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

int gv_modify_cq(struct ibv_cq *cq, uint16_t count, uint16_t period_us)
{
	struct ibv_modify_cq_attr a = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = count, .cq_period = period_us },
	};

	return ibv_modify_cq(cq, &a);
}

// ibv_query_pkey returns -1, its errno from reading sysfs (or none).
int gv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, uint16_t *pkey)
{
	__be16 be;

	errno = 0;
	if (ibv_query_pkey(ctx, port, index, &be))
		return errno ? errno : EIO;
	*pkey = ntohs(be);
	return 0;
}

struct ibv_mr *gv_alloc_null_mr(struct ibv_pd *pd)
{
	return ibv_alloc_null_mr(pd);
}

int gv_get_pkey_index(struct ibv_context *ctx, uint8_t port, uint16_t pkey)
{
	int i;

	errno = 0;
	i = ibv_get_pkey_index(ctx, port, htons(pkey));
	if (i < 0)
		return errno ? -errno : -EIO;
	return i;
}

int gv_query_raw_clock(struct ibv_context *ctx, uint64_t *ns)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	int rc;

	rc = ibv_query_rt_values_ex(ctx, &v);
	if (rc)
		return rc;
	if (!(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return EOPNOTSUPP;
	*ns = (uint64_t)v.raw_clock.tv_sec * 1000000000 + (uint64_t)v.raw_clock.tv_nsec;
	return 0;
}

/*
 * rdma-core 49 appended uint32_t active_speed_ex to struct ibv_port_attr,
 * after port_cap_flags2, for speeds that active_speed's 8 bits cannot hold
 * (256 = XDR; active_speed then says NDR). An older verbs.h (Debian 12 has
 * 44) lacks the field, but libibverbs takes the caller's length: a library
 * that knows the field fills it when the buffer reaches it, an older one
 * zeroes the buffer's tail. So query into a buffer with room for the field
 * at its offset in rdma-core 49's layout, whichever header this is built
 * against.
 */
#define GV_SPEED_EX_AT ((offsetof(struct ibv_port_attr, port_cap_flags2) + sizeof(uint16_t) + 3) & ~(size_t)3)

int gv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, uint32_t *speed_ex)
{
	struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
	union {
		struct ibv_port_attr a;
		unsigned char b[GV_SPEED_EX_AT + sizeof(uint32_t)];
	} u;
	int rc;

	*speed_ex = 0;
	if (!vctx)
		return ibv_query_port(ctx, port, attr);
	memset(&u, 0, sizeof(u));
	rc = vctx->query_port(ctx, port, &u.a, sizeof(u));
	if (rc)
		return rc;
	*attr = u.a;
	memcpy(speed_ex, u.b + GV_SPEED_EX_AT, sizeof(*speed_ex));
	return 0;
}

int gv_query_device_ex(struct ibv_context *ctx, struct ibv_device_attr_ex *attr)
{
	int rc = ibv_query_device_ex(ctx, NULL, attr);

	if (rc == EOPNOTSUPP || rc == ENOSYS)
		rc = ibv_query_device(ctx, &attr->orig_attr);
	return rc;
}

long gv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e, long max)
{
	ssize_t n = ibv_query_gid_table(ctx, e, max, 0);

	return n < 0 ? (long)n : (long)n;
}

long gv_query_gid_port(struct ibv_context *ctx, uint32_t port, struct ibv_gid_entry *e, uint32_t len, uint32_t *bad)
{
	static const union ibv_gid zero;
	long n = 0;
	uint32_t i;

	for (i = 0; i < len; i++) {
		int rc = ibv_query_gid_ex(ctx, port, i, &e[n], 0);

		if (rc == ENODATA)
			continue;
		if (rc) {
			*bad = i;
			return rc < 0 ? rc : -rc;
		}
		if (memcmp(&e[n].gid, &zero, sizeof(zero)))
			n++;
	}
	return n;
}

struct ibv_mr *gv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova, unsigned int access, int *err)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr_iova2(pd, addr, len, iova, access);
	*err = mr ? 0 : (errno ? errno : EINVAL);
	return mr;
}

struct ibv_mw *gv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type, int *err)
{
	struct ibv_mw *mw;

	errno = 0;
	mw = ibv_alloc_mw(pd, type);
	*err = mw ? 0 : (errno ? errno : EINVAL);
	return mw;
}

// ibv_bind_mw returns its error rather than setting errno.
int gv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, uint64_t wr_id, unsigned int flags,
	       struct ibv_mr *mr, uint64_t addr, uint64_t length, unsigned int access)
{
	struct ibv_mw_bind b = {
		.wr_id = wr_id,
		.send_flags = flags,
		.bind_info = { .mr = mr, .addr = addr, .length = length, .mw_access_flags = access },
	};

	return ibv_bind_mw(qp, mw, &b);
}

// Returns 0, or an errno (EAGAIN when the non-blocking channel is empty).
int gv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq)
{
	void *cq_ctx;

	errno = 0;
	if (ibv_get_cq_event(ch, cq, &cq_ctx))
		return errno ? errno : EIO;
	return 0;
}

// Reads one async event, which the caller acknowledges (ibv_ack_async_event)
// once it has looked up the object the event is about: until then that
// object cannot be freed, nor its address be another's. *qpn is the QP number
// for QP events; *obj the C object the event is about (QP, CQ, SRQ or WQ), or
// NULL.
int gv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev,
		       uint32_t *qpn, void **obj)
{
	errno = 0;
	if (ibv_get_async_event(ctx, ev))
		return errno ? errno : EIO;
	*qpn = 0;
	*obj = NULL;
	switch (ev->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		*qpn = ev->element.qp->qp_num;
		*obj = ev->element.qp;
		break;
	case IBV_EVENT_CQ_ERR:
		*obj = ev->element.cq;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		*obj = ev->element.srq;
		break;
	case IBV_EVENT_WQ_FATAL:
		*obj = ev->element.wq;
		break;
	default:
		break;
	}
	return 0;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int gv_post_poll(uintptr_t qph, uintptr_t qxh, uintptr_t wrh, int n, int list, int *bad,
		 uintptr_t cqh, int nwc, struct gv_wc *out, int64_t spin_ns, int *polled)
{
	int64_t end = 0;
	unsigned k;
	int rc = qxh ? gv_wr_post(qxh, wrh, n, list, bad) : gv_post_send(qph, wrh, n, list, bad);

	if (rc)
		return rc;
	// The clock is read once every 32 empty polls, and not before the
	// first: a completion that is there at once costs no reading.
	for (k = 1; (*polled = gv_poll_cq(cqh, nwc, out)) == 0 && spin_ns > 0; k++) {
		if (k % 32)
			continue;
		if (!end)
			end = mono_ns() + spin_ns;
		else if (mono_ns() >= end)
			break;
	}
	return 0;
}

int gv_channel_wait(uintptr_t chh, int kick, int64_t timeout_ns, int64_t *end_ns, struct ibv_cq **out,
		    int *kicked)
{
	struct ibv_comp_channel *ch = (struct ibv_comp_channel *)chh;
	// poll(2) passes over an entry whose fd is negative: no kick.
	struct pollfd pfd[2] = { { .fd = ch->fd, .events = POLLIN }, { .fd = kick, .events = POLLIN } };
	void *cq_ctx;
	int64_t left;
	int rc;

	*out = NULL;
	*kicked = 0;
	if (!*end_ns) {
		*end_ns = mono_ns() + timeout_ns;
		left = timeout_ns;
	} else {
		left = *end_ns - mono_ns();
		if (left < 0)
			left = 0;
	}
	// poll(2) first, which returns at once when an event is there: a
	// read of the (non-blocking) fd would take a system call more
	// whenever the wait does sleep.
	for (;;) {
		// Whole milliseconds, rounded up. A signal (the Go runtime's
		// preemption) ends the sleep early; the loop goes back to it.
		rc = poll(pfd, 2, (int)((left + 999999) / 1000000));
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc > 0 && pfd[1].revents) {
			// Empty the eventfd (non-blocking), so that it wakes
			// the next wait only for the next kick.
			uint64_t n;
			if (read(kick, &n, sizeof n) < 0 && errno != EAGAIN)
				return -errno;
			*kicked = 1;
			return 0;
		}
		if (rc > 0 && pfd[0].revents) {
			if (!ibv_get_cq_event(ch, out, &cq_ctx))
				return 0;
			*out = NULL;
			if (errno != EAGAIN)
				return errno ? errno : EIO;
		}
		left = *end_ns - mono_ns();
		if (left <= 0)
			return 0;
	}
}

int gv_kick(int fd)
{
	uint64_t one = 1;

	// EAGAIN only when the count is at its limit: the kick is there.
	if (write(fd, &one, sizeof one) < 0 && errno != EAGAIN)
		return errno;
	return 0;
}

int gv_cq_event_done(uintptr_t cqh, int arm)
{
	struct ibv_cq *cq = (struct ibv_cq *)cqh;
	int rc = arm ? ibv_req_notify_cq(cq, arm == 2) : 0;

	// Arm before the ack: ibv_destroy_cq, in another thread, waits for
	// the ack and may free the CQ as soon as it is given.
	ibv_ack_cq_events(cq, 1);
	return rc;
}
