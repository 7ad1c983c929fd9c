#include "shim.h"

#include <errno.h>
#include <string.h>

int gr_get_event(struct rdma_event_channel *ch, struct gr_event *out,
		 struct rdma_cm_event **evp)
{
	struct rdma_cm_event *ev;
	const void *data;
	uint8_t len;

	errno = 0;
	if (rdma_get_cm_event(ch, &ev))
		return errno ? errno : EIO;
	memset(out, 0, sizeof(*out));
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	out->event = ev->event;
	out->status = ev->status;
	/*
	 * An event librdmacm makes of a failure of its own (ADDR_ERROR or
	 * ROUTE_ERROR when it cannot query the resolved address or route,
	 * CONNECT_ERROR when moving the QP to RTR or RTS fails,
	 * MULTICAST_ERROR when ibv_attach_mcast fails) has status -1 and the
	 * reason in errno, which nothing sets again before
	 * rdma_get_cm_event returns. The kernel's statuses are negative
	 * errnos already; its -1 (EPERM) comes with errno still 0.
	 */
	if (ev->status == -1 && errno)
		out->status = -errno;
	if (ev->id && ev->id->qp_type == IBV_QPT_UD) {
		const struct rdma_ud_param *u = &ev->param.ud;

		out->ud = 1;
		data = u->private_data;
		len = u->private_data_len;
		out->ah_attr = u->ah_attr;
		out->qp_num = u->qp_num;
		out->qkey = u->qkey;
	} else {
		const struct rdma_conn_param *c = &ev->param.conn;

		data = c->private_data;
		len = c->private_data_len;
		out->responder_resources = c->responder_resources;
		out->initiator_depth = c->initiator_depth;
		out->flow_control = c->flow_control;
		out->retry_count = c->retry_count;
		out->rnr_retry_count = c->rnr_retry_count;
		out->srq = c->srq;
		out->qp_num = c->qp_num;
	}
	if (data && len) {
		memcpy(out->private_data, data, len);
		out->private_data_len = len;
	}
	*evp = ev;
	return 0;
}

struct sockaddr *gr_local_addr(struct rdma_cm_id *id)
{
	return rdma_get_local_addr(id);
}

struct sockaddr *gr_peer_addr(struct rdma_cm_id *id)
{
	return rdma_get_peer_addr(id);
}

int gr_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, uint32_t join_flags)
{
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = join_flags,
		.addr = addr,
	};

	errno = 0;
	if (rdma_join_multicast_ex(id, &attr, NULL))
		return errno ? errno : EIO;
	return 0;
}

int gr_destroy_qp(struct rdma_cm_id *id)
{
	int rc = ibv_destroy_qp(id->qp);

	if (rc == 0)
		id->qp = NULL;
	return rc;
}
