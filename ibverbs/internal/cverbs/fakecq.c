#include "fakecq.h"

#include <stdlib.h>
#include <string.h>

static struct cv_fake_cq *fake(struct ibv_cq_ex *cq)
{
	return (struct cv_fake_cq *)cq;
}

// next gives the next scripted completion, or the scripted failure.
static int next(struct ibv_cq_ex *cq)
{
	struct cv_fake_cq *f = fake(cq);

	if (f->taken >= f->good)
		return f->rc;
	f->taken++;
	cq->status = IBV_WC_SUCCESS;
	cq->wr_id = (uint64_t)f->taken;
	return 0;
}

static int start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	(void)attr;
	return next(cq);
}

static void end_poll(struct ibv_cq_ex *cq)
{
	fake(cq)->ends++;
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cq)
{
	(void)cq;
	return IBV_WC_RECV;
}

static uint32_t read_u32(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static __be32 read_be32(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static unsigned int read_flags(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static uint8_t read_u8(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

static uint64_t read_u64(struct ibv_cq_ex *cq)
{
	(void)cq;
	return 0;
}

struct cv_fake_cq *cv_fake_cq_new(int good, int rc)
{
	struct cv_fake_cq *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->good = good;
	f->rc = rc;
	f->ex.start_poll = start_poll;
	f->ex.next_poll = next;
	f->ex.end_poll = end_poll;
	f->ex.read_opcode = read_opcode;
	f->ex.read_vendor_err = read_u32;
	f->ex.read_byte_len = read_u32;
	f->ex.read_imm_data = read_be32;
	f->ex.read_qp_num = read_u32;
	f->ex.read_src_qp = read_u32;
	f->ex.read_wc_flags = read_flags;
	f->ex.read_slid = read_u32;
	f->ex.read_sl = read_u8;
	f->ex.read_dlid_path_bits = read_u8;
	f->ex.read_completion_ts = read_u64;
	f->ex.read_completion_wallclock_ns = read_u64;
	return f;
}

void cv_fake_cq_free(struct cv_fake_cq *f)
{
	free(f);
}

static int failed_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct cv_fake_failed_cq *f = (struct cv_fake_failed_cq *)cq;

	if (n < 1 || f->given)
		return 0;
	f->given = 1;
	wc[0] = f->wc;
	return 1;
}

struct cv_fake_failed_cq *cv_fake_failed_cq_new(uint64_t wr_id, int status, uint32_t vendor_err,
						 uint32_t qp_num)
{
	struct cv_fake_failed_cq *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	memset(&f->wc, 0xa5, sizeof(f->wc));
	f->wc.wr_id = wr_id;
	f->wc.status = (enum ibv_wc_status)status;
	f->wc.vendor_err = vendor_err;
	f->wc.qp_num = qp_num;
	f->cq.context = &f->ctx;
	f->ctx.ops.poll_cq = failed_poll;
	return f;
}
