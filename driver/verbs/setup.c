// SPDX-License-Identifier: MIT
/*
 * setup.c - the verbs link's resources: the RDMA device and its port and
 * GID (ACCDMA_IB_DEV, ACCDMA_IB_GID_INDEX, as NCCL_IB_HCA and
 * NCCL_IB_GID_INDEX), the completion queue and channel, the shared receive
 * queue kept full, one RC queue pair per peer process, connected once the
 * bootstrap has traded their numbers, and a ping through each before the
 * world opens.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver/verbs/verbs.h"

/* The device named by ACCDMA_IB_DEV (a name, or a comma list taken by local
 * rank in turn), else the first with an active port. */
static struct ibv_device *pick_device(struct vb *v, struct ibv_device **list, int n, int *port)
{
	const char *want = drv_env("ACCDMA_IB_DEV"), *lr = getenv("LOCAL_RANK");
	char names[256], *save = NULL, *tok;
	int count = 0, pick = lr ? atoi(lr) : v->self;

	*port = 1;
	if (want && *want) {
		snprintf(names, sizeof(names), "%s", want);
		for (tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			count++;
		snprintf(names, sizeof(names), "%s", want);
		save = NULL;
		tok = strtok_r(names, ",", &save);
		for (int k = 0; tok && k < pick % (count ? count : 1); k++)
			tok = strtok_r(NULL, ",", &save);
		for (int i = 0; tok && i < n; i++)
			if (!strcmp(ibv_get_device_name(list[i]), tok))
				return list[i];
		fprintf(stderr, "accdma: verbs: ACCDMA_IB_DEV=%s: no RDMA device %s\n", want, tok ? tok : "?");
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		struct ibv_context *c = ibv_open_device(list[i]);
		struct ibv_port_attr pa;
		int ok = c && !ibv_query_port(c, 1, &pa) && pa.state == IBV_PORT_ACTIVE;

		if (c)
			ibv_close_device(c);
		if (ok)
			return list[i];
	}
	fprintf(stderr, "accdma: verbs: no RDMA device with an active port (ibv_devinfo lists them)\n");
	return NULL;
}

/* ACCDMA_IB_GID_INDEX, else the first RoCE v2 GID of an IPv4 address (what a
 * routed RoCE port uses), else index 0. */
static int pick_gid(struct vb *v)
{
	const char *e = drv_env("ACCDMA_IB_GID_INDEX");
	union ibv_gid g;

	if (e && *e) {
		v->gid_index = atoi(e);
		return ibv_query_gid(v->ctx, (uint8_t)v->port, v->gid_index, &v->gid) ? -EINVAL : 0;
	}
	for (int i = 0; i < 16; i++) {
		static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		if (!ibv_query_gid(v->ctx, (uint8_t)v->port, i, &g) && !memcmp(g.raw, v4, sizeof(v4))) {
			v->gid_index = i;
			v->gid = g;
			return 0;
		}
	}
	v->gid_index = 0;
	return ibv_query_gid(v->ctx, (uint8_t)v->port, 0, &v->gid) ? -EINVAL : 0;
}

/* ACCDMA_IB_MAX_INLINE: the bytes a send may carry in its work request, as
 * asked of the device (0: none, every message from a send buffer), else 256. */
static int pick_inline(uint32_t *bytes)
{
	const char *e = drv_env("ACCDMA_IB_MAX_INLINE");
	char *end;
	unsigned long n;

	*bytes = 256;
	if (!e || !*e)
		return 0;
	errno = 0;
	n = strtoul(e, &end, 10);
	if (errno || *end || *e == '-' || n > 4096) {
		fprintf(stderr, "accdma: verbs: ACCDMA_IB_MAX_INLINE=%s: not a number of bytes up to 4096\n", e);
		return -EINVAL;
	}
	*bytes = (uint32_t)n;
	return 0;
}

static int make_buffers(struct vb *v)
{
	size_t rb = (size_t)VB_RECV_BUFS * VB_MSG_BYTES, sb = (size_t)VB_SEND_BUFS * VB_MSG_BYTES;
	int access = IBV_ACCESS_LOCAL_WRITE;

	v->rbuf = aligned_alloc(4096, rb);
	v->sbuf = aligned_alloc(4096, sb);
	v->sfree = calloc(VB_SEND_BUFS, sizeof(*v->sfree));
	v->sproc = calloc(VB_SEND_BUFS, sizeof(*v->sproc));
	for (uint32_t i = 0; i < VB_WRITES; i++)
		v->wfree[v->nwfree++] = i;
	if (!v->rbuf || !v->sbuf || !v->sfree || !v->sproc)
		return -ENOMEM;
	v->rmr = ibv_reg_mr(v->pd, v->rbuf, rb, access);
	v->smr = ibv_reg_mr(v->pd, v->sbuf, sb, access);
	if (!v->rmr || !v->smr)
		return -ENOMEM;
	for (uint32_t i = 0; i < VB_SEND_BUFS; i++)
		v->sfree[v->nsfree++] = i;
	return 0;
}

/**
 * vb_link_open() - open the device, make the queues and one queue pair per
 * peer (reset state, connected later), and start the poller.
 * Return: 0 or a negative errno (said on stderr).
 */
int vb_link_open(struct vb *v)
{
	struct ibv_device **list;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = VB_RECV_BUFS, .max_sge = 1 } };
	struct ibv_port_attr pa;
	int n = 0, rc = -ENODEV;
	uint32_t want;

	if (pick_inline(&v->max_inline))
		return -EINVAL;
	list = ibv_get_device_list(&n);
	if (list && n > 0) {
		struct ibv_device *d = pick_device(v, list, n, &v->port);

		if (d) {
			v->ctx = ibv_open_device(d);
			snprintf(v->devname, sizeof(v->devname), "%s", ibv_get_device_name(d));
		}
	} else {
		fprintf(stderr, "accdma: verbs: no RDMA device (is rdma-core's provider installed, and a "
				"device up? ibv_devinfo)\n");
	}
	if (list)
		ibv_free_device_list(list);
	if (!v->ctx)
		return rc;
	if (ibv_query_port(v->ctx, (uint8_t)v->port, &pa) || pa.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, "accdma: verbs: %s port %d is not active\n", v->devname, v->port);
		return -ENETDOWN;
	}
	v->mtu = pa.active_mtu;
	if (pick_gid(v)) {
		fprintf(stderr, "accdma: verbs: %s: no GID at index %d\n", v->devname, v->gid_index);
		return -EINVAL;
	}
	v->pd = ibv_alloc_pd(v->ctx);
	v->ch = ibv_create_comp_channel(v->ctx);
	if (!v->pd || !v->ch)
		return -ENOMEM;
	v->cq = ibv_create_cq(v->ctx, VB_RECV_BUFS + v->nprocs * VB_SQ_DEPTH, NULL, v->ch, 0);
	v->srq = v->cq ? ibv_create_srq(v->pd, &sa) : NULL;
	if (!v->srq || make_buffers(v))
		return -ENOMEM;
	rc = vb_stage_open(v);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < VB_RECV_BUFS; i++) {
		struct ibv_sge sge = { (uintptr_t)(v->rbuf + (size_t)i * VB_MSG_BYTES), VB_MSG_BYTES, v->rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = ((uint64_t)i << 2) | 2, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(v->srq, &wr, &bad))
			return -ENOMEM;
	}
	want = v->max_inline;
	for (int p = 0; p < v->nprocs; p++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = v->cq, .recv_cq = v->cq, .srq = v->srq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = VB_SQ_DEPTH, .max_send_sge = 2, .max_inline_data = want },
		};

		if (p == v->self)
			continue;
		v->qp[p] = ibv_create_qp(v->pd, &qa);
		if (!v->qp[p]) {
			qa.cap.max_inline_data = 0;
			v->qp[p] = ibv_create_qp(v->pd, &qa);
		}
		if (!v->qp[p])
			return -ENOMEM;
		/* a device may round up what it takes (soft-RoCE: to the room of its gather list) */
		v->max_inline = qa.cap.max_inline_data < want ? qa.cap.max_inline_data : want;
	}
	return 0;
}

