// A struct ibv_cq_ex whose poll iterator a test scripts, so that the
// ibverbs tests can show what PollEx makes of a provider's answers without
// a device. Test helper only: nothing outside the tests uses it.
#ifndef GORPERF_CVERBS_FAKECQ_H
#define GORPERF_CVERBS_FAKECQ_H

#include <infiniband/verbs.h>

struct cv_fake_cq {
	struct ibv_cq_ex ex; // first, so that the struct is a struct ibv_cq_ex
	int good;            // completions start_poll and next_poll give (wr_id 1, 2, ...)
	int rc;              // what they return once those are taken
	int taken;           // completions given so far
	int ends;            // end_poll calls
};

struct cv_fake_cq *cv_fake_cq_new(int good, int rc);
void cv_fake_cq_free(struct cv_fake_cq *f);

// A struct ibv_cq whose ibv_poll_cq gives one failed completion, with
// wr_id, status, vendor_err and qp_num set and every other field of the
// struct ibv_wc filled with 0xa5 bytes, as a provider may leave them; then
// none.
struct cv_fake_failed_cq {
	struct ibv_cq cq; // first, so that the struct is a struct ibv_cq
	struct ibv_context ctx; // the CQ's, for its ops.poll_cq
	struct ibv_wc wc;       // the completion to give
	int given;
};

struct cv_fake_failed_cq *cv_fake_failed_cq_new(uint64_t wr_id, int status, uint32_t vendor_err,
						 uint32_t qp_num);

#endif
