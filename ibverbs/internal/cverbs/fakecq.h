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

#endif