/* Bring the queue pair to peer @p to ready-to-send with what it told us. */
static int connect_qp(struct vb *v, int p)
{
	const struct vb_hello *h = &v->hellos[p];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = (uint8_t)v->port,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE };

	if (ibv_modify_qp(v->qp[p], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)(h->mtu < (uint32_t)v->mtu ? h->mtu : (uint32_t)v->mtu);
	a.dest_qp_num = v->qpns[(size_t)p * v->nprocs + v->self];
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, h->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)v->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = (uint8_t)v->port;
	if (ibv_modify_qp(v->qp[p], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -EHOSTUNREACH;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 18; /* ~1 s per try: a loaded or emulated host answers late */
	a.retry_cnt = 7;
	a.rnr_retry = 7; /* unlimited: a receiver short of buffers slows us, never fails us */
	a.sq_psn = 0;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(v->qp[p], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return -EHOSTUNREACH;
	return 0;
}

/**
 * vb_link_connect() - connect every queue pair (the bootstrap traded their numbers).
 * @err/@errlen: on failure, which pair and device failed.
 * Return: 0, or -EHOSTUNREACH.
 */
int vb_link_connect(struct vb *v, char *err, size_t errlen)
{
	for (int p = 0; p < v->nprocs; p++) {
		char a[48], b[48];

		if (p == v->self || !connect_qp(v, p))
			continue;
		vb_gid_str(v->gid.raw, a, sizeof(a));
		vb_gid_str(v->hellos[p].gid, b, sizeof(b));
		snprintf(err, errlen,
			 "rank %d (%s, GID %s) cannot connect its queue pair to rank %d (%s, GID %s) "
			 "(wrong GID index, or no route between the ports?)",
			 v->self, v->devname, a, p, v->hellos[p].dev, b);
		return -EHOSTUNREACH;
	}
	return 0;
}

/**
 * vb_link_check_paths() - a ping to every peer through its queue pair, and
 * one from each, within the join timeout.
 * @err/@errlen: on failure, which pair and device failed.
 * Return: 0, or -EHOSTUNREACH.
 */
int vb_link_check_paths(struct vb *v, char *err, size_t errlen)
{
	struct timespec t0, t;
	struct q_msg m;

	memset(&m, 0, sizeof(m));
	m.type = VB_PING;
	m.src = (int32_t)(v->self * v->L);
	for (int p = 0; p < v->nprocs; p++) {
		if (p == v->self)
			continue;
		m.dst = (int32_t)(p * v->L);
		/* where our slots for it are first: known there when our ping is */
		if (vb_stage_tell(v, p) || vb_ctl_send(v, p, &m))
			atomic_store(&v->proc_lost[p], 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int missing = -1;

		for (int p = 0; p < v->nprocs && missing < 0; p++)
			if (p != v->self && (!atomic_load(&v->pings[p]) || atomic_load(&v->proc_lost[p])))
				missing = p;
		if (missing < 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (atomic_load(&v->proc_lost[missing]) ||
		    (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > v->w->opts.peer_timeout_ms) {
			char a[48], b[48];

			vb_gid_str(v->gid.raw, a, sizeof(a));
			vb_gid_str(v->hellos[missing].gid, b, sizeof(b));
			snprintf(err, errlen,
				 "rank %d (%s, GID %s) and rank %d (%s, GID %s): no ping through their queue pair "
				 "within %lld ms (wrong GID index, or no route between the ports?)",
				 v->self, v->devname, a, missing, v->hellos[missing].dev, b,
				 (long long)v->w->opts.peer_timeout_ms);
			return -EHOSTUNREACH;
		}
		usleep(1000);
	}
}

/** vb_link_close() - stop the poller and free the device's resources. */
void vb_link_close(struct vb *v)
{
	atomic_store(&v->stop, 1);
	atomic_fetch_add(&v->nap_seq, 1); /* out of a nap now, not at its end */
	os_wake32(&v->nap_seq);
	if (v->poller_started)
		pthread_join(v->poller, NULL);
	v->poller_started = 0;
	for (int p = 0; v->qp && p < v->nprocs; p++)
		if (v->qp[p])
			ibv_destroy_qp(v->qp[p]);
	if (v->srq)
		ibv_destroy_srq(v->srq);
	if (v->cq)
		ibv_destroy_cq(v->cq);
	if (v->ch)
		ibv_destroy_comp_channel(v->ch);
	if (v->rmr)
		ibv_dereg_mr(v->rmr);
	if (v->smr)
		ibv_dereg_mr(v->smr);
	vb_stage_close(v);
	for (int i = 0; v->lreg && i < v->L * Q_MAX_REGIONS; i++)
		if (v->lreg[i].mr)
			ibv_dereg_mr(v->lreg[i].mr);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->ctx)
		ibv_close_device(v->ctx);
	free(v->rbuf);
	free(v->sbuf);
	free(v->sfree);
	free(v->sproc);
}
