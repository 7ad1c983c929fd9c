// C helpers for the rdmacm package: events copied out of librdmacm's unions
// into a flat struct Go can read, and the static inlines of <rdma/rdma_cma.h>.
#ifndef GORPERF_RDMACM_SHIM_H
#define GORPERF_RDMACM_SHIM_H

#include <stdint.h>
#include <rdma/rdma_cma.h>

// gr_event is a struct rdma_cm_event copied out, its param union resolved:
// ud says whether the UD fields (ah_attr, qkey) or the connection fields
// hold the event's parameters. private_data holds a copy of the peer's data.
struct gr_event {
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	int event;
	int status;
	int ud;
	uint32_t qp_num;
	uint32_t qkey;
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	struct ibv_ah_attr ah_attr;
	uint8_t private_data[256];
};

// gr_get_event takes the channel's next event (rdma_get_cm_event), copies it
// into out, private data included, and returns it in *evp, unacknowledged:
// the caller acknowledges it (rdma_ack_cm_event) once it has named the
// event's IDs, as until then rdma_destroy_id of the ID waits and the ID's
// address is no other's. It returns 0 or the errno: EAGAIN when a
// non-blocking channel has no event. An event librdmacm made of its own
// failure (status -1) gets status -errno.
int gr_get_event(struct rdma_event_channel *ch, struct gr_event *out,
		 struct rdma_cm_event **evp);

// rdma_get_local_addr and rdma_get_peer_addr are static inlines.
struct sockaddr *gr_local_addr(struct rdma_cm_id *id);
struct sockaddr *gr_peer_addr(struct rdma_cm_id *id);

// gr_join_multicast joins addr with join_flags (rdma_join_multicast_ex) and
// returns 0 or the errno.
int gr_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, uint32_t join_flags);

// gr_destroy_qp destroys id's QP (ibv_destroy_qp) and forgets it, as
// rdma_destroy_qp does, but only when the destroy succeeded, and returns 0
// or the errno: rdma_destroy_qp drops a failure (EBUSY while the QP is
// still attached to a multicast group) and forgets the QP all the same.
// The QP's CQs are the caller's, never librdmacm's.
int gr_destroy_qp(struct rdma_cm_id *id);

#endif
